"""dedupe.explain.write_decisions: one decision row per document, in bounded memory.

The decisions of a run were one DuckDB query over every document (joined with every document again
for its root's id, then sorted); at 2.5 M documents it ran out of DuckDB's 1 GB. Now documents are
decided in batches: the rows must be the ones the single query gave (its SQL is kept here as the
oracle), in document order, and a DuckDB limit far below the single query's need must do.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dedupe import explain
from dedupe.lsh import JoinSettings

PART_DOCS = 6_000


def _write_parts(work: Path, parts_count: int) -> list[dict[str, object]]:
    """``parts_count`` docs parts (ids, shards, hashes as the signing step writes them) and roots.parquet:
    every 3rd document a duplicate of an earlier one (every 2nd of those an exact copy)."""
    (work / "docs").mkdir(parents=True)
    parts, roots = [], []
    for number in range(parts_count):
        first = number * PART_DOCS
        docs = list(range(first, first + PART_DOCS))
        source = "c4" if number % 2 else "commoncrawl"
        hashes = [hashlib.sha256(str(doc).encode()).digest() for doc in docs]
        for i, doc in enumerate(docs):
            if doc % 3 == 2:
                root = doc - 1 - (doc * 7919) % min(doc, 5_000)
                roots.append((doc, root, 1.0 if doc % 2 else 0.75))
                if doc % 2:
                    hashes[i] = hashlib.sha256(str(root).encode()).digest()
        table = pa.table({"doc": docs, "id": [f"{source}/{doc:012d}-{'x' * 20}" for doc in docs],
                          "source": [source] * PART_DOCS,
                          "shard": [f"docs/{source}/part-{number:05d}/shard-{doc // 1000:06d}.parquet" for doc in docs],
                          "row": [doc % 1000 for doc in docs], "hash": hashes, "empty": [False] * PART_DOCS})
        pq.write_table(table, work / "docs" / f"{number:06d}.parquet")
        parts.append({"part": f"{number:06d}", "count": PART_DOCS, "first": first, "source": source})
    _write_reference(work, parts_count * PART_DOCS)
    doc, root, jaccard = zip(*sorted(roots), strict=True)
    pq.write_table(pa.table({"doc": pa.array(doc, pa.int64()), "root": pa.array(root, pa.int64()),
                             "jaccard": pa.array(jaccard, pa.float32())}), work / "roots.parquet")
    return parts


def _write_reference(work: Path, documents: int) -> None:
    """A Pile-index docs table (two shards) and the matches of every 7th document against it."""
    (work / "pile").mkdir()
    for number in range(2):
        refs = list(range(number * 5_000, (number + 1) * 5_000))
        pq.write_table(pa.table({"doc": refs, "line": [r % 5_000 for r in refs],
                                 "shard": [f"train/{number:02d}.jsonl.zst"] * 5_000,
                                 "pile_set_name": ["Pile-CC" if r % 3 else "Github" for r in refs],
                                 "hash": [b"h" * 32] * 5_000, "empty": [False] * 5_000}),
                       work / "pile" / f"{number:02d}.parquet")
    matched = list(range(0, documents, 7))
    pq.write_table(pa.table({"doc": pa.array(matched, pa.int64()), "ref": pa.array([d % 10_000 for d in matched], pa.int64()),
                             "kind": ["exact" if d % 2 else "near" for d in matched],
                             "jaccard": pa.array([0.9] * len(matched), pa.float32())}), work / "matches.parquet")


def _reference(work: Path) -> tuple[Path, list[str]]:
    return work / "matches.parquet", sorted((work / "pile" / f).as_posix() for f in ("00.parquet", "01.parquet"))


def _single_query(work: Path, parts: list[dict[str, object]], settings: JoinSettings) -> pa.Table:
    """The rows as the one-query version computed them (its SQL, with the reference matches)."""
    docs = json.dumps([(work / "docs" / f"{p['part']}.parquet").as_posix() for p in parts])
    matches, pile = _reference(work)
    con = settings.connect()
    try:
        return con.sql(f"""
            SELECT d.doc, d.shard, d.row, d.source, d.id, coalesce(rd.id, d.id) AS cluster, rd.id AS duplicate_of,
              CASE WHEN rd.id IS NULL THEN NULL WHEN rd.hash = d.hash THEN 'exact' ELSE 'near' END AS duplicate_kind,
              x.jaccard::DOUBLE AS duplicate_jaccard, m.kind AS reference_kind, r.shard AS reference_shard,
              r.line AS reference_line, r.pile_set_name AS reference_set, m.jaccard::DOUBLE AS reference_jaccard
            FROM read_parquet({docs}) d
            LEFT JOIN read_parquet('{(work / "roots.parquet").as_posix()}') x ON x.doc = d.doc
            LEFT JOIN read_parquet({docs}) rd ON rd.doc = x.root
            LEFT JOIN read_parquet('{matches.as_posix()}') m ON m.doc = d.doc
            LEFT JOIN read_parquet({json.dumps(pile)}) r ON r.doc = m.ref
            ORDER BY d.doc""").fetch_arrow_table()
    finally:
        con.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, object]]]:
    work = tmp_path_factory.mktemp("decisions")
    return work, _write_parts(work, 12)


def test_batched_decisions_are_the_single_query_rows_in_document_order(
        corpus: tuple[Path, list[dict[str, object]]], tmp_path: Path) -> None:
    work, parts = corpus
    settings = JoinSettings(temp_directory=tmp_path / "spill")
    expected = _single_query(work, parts, settings)
    for batch_docs in (1, 2 * PART_DOCS + 1, 10**9):  # a part per batch, two parts, everything at once
        target = tmp_path / f"decisions-{batch_docs}.parquet"
        explain.write_decisions(work, list(reversed(parts)), work / "roots.parquet", *_reference(work), target,
                                settings, batch_docs=batch_docs)
        got = pq.read_table(target)
        assert got.num_rows == 12 * PART_DOCS
        assert got.equals(expected.cast(got.schema)), batch_docs
    kinds = pq.read_table(target, columns=["duplicate_kind"]).column(0).to_pylist()
    assert kinds.count("exact") > 1_000 and kinds.count("near") > 1_000  # both kinds occur
    sets = pq.read_table(target, columns=["reference_set"]).column(0).to_pylist()
    assert sets.count("Github") > 1_000 and sets.count("Pile-CC") > 1_000 and sets.count(None) > 50_000
    assert not (target.parent / (target.name + ".lookups")).exists()  # the batches' lookups are cleaned up


def test_decisions_fit_a_duckdb_limit_the_single_query_does_not(
        corpus: tuple[Path, list[dict[str, object]]], tmp_path: Path) -> None:
    work, parts = corpus
    """24 MB: the single query and one batch of everything run out of it (DuckDB 2.0.1: the joins and the sort
    of 72,000 rows hold more at once); batches of one part do not."""
    tight = JoinSettings(memory_limit="24MB", temp_directory=tmp_path / "spill")
    target = tmp_path / "decisions.parquet"
    explain.write_decisions(work, parts, work / "roots.parquet", *_reference(work), target, tight, batch_docs=PART_DOCS)
    assert pq.read_table(target).num_rows == 12 * PART_DOCS


def test_a_batch_without_duplicates_or_matches_decides_every_document_unique(
        corpus: tuple[Path, list[dict[str, object]]], tmp_path: Path) -> None:
    """A batch with no duplicate and no reference match has no lookup folder: its documents are their own cluster."""
    work, parts = corpus
    empty = tmp_path / "roots.parquet"
    pq.write_table(pa.table({"doc": pa.array([], pa.int64()), "root": pa.array([], pa.int64()),
                             "jaccard": pa.array([], pa.float32())}), empty)
    target = tmp_path / "decisions.parquet"
    explain.write_decisions(work, parts[:3], empty, None, [], target, JoinSettings(), batch_docs=PART_DOCS)
    rows = pq.read_table(target)
    assert rows.num_rows == 3 * PART_DOCS and rows.column("doc").to_pylist() == list(range(3 * PART_DOCS))
    assert rows.column("cluster").to_pylist() == rows.column("id").to_pylist()
    assert rows.column("duplicate_of").null_count == rows.column("reference_kind").null_count == rows.num_rows
