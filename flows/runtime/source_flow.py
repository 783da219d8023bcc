"""The generic source flow: inputs -> stage per input -> run-wide exact dedup -> finalize -> manifest.

Every source flow (``flows/wikipedia.py`` and the others) is a thin wrapper: a typed config, a
recipe object (:class:`core.pipeline.SourceRecipe`) and a list of input locations. This module
does the rest, the same way for every source:

1. resolve inputs (local globs, or URLs fetched by a retrying ``download`` task into the cache);
2. hand them to the driver, :func:`core.driver.drive_source`, with the Prefect executor
   (:class:`tasks.executor.PrefectExecutor`): resume, a ``stage-input`` task per input, one
   ``exact-dedup`` task over the whole run, a ``finalize-input`` task per input (final shards
   under ``<out>/docs/<source>/<partition>/``), clean staging;
3. the flow process alone writes the manifest (through :class:`flows.runtime.recorder.RunRecorder`),
   then publishes a table artifact with counts per language and a markdown artifact pointing
   to the shards and the manifest.

A source that needs more declares it with :class:`core.driver.SourcePhases` (importable from
here too), the one hook: work before staging (Common Crawl's extraction and paragraph dedup,
StackExchange's site ranking) and drops added after exact dedup (book near-dedup), each with
its own reason in the data.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from uuid import UUID

from core.atomic import write_json_atomic
from core.config import PipelineConfig
from core.document import MULTIPLE, InputSpec
from core.download import algorithm_for, is_url, load_checksums
from core.locations import expand_locations  # the source flows import it from here
from flows.runtime.lazy import LazyImport

if TYPE_CHECKING:
    from prefect import get_run_logger
    from prefect.artifacts import (
        create_markdown_artifact,
        create_progress_artifact,
        create_table_artifact,
        update_progress_artifact,
    )

    from core import pipeline
    from core.driver import PhaseRun, SourcePhases, Splitter, drive_source, finished_before
    from core.manifest import InputRecord, Manifest
    from flows.runtime.recorder import RunRecorder
    from tasks.executor import PrefectExecutor
    from tasks.pipeline import download_task
else:  # what only a run needs (Prefect, pyarrow): not imported by --help or a refused command
    Manifest = LazyImport("core.manifest", "Manifest")
    get_run_logger = LazyImport("prefect", "get_run_logger")
    create_markdown_artifact = LazyImport("prefect.artifacts", "create_markdown_artifact")
    create_progress_artifact = LazyImport("prefect.artifacts", "create_progress_artifact")
    create_table_artifact = LazyImport("prefect.artifacts", "create_table_artifact")
    update_progress_artifact = LazyImport("prefect.artifacts", "update_progress_artifact")
    pipeline = LazyImport("core.pipeline")
    SourcePhases = LazyImport("core.driver", "SourcePhases")
    drive_source = LazyImport("core.driver", "drive_source")
    finished_before = LazyImport("core.driver", "finished_before")
    RunRecorder = LazyImport("flows.runtime.recorder", "RunRecorder")
    PrefectExecutor = LazyImport("tasks.executor", "PrefectExecutor")
    download_task = LazyImport("tasks.pipeline", "download_task")


@dataclass
class SourceRunSummary:
    """What a source flow returns (and prints): where output went and what was counted."""

    run_id: str
    out: Path
    records: list[InputRecord] = field(default_factory=list)
    #: Every input had finished before for this config: the run only read their markers.
    nothing_to_do: bool = False

    @property
    def kept(self) -> int:
        """Documents in the final shards."""
        return sum(r.docs_kept for r in self.records)

    @property
    def failed(self) -> list[InputRecord]:
        """Inputs that could not be processed."""
        return [r for r in self.records if r.status == "failed"]


def _expected_sum(location: str, sums: dict[str, str]) -> dict[str, str] | None:
    digest = sums.get(Path(location).name)
    return {algorithm_for(digest): digest} if digest else None


def resolve_inputs(
    config: PipelineConfig, locations: Sequence[str], checksums: Sequence[str] = ()
) -> list[InputSpec]:
    """Turn locations into local InputSpecs, downloading URLs (in parallel tasks) first.

    ``checksums`` are checksum lists (paths or URLs, ``<hex>  <file name>`` lines) that downloads
    are verified against, matched by file name.
    """
    expanded = expand_locations(locations)
    sums: dict[str, str] = {}
    for checksum_list in checksums:
        sums.update(load_checksums(checksum_list, config.cache_root))
    futures = {
        loc: download_task.submit(loc, config.cache_root, _expected_sum(loc, sums))
        for loc in expanded if is_url(loc)
    }
    specs = []
    for loc in expanded:
        path = futures[loc].result().path if loc in futures else Path(loc)
        specs.append(InputSpec(location=loc, path=path, key=Path(loc).name))
    keys = Counter(spec.key for spec in specs)
    clashes = [k for k, n in keys.items() if n > 1]
    if clashes:
        raise ValueError(f"inputs must have distinct file names; repeated: {clashes}")
    return specs


class Progress:
    """The driver's progress callback: a progress artifact in Prefect and, on a terminal, a tqdm bar.

    Created on the first call (``done=0``, when the driver knows how many input tasks there are).
    """

    def __init__(self, label: str, enabled: bool) -> None:
        self.label, self.enabled = label, enabled
        self.artifact: UUID | None = None
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self.artifact is None:
            # sync context: Prefect returns the id itself, not a coroutine (its return type covers both)
            self.artifact = cast(UUID, create_progress_artifact(0.0, description=self.label))
            if self.enabled and sys.stderr.isatty():
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=self.label, unit="input")
        if done:
            update_progress_artifact(self.artifact, progress=100.0 * done / max(total, 1))
            if self.bar is not None:
                self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_scratch(out: Path, name: str) -> Path:
    """A source's own scratch folder, ``<out>/_staging/<name>_scratch``, when the user set none.

    Inside ``--out``, not the system temp folder, so a run's files stay under the root its lock
    guards and a crash leaves them where the next run finds and removes them.
    """
    return Path(out).resolve() / "_staging" / f"{name}_scratch"


def sweep_scratch(scratch: Path) -> None:
    """Remove a run's own scratch folder, and ``_staging`` too once nothing else stages there.

    Called in the flow process while it holds the output root's lock, so no live reader of this
    root can be using the folder. A ``scratch_dir`` the user chose is never swept (other runs may
    share it); each reader removes its own folder there when it ends.
    """
    shutil.rmtree(scratch, ignore_errors=True)
    with contextlib.suppress(OSError):
        scratch.parent.rmdir()


def scratch_phases(scratch: Path, before: SourcePhases | None = None) -> SourcePhases:
    """``before`` (or no phases) plus: sweep ``scratch`` before staging (what a killed run left) and
    after a clean run."""
    base = before or SourcePhases()

    def before_stage(ctx: pipeline.RunContext, specs: list[InputSpec], run: PhaseRun) -> dict[str, InputRecord]:
        sweep_scratch(scratch)
        return base.before_stage(ctx, specs, run) if base.before_stage else {}

    def cleanup(ctx: pipeline.RunContext, keys: list[str]) -> None:
        if base.cleanup:
            base.cleanup(ctx, keys)
        sweep_scratch(scratch)

    return dataclasses.replace(base, before_stage=before_stage, cleanup=cleanup)


def write_input_lists(
    directory: Path, prefix: str, suffix: str, items: Sequence[Any], per_list: int,
    payload: Callable[[Sequence[Any]], dict[str, Any]],
) -> list[str]:
    """Group many small inputs into list files ``<prefix>-00000<suffix>``; return their paths.

    One task per tiny file would cost more in Prefect overhead than in work, so sources made of
    many small files (repos, books) batch them. A list file is rewritten only when its content
    changes, so its mtime, and with it the input fingerprint, stays put and resume works.
    """
    paths: list[str] = []
    for index, start in enumerate(range(0, len(items), max(1, per_list))):
        target = directory / f"{prefix}-{index:05d}{suffix}"
        content = payload(items[start: start + per_list])
        text = json.dumps(content, sort_keys=True, indent=1, ensure_ascii=False)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            write_json_atomic(target, content)
        paths.append(str(target))
    return paths


def run_source(
    flow_name: str, config: PipelineConfig, recipe: pipeline.SourceRecipe, locations: Sequence[str],
    checksums: Sequence[str] = (), phases: SourcePhases | None = None, split: Splitter | None = None,
) -> SourceRunSummary:
    """Run one source over its inputs; call from inside a Prefect flow.

    The flow's part: record the run, check it can start, resolve (download) the inputs, then
    hand them to the driver (:func:`core.driver.drive_source`) with the Prefect executor, and
    publish what came out. ``split`` cuts an input into range tasks (Wikipedia's multistream dumps).
    """
    logger = get_run_logger()
    out = Path(config.out).resolve()
    with RunRecorder(out, flow_name, recipe.name, config) as run:
        config.preflight()  # e.g. no language-ID model: the run fails (in Prefect too), not every input
        specs = resolve_inputs(config, locations, checksums)
        ctx = pipeline.RunContext(out, recipe.name, config.config_hash(), config.shards.limits(), recipe.name,
                                  config.exact_dedup_memory, config.spill_dir, redact_pii=config.pii_redact)
        progress = Progress(f"{recipe.name}: stage + finalize", config.progress)
        nothing_to_do = finished_before(specs, ctx) is not None
        try:
            records = drive_source(recipe, specs, ctx, PrefectExecutor(), phases=phases, split=split,
                                   keep_staging=config.keep_staging, progress=progress, logger=logger)
        finally:
            progress.close()
        run.inputs(records, recipe=flow_name)
        summary = SourceRunSummary(run.run_id, out, records, nothing_to_do)
        publish_summary(summary, run.manifest)
        for key, rows, description in (phases.tables() if phases and phases.tables else []):
            run.table(key, rows, description)
        for line in silent_input_lines(records):
            logger.warning(line)
        logger.info("%s: %d inputs, %d documents kept -> %s", flow_name, len(records), summary.kept,
                    out / "docs" / recipe.name)
        return summary


def silent_input_lines(records: Sequence[InputRecord]) -> list[str]:
    """One line per input that gave nothing, with its reason (never silent).

    Skipped, yielded no record, or read but every record dropped: the last is how a source of
    one document per file (a book, a PDF) holds nothing, and the drop reasons say why.
    """
    lines = []
    for rec in records:
        if rec.status == "skipped":
            lines.append(f"input skipped: {rec.location}: {rec.error or 'no reason given'}")
        elif rec.status == "failed":
            continue
        elif rec.records_in == 0:
            lines.append(f"input yielded no records: {rec.location}{_listed(rec.location)} "
                         "(is it the right file and format?)")
        elif rec.docs_kept == 0:
            reasons = ", ".join(f"{d['reason']}={d['count']}" for d in rec.drops)
            lines.append(f"input kept nothing: {rec.location}{_listed(rec.location)}: all {rec.records_in} "
                         f"record(s) dropped ({reasons})")
    return lines


def _listed(location: str, most: int = 5) -> str:
    """`` (lists: a, b)``: the files a run-made input list (``<out>/_inputs/``) groups, else ``""``.

    Many small files (books, articles, clones) run as one list input; the user gave the files,
    not the list, so a line about the list must name them to be any use.
    """
    path = Path(location)
    if "_inputs" not in path.parts or not path.is_file():
        return ""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    entries = [e for v in payload.values() if isinstance(v, list) for e in v] if isinstance(payload, dict) else []
    names = [str(e.get("path") or e.get("root")) if isinstance(e, dict) else str(e) for e in entries]
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return f" (lists: {', '.join(names[:most])}{more})" if names else ""


def language_table(records: Sequence[InputRecord]) -> list[dict[str, Any]]:
    """Rows per language: inputs, records read, kept, dropped (by reason), bytes."""
    rows: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"inputs": 0, "records_in": 0, "kept": 0, "dropped": 0, "text_bytes": 0, "shard_bytes": 0,
                 "reasons": Counter()}
    )
    for rec in records:
        row = rows[rec.language or MULTIPLE]  # an input of no one language: its documents each have their own
        row["inputs"] += 1
        row["records_in"] += rec.records_in
        row["kept"] += rec.docs_kept
        row["text_bytes"] += sum(s["text_bytes"] for s in rec.shards)
        row["shard_bytes"] += sum(s["bytes"] for s in rec.shards)
        for drop in rec.drops:
            row["dropped"] += drop["count"]
            row["reasons"][drop["reason"]] += drop["count"]
    table = []
    for language in sorted(rows):
        row = rows[language]
        reasons = ", ".join(f"{k}={v}" for k, v in sorted(row.pop("reasons").items()))
        table.append({"language": language, **row, "drop_reasons": reasons})
    return table


def publish_summary(summary: SourceRunSummary, manifest: Manifest) -> None:
    table = language_table(summary.records)
    create_table_artifact(table, key="source-counts", description="Documents per language: kept, dropped by reason")
    failed = "\n".join(f"- `{r.location}`: {r.error}" for r in summary.failed) or "none"
    create_markdown_artifact(
        f"# Output\n\n- shards: `{summary.out / 'docs'}`\n- manifest: `{manifest.path}`\n"
        f"- documents kept: {summary.kept}\n\n## Failed inputs\n{failed}\n",
        key="source-output",
    )


# -- command line -------------------------------------------------------------------------
def print_summary(summary: SourceRunSummary) -> int:
    """Print where the shards are, the manifest summary and any silent inputs; return the exit code.

    Non-zero when an input failed, or when nothing was kept and inputs were skipped, empty or
    all dropped (a run that produced nothing must not look like a success).
    """
    from core.report import format_summary

    print(f"\nshards:   {summary.out / 'docs'}")
    print(f"manifest: {Manifest.for_output(summary.out).path}\n")
    print(format_summary(Manifest.for_output(summary.out)))
    silent = silent_input_lines(summary.records)
    for line in silent:
        print(line, file=sys.stderr)
    if summary.failed:
        return 1
    if summary.kept == 0 and silent:
        print(f"error: no document kept from {len(summary.records)} input(s): {len(silent)} skipped, empty or all dropped "
              "(see the lines above)", file=sys.stderr)
        return 1
    return 0
