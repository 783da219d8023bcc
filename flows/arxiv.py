"""arXiv flow: bulk LaTeX source tars -> cleaned, deduplicated shards + manifest.

    python -m flows.arxiv --inputs 'arxiv/src/arXiv_src_2301_*.tar' --out data/
    python -m flows.arxiv --inputs 'eprints/*.tar.gz' --set latex.cut_appendix=true --out data/

One Prefect task per input file (a bulk tar holds thousands of papers); each paper is one record:
kept, or dropped with a reason (``pdf_only``, ``no_section``, ``unsafe_archive``...), counted in
the manifest's ``drops`` table, with the archive member named in ``errors`` for bad input.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from core.config import PipelineConfig
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.source_flow import SourceRunSummary, print_summary, run_source

if TYPE_CHECKING:
    from sources.arxiv import ArchiveLimits, ArxivRecipe
    from sources.formats.latex import LatexOptions
    from sources.samples.arxiv import write_sample_inputs
else:  # the recipe and the sample writer: for a run, not --help or the source registry
    ArchiveLimits = LazyImport("sources.arxiv", "ArchiveLimits")
    ArxivRecipe = LazyImport("sources.arxiv", "ArxivRecipe")
    LatexOptions = LazyImport("sources.formats.latex", "LatexOptions")
    write_sample_inputs = LazyImport("sources.samples.arxiv", "write_sample_inputs")


class LatexConfig(BaseModel):
    """What the LaTeX cleaner removes and its bounds (see :class:`sources.formats.latex.LatexOptions`)."""

    model_config = ConfigDict(extra="forbid")
    cut_appendix: bool = False
    expand_macros: bool = True
    max_macro_depth: int = Field(8, ge=1)
    max_expansions: int = Field(200_000, ge=0)
    max_output_chars: int = Field(20_000_000, gt=0)
    max_include_depth: int = Field(16, ge=0)
    max_arg_chars: int = Field(100_000, gt=0)

    def options(self) -> LatexOptions:
        """As the cleaner's dataclass."""
        return LatexOptions(**self.model_dump())


class LimitsConfig(BaseModel):
    """Bounds on reading one paper (see :class:`sources.arxiv.ArchiveLimits`)."""

    model_config = ConfigDict(extra="forbid")
    max_paper_bytes: int = Field(64 * 1024 * 1024, gt=0)
    max_unpacked_bytes: int = Field(512 * 1024 * 1024, gt=0)
    max_tex_bytes: int = Field(8 * 1024 * 1024, gt=0)
    max_members: int = Field(20_000, gt=0)

    def limits(self) -> ArchiveLimits:
        """As the reader's dataclass."""
        return ArchiveLimits(**self.model_dump())


class ArxivConfig(PipelineConfig):
    """Settings of the arXiv recipe (defaults in ``configs/arxiv.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs",)

    #: Which files are read does not change what a paper becomes.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"inputs"}

    inputs: list[str] = Field(default_factory=list, description="bulk .tar, e-print .gz or .tex: paths, globs, URLs")
    latex: LatexConfig = Field(default_factory=LatexConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    min_chars: int = Field(1, ge=0)

    def recipe(self) -> ArxivRecipe:
        """The source object the pipeline runs."""
        return ArxivRecipe(latex=self.latex.options(), limits=self.limits.limits(), min_chars=self.min_chars)


@flow(name="arxiv", log_prints=True)
def arxiv_flow(config: ArxivConfig) -> SourceRunSummary:
    """Read and clean arXiv LaTeX sources (see the module docstring)."""
    if not config.inputs:
        raise ValueError("no input: give --inputs (path, glob or URL)")
    return run_source("arxiv", config, config.recipe(), config.inputs)


cli = FlowCLI(arxiv_flow, ArxivConfig, "arxiv.yaml", __doc__, report=print_summary, flags=[
    Flag("--inputs", "inputs", "bulk tar, e-print or .tex: path, glob or URL (repeatable)", many=True),
    Flag("--cut-appendix", "latex.cut_appendix", "also remove everything from \\appendix on (RedPajama's choice)", switch=True),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("arxiv", ArxivConfig, "llama", run=run, flow=arxiv_flow, sample=write_sample_inputs)


if __name__ == "__main__":
    sys.exit(main())
