"""Dedup flow: near + exact duplicates within (or across) sources, and matches against a reference index.

    python -m flows.dedup --data data/ --within-sources --against indexes/pile-v1
    python -m flows.dedup --data data/ --set layout=16x8 --set threshold=0.8     # recall-first layout
    python -m flows.dedup --data data/ --set 'priority=[[github, stack_code]]'   # stack_code on top of GitHub

Reads the final shards recorded in the manifest (``docs/<source>/<part>/*.parquet``), never edits
them, and writes ``attributes/dedup/...`` beside them plus ``matches`` rows in the manifest.
On a root already labeled, the documents of the ``docs/`` shards ``flows.label`` released live
only in their class shards (``labeled/…``, the manifest's ``released.into_shards``): they are read
from there and compared too, numbered first so they stay the kept copies, but not decided again
(their attributes and ``matches`` rows are the earlier run's). So sources added later to a labeled
root (stack_code, science_books onto G.1) meet GitHub and the books through the priority chains.
Tasks: one per shard (signatures, exact hashes, band keys), one per band (DuckDB joins), one
merge + verification, one clustering (deterministic union-find), one per shard (attributes).

``priority`` chains (configs/dedup.yaml: ``[[github, stack_code], [books, science_books]]``) add the
extension sources *on top of* G.1: a later source of a chain is a duplicate of the earlier
source's copy (``duplicate_of`` names it, ``duplicate_kind`` says exact or near), and the earlier
source's decisions are those of a within-source run (:mod:`dedupe.priority`). The run's
``dedup-sources`` artifact and :attr:`DedupSummary.sources` count, per source, duplicates,
duplicates of another source, and reference (Pile) matches by subset (PubMed Central, DM Mathematics).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pyarrow.parquet as pq
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.config import PipelineConfig
from core.pile_format import MAX_LINE_BYTES
from dedupe import explain as decisions
from dedupe.lsh import (
    BandLayout,
    JoinSettings,
    band_dir,
    band_pairs_within,
    merge_pairs,
    verify_pairs,
    write_verified,
)
from dedupe.minhash import MinHashConfig
from dedupe.priority import as_chains, priority_exact_edges, priority_roots
from dedupe.reference import (
    ReferenceIndex,
    best_reference_matches,
    reference_band_pairs,
    sign_document_shard,
    signature_parts,
)
from dedupe.shingles import ShingleConfig
from flows._cli import Flag, FlowCLI
from flows._recorder import RunRecorder


class MinHashSettings(BaseModel):
    """Signature parameters (an index and the documents matched against it must agree)."""

    model_config = ConfigDict(extra="forbid")
    num_perm: int = Field(128, gt=0)
    seed: int = 1
    ngram: int = Field(5, ge=1, le=64)

    def config(self) -> MinHashConfig:
        return MinHashConfig(self.num_perm, self.seed, ShingleConfig(self.ngram))


class DedupConfig(PipelineConfig):
    """Settings of the dedup flow (defaults in ``configs/dedup.yaml``)."""

    #: Read only by ``flows.pile_index`` (this file is its config too), whose part markers carry it.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"pile_max_line_bytes"}

    minhash: MinHashSettings = Field(default_factory=MinHashSettings)
    layout: str = "0.8"
    threshold: float | None = Field(None, gt=0, le=1)
    within_sources: bool = True
    across_sources: bool = False
    against: Path | None = None
    index_layouts: list[str] = Field(default_factory=lambda: ["0.7", "0.8", "0.9"])
    sources: list[str] = Field(default_factory=list)
    memory_limit: str = "1GB"
    max_bucket: int = Field(64, ge=2)
    pile_max_line_bytes: int = Field(MAX_LINE_BYTES, gt=0, description="longer Pile lines: record_too_large drops")
    priority: list[list[str]] = Field(
        default_factory=list,
        description="chains of sources deduplicated across, earlier source wins ([[github, stack_code]]); "
                    "a flat list is one chain; sources in no chain stay within themselves")

    @field_validator("priority", mode="before")
    @classmethod
    def _chains(cls, value: Any) -> Any:
        """One flat list is one chain; a source in two chains is refused (it would have two levels)."""
        return as_chains(value) if isinstance(value, list | tuple) else value

    def priority_chains(self) -> list[list[str]]:
        """The chains in effect: none with ``across_sources``, which clusters every source together."""
        return [] if self.across_sources else self.priority

    def band_layout(self) -> BandLayout:
        return BandLayout.named(self.layout, self.threshold)

    def join_settings(self, out: Path) -> JoinSettings:
        return JoinSettings(self.memory_limit, 1, out / "_dedup" / "duckdb_tmp", self.max_bucket)


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


# -- tasks ------------------------------------------------------------------------------------
@task(name="dedup-sign", cache_policy=NO_CACHE, task_run_name="sign {shard}")
def sign_task(out: Path, shard: str, work: Path, part: str, first: int, minhash: MinHashConfig,
              layout: BandLayout) -> dict[str, Any]:
    """Signatures, exact hashes and band keys of one document shard."""
    return sign_document_shard(out, shard, work, part, first, minhash, [layout])


@task(name="dedup-band-join", cache_policy=NO_CACHE, task_run_name="within band {band}")
def within_band_task(work: Path, layout: BandLayout, band: int, settings: JoinSettings) -> Path:
    """Candidate pairs of one band partition (DuckDB self-join)."""
    target = work / "within" / layout.name / f"pairs-band{band:02d}.parquet"
    band_pairs_within(band_dir(work / "bands", layout, band), target, settings)
    return target


@task(name="dedup-verify", cache_policy=NO_CACHE)
def verify_task(work: Path, parts: list[dict[str, Any]], layout: BandLayout, pair_files: list[Path],
                settings: JoinSettings) -> Path:
    """Merge the bands' candidates and keep those whose estimated Jaccard reaches the threshold."""
    merged = work / "within" / layout.name / "candidates.parquet"
    merge_pairs(pair_files, merged, settings)
    verified = work / "within" / layout.name / "verified.parquet"
    store = signature_parts(work, parts)
    write_verified(verify_pairs(merged, store, store, layout.threshold), verified)
    return verified


@task(name="dedup-cluster", cache_policy=NO_CACHE)
def cluster_task(work: Path, parts: list[dict[str, Any]], edge_files: list[Path], across: bool,
                 settings: JoinSettings, exact: bool, priority: list[list[str]] | None = None) -> dict[str, int]:
    """Exact edges plus verified near edges -> deterministic clusters (roots.parquet).

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


@task(name="dedup-reference-band", cache_policy=NO_CACHE, task_run_name="reference band {band}")
def reference_band_task(work: Path, index: ReferenceIndex, layout: BandLayout, band: int,
                        settings: JoinSettings) -> Path:
    """Candidate (document, reference) pairs of one band partition."""
    return reference_band_pairs(work, index, layout, band, work, settings)


@task(name="dedup-reference-match", cache_policy=NO_CACHE)
def reference_match_task(work: Path, parts: list[dict[str, Any]], index: ReferenceIndex, layout: BandLayout,
                         pair_files: list[Path], settings: JoinSettings) -> Path:
    """Exact and verified near matches, the best one per document."""
    return best_reference_matches(work, parts, index, layout, pair_files, work, settings)


@task(name="dedup-decide", cache_policy=NO_CACHE)
def decide_task(work: Path, parts: list[dict[str, Any]], reference: Path | None, reference_docs: list[str],
                settings: JoinSettings) -> Path:
    """One decision row per document."""
    target = work / "decisions.parquet"
    decisions.write_decisions(work, parts, work / "roots.parquet", reference, reference_docs, target, settings)
    return target


@task(name="dedup-attributes", cache_policy=NO_CACHE, task_run_name="attributes {shard}")
def attributes_task(decided: Path, out: Path, shard: str) -> dict[str, Any]:
    """The attribute shard beside one document shard."""
    return decisions.write_attributes(decided, out, shard)


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


# -- the flow ---------------------------------------------------------------------------------
def _work_dir(out: Path, config: DedupConfig, shards: list[tuple[str, str, str]]) -> Path:
    """Work files of this exact input set and config: a changed shard gives a fresh directory."""
    payload = json.dumps({"config": config.config_hash(), "shards": shards}, sort_keys=True)
    return out / "_dedup" / hashlib.sha256(payload.encode()).hexdigest()[:16]


@flow(name="dedup", log_prints=True)
def dedup_flow(config: DedupConfig) -> DedupSummary:
    """Deduplicate the output root's document shards (see the module docstring)."""
    logger = get_run_logger()
    out = Path(config.out).resolve()
    with RunRecorder(out, "dedup", None, config) as run:
        manifest, run_id = run.manifest, run.run_id
        summary = DedupSummary(run_id, out)
        shards = manifest.document_shards(config.sources)
        # Stored copies come first: the smallest number of a cluster is its kept document, so a
        # document already labeled stays the kept copy and a new copy of it is the duplicate.
        stored = manifest.stored_copies(config.sources)
        if stored and not shards:  # every document is labeled already: nothing new to decide
            logger.info("dedup: no docs/ shard to decide (%d stored class shards were decided before)", len(stored))
            return summary
        units = [*stored, *shards]
        layout, settings, minhash = config.band_layout(), config.join_settings(out), config.minhash.config()
        layout.check(minhash.num_perm)
        work = _work_dir(out, config, units)
        firsts, total = [], 0
        for path, _, _ in units:
            firsts.append(total)
            total += pq.ParquetFile(out / path).metadata.num_rows
        futures = [sign_task.submit(out, path, work, f"{i:06d}", firsts[i], minhash, layout)
                   for i, (path, _, _) in enumerate(units)]
        parts = [{**f.result(), "source": source} for f, (_, source, _) in zip(futures, units, strict=True)]
        within = config.within_sources or config.across_sources
        edge_files: list[Path] = []
        if within:
            pair_files = [f.result() for f in [within_band_task.submit(work, layout, b, settings)
                                               for b in range(layout.bands)]]
            edge_files.append(verify_task.submit(work, parts, layout, pair_files, settings).result())
        if config.across_sources and config.priority:
            logger.warning("across_sources clusters every source together: the priority chains %s are not used",
                           config.priority)
        counts = cluster_task.submit(work, parts, edge_files, config.across_sources, settings, within,
                                     config.priority_chains()).result()
        reference, reference_docs, index_name = None, [], None
        if config.against is not None:
            index = ReferenceIndex.open(Path(config.against))
            if index.minhash != minhash:
                raise ValueError(f"index {config.against} uses {index.minhash.to_dict()}, this run {minhash.to_dict()}")
            ref_layout = index.layout(layout.name)
            ref_layout = BandLayout(ref_layout.bands, ref_layout.rows, layout.threshold)
            pair_files = [f.result() for f in [reference_band_task.submit(work, index, ref_layout, b, settings)
                                               for b in range(ref_layout.bands)]]
            reference = reference_match_task.submit(work, parts, index, ref_layout, pair_files, settings).result()
            reference_docs, index_name = index.docs_files(), str(Path(config.against))
        decided = decide_task.submit(work, parts, reference, reference_docs, settings).result()
        attribute_futures = [attributes_task.submit(decided, out, path) for path, _, _ in shards]
        summary.attributes = [f.result() for f in attribute_futures]
        decided_shards = [path for path, _, _ in shards]  # stored copies were decided by an earlier run
        with manifest.connect() as con:
            decisions.record_matches(con, run_id, decided, index_name, layout.threshold, layout.name, decided_shards)
        summary.stored = sum(int(p["count"]) for p in parts[:len(units) - len(shards)])
        summary.shards, summary.documents = len(shards), counts["documents"] - summary.stored
        summary.duplicates = sum(a["duplicates"] for a in summary.attributes)
        summary.reference_matches = sum(a["reference_matches"] for a in summary.attributes)
        summary.sources = source_counts(decided, work / "roots.parquet", settings, decided_shards)
        if not config.keep_staging:  # a failed run keeps its work files, so a re-run resumes from them
            shutil.rmtree(work, ignore_errors=True)
        run.table("dedup-shards", summary.attributes, "Duplicates and reference matches per shard")
        run.table("dedup-sources", [{**row, "reference_sets": json.dumps(row["reference_sets"], sort_keys=True)}
                                    for row in summary.sources],
                  "Per source: duplicates (across: kept copy in an earlier source of a priority chain) and "
                  "reference (Pile) matches by subset")
        logger.info("dedup: %d documents in %d shards (%d of them stored, read from labeled/), %d duplicates, "
                    "%d reference matches", summary.documents, summary.shards, summary.stored, summary.duplicates,
                    summary.reference_matches)
        return summary


def report(summary: DedupSummary) -> int:
    """What the command prints after a run."""
    stored = f" (+{summary.stored} stored documents of released shards compared)" if summary.stored else ""
    print(f"\n{summary.documents} documents in {summary.shards} shards{stored}: "
          f"{summary.duplicates} duplicates, {summary.reference_matches} reference matches")
    for row in summary.sources:
        sets = ", ".join(f"{name} {count}" for name, count in row["reference_sets"].items())
        print(f"  {row['source']}: {row['documents']} documents, {row['duplicates']} duplicates "
              f"({row['duplicates_across']} of another source), {row['reference_matches']} reference matches"
              + (f" ({sets})" if sets else ""))
    print(f"attributes: {summary.out / 'attributes' / 'dedup'}\nexplain:    kinda --out {summary.out} dedup explain <doc-id>")
    return 0


cli = FlowCLI(dedup_flow, DedupConfig, "dedup.yaml", __doc__, report=report, flags=[
    Flag("--data", "out", "output root holding docs/ and the manifest (same as --out)", type=Path),
    Flag("--within-sources", "within_sources", "dedup inside each source", switch=True),
    Flag("--across-sources", "across_sources", "dedup across all sources", switch=True),
    Flag("--against", "against", "reference index built by flows.pile_index", type=Path),
    Flag("--layout", "layout", "band layout: 0.7, 0.8, 0.9 or BxR"),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main


if __name__ == "__main__":
    sys.exit(main())
