"""The dedup flow's Prefect tasks, and the fan-outs that submit one task per shard or band.

Each task wraps one pure step of :mod:`dedupe` on a whole shard or band partition (signatures,
DuckDB band joins, verification, clustering, reference matching, decisions, attributes). The
fan-out helpers submit one task per unit and wait for all of them, so :func:`flows.dedup.dedup_flow`
reads as its stages; their order and the arguments each task gets are those the flow had inline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

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
from dedupe.reference import (
    ReferenceIndex,
    best_reference_matches,
    reference_band_pairs,
    sign_document_shard,
    signature_parts,
)
from dedupe.stages import DedupPlan, Unit, cluster, open_reference


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
    """Exact edges plus verified near edges -> deterministic clusters (:func:`dedupe.stages.cluster`)."""
    return cluster(work, parts, edge_files, across, settings, exact, priority)


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


# -- fan-outs: one task per shard or band, all submitted before any is awaited ----------------
def sign_all(plan: DedupPlan) -> list[dict[str, Any]]:
    """Sign every unit; each part record gets its unit's source (clustering and counts group by it)."""
    futures = [sign_task.submit(plan.out, path, plan.work, f"{i:06d}", plan.firsts[i], plan.minhash, plan.layout)
               for i, (path, _, _) in enumerate(plan.units)]
    return [{**f.result(), "source": source} for f, (_, source, _) in zip(futures, plan.units, strict=True)]


def within_edges(plan: DedupPlan, parts: list[dict[str, Any]]) -> Path:
    """Verified near pairs among the run's own documents: one join per band, then one verification."""
    pair_files = [f.result() for f in [within_band_task.submit(plan.work, plan.layout, b, plan.settings)
                                       for b in range(plan.layout.bands)]]
    return verify_task.submit(plan.work, parts, plan.layout, pair_files, plan.settings).result()


def reference_matches(plan: DedupPlan, parts: list[dict[str, Any]],
                      against: Path | None) -> tuple[Path | None, list[str], str | None]:
    """Without an index: none. Else the best match per document (one join per band of the index,
    then one match task), the index's document files and its name, as the decisions record them."""
    if against is None:
        return None, [], None
    index, layout = open_reference(against, plan.minhash, plan.layout)
    pair_files = [f.result() for f in [reference_band_task.submit(plan.work, index, layout, b, plan.settings)
                                       for b in range(layout.bands)]]
    matched = reference_match_task.submit(plan.work, parts, index, layout, pair_files, plan.settings).result()
    return matched, index.docs_files(), str(against)


def attributes_all(decided: Path, out: Path, shards: list[Unit]) -> list[dict[str, Any]]:
    """The attribute shard of every decided shard (stored copies were decided by an earlier run)."""
    return [f.result() for f in [attributes_task.submit(decided, out, path) for path, _, _ in shards]]
