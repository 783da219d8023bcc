"""StackExchange flow: per-site dumps -> the N largest sites -> question threads -> shards + manifest.

    python -m flows.stackexchange --inputs 'stackexchange/*.7z' --top-sites 28 --out data/
    python -m flows.stackexchange --inputs 'dumps/*-Posts.xml' --top-sites 0 --out data/

Phases: size every site (a ``site-size`` task per input: posts counted in one streaming pass, or
``--rank-by bytes`` for the size of ``Posts.xml`` from the 7z header; cached per file) -> keep the
N largest -> the generic source run over the kept sites (one task per site: stream rows to disk,
group out of core, one document per question). Sites not kept are recorded in the manifest's
``inputs`` table with status ``skipped`` and the reason (rank, meta site, other table, duplicate).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from core.config import MemorySize, PipelineConfig
from core.document import InputSpec
from core.layout import state_path
from core.manifest import InputRecord
from core.registry import SourceSpec
from flows._cli import Flag, FlowCLI
from flows._lazy import NO_CACHE, LazyImport, flow, task
from flows._source_flow import (
    SourcePhases,
    SourceRunSummary,
    print_summary,
    run_scratch,
    run_source,
    scratch_phases,
)
from sources.stackexchange import (
    SOURCE,
    SiteSize,
    StackExchangeRecipe,
    measure_site,
    posts_path,
    select_sites,
)

if TYPE_CHECKING:
    from prefect import get_run_logger

    from core import pipeline
    from sources.samples.stackexchange import write_sample_inputs
else:  # only a run needs them (Prefect, pyarrow): not --help or a refused command
    get_run_logger = LazyImport("prefect", "get_run_logger")
    pipeline = LazyImport("core.pipeline")
    write_sample_inputs = LazyImport("sources.samples.stackexchange", "write_sample_inputs")


class StackExchangeConfig(PipelineConfig):
    """Settings of the StackExchange recipe (defaults in ``configs/stackexchange.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs",)
    INPUT_FOLDERS: ClassVar[bool] = True  # an extracted site dump is a folder

    #: Where and with how much memory a site is grouped does not change its documents.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {
        "inputs", "scratch_dir", "memory_limit"}

    inputs: list[str] = Field(default_factory=list, description="site .7z or Posts.xml: paths, globs, URLs")
    top_sites: int = Field(28, ge=0, description="keep the N largest sites; 0 keeps all")
    rank_by: Literal["posts", "bytes"] = "posts"
    include_meta: bool = False
    min_answers: int = Field(0, ge=0)
    memory_limit: MemorySize = "1GB"
    scratch_dir: Path | None = None

    def recipe(self) -> StackExchangeRecipe:
        """The source object the pipeline runs."""
        return StackExchangeRecipe(min_answers=self.min_answers, scratch_dir=self.scratch_dir,
                                   memory_limit=self.memory_limit)


@task(name="site-size", cache_policy=NO_CACHE, task_run_name="size {spec.key}")
def site_size_task(spec: InputSpec, rank_by: str, cache: Path) -> SiteSize:
    """Size of one site for ranking (cached next to the run's state, keyed by the file's identity)."""
    return measure_site(spec, rank_by, cache)


def rank_sites(config: StackExchangeConfig, specs: list[InputSpec]) -> tuple[list[InputSpec], dict[str, str], list[SiteSize]]:
    """Size every input in parallel tasks and choose the ``top_sites`` largest."""
    out = Path(config.out).resolve()
    futures = [site_size_task.submit(s, config.rank_by, state_path(out, SOURCE, s.key, f"size-{config.rank_by}"))
               for s in specs]
    sizes = [f.result() for f in futures]
    keep, skipped = select_sites(sizes, config.top_sites, config.include_meta)
    return [s for s in specs if s.key in set(keep)], skipped, sizes


def _skipped_record(spec: InputSpec, reason: str, config: StackExchangeConfig) -> InputRecord:
    return InputRecord(input_key=spec.key, source=SOURCE, location=spec.location, language=None,
                       config_hash=config.config_hash(), size=posts_path(spec.path).stat().st_size, status="skipped",
                       error=reason)


def ranking_phases(config: StackExchangeConfig) -> SourcePhases:
    """Rank the sites before staging: the ones not kept end as ``skipped`` records of this run."""
    table: list[dict[str, Any]] = []

    def before_stage(ctx: pipeline.RunContext, specs: list[InputSpec]) -> dict[str, InputRecord]:
        kept, skipped, sizes = rank_sites(config, specs)
        get_run_logger().info("%d site inputs; keeping %d (top %s by %s)", len(specs), len(kept),
                              config.top_sites or "all", config.rank_by)
        table.extend({"input": s.key, "site": s.site, f"size ({config.rank_by})": s.size,
                      "kept": s.key not in skipped, "reason": skipped.get(s.key, "")}
                     for s in sorted(sizes, key=lambda s: (-s.size, s.key)))
        return {s.key: _skipped_record(s, skipped[s.key], config) for s in specs if s.key in skipped}

    def tables() -> list[tuple[str, list[dict[str, Any]], str]]:
        return [("stackexchange-sites", table, "Sites ranked by size: kept or skipped, with the reason")]

    return SourcePhases(before_stage=before_stage, tables=tables)


@flow(name="stackexchange", log_prints=True)
def stackexchange_flow(config: StackExchangeConfig) -> SourceRunSummary:
    """Choose the largest sites, then read and group them (see the module docstring)."""
    if not config.inputs:
        raise ValueError("no input: give --inputs (path, glob or URL)")
    if config.scratch_dir is not None:
        return run_source("stackexchange", config, config.recipe(), config.inputs, phases=ranking_phases(config))
    scratch = run_scratch(config.out, "stackexchange")  # <out>/_staging/stackexchange_scratch
    recipe = dataclasses.replace(config.recipe(), scratch_dir=scratch)
    return run_source("stackexchange", config, recipe, config.inputs,
                      phases=scratch_phases(scratch, ranking_phases(config)))


cli = FlowCLI(stackexchange_flow, StackExchangeConfig, "stackexchange.yaml", __doc__, report=print_summary, flags=[
    Flag("--inputs", "inputs", "site .7z, Posts.xml or extracted site folder: path, glob or URL (repeatable)", many=True),
    Flag("--top-sites", "top_sites", "keep the N largest sites (0: all; default from config: 28)", type=int),
    Flag("--rank-by", "rank_by", "site size: post count or Posts.xml bytes", choices=["posts", "bytes"]),
    Flag("--scratch-dir", "scratch_dir", "where a site's rows are sorted (default: <out>/_staging/stackexchange_scratch)", type=Path),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("stackexchange", StackExchangeConfig, "llama", run=run, flow=stackexchange_flow, sample=write_sample_inputs)


if __name__ == "__main__":
    sys.exit(main())
