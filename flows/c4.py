"""C4 flow: the released C4 files, or C4's rules applied to Common Crawl text.

    python -m flows.c4 --inputs 'c4/en/c4-train.*.json.gz' --out data/          # released C4 (RedPajama)
    python -m flows.c4 --from-commoncrawl 'segments/*.warc.wet.gz' --out data/   # C4 rebuilt from CC text

The released files go through the generic source flow (read, exact dedup, finalize). Rebuilding
from CC runs the grouped pipeline of Common Crawl (:mod:`flows.runtime.web`) with C4's line/page rules before
and three-sentence-span dedup as the group step (see :mod:`sources.c4`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from core.filters.word_lists import BAD_WORDS_EN
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.source_flow import (
    SourceRunSummary,
    print_summary,
    run_source,
)
from flows.runtime.web import WEB_FLAGS, WebConfig, expand_crawls, grouped_dedup_phases
from sources.formats.crawl_paths import CRAWL_ID

if TYPE_CHECKING:
    from core.filters.c4_rules import C4Rules, SentenceSpanUnits
    from sources.c4 import C4FromCommonCrawlRecipe, C4Recipe
    from sources.samples.c4 import write_sample_inputs
else:  # only a run needs them (they import the pipeline: pyarrow, DuckDB, numpy): not --help
    C4Rules = LazyImport("core.filters.c4_rules", "C4Rules")
    SentenceSpanUnits = LazyImport("core.filters.c4_rules", "SentenceSpanUnits")
    C4FromCommonCrawlRecipe = LazyImport("sources.c4", "C4FromCommonCrawlRecipe")
    C4Recipe = LazyImport("sources.c4", "C4Recipe")
    write_sample_inputs = LazyImport("sources.samples.c4", "write_sample_inputs")


class C4Config(WebConfig):
    """Settings of both C4 routes (defaults in ``configs/c4.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs", "from_commoncrawl")

    from_commoncrawl: list[str] = Field(default_factory=list, description="WARC/WET inputs to rebuild C4 from")
    min_words_per_line: int = 3
    max_word_length: int = 1000
    min_sentences: int = 5
    span_sentences: int = Field(3, gt=0, description="sentences per dedup span")
    bad_words: str | None = Field(str(BAD_WORDS_EN), description="bad-words list (one per line); null = off")

    def input_patterns(self) -> list[str]:
        """Local inputs of either route to check before a run."""
        return [*super().input_patterns(), *(p for p in self.from_commoncrawl if not CRAWL_ID.match(p))]

    def preflight(self) -> None:
        """Language ID runs on pages rebuilt from Common Crawl only (released C4 is already English)."""
        if self.from_commoncrawl:
            super().preflight()

    def rules(self) -> C4Rules:
        return C4Rules(min_words_per_line=self.min_words_per_line, max_word_length=self.max_word_length,
                       min_sentences=self.min_sentences)

    def from_cc_recipe(self) -> C4FromCommonCrawlRecipe:
        """C4's rules on CC text."""
        return C4FromCommonCrawlRecipe(
            rules=self.rules(), bad_words=self.bad_words, languages=tuple(self.languages),
            lid_min_score=self.lid_min_score, lid_model=self.lid_model, prefilter=self.prefilter,
            prefilter_min_score=self.prefilter_min_score, extract=self.extract.options(),
            limits=self.extract.limits(), units=SentenceSpanUnits(self.span_sentences),
            url_filters=tuple(self.url_filters()),
        )


@flow(name="c4", log_prints=True)
def c4_flow(config: C4Config) -> SourceRunSummary:
    """Released C4 (``inputs``) or C4 rebuilt from Common Crawl (``from_commoncrawl``)."""
    if config.from_commoncrawl:
        rebuilt = config.model_copy(update={"inputs": list(config.from_commoncrawl)})
        recipe = config.from_cc_recipe()
        return run_source("c4", rebuilt, recipe, expand_crawls(rebuilt), phases=grouped_dedup_phases(recipe, rebuilt))
    if not config.inputs:
        raise ValueError("no input: give --inputs (released C4 json.gz) or --from-commoncrawl (WARC/WET)")
    return run_source("c4", config, C4Recipe(url_filters=tuple(config.url_filters())), config.inputs)


cli = FlowCLI(c4_flow, C4Config, "c4.yaml", __doc__, report=print_summary, flags=[
    *WEB_FLAGS,
    Flag("--from-commoncrawl", "from_commoncrawl", "WARC/WET path, glob, URL or crawl id (repeatable)", many=True),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("c4", C4Config, "llama", run=run, flow=c4_flow, sample=write_sample_inputs)


if __name__ == "__main__":
    sys.exit(main())
