"""StackExchange flow: per-site dumps -> the N largest sites -> question threads -> shards + manifest.

    python -m flows.stackexchange --inputs 'stackexchange/*.7z' --top-sites 28 --out data/
    python -m flows.stackexchange --inputs 'dumps/*-Posts.xml' --top-sites 0 --out data/

Phases: size every site (a ``site-size`` task per input, ``tasks.phases``: posts counted in one streaming pass, or
``--rank-by bytes`` for the size of ``Posts.xml`` from the 7z header; cached per file) -> keep the
N largest -> the generic source run over the kept sites (one task per site: stream rows to disk,
group out of core, one document per question). Sites not kept are recorded in the manifest's
``inputs`` table with status ``skipped`` and the reason (rank, meta site, other table, duplicate).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from core.config import MemorySize, PipelineConfig
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.source_flow import (
    SourcePhases,
    SourceRunSummary,
    print_summary,
    run_scratch,
    run_source,
    scratch_phases,
)

if TYPE_CHECKING:
    from sources.samples.stackexchange import write_sample_inputs
    from sources.stackexchange import StackExchangeRecipe
else:  # only a run needs it: not --help or a refused command
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
        from sources.stackexchange import StackExchangeRecipe  # DuckDB, pyarrow, lxml: a run, not --help

        return StackExchangeRecipe(min_answers=self.min_answers, scratch_dir=self.scratch_dir,
                                   memory_limit=self.memory_limit)


def ranking_phases(config: StackExchangeConfig) -> SourcePhases:
    """Rank the sites before staging (:func:`sources.stackexchange.ranking_phases`)."""
    from sources.stackexchange import ranking_phases as rank_phases

    return rank_phases(config.top_sites, config.rank_by, config.include_meta)


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
