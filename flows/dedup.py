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
Tasks (:mod:`tasks.dedup`): one per shard (signatures, exact hashes, band keys), one per band
(DuckDB joins), one merge + verification, one clustering (deterministic union-find), one per
shard (attributes); the pure steps between them are :mod:`dedupe.stages`.

``priority`` chains (configs/dedup.yaml: ``[[github, stack_code], [books, science_books]]``) add the
extension sources *on top of* G.1: a later source of a chain is a duplicate of the earlier
source's copy (``duplicate_of`` names it, ``duplicate_kind`` says exact or near), and the earlier
source's decisions are those of a within-source run (:mod:`dedupe.priority`). The run's
``dedup-sources`` artifact and :attr:`DedupSummary.sources` count, per source, duplicates,
duplicates of another source, and reference (Pile) matches by subset (PubMed Central, DM Mathematics).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.dedup_config import DedupConfig
from flows.runtime.lazy import LazyImport, flow

if TYPE_CHECKING:
    from prefect import get_run_logger

    from dedupe import explain as decisions
    from dedupe.stages import DedupPlan, DedupSummary, source_counts, sources_table
    from flows.runtime.recorder import RunRecorder
    from tasks.dedup import (
        attributes_all,
        cluster_task,
        decide_task,
        reference_matches,
        sign_all,
        within_edges,
    )
else:  # only a run needs them (Prefect, pyarrow, DuckDB): not --help or a refused command
    get_run_logger = LazyImport("prefect", "get_run_logger")
    decisions = LazyImport("dedupe.explain")
    DedupPlan = LazyImport("dedupe.stages", "DedupPlan")
    DedupSummary = LazyImport("dedupe.stages", "DedupSummary")
    source_counts = LazyImport("dedupe.stages", "source_counts")
    sources_table = LazyImport("dedupe.stages", "sources_table")
    RunRecorder = LazyImport("flows.runtime.recorder", "RunRecorder")
    attributes_all = LazyImport("tasks.dedup", "attributes_all")
    cluster_task = LazyImport("tasks.dedup", "cluster_task")
    decide_task = LazyImport("tasks.dedup", "decide_task")
    reference_matches = LazyImport("tasks.dedup", "reference_matches")
    sign_all = LazyImport("tasks.dedup", "sign_all")
    within_edges = LazyImport("tasks.dedup", "within_edges")


@flow(name="dedup", log_prints=True)
def dedup_flow(config: DedupConfig) -> DedupSummary:
    """Deduplicate the output root's document shards (see the module docstring)."""
    logger = get_run_logger()
    out = Path(config.out).resolve()
    with RunRecorder(out, "dedup", None, config) as run:
        summary = DedupSummary(run.run_id, out)
        shards = run.manifest.document_shards(config.sources)
        # Stored copies come first: the smallest number of a cluster is its kept document, so a
        # document already labeled stays the kept copy and a new copy of it is the duplicate.
        stored = run.manifest.stored_copies(config.sources)
        if stored and not shards:  # every document is labeled already: nothing new to decide
            logger.info("dedup: no docs/ shard to decide (%d stored class shards were decided before)", len(stored))
            return summary
        plan = DedupPlan.make(out, [*stored, *shards], config.config_hash(), config.band_layout(),
                              config.join_settings(out), config.minhash.config())
        work, settings, layout = plan.work, plan.settings, plan.layout
        parts = sign_all(plan)
        within = config.within_sources or config.across_sources
        edge_files = [within_edges(plan, parts)] if within else []
        if config.across_sources and config.priority:
            logger.warning("across_sources clusters every source together: the priority chains %s are not used",
                           config.priority)
        counts = cluster_task.submit(work, parts, edge_files, config.across_sources, settings, within,
                                     config.priority_chains()).result()
        reference, reference_docs, index_name = reference_matches(plan, parts, config.against)
        decided = decide_task.submit(work, parts, reference, reference_docs, settings).result()
        summary.attributes = attributes_all(decided, out, shards)
        decided_shards = [path for path, _, _ in shards]  # stored copies were decided by an earlier run
        if not decisions.record_matches(run.manifest, run.run_id, decided, index_name, layout.threshold,
                                        layout.name, decided_shards):
            get_run_logger().warning("a reader holds %s: the matches are queued in %s and land with its next "
                                     "write", run.manifest.path, run.manifest.queue_dir)
        summary.count(parts, len(stored), len(shards), counts["documents"])
        summary.sources = source_counts(decided, work / "roots.parquet", settings, decided_shards)
        if not config.keep_staging:  # a failed run keeps its work files, so a re-run resumes from them
            shutil.rmtree(work, ignore_errors=True)
        run.table("dedup-shards", summary.attributes, "Duplicates and reference matches per shard")
        run.table("dedup-sources", sources_table(summary.sources),
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
