"""Label flow: split each final document shard into its membership classes, labeled G1/G2/G3.

    python -m flows.label --data data/ --config configs/labels.yaml
    kinda manifest sql "SELECT source, sum(docs) FROM shards WHERE list_contains(labels,'G3') GROUP BY 1"

The classes, their labels and the "one copy of each document" rule are in :mod:`dedupe.labels`
(pure logic): class shards under ``labeled/<class>/…`` become the documents' only copy and the
``docs/`` shard they came from is released (deleted, recorded in ``_state/released/`` and the
manifest's ``released`` table), so counts over ``shards`` see each document once. This module
is the Prefect part: the tasks, the manifest rows, the artifact.

A label run is small next to the runs before it (a new threshold over a finished root re-labels
every shard, but reads only Parquet it wrote itself): on the G.2 sample its 44 shards take about
1 CPU-s, while starting the worker processes cost about 12 CPU-s. So a run of at most
:data:`INLINE_SHARDS` shards and :data:`INLINE_TEXT_BYTES` of text labels in the flow's process,
one task per source (:func:`inline_groups`), and only a larger one submits one task per shard to
the configured runner. Either way every shard is a resumable unit of its own (its marker).

The flow's whole body is :func:`label_root`; :func:`relabel` runs it without Prefect
(``kinda filters apply``, what a user runs after changing a threshold): on the G.2 sample the
re-label is then about 2.5 CPU-s in all instead of about 10 for a Prefect flow run (imports, its
API server, flow and task runs), with the same class shards byte for byte.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from core.config import PipelineConfig
from core.registry import Kind
from core.version import code_version
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import NO_CACHE, LazyImport, flow, task

if TYPE_CHECKING:
    from core.manifest import Manifest, Statement
    from dedupe.labels import LabelJob, LabelResult, check_rules, label_shard, stale_labeled
    from flows.runtime.recorder import RunRecorder
else:  # only a run needs them (Prefect, pyarrow, DuckDB): not --help or a refused command
    RunRecorder = LazyImport("flows.runtime.recorder", "RunRecorder")
    LabelJob = LazyImport("dedupe.labels", "LabelJob")
    LabelResult = LazyImport("dedupe.labels", "LabelResult")
    check_rules = LazyImport("dedupe.labels", "check_rules")
    label_shard = LazyImport("dedupe.labels", "label_shard")
    stale_labeled = LazyImport("dedupe.labels", "stale_labeled")


class LabelConfig(PipelineConfig):
    """Settings of the label flow (defaults in ``configs/labels.yaml``)."""

    llama_sources: list[str] = Field(default_factory=list, description="document sources labeled G1 (default: "
                                                                       "the registry's llama sources)")
    extension_sources: list[str] = Field(default_factory=list, description="document sources labeled G2 only "
                                                                           "(default: the registry's extensions)")
    drop_duplicates: bool = True
    require_dedup: bool = True
    release_docs: bool = Field(True, description="delete each docs/ shard once its documents are in class shards "
                                                 "(one copy on disk); false keeps both copies")
    reference_excludes: dict[str, list[str]] = Field(
        default_factory=dict, description="extension source -> Pile subsets (pile_set_name) whose matches leave "
                                          "its documents out of G2 ({stack_code: [Github]}); see dedupe.labels")
    filters: dict[str, Any] = Field(
        default_factory=dict, description="thresholds over the signals attribute, group -> {<signal>_min/_max: v}, "
                                          "a list of {signal, op, value} or 'defaults' (dedupe.signal_filters); "
                                          "a failing document goes to class 'filtered' (no set)")
    drop_contaminated: bool = Field(True, description="documents the decontaminate stage marked go to class "
                                                      "'contaminated' (no set); false keeps them in their sets")

    @model_validator(mode="before")
    @classmethod
    def _lists_from_the_registry(cls, data: Any) -> Any:
        """A source list the settings leave out is the registry's (:data:`flows.registry.SOURCES`, each
        spec's ``kind``), less the names the other list gives: no YAML keeps a copy of the sources."""
        if not isinstance(data, dict) or {"llama_sources", "extension_sources"} <= data.keys():
            return data
        from flows.registry import SOURCES  # the specs' modules: configs and flags, no Prefect

        filled = dict(data)
        lists: tuple[tuple[str, Kind, str], ...] = (("llama_sources", "llama", "extension_sources"),
                                                    ("extension_sources", "extension", "llama_sources"))
        for key, kind, other in lists:
            if key not in data:
                given = set(data.get(other) or ())
                filled[key] = [name for name in SOURCES.documents(kind) if name not in given]
        return filled

    @model_validator(mode="after")
    def _sets_well_defined(self) -> LabelConfig:
        """No source in both lists, no Pile subset as a LLaMA source, excludes only for extensions; filters parse."""
        check_rules(self.llama_sources, self.extension_sources, self.reference_excludes)
        from dedupe.signal_filters import parse_filters  # pure, no numba

        parse_filters(self.filters)
        return self

    def output_fields(self) -> dict[str, Any]:
        """Without filters and with contaminated documents dropped (the defaults) the hash is the one
        label runs had before these settings existed, so their markers and class shards stand."""
        fields = super().output_fields()
        if not fields.get("filters"):
            fields.pop("filters", None)
        if fields.get("drop_contaminated") is True:
            fields.pop("drop_contaminated", None)
        return fields

    def job(self) -> LabelJob:
        """The picklable settings each shard task needs."""
        from dedupe.signal_filters import parse_filters

        return LabelJob(tuple(self.llama_sources), tuple(self.extension_sources), self.drop_duplicates,
                        self.config_hash(), self.shards.limits(), self.require_dedup, self.release_docs,
                        {source: tuple(sets) for source, sets in sorted(self.reference_excludes.items())},
                        parse_filters(self.filters), self.drop_contaminated)


@task(name="label-shard", cache_policy=NO_CACHE, task_run_name="label {path}")
def label_task(out: Path, path: str, shard: dict[str, Any], job: LabelJob) -> LabelResult:
    """One document shard -> its classes' shards (and the release of the docs/ copy)."""
    return label_shard(out, shard, job)


@task(name="label-shards", cache_policy=NO_CACHE, task_run_name="label {name}")
def label_group_task(out: Path, name: str, shards: list[dict[str, Any]], job: LabelJob) -> list[LabelResult]:
    """Several document shards, one after another, in the process that calls it (a small run)."""
    return [label_shard(out, shard, job) for shard in shards]


#: Largest run labeled in the flow's process: a few CPU-seconds of work at most, less than
#: starting a pool of worker processes costs (each imports Prefect's task engine and the pipeline).
INLINE_SHARDS = 200
INLINE_TEXT_BYTES = 32 << 20


def inline_groups(shards: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]] | None:
    """The shards per task name when the run is small enough to label in the flow's process
    (one task per source, in manifest order), else None (one task per shard on the runner)."""
    text = sum(int(shard.get("text_bytes") or shard.get("bytes") or 0) for shard in shards)
    if len(shards) > INLINE_SHARDS or text > INLINE_TEXT_BYTES:
        return None
    groups: dict[str, list[dict[str, Any]]] = {}
    for shard in shards:
        groups.setdefault(str(shard["source"]), []).append(shard)
    return {f"{source} ({len(group)} shard{'s' if len(group) != 1 else ''})": group
            for source, group in groups.items()}


#: How a run labels its shards: (output root, the shards, the job) -> each shard's result, in order.
Labeler = Callable[[Path, list[dict[str, Any]], "LabelJob"], list["LabelResult"]]


def label_all(out: Path, shards: list[dict[str, Any]], job: LabelJob) -> list[LabelResult]:
    """Every shard's result, in manifest order: in this process for a small run, else on the runner."""
    groups = inline_groups(shards)
    if groups is not None:
        done = {r.shard: r for name, group in groups.items() for r in label_group_task(out, name, group, job)}
        return [done[shard["path"]] for shard in shards]
    futures = [label_task.submit(out, shard["path"], shard, job) for shard in shards]
    return [f.result() for f in futures]


def record_releases(manifest: Manifest, run_id: str, results: list[LabelResult]) -> int:
    """Move released shards from ``shards`` to ``released`` (one transaction; queued while a reader holds the file)."""
    released = [r.released for r in results if r.released]
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    statements: list[Statement] = []
    for rec in released:
        statements.append(("INSERT OR REPLACE INTO released VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           [rec["path"], rec["source"], rec["language"], rec["docs"], rec["text_bytes"], rec["bytes"],
                            rec["sha256"], [s["path"] for s in rec["into"]], rec["dropped"], run_id, now], False))
        statements.append(("DELETE FROM shards WHERE path = ?", [rec["path"]], False))
    manifest.write(statements)
    return len(released)


def label_root(config: LabelConfig, run: RunRecorder, label: Labeler) -> list[LabelResult]:
    """Label every document shard of the output root with ``label``, recorded in ``run``: the label
    stage's whole work, the same in the Prefect flow and outside Prefect (only ``label`` differs)."""
    from dedupe.labels import CLASS_LABELS, LABELED

    logger = run.logger
    out = Path(config.out).resolve()
    shards = run.manifest.final_shards()  # docs/ and released by an earlier run
    results = label(out, shards, config.job())
    written = [s for r in results for s in r.shards]
    failed = any(r.error for r in results)
    if not failed:  # a failed shard's earlier class shards may be its documents' only copy: keep them
        for path in stale_labeled(out, {s["path"] for s in written}):
            path.unlink()
    run.manifest.record_shards(run.run_id, written, config.config_hash(), "label", code_version(),
                               replace_prefix=None if failed else f"{LABELED}/")
    released = record_releases(run.manifest, run.run_id, results)
    totals: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    for result in results:
        totals.update(result.counts)
        rules.update(result.rules)
        if result.error:
            logger.error("%s", result.error)
    run.table("label-classes", [{"class": k, "documents": v, "labels": " ".join(CLASS_LABELS.get(k, []))}
                                for k, v in sorted(totals.items())], "Documents per membership class")
    if rules:
        run.table("label-filters", [{"rule": k, "documents failing": v} for k, v in sorted(rules.items())],
                  "Documents failing each filter rule (a document may fail several; each is filtered once)")
        logger.info("filters: %s", dict(sorted(rules.items())))
    logger.info("labels: %s; %d docs/ shards released into their class shards", dict(sorted(totals.items())),
                released)
    run.status = "partial" if failed else "completed"
    return results


@flow(name="label", log_prints=True)
def label_flow(config: LabelConfig) -> list[LabelResult]:
    """Label every document shard of the output root (see the module docstring)."""
    with RunRecorder(Path(config.out), "label", None, config) as run:
        return label_root(config, run, label_all)


def label_without_prefect(out: Path, shards: list[dict[str, Any]], job: LabelJob,
                          workers: int = 0) -> list[LabelResult]:
    """Every shard's result, in manifest order, with no Prefect task: in this process for a small
    run (:func:`inline_groups`), else on a pool of ``workers`` processes (0: one per core)."""
    if inline_groups(shards) is not None:
        return [label_shard(out, shard, job) for shard in shards]
    from concurrent.futures import ProcessPoolExecutor
    from itertools import repeat

    from core import lifeline

    # the workers die with this command (a kill -9 of it leaves none writing into the root) and
    # count as writers of it, as the flow's pool workers do
    with ProcessPoolExecutor(max_workers=workers or None, initializer=lifeline.start_worker,
                             initargs=(os.getpid(), str(out.resolve()))) as pool:
        return list(pool.map(label_shard, repeat(out), shards, repeat(job)))


def relabel(config: LabelConfig) -> list[LabelResult]:
    """The label stage run outside Prefect (``kinda filters apply``), recorded in the manifest as a
    ``label`` run like the flow's: a re-label after a changed threshold reads only Parquet the
    pipeline wrote and labels in about a CPU-second on a sample, while a Prefect flow run costs
    several (Prefect's imports, its API server, the flow and task runs: docs/curation.md). The
    class shards are the flow's byte for byte: the same :func:`label_root` and ``label_shard``."""
    with RunRecorder(Path(config.out), "label", None, config) as run:
        return label_root(config, run, lambda out, shards, job: label_without_prefect(out, shards, job,
                                                                                        config.workers))


def report(results: list[LabelResult]) -> int:
    """What the command prints after a run; exit 1 when a shard could not be labeled."""
    totals: Counter[str] = Counter()
    for result in results:
        totals.update(result.counts)
        if result.error:
            print(f"error: {result.error}", file=sys.stderr)
    print("documents per class:", dict(sorted(totals.items())))
    rules: Counter[str] = Counter()
    for result in results:
        rules.update(result.rules)
    if rules:
        print("documents failing each filter rule:", dict(sorted(rules.items())))
    print(f"docs/ shards released into labeled/: {sum(1 for r in results if r.released)}")
    return 1 if any(r.error for r in results) else 0


cli = FlowCLI(label_flow, LabelConfig, "labels.yaml", __doc__, report=report, flags=[
    Flag("--data", "out", "output root (same as --out)", type=Path),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main


if __name__ == "__main__":
    sys.exit(main())
