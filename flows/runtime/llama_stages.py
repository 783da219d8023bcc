"""The parent flow's stage runner: run each stage's own flow, record it, resume it.

Each stage is the stage's own flow (``run(config)``: a source's from its
:class:`core.registry.SourceSpec`, the later stages' from their modules). One source failing does not lose the others' work;
a later stage failing stops the stages after it (they would read half-finished output).

Resume: after a stage completes, ``<out>/_state/llama/<stage>.json`` (a :class:`core.markers.Marker`)
records a fingerprint of what the stage read (the previous stage's fingerprint, the stage's
config hash, the document shards) and the stage's outputs with their sizes; a later run with the
same fingerprint and those outputs intact skips the stage.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast
from uuid import UUID

from core.config import PipelineConfig
from core.digest import json_hash
from core.download import is_url
from core.locations import missing_locations
from core.markers import Marker
from core.released import recreated
from core.version import code_version
from flows.runtime.lazy import LazyImport
from flows.runtime.llama_crawl import resolve_latest
from flows.runtime.runner import worker_count

if TYPE_CHECKING:
    from prefect import get_run_logger
    from prefect.artifacts import create_progress_artifact, update_progress_artifact

    from core.manifest import Manifest
    from flows.runtime.recorder import current_run_id
else:  # a run needs them (Prefect, DuckDB): not ``python -m flows.llama --help``
    get_run_logger = LazyImport("prefect", "get_run_logger")
    create_progress_artifact = LazyImport("prefect.artifacts", "create_progress_artifact")
    update_progress_artifact = LazyImport("prefect.artifacts", "update_progress_artifact")
    Manifest = LazyImport("core.manifest", "Manifest")
    current_run_id = LazyImport("flows.runtime.recorder", "current_run_id")

#: A Common Crawl id in an input list (``CC-MAIN-2023-06``, ``CC-MAIN-latest``): read from data.commoncrawl.org.
CRAWL_ID = re.compile(r"CC-MAIN-(?:\d{4}-\d{2}|latest)")
#: What a stage's ``run`` result says it wrote (the marker checks these are still intact).
Outputs = Callable[[Any, Any], list[Path]]


@dataclass(frozen=True)
class StageFlow:
    """What runs a stage: its flow's ``run(config)``, its config class, its YAML under ``configs/``."""

    run: Callable[[Any], Any]
    config: type[PipelineConfig]
    default_yaml: str


@dataclass
class StageResult:
    """One row of the stage table."""

    stage: str
    #: completed, partial, resumed (a later stage finished before with the same inputs: not run),
    #: nothing to do (a source whose every input finished before for this config), skipped, failed
    status: str
    seconds: float = 0.0
    detail: str = ""
    #: Documents the stage went through (a source: records read), for the progress line's rate.
    documents: int | None = None

    def per_second(self) -> float | None:
        """Documents per second of the stage's wall time; None when it went through none (resumed, skipped)."""
        return self.documents / self.seconds if self.documents and self.seconds > 0 else None

    def rate(self) -> str:
        """``1,234 documents, 56.7 documents/s``, or ``""`` when there is no rate."""
        per_second = self.per_second()
        return "" if per_second is None else f"{self.documents:,} documents, {per_second:,.1f} documents/s"


@dataclass
class LlamaSummary:
    """What the parent flow returns."""

    run_id: str
    out: Path
    stages: list[StageResult] = field(default_factory=list)
    sources: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> list[StageResult]:
        """Stages that failed or finished with failed inputs."""
        return [s for s in self.stages if s.status in ("failed", "partial")]

    def status(self, stage: str) -> str | None:
        """The status of ``stage`` (first match), or None when it was not reached."""
        return next((s.status for s in self.stages if s.stage == stage), None)


# -- resume markers -------------------------------------------------------------------------
def fingerprint(*parts: Any) -> str:
    """A short hash of JSON-able parts."""
    return json_hash(parts, 20, default=str)


def final_shards(out: Path) -> list[tuple[str, str]]:
    """``(path, sha256)`` of the final document shards in the manifest: what later stages read."""
    manifest = Manifest.for_output(out)
    if not manifest.path.exists():
        return []
    return sorted((str(shard["path"]), str(shard["sha256"])) for shard in manifest.final_shards())


def marker_path(out: Path, stage: str) -> Path:
    """Where a finished stage's fingerprint is kept."""
    return out / "_state" / "llama" / f"{stage}.json"


def stage_marker(out: Path, stage: str, print_: str) -> Marker:
    """The stage's completion marker, valid for one fingerprint."""
    return Marker(marker_path(out, stage), {"fingerprint": print_})


def stage_is_done(out: Path, stage: str, print_: str) -> bool:
    """Finished before with the same inputs and config, and its outputs are still there, same size."""
    if stage == "labels" and recreated(out):  # a source wrote released docs/ shards again: release them
        return False
    marker = stage_marker(out, stage, print_)
    payload = marker.read()
    if payload is None:
        return False
    outputs = payload.get("outputs", [])
    if any(isinstance(o, str) for o in outputs):  # written before markers recorded sizes: existence only
        return all(Path(o).exists() for o in outputs)
    return marker.load(out) is not None


def mark_done(out: Path, stage: str, print_: str, outputs: list[Path]) -> None:
    """Record a finished stage (atomically: a crash leaves the old marker or none)."""
    entries = [{"path": _under(out, p), "bytes": p.stat().st_size} for p in outputs]
    stage_marker(out, stage, print_).write({"code_version": code_version()}, entries)


def _under(out: Path, path: Path) -> str:
    """``path`` relative to the output root when inside it (the root may move), else absolute."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(out.resolve()).as_posix()
    except ValueError:
        return str(resolved)


# -- the run --------------------------------------------------------------------------------
@contextlib.contextmanager
def shared_dask_cluster(config: PipelineConfig) -> Iterator[str | None]:
    """With ``runner: dask`` and no address, one LocalCluster for every sub-flow (not one per stage)."""
    if config.runner != "dask" or config.dask_address:
        yield config.dask_address
        return
    from distributed import LocalCluster

    workers = worker_count(config)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def missing_inputs(locations: list[str]) -> bool:
    """True when every local input pattern of a source matches nothing (URLs and Common Crawl ids,
    which the source downloads, count as present; no location at all is not "missing")."""
    missing = missing_locations(locations, remote=lambda loc: is_url(loc) or CRAWL_ID.fullmatch(loc) is not None)
    return bool(locations) and len(missing) == len(locations)


def source_row(name: str, summary: Any, seconds: float) -> dict[str, Any]:
    """One source's row of the ``llama-sources`` table: inputs, kept, drops by reason, throughput."""
    records = list(getattr(summary, "records", []))
    reasons: dict[str, int] = {}
    for rec in records:
        for drop in rec.drops:
            reasons[drop["reason"]] = reasons.get(drop["reason"], 0) + drop["count"]
    text_bytes = sum(s["text_bytes"] for rec in records for s in rec.shards)
    kept = sum(rec.docs_kept for rec in records)
    return {
        "source": name, "inputs": len(records), "records_in": sum(r.records_in for r in records), "kept": kept,
        "dropped": sum(reasons.values()), "drop_reasons": ", ".join(f"{k}={v}" for k, v in sorted(reasons.items())),
        "text_bytes": text_bytes, "seconds": round(seconds, 2),
        "docs_per_s": round(kept / seconds, 1) if seconds else None,
        "text_mb_per_s": round(text_bytes / 1e6 / seconds, 3) if seconds else None,
    }


class ParentConfig(Protocol):
    """What the stage runner reads of the parent flow's config (``flows.llama.LlamaConfig``).

    A protocol, not the class: the parent flow imports this module, so naming its class here
    (even for type checking only) would make the two modules a circle (``tests/test_layout_rules.py``).
    """

    out: Path
    dataset: str
    sources: dict[str, dict[str, Any] | None]
    skip_missing: bool
    crawl_index_url: str
    pii_redact: bool

    def selected_sources(self) -> list[str]: ...

    def source_locations(self, name: str) -> list[str]: ...

    def stage_flow(self, stage: str) -> StageFlow: ...

    def stage_config(self, stage: str, section: dict[str, Any],
                     forced: dict[str, Any] | None = None) -> PipelineConfig: ...


Config = TypeVar("Config", bound=ParentConfig)


class StageRun(Generic[Config]):
    """The parent flow's state: config, output root, the stage table, the progress artifact."""

    def __init__(self, config: Config, dask_address: str | None, planned: int) -> None:
        self.config = config
        self.out = Path(config.out).resolve()
        self.logger = get_run_logger()
        self.summary = LlamaSummary(current_run_id(), self.out)
        self.runtime = {"dask_address": dask_address} if dask_address else {}
        self.planned = planned
        self.progress = cast(UUID, create_progress_artifact(0.0, description=f"{config.dataset}: stages finished"))
        self.finished = 0
        self.fingerprint = ""
        self.broken = ""

    def step(self) -> None:
        self.finished += 1
        update_progress_artifact(self.progress, progress=100.0 * self.finished / max(self.planned, 1))

    def record(self, result: StageResult) -> StageResult:
        """Add a row to the stage table and say it: ``[3/11] stage github: completed in 7.6 s (...)``."""
        self.summary.stages.append(result)
        log = self.logger.error if result.status in ("failed", "partial") else self.logger.info
        rate = result.rate()
        log("[%d/%d] stage %s: %s in %.1f s%s: %s", len(self.summary.stages), self.planned, result.stage, result.status,
            result.seconds, f" ({rate})" if rate else "", result.detail)
        return result

    # sources -------------------------------------------------------------------------------
    def run_sources(self) -> None:
        for name in self.config.selected_sources():
            section = dict(self.config.sources[name] or {})
            if self.config.pii_redact:  # a dataset-wide switch (G.2's file): every source redacts
                section.setdefault("pii_redact", True)
            if self.config.skip_missing and missing_inputs(self.config.source_locations(name)):
                self.record(StageResult(name, "skipped", detail="no local input matches; skip_missing is on"))
                self.step()
                continue
            started = time.perf_counter()
            try:
                stage = self.config.stage_flow(name)
                section = resolve_latest(section, self.config.crawl_index_url)
                summary = stage.run(self.config.stage_config(name, section, self.runtime))
            except Exception as exc:  # one source must not lose the others' work
                self.record(StageResult(name, "failed", time.perf_counter() - started, f"{type(exc).__name__}: {exc}"))
                self.step()
                continue
            seconds = time.perf_counter() - started
            self.summary.sources[name] = source_row(name, summary, seconds)
            self.record(source_result(name, summary, seconds))
            self.step()
        self.fingerprint = fingerprint("sources", final_shards(self.out))

    # later stages --------------------------------------------------------------------------
    def run_stage(self, stage: str, forced: dict[str, Any], outputs: Outputs, extra: Any = None) -> Any:
        """Run one of pile_index/dedup/labels/tokenize unless its fingerprint says it is done."""
        if self.broken:
            self.record(StageResult(stage, "skipped", detail=f"an earlier stage did not complete: {self.broken}"))
            self.step()
            return None
        section = dict(getattr(self.config, stage) or {})
        started = time.perf_counter()
        try:
            flow = self.config.stage_flow(stage)
            config = self.config.stage_config(stage, section, {**self.runtime, **forced})
            print_ = fingerprint(stage, self.fingerprint, config.config_hash(), extra)
            if stage_is_done(self.out, stage, print_):
                self.fingerprint = print_
                self.record(StageResult(stage, "resumed", detail="finished before with the same inputs and config"))
                return None
            result = flow.run(config)
            status, detail = stage_status(stage, result)
            documents = stage_documents(stage, result)
        except Exception as exc:  # later stages would read half-finished output: stop, report, re-run resumes
            self.broken = stage
            self.record(StageResult(stage, "failed", time.perf_counter() - started, f"{type(exc).__name__}: {exc}"))
            return None
        finally:
            self.step()
        self.record(StageResult(stage, status, time.perf_counter() - started, detail, documents))
        if status == "completed":
            mark_done(self.out, stage, print_, outputs(config, result))
        else:
            self.broken = stage
        self.fingerprint = print_
        return result


def source_result(name: str, summary: Any, seconds: float) -> StageResult:
    """A source's row: ``nothing to do`` when every input had finished before (a resumed run),
    ``partial`` when an input failed, else ``completed``; documents: the records read now."""
    failed = [r.location for r in summary.failed]
    if getattr(summary, "nothing_to_do", False):
        inputs = len(summary.records)
        return StageResult(name, "nothing to do", seconds, f"{'the input' if inputs == 1 else f'all {inputs} inputs'} "
                           f"finished before for this config ({summary.kept} documents kept)")
    read = sum(r.records_in for r in summary.records)
    return StageResult(name, "partial" if failed else "completed", seconds,
                       f"{summary.kept} of {read} documents kept" + (f"; failed inputs: {failed}" if failed else ""),
                       read)


def stage_documents(stage: str, result: Any) -> int:
    """Documents a later stage went through: indexed, deduplicated, labeled, tokenized."""
    if stage in ("pile_index", "dedup", "decontaminate"):
        return int(result.documents)
    if stage == "labels":
        return sum(sum(r.counts.values()) for r in result)
    totals = result["metadata"]["totals"]
    return int(totals["train"]["docs"]) + int(totals["holdout"]["docs"])


def stage_status(stage: str, result: Any) -> tuple[str, str]:
    """Completed or partial, and a one-line detail, from what each stage flow returns."""
    if stage == "pile_index":
        return "completed", f"{result.documents} reference documents in {len(result.parts)} parts"
    if stage == "dedup":
        return ("partial" if result.failed else "completed",
                f"{result.documents} documents, {result.duplicates} duplicates, {result.reference_matches} in reference")
    if stage == "decontaminate":
        return ("partial" if result.failed else "completed",
                f"{result.contaminated} contaminated documents of {result.documents} checked against {result.items} items")
    if stage == "labels":
        errors = [r.error for r in result if r.error]
        counts: dict[str, int] = {}
        for r in result:
            for k, v in r.counts.items():
                counts[k] = counts.get(k, 0) + v
        return ("partial" if errors else "completed", json.dumps(dict(sorted(counts.items()))))
    failed = [r["input"] for r in result["records"] if r["status"] != "done"]
    totals = result["metadata"]["totals"]
    return ("partial" if failed else "completed",
            f"{totals['train']['tokens']} train + {totals['holdout']['tokens']} holdout tokens")


def dedup_outputs(config: Any, result: Any) -> list[Path]:
    return [Path(config.out) / a["attributes"] for a in result.attributes]


def decontaminate_outputs(config: Any, result: Any) -> list[Path]:
    from dedupe.decontaminate import contamination_path

    return [contamination_path(Path(config.out), c.shard) for c in result.checks]


def label_outputs(config: Any, result: Any) -> list[Path]:
    return [Path(config.out) / s["path"] for r in result for s in r.shards]


def tokenize_outputs(config: Any, result: Any) -> list[Path]:
    return [Path(result["out"]) / "metadata.json"]


def index_outputs(config: Any, result: Any) -> list[Path]:
    return [Path(result.root) / "index.json"]
