"""Wikipedia flow: MediaWiki XML dumps -> cleaned, deduplicated shards + manifest rows.

    python -m flows.wikipedia --dump enwiki-20220701-pages-articles1.xml-p1p41242.bz2 --out data/
    python -m flows.wikipedia --dump https://host/dewiki-...-pages-articles.xml.bz2 --lang de --out data/
    python -m flows.wikipedia --date 20220701 --languages de,fr --out data/      # from dumps.wikimedia.org
    python -m flows.wikipedia --dump enwiki-20240601-pages-articles-multistream.xml.bz2 --split-bytes 268435456

A multistream dump with its ``-multistream-index.txt.bz2`` beside it is staged as page-range
tasks of about ``split_bytes`` compressed bytes each (0: one task per dump); the output is
byte-identical to the one-task run (see :mod:`core.splits`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from core.config import PipelineConfig
from core.document import InputSpec
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.source_flow import SourceRunSummary, print_summary, run_source

if TYPE_CHECKING:
    from core import splits
    from core.driver import Splitter
    from sources.formats.wikipedia_multistream import plan_split, range_key
    from sources.wikipedia import WikipediaRecipe
else:  # only a run needs them (pyarrow; the recipe's parser): not --help or the source registry
    splits = LazyImport("core.splits")
    plan_split = LazyImport("sources.formats.wikipedia_multistream", "plan_split")
    range_key = LazyImport("sources.formats.wikipedia_multistream", "range_key")
    WikipediaRecipe = LazyImport("sources.wikipedia", "WikipediaRecipe")


class WikipediaConfig(PipelineConfig):
    """Settings of the Wikipedia recipe (defaults in ``configs/wikipedia.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("dumps", "date")

    #: Which inputs a run reads is not part of the recipe: each input's output depends on the
    #: recipe and on the run's dedup scope (tracked separately), so adding a dump keeps the
    #: finished work of the others valid.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {
        "dumps", "date", "languages", "checksums", "dump_url_template", "checksums_url_template", "split_bytes"
    }

    languages: list[str] = Field(default_factory=lambda: ["en"])
    dumps: list[str] = Field(default_factory=list)
    date: str | None = None
    lang: str | None = None
    dump_url_template: str = "https://dumps.wikimedia.org/{lang}wiki/{date}/{lang}wiki-{date}-pages-articles.xml.bz2"
    checksums_url_template: str | None = None
    checksums: str | None = None
    namespaces: list[int] = Field(default_factory=lambda: [0])
    min_chars: int = 1
    #: Target compressed bytes per page-range task of a multistream dump (0: one task per dump).
    #: A runtime field: how a dump is cut does not change the output.
    split_bytes: int = Field(256 * 1024 * 1024, ge=0)

    def recipe(self) -> WikipediaRecipe:
        """The source object the pipeline runs."""
        return WikipediaRecipe(language=self.lang, namespaces=tuple(self.namespaces), min_chars=self.min_chars)

    def inputs(self) -> list[str]:
        """Explicit dumps, or one dump URL per language for ``date``."""
        if self.dumps:
            return list(self.dumps)
        if self.date:
            return [self.dump_url_template.format(lang=lang, date=self.date) for lang in self.languages]
        raise ValueError("no input: give --dump (path, glob or URL) or --date")

    def input_patterns(self) -> list[str]:
        """The dumps the user named (checked before a run)."""
        return list(self.dumps)

    def checksum_lists(self) -> list[str]:
        """Checksum lists to verify downloads against (explicit, or one per language for ``date``)."""
        if self.checksums:
            return [self.checksums]
        if self.date and not self.dumps and self.checksums_url_template:
            return [self.checksums_url_template.format(lang=lang, date=self.date) for lang in self.languages]
        return []


def page_ranges(split_bytes: int) -> Splitter:
    """The driver's splitter: a multistream dump's page-range inputs of about ``split_bytes`` each.

    An empty list for a dump read whole (no index beside it, splitting off, one range only). The driver
    stages the ranges as tasks of their own and joins them into the dump's staging, so dedup
    and finalize see one input per dump and the output is the one-task run's, byte for byte.
    """

    def ranges(spec: InputSpec) -> list[InputSpec]:
        planned = plan_split(spec.path, split_bytes)
        if not planned:
            return []
        size = spec.path.stat().st_size
        return [splits.range_spec(spec, range_key(spec.key, start, end, size)) for start, end in planned]

    return ranges


@flow(name="wikipedia", log_prints=True)
def wikipedia_flow(config: WikipediaConfig) -> SourceRunSummary:
    """Read, clean and deduplicate Wikipedia dumps (see the module docstring)."""
    recipe = config.recipe()
    return run_source("wikipedia", config, recipe, config.inputs(), config.checksum_lists(),
                      split=page_ranges(config.split_bytes))


cli = FlowCLI(wikipedia_flow, WikipediaConfig, "wikipedia.yaml", __doc__, report=print_summary, flags=[
    Flag("--dump", "dumps", "dump path, glob or http(s) URL (repeatable)", many=True),
    Flag("--lang", "lang", "language of the dumps (default: from siteinfo or file name)"),
    Flag("--date", "date", "dump date (e.g. 20220701) to fetch one dump per language"),
    Flag("--languages", "languages", "comma-separated languages for --date (default: the 20 LLaMA ones)", split=True),
    Flag("--checksums", "checksums", "path or URL of the dump's sha1sums/md5sums list"),
    Flag("--split-bytes", "split_bytes", "compressed bytes per page-range task of a multistream dump (0: no split)",
         type=int),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("wikipedia", WikipediaConfig, "llama", run=run, flow=wikipedia_flow)


if __name__ == "__main__":
    sys.exit(main())
