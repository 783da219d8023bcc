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
    doc, root, jaccard = zip(*sorted(roots), strict=True)
    pq.write_table(pa.table({"doc": pa.array(doc, pa.int64()), "root": pa.array(root, pa.int64()),
                             "jaccard": pa.array(jaccard, pa.float32())}), work / "roots.parquet")
    return parts


def _single_query(work: Path, parts: list[dict[str, object]], settings: JoinSettings) -> pa.Table:
    """The rows as the one-query version computed them (no reference)."""
    docs = json.dumps([(work / "docs" / f"{p['part']}.parquet").as_posix() for p in parts])
    con = settings.connect()
    try:
        return con.sql(f"""
            SELECT d.doc, d.shard, d.row, d.source, d.id, coalesce(rd.id, d.id) AS cluster, rd.id AS duplicate_of,
              CASE WHEN rd.id IS NULL THEN NULL WHEN rd.hash = d.hash THEN 'exact' ELSE 'near' END AS duplicate_kind,
              x.jaccard::DOUBLE AS duplicate_jaccard, NULL::VARCHAR AS reference_kind,
              NULL::VARCHAR AS reference_shard, NULL::BIGINT AS reference_line, NULL::VARCHAR AS reference_set,
              NULL::DOUBLE AS reference_jaccard
            FROM read_parquet({docs}) d
            LEFT JOIN read_parquet('{(work / "roots.parquet").as_posix()}') x ON x.doc = d.doc
            LEFT JOIN read_parquet({docs}) rd ON rd.doc = x.root
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
        explain.write_decisions(work, list(reversed(parts)), work / "roots.parquet", None, [], target, settings,
                                batch_docs=batch_docs)
        got = pq.read_table(target)
        assert got.num_rows == 12 * PART_DOCS
        assert got.equals(expected.cast(got.schema)), batch_docs
    kinds = pq.read_table(target, columns=["duplicate_kind"]).column(0).to_pylist()
    assert kinds.count("exact") > 1_000 and kinds.count("near") > 1_000  # both kinds occur


def test_decisions_fit_a_duckdb_limit_the_single_query_does_not(
        corpus: tuple[Path, list[dict[str, object]]], tmp_path: Path) -> None:
    work, parts = corpus
    """24 MB: the single query and one batch of everything run out of it (DuckDB 2.0.1: the joins and the sort
    of 72,000 rows hold more at once); batches of one part do not."""
    tight = JoinSettings(memory_limit="24MB", temp_directory=tmp_path / "spill")
    target = tmp_path / "decisions.parquet"
    explain.write_decisions(work, parts, work / "roots.parquet", None, [], target, tight, batch_docs=PART_DOCS)
    assert pq.read_table(target).num_rows == 12 * PART_DOCS
