"""Common Crawl flow (cc_net style): WARC/WET -> text -> paragraph dedup -> LID -> quality -> shards.

    python -m flows.commoncrawl --inputs CC-MAIN-2023-06 --limit-files 20 --out data/   # wet.paths.gz
    python -m flows.commoncrawl --inputs CC-MAIN-2023-06 --paths-kind warc --limit-files 2 --out data/
    python -m flows.commoncrawl --inputs 'segments/*.warc.gz' --out data/               # local WARC/WET

Tasks: ``extract`` per input and ``line-dedup`` per group of inputs (this source's
``before_stage`` phase, :func:`flows.runtime.web.grouped_dedup_phases`), then the generic ``stage-input`` per input,
``exact-dedup`` over the run and ``finalize-input`` per input (see :mod:`sources.commoncrawl`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.source_flow import SourceRunSummary, print_summary, run_source
from flows.runtime.web import WEB_FLAGS, WebConfig, expand_crawls, grouped_dedup_phases

if TYPE_CHECKING:
    from sources import commoncrawl as cc
    from sources.samples.commoncrawl import write_sample_inputs
else:  # only a run needs them (Prefect, pyarrow): not --help or a refused command
    cc = LazyImport("sources.commoncrawl")
    write_sample_inputs = LazyImport("sources.samples.commoncrawl", "write_sample_inputs")


class PerplexityConfig(BaseModel):
    """cc_net perplexity buckets; off unless a language has lm, sp and cutoffs."""

    model_config = ConfigDict(extra="forbid")
    lm: dict[str, str] = Field(default_factory=dict, description="language -> KenLM .arpa.bin")
    sp: dict[str, str] = Field(default_factory=dict, description="language -> SentencePiece .sp.model")
    cutoffs: dict[str, tuple[float, float]] = Field(default_factory=dict, description="language -> [head_max, middle_max]")
    keep: list[str] = Field(default_factory=lambda: ["head", "middle"])

    def models(self) -> cc.PerplexityModels:
        return cc.PerplexityModels(dict(self.lm), dict(self.sp), dict(self.cutoffs), tuple(self.keep))


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
            url_filters=tuple(self.url_filters()),
        )


@flow(name="commoncrawl", log_prints=True)
def commoncrawl_flow(config: CommonCrawlConfig) -> SourceRunSummary:
    """cc_net-style Common Crawl (see the module docstring)."""
    recipe = config.recipe()
    return run_source("commoncrawl", config, recipe, expand_crawls(config),
                      phases=grouped_dedup_phases(recipe, config))


cli = FlowCLI(commoncrawl_flow, CommonCrawlConfig, "commoncrawl.yaml", __doc__, report=print_summary, flags=[
    *WEB_FLAGS, Flag("--wikiref-model", "wikiref_model", "wiki-reference classifier (from flows.quality_classifier)"),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("commoncrawl", CommonCrawlConfig, "llama", run=run, flow=commoncrawl_flow, sample=write_sample_inputs)

if __name__ == "__main__":
    sys.exit(main())
