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
from core.manifest import InputRecord
from flows._cli import Flag, FlowCLI
from flows._lazy import LazyImport, flow
from flows._source_flow import (
    SourcePhases,
    SourceRunSummary,
    print_summary,
    run_source,
)
from sources.formats.wikipedia_multistream import plan_split, range_key
from sources.wikipedia import WikipediaRecipe

if TYPE_CHECKING:
    from prefect import get_run_logger
    from prefect.futures import as_completed

    from core import pipeline, splits
    from tasks.pipeline import stage_task
else:  # only a run needs them (Prefect, pyarrow): not --help or a refused command
    splits = LazyImport("core.splits")
    get_run_logger = LazyImport("prefect", "get_run_logger")
    as_completed = LazyImport("prefect.futures", "as_completed")
    pipeline = LazyImport("core.pipeline")
    stage_task = LazyImport("tasks.pipeline", "stage_task")


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


def _ranges_to_stage(spec: InputSpec, ctx: pipeline.RunContext, scope: str, split_bytes: int) -> list[InputSpec]:
    """The page-range inputs of a dump, or none when it is read whole or already staged/finished."""
    if pipeline.load_done(spec, ctx, scope) is not None or pipeline.stage_marker(spec, ctx).load(ctx.out):
        return []
    ranges = plan_split(spec.path, split_bytes)
    size = spec.path.stat().st_size
    return [splits.range_spec(spec, range_key(spec.key, start, end, size)) for start, end in ranges or []]


def split_phases(recipe: WikipediaRecipe, split_bytes: int) -> SourcePhases:
    """Stage each splittable dump as page-range tasks, then join them into the dump's staging.

    Runs before the usual staging: a joined dump has a valid stage marker, so its stage task
    returns at once, and dedup and finalize see one input per dump, as in the one-task run.
    Only a failed range is reported back (it fails its dump); range staging is removed once
    the run has finished.
    """

    def before_stage(ctx: pipeline.RunContext, specs: list[InputSpec]) -> dict[str, InputRecord]:
        scope = pipeline.scope_hash([s.key for s in specs], ctx.config_hash)
        plans = {s.key: (s, _ranges_to_stage(s, ctx, scope, split_bytes)) for s in specs}
        plans = {key: plan for key, plan in plans.items() if plan[1]}
        if not plans:
            return {}
        futures = {stage_task.submit(recipe, part, ctx, hash_input=number == 0): part.key
                   for _, parts in plans.values() for number, part in enumerate(parts)}
        get_run_logger().info("staging %d dumps as %d page-range tasks", len(plans), len(futures))
        staged = {futures[f]: f.result() for f in as_completed(list(futures))}
        failed = {}
        for key, (spec, parts) in plans.items():
            record = splits.join_ranges(ctx, spec, [splits.RangeInput(p, staged[p.key]) for p in parts])
            if record.status == "failed":
                failed[key] = record
        return failed

    def cleanup(ctx: pipeline.RunContext, keys: list[str]) -> None:
        splits.remove_ranges(ctx, keys)

    return SourcePhases(before_stage=before_stage, cleanup=cleanup)


@flow(name="wikipedia", log_prints=True)
def wikipedia_flow(config: WikipediaConfig) -> SourceRunSummary:
    """Read, clean and deduplicate Wikipedia dumps (see the module docstring)."""
    recipe = config.recipe()
    return run_source("wikipedia", config, recipe, config.inputs(), config.checksum_lists(),
                      phases=split_phases(recipe, config.split_bytes))


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


if __name__ == "__main__":
    sys.exit(main())
