"""Wikipedia flow: MediaWiki XML dumps -> cleaned, deduplicated shards + manifest rows.

    python -m flows.wikipedia --dump enwiki-20220701-pages-articles1.xml-p1p41242.bz2 --out data/
    python -m flows.wikipedia --dump https://host/dewiki-...-pages-articles.xml.bz2 --lang de --out data/
    python -m flows.wikipedia --date 20220701 --languages de,fr --out data/      # from dumps.wikimedia.org
"""

from __future__ import annotations

import argparse
import sys
from typing import ClassVar

from prefect import flow
from pydantic import Field

from core.config import CONFIG_DIR, PipelineConfig
from flows._runtime import make_task_runner
from flows._source_flow import SourceRunSummary, add_common_arguments, cli_main, load_config, run_source
from sources.wikipedia import WikipediaRecipe

DEFAULT_CONFIG = CONFIG_DIR / "wikipedia.yaml"


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


def run(config: WikipediaConfig) -> SourceRunSummary:
    """Run the flow with the task runner the config names."""
    return wikipedia_flow.with_options(task_runner=make_task_runner(config))(config)


def parse_args(argv: list[str] | None = None) -> WikipediaConfig:
    """Command line -> typed config."""
    parser = argparse.ArgumentParser(prog="python -m flows.wikipedia", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", action="append", help="dump path, glob or http(s) URL (repeatable)")
    parser.add_argument("--lang", help="language of the dumps (default: from siteinfo or file name)")
    parser.add_argument("--date", help="dump date (e.g. 20220701) to fetch one dump per language")
    parser.add_argument("--languages", help="comma-separated languages for --date (default: the 20 LLaMA ones)")
    parser.add_argument("--checksums", help="path or URL of the dump's sha1sums/md5sums list")
    add_common_arguments(parser, DEFAULT_CONFIG)
    args = parser.parse_args(argv)
    extra = {
        "dumps": args.dump, "lang": args.lang, "date": args.date, "checksums": args.checksums,
        "languages": args.languages.split(",") if args.languages else None,
    }
    return load_config(WikipediaConfig, args, extra)  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    """``python -m flows.wikipedia``."""
    config = parse_args(argv)
    return cli_main(lambda: run(config))


if __name__ == "__main__":
    sys.exit(main())
