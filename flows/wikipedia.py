"""Wikipedia flow: MediaWiki XML dumps -> cleaned, deduplicated shards + manifest rows.

    python -m flows.wikipedia --dump enwiki-20220701-pages-articles1.xml-p1p41242.bz2 --out data/
    python -m flows.wikipedia --dump https://host/dewiki-...-pages-articles.xml.bz2 --lang de --out data/
    python -m flows.wikipedia --date 20220701 --languages de,fr --out data/      # from dumps.wikimedia.org
"""

from __future__ import annotations

import sys
from typing import ClassVar

from prefect import flow
from pydantic import Field

from core.config import PipelineConfig
from flows._cli import Flag, FlowCLI
from flows._source_flow import (
    SourceRunSummary,
    print_summary,
    run_source,
)
from sources.wikipedia import WikipediaRecipe


class WikipediaConfig(PipelineConfig):
    """Settings of the Wikipedia recipe (defaults in ``configs/wikipedia.yaml``)."""

    #: Which inputs a run reads is not part of the recipe: each input's output depends on the
    #: recipe and on the run's dedup scope (tracked separately), so adding a dump keeps the
    #: finished work of the others valid.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {
        "dumps", "date", "languages", "checksums", "dump_url_template", "checksums_url_template"
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


@flow(name="wikipedia", log_prints=True)
def wikipedia_flow(config: WikipediaConfig) -> SourceRunSummary:
    """Read, clean and deduplicate Wikipedia dumps (see the module docstring)."""
    return run_source("wikipedia", config, config.recipe(), config.inputs(), config.checksum_lists())


cli = FlowCLI(wikipedia_flow, WikipediaConfig, "wikipedia.yaml", __doc__, report=print_summary, flags=[
    Flag("--dump", "dumps", "dump path, glob or http(s) URL (repeatable)", many=True),
    Flag("--lang", "lang", "language of the dumps (default: from siteinfo or file name)"),
    Flag("--date", "date", "dump date (e.g. 20220701) to fetch one dump per language"),
    Flag("--languages", "languages", "comma-separated languages for --date (default: the 20 LLaMA ones)", split=True),
    Flag("--checksums", "checksums", "path or URL of the dump's sha1sums/md5sums list"),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main


if __name__ == "__main__":
    sys.exit(main())
