"""The dedup run's pure steps, between its Prefect tasks (``tasks/dedup.py``, ``flows/dedup.py``).

The flow numbers every compared document once (stored class shards first, so the smallest
number of a cluster, its kept copy, is a document already labeled), keeps its work files in a
directory named by the config and the exact input set (a changed shard gives a fresh one, a
re-run of the same set resumes from it), clusters exact and verified near edges, and at the end
counts per source. None of that needs Prefect; it lives here so the flow reads as its stages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from core.digest import json_hash
from dedupe import explain as decisions
from dedupe.lsh import BandLayout, JoinSettings
from dedupe.minhash import MinHashConfig
from dedupe.priority import priority_exact_edges, priority_roots
from dedupe.reference import ReferenceIndex, signature_parts

#: ``(path, source, sha256)`` of one compared shard, as the manifest lists it.
Unit = tuple[str, str, str]


@dataclass(frozen=True)
class DedupPlan:
    """What every stage of one run shares: the compared shards, their numbering, the work dir, the layout."""

    out: Path
    units: list[Unit]
    #: number of the first document of each unit (documents are numbered across units in order)
    firsts: list[int]
    work: Path
    layout: BandLayout
    settings: JoinSettings
    minhash: MinHashConfig

    @classmethod
    def make(cls, out: Path, units: list[Unit], config_hash: str, layout: BandLayout, settings: JoinSettings,
             minhash: MinHashConfig) -> DedupPlan:
        """Check the layout fits the signatures, number the documents, name the work directory."""
        layout.check(minhash.num_perm)
        return cls(out, units, first_numbers(out, units), work_dir(out, config_hash, units), layout, settings, minhash)


def work_dir(out: Path, config_hash: str, units: Sequence[Unit]) -> Path:
    """Work files of this exact input set and config: a changed shard gives a fresh directory."""
    return out / "_dedup" / json_hash({"config": config_hash, "shards": list(units)}, compact=False)


def first_numbers(out: Path, units: Sequence[Unit]) -> list[int]:
    """The number of each unit's first document: the row counts before it (Parquet metadata only)."""
    firsts, total = [], 0
    for path, _, _ in units:
        firsts.append(total)
        total += pq.ParquetFile(out / path).metadata.num_rows
    return firsts


def cluster(work: Path, parts: list[dict[str, Any]], edge_files: list[Path], across: bool,
            settings: JoinSettings, exact: bool, priority: list[list[str]] | None = None) -> dict[str, int]:
    """Exact edges plus verified near edges -> deterministic clusters (``roots.parquet``).

    With ``priority`` chains (:mod:`dedupe.priority`) a later source of a chain is deduplicated
    against the earlier ones and never changes them; every other source stays within itself.
    """
    files = list(edge_files)
    exact_path = work / "within" / "exact.parquet"
    store = signature_parts(work, parts)
    if priority:
        if exact:
            priority_exact_edges(work, parts, exact_path, settings, priority)
            files.append(exact_path)
        return priority_roots(parts, store, files, work / "roots.parquet", priority)
    if exact:
        decisions.exact_edges(work, parts, exact_path, settings, across)
        files.append(exact_path)
    return decisions.cluster_documents(parts, store, files, work / "roots.parquet", across)


def open_reference(path: Path, minhash: MinHashConfig, layout: BandLayout) -> tuple[ReferenceIndex, BandLayout]:
    """The reference index and its band layout of ``layout``'s name, at this run's threshold.

    An index signed with other MinHash parameters cannot be compared with: refused, not guessed.
    """
    index = ReferenceIndex.open(path)
    if index.minhash != minhash:
        raise ValueError(f"index {path} uses {index.minhash.to_dict()}, this run {minhash.to_dict()}")
    ref_layout = index.layout(layout.name)
    return index, BandLayout(ref_layout.bands, ref_layout.rows, layout.threshold)


def source_counts(decided: Path, roots: Path, settings: JoinSettings, shards: list[str]) -> list[dict[str, Any]]:
    """Per source: documents, duplicates, those whose kept copy is in another source, reference matches.

    Why per source: "how many PubMed Central / DM Mathematics documents are already in the Pile"
    and "how many stack_code files G.1's GitHub already holds" are questions about one source,
    and the ``matches`` table answers them only by a query; the run's artifact and summary say it.
    The kept copy is found by document number (``roots.parquet``), not by id, so equal ids in two
    sources cannot double a count. Only the documents of ``shards`` (those this run decided) count.
    """
    con = settings.connect()
    try:
        rows = con.execute(f"""
            WITH d AS (SELECT * FROM read_parquet('{decided.as_posix()}')),
                 k AS (SELECT x.doc, rd.source AS kept_source FROM read_parquet('{roots.as_posix()}') x
                       JOIN d rd ON rd.doc = x.root)
            SELECT d.source, count(*), count(d.duplicate_of),
                   count(CASE WHEN k.kept_source <> d.source THEN 1 END),
                   count(CASE WHEN d.reference_kind = 'exact' THEN 1 END),
                   count(CASE WHEN d.reference_kind = 'near' THEN 1 END)
            FROM d LEFT JOIN k ON k.doc = d.doc WHERE list_contains(?, d.shard)
            GROUP BY d.source ORDER BY d.source""", [shards]).fetchall()
        subsets = con.execute(f"""
            SELECT source, reference_set, count(*) FROM read_parquet('{decided.as_posix()}')
            WHERE reference_kind IS NOT NULL AND list_contains(?, shard) GROUP BY 1, 2 ORDER BY 1, 2""",
                              [shards]).fetchall()
    finally:
        con.close()
    by_set: dict[str, dict[str, int]] = {}
    for source, subset, count in subsets:
        by_set.setdefault(str(source), {})[str(subset)] = int(count)
    return [{"source": source, "documents": int(docs), "duplicates": int(dups), "duplicates_across": int(across),
             "reference_exact": int(exact), "reference_near": int(near),
             "reference_matches": int(exact) + int(near), "reference_sets": by_set.get(str(source), {})}
            for source, docs, dups, across, exact, near in rows]


def sources_table(sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`source_counts` rows as a flat table artifact (the subsets as one JSON cell)."""
    return [{**row, "reference_sets": json.dumps(row["reference_sets"], sort_keys=True)} for row in sources]


@dataclass
class DedupSummary:
    """What the flow returns: counts and where things went."""

    run_id: str
    out: Path
    shards: int = 0
    documents: int = 0
    #: documents of released shards read from their class shards (compared, not decided again;
    #: ``documents`` counts only the decided ones)
    stored: int = 0
    duplicates: int = 0
    reference_matches: int = 0
    attributes: list[dict[str, Any]] = field(default_factory=list)
    #: per source (:func:`source_counts`): documents, duplicates (of them of an earlier source of a
    #: priority chain), reference matches exact/near and by Pile subset
    sources: list[dict[str, Any]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def count(self, parts: Sequence[dict[str, Any]], stored_units: int, decided_shards: int,
              clustered: int) -> None:
        """Fill the counts from the signed parts (stored ones first) and the written attributes."""
        self.stored = sum(int(p["count"]) for p in parts[:stored_units])
        self.shards, self.documents = decided_shards, clustered - self.stored
        self.duplicates = sum(a["duplicates"] for a in self.attributes)
        self.reference_matches = sum(a["reference_matches"] for a in self.attributes)
