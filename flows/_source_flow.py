"""The generic source flow: inputs -> stage per input -> run-wide exact dedup -> finalize -> manifest.

Every source flow (``flows/wikipedia.py`` and the others) is a thin wrapper: a typed config, a
recipe object (:class:`core.pipeline.SourceRecipe`) and a list of input locations. This module
does the rest, the same way for every source:

1. resolve inputs (local globs, or URLs fetched by a retrying ``download`` task into the cache);
2. ``stage-input`` task per input (read, clean, filter, staging shards + dedup keys);
3. one ``exact-dedup`` task over the whole run;
4. ``finalize-input`` task per input (final shards under ``<out>/docs/<source>/<partition>/``);
5. the flow process alone writes the manifest, then publishes a table artifact with counts per
   language and a markdown artifact pointing to the shards and the manifest.
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect import get_run_logger
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.context import get_run_context
from prefect.futures import PrefectFuture, as_completed

from core import pipeline
from core.atomic import write_json_atomic
from core.config import PipelineConfig, parse_set_option
from core.document import InputSpec
from core.download import algorithm_for, is_url, load_checksums
from core.manifest import InputRecord, Manifest
from core.version import code_version
from tasks.prefect_tasks import dedup_task, download_task, finalize_task, stage_task


@dataclass
class SourceRunSummary:
    """What a source flow returns (and prints): where output went and what was counted."""

    run_id: str
    out: Path
    records: list[InputRecord] = field(default_factory=list)

    @property
    def kept(self) -> int:
        """Documents in the final shards."""
        return sum(r.docs_kept for r in self.records)

    @property
    def failed(self) -> list[InputRecord]:
        """Inputs that could not be processed."""
        return [r for r in self.records if r.status == "failed"]


def expand_locations(locations: Sequence[str]) -> list[str]:
    """Expand local globs (sorted, so runs are reproducible); URLs pass through."""
    expanded: list[str] = []
    for location in locations:
        if is_url(location):
            expanded.append(location)
            continue
        matches = sorted(glob.glob(location, recursive=True))
        if not matches and not Path(location).exists():
            raise FileNotFoundError(f"input not found: {location}")
        expanded.extend(matches or [location])
    return expanded


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
    """A progress artifact in Prefect and, on a terminal, a tqdm bar."""

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.total, self.done = max(total, 1), 0
        self.artifact = create_progress_artifact(0.0, description=label)
        self.bar = None
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=label, unit="input")

    def step(self) -> None:
        self.done += 1
        update_progress_artifact(self.artifact, progress=100.0 * self.done / self.total)
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def gather(futures: dict[PrefectFuture, str], progress: Progress) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for future in as_completed(list(futures)):
        results[futures[future]] = future.result()
        progress.step()
    return results


def current_run_id() -> str:
    try:
        return str(get_run_context().flow_run.id)
    except Exception:
        return str(uuid.uuid4())


@dataclass
class PhaseHooks:
    """Source-specific work between the generic phases, run in the flow process.

    ``after_stage(ctx, keys)``: before the run-wide exact dedup (e.g. rewrite dedup keys);
    ``after_dedup(ctx, keys)``: between exact dedup and finalize (e.g. book near-dedup, which
    adds to the run's drop list); ``after_finalize(ctx, records)``: adjust the finished records
    (e.g. relabel drops). Hooks submit their own tasks; they must stay deterministic.
    """

    after_stage: Callable[[pipeline.RunContext, list[str]], None] | None = None
    after_dedup: Callable[[pipeline.RunContext, list[str]], None] | None = None
    after_finalize: Callable[[pipeline.RunContext, list[InputRecord]], list[InputRecord]] | None = None


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
    checksums: Sequence[str] = (), hooks: PhaseHooks | None = None,
) -> SourceRunSummary:
    """Run one source over its inputs; call from inside a Prefect flow."""
    logger = get_run_logger()
    out = Path(config.out).resolve()
    run_id = current_run_id()
    manifest = Manifest.for_output(out)
    manifest.start_run(run_id, flow_name, recipe.name, config.config_hash(), config.output_fields(),
                       code_version(), prefect_flow_run_id=run_id)
    status = "failed"
    try:
        specs = resolve_inputs(config, locations, checksums)
        ctx = pipeline.RunContext(out, recipe.name, config.config_hash(), config.shards.limits(), recipe.name)
        records = _process(recipe, specs, ctx, config, hooks or PhaseHooks(), logger)
        manifest.record_inputs(run_id, records, recipe=flow_name, code_version=code_version())
        status = "completed" if all(r.status == "done" for r in records) else "partial"
        summary = SourceRunSummary(run_id, out, records)
        publish_summary(summary, manifest)
        logger.info("%s: %d inputs, %d documents kept -> %s", flow_name, len(records), summary.kept,
                    out / "docs" / recipe.name)
        return summary
    finally:
        manifest.finish_run(run_id, status)


def _process(
    recipe: pipeline.SourceRecipe, specs: list[InputSpec], ctx: pipeline.RunContext,
    config: PipelineConfig, hooks: PhaseHooks, logger: Any,
) -> list[InputRecord]:
    keys = [s.key for s in specs]
    scope = pipeline.scope_hash(keys, ctx.config_hash)
    done = {s.key: pipeline.load_done(s, ctx, scope) for s in specs}
    if specs and all(done.values()):
        logger.info("all %d inputs already finished for this config; nothing to do", len(specs))
        return [done[k] for k in keys]  # type: ignore[misc]
    started = time.perf_counter()
    progress = Progress(2 * len(specs), f"{recipe.name}: stage + finalize", config.progress)
    try:
        staged = gather({stage_task.submit(recipe, s, ctx): s.key for s in specs}, progress)
        for record in staged.values():
            if record.status == "failed":
                logger.error("input failed: %s", record.error)
        ok_keys = [k for k in keys if staged[k].status != "failed"]
        if hooks.after_stage is not None:
            hooks.after_stage(ctx, ok_keys)
        duplicates = dedup_task.submit(ctx, keys).result()
        logger.info("exact dedup across %d inputs: %d duplicates", len(keys), sum(duplicates.values()))
        if hooks.after_dedup is not None:
            hooks.after_dedup(ctx, ok_keys)
        finals = gather(
            {finalize_task.submit(recipe, s, ctx, scope, staged[s.key]): s.key for s in specs}, progress
        )
    finally:
        progress.close()
    records = [finals[k] for k in keys]
    if hooks.after_finalize is not None:
        records = hooks.after_finalize(ctx, records)
    if not config.keep_staging and all(r.status != "failed" for r in records):
        pipeline.clean_staging(ctx, keys)
    logger.info("processed %d inputs in %.1fs", len(specs), time.perf_counter() - started)
    return records


def language_table(records: Sequence[InputRecord]) -> list[dict[str, Any]]:
    """Rows per language: inputs, records read, kept, dropped (by reason), bytes."""
    rows: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"inputs": 0, "records_in": 0, "kept": 0, "dropped": 0, "text_bytes": 0, "shard_bytes": 0,
                 "reasons": Counter()}
    )
    for rec in records:
        row = rows[rec.language or "und"]
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
def add_common_arguments(parser: argparse.ArgumentParser, default_config: Path) -> None:
    """Options every flow shares (config file, output, parallelism, overrides)."""
    parser.add_argument("--config", type=Path, default=default_config, help="YAML config (default: %(default)s)")
    parser.add_argument("--out", type=Path, help="output root (shards, manifest); default from config")
    parser.add_argument("--workers", type=int, help="parallel tasks (default: one per core)")
    parser.add_argument("--runner", choices=["process", "thread", "sequential", "dask", "ray"],
                        help="task runner (default from config: process)")
    parser.add_argument("--dask-address", help="existing Dask scheduler, e.g. tcp://127.0.0.1:8786")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                        help="override any config field, e.g. --set shards.max_docs=5000 (repeatable)")


def load_config(config_cls: type[PipelineConfig], args: argparse.Namespace, extra: dict[str, Any]) -> PipelineConfig:
    """Config from YAML, then ``--set``, then explicit flags (highest precedence)."""
    overrides = parse_set_option(args.set)
    for name in ("out", "workers", "runner", "dask_address"):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    overrides.update({k: v for k, v in extra.items() if v is not None})
    return config_cls.from_yaml(args.config, overrides)


def print_summary(summary: SourceRunSummary) -> None:
    """Where the shards are, and the manifest summary."""
    from kinda.summary import format_summary

    print(f"\nshards:   {summary.out / 'docs'}")
    print(f"manifest: {Manifest.for_output(summary.out).path}\n")
    print(format_summary(Manifest.for_output(summary.out)))


def cli_main(run: Callable[[], SourceRunSummary]) -> int:
    """Run a flow inside the Prefect API context; exit non-zero when an input failed."""
    from flows._runtime import prefect_api

    with prefect_api():
        summary = run()
    print_summary(summary)
    return 1 if summary.failed else 0

