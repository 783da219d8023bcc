"""Books flow: Project Gutenberg texts -> stripped, exact- and near-deduplicated shards + manifest.

    python -m flows.books --inputs 'gutenberg/**/*.txt' --out data/
    python -m flows.books --inputs 'books3/*.txt' --set keep_without_header=true --out data/
    python -m flows.books --inputs 'gutenberg/**/*.txt' --set near_dedup.mode=containment --out data/

Phases: book lists (many small books per task) -> stage (read, strip, length floor) -> run-wide
exact dedup -> MinHash signatures per input -> run-wide near-dedup (>= 90% overlap) -> finalize
-> manifest. Near duplicates are dropped with reason ``near_duplicate``; the book each one
matched is in the manifest's ``errors`` table and in ``attributes/books/near_duplicates.parquet``.

Near-dedup runs between the run-wide exact dedup and finalize, through the generic runner's
:class:`flows._source_flow.SourcePhases`: the near duplicates go on the run's drop list with their
own reason and the book they matched, so finalize counts them as ``near_duplicate``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.config import PipelineConfig
from flows._cli import Flag, FlowCLI
from flows._config_parts import LateBoundsConfig
from flows._lazy import NO_CACHE, LazyImport, flow, task
from flows._source_flow import (
    SourcePhases,
    SourceRunSummary,
    expand_locations,
    print_summary,
    run_source,
    write_input_lists,
)
from sources.gutenberg import BOOK_LIST_SUFFIX, BookSettings, GutenbergRecipe, book_list_payload

if TYPE_CHECKING:
    from prefect import get_run_logger

    from core import pipeline
    from dedupe import near_books
else:  # only a run needs them (Prefect, pyarrow): not --help or a refused command
    near_books = LazyImport("dedupe.near_books")
    get_run_logger = LazyImport("prefect", "get_run_logger")
    pipeline = LazyImport("core.pipeline")


# -- books -----------------------------------------------------------------------------------
class NearDedupConfig(BaseModel):
    """Book-level near-dedup (see :mod:`dedupe.near_books`)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    mode: Literal["jaccard", "containment"] = "jaccard"
    threshold: float = Field(0.9, gt=0, le=1)
    candidate_threshold: float = Field(0.7, gt=0, le=1)
    num_perm: int = Field(128, gt=0)
    ngram: int = Field(5, gt=0)
    seed: int = 1

    def settings(self) -> near_books.NearDupSettings:
        """As the pure module's settings."""
        return near_books.NearDupSettings(self.mode, self.threshold, self.candidate_threshold, self.num_perm,
                                          self.ngram, self.seed)


class BooksConfig(LateBoundsConfig):
    """Settings of the Books recipe (defaults in ``configs/books.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs",)

    #: Which files are read does not change how each is processed: not part of the config hash.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"inputs", "books_per_input"}
    #: Exposed after the first release at the value the reader already used (see LateBoundsConfig).
    HASHED_WHEN_SET: ClassVar[frozenset[str]] = frozenset({"clean_timeout_s"})

    inputs: list[str] = Field(default_factory=list)
    books_per_input: int = Field(100, gt=0, description="books per pipeline input (task); 1 = one per file")
    keep_without_header: bool = False
    min_chars: int = Field(1_000, ge=0)
    max_book_bytes: int = Field(64 * 1024 * 1024, gt=0)
    clean_timeout_s: float = Field(30.0, gt=0, description="wall-time bound of one book's cleaning")
    near_dedup: NearDedupConfig = Field(default_factory=NearDedupConfig)

    def recipe(self) -> GutenbergRecipe:
        """The source object the pipeline runs."""
        return GutenbergRecipe(BookSettings(self.keep_without_header, self.max_book_bytes, self.min_chars,
                                            clean_timeout_s=self.clean_timeout_s))

    def locations(self) -> list[str]:
        """Book files, or book lists grouping ``books_per_input`` files each."""
        if not self.inputs:
            raise ValueError("no input: give --inputs (paths or globs of book files)")
        files = expand_locations(self.inputs)
        if self.books_per_input == 1:
            return files
        lists_dir = Path(self.out).resolve() / "_inputs" / "books"
        return write_input_lists(lists_dir, "books", BOOK_LIST_SUFFIX, [Path(f) for f in files],
                                 self.books_per_input, book_list_payload)


@task(name="near-signatures", cache_policy=NO_CACHE, task_run_name="minhash {key}")
def signature_task(out: Path, source: str, key: str, settings: near_books.NearDupSettings) -> int:
    """MinHash every staged book of one input (see :func:`dedupe.near_books.write_signatures`)."""
    return near_books.write_signatures(out, source, key, settings)


@task(name="near-dedup", cache_policy=NO_CACHE)
def near_dedup_task(ctx: pipeline.RunContext, keys: list[str], settings: near_books.NearDupSettings) -> int:
    """Match the run's books, write the match table, put the near duplicates on the drop list."""
    matches = near_books.find_near_duplicates(near_books.load_signatures(ctx.out, ctx.source, keys), settings)
    near_books.write_matches(ctx.out, ctx.source, matches)
    pipeline.add_drops(ctx, near_books.drop_rows(matches))
    return len(matches)


def near_dedup_phases(settings: near_books.NearDupSettings) -> SourcePhases:
    """Book-level near-dedup between the run-wide exact dedup and finalize."""
    rows: list[dict[str, Any]] = []

    def after_dedup(ctx: pipeline.RunContext, keys: list[str]) -> None:
        futures = [signature_task.submit(ctx.out, ctx.source, key, settings) for key in keys]
        books = sum(f.result() for f in futures)
        found = near_dedup_task.submit(ctx, keys, settings).result()
        get_run_logger().info("near dedup (%s >= %.2f) over %d books: %d near duplicates",
                              settings.mode, settings.threshold, books, found)
        rows.extend({k: v for k, v in m.items() if k != "language"}
                    for m in near_books.iter_match_rows(near_books.read_matches(ctx.out, ctx.source)))

    def tables() -> list[tuple[str, list[dict[str, Any]], str]]:
        if not rows:
            return []
        return [("books-near-duplicates", rows[:1000], "Books dropped as near duplicates, and the book each matched")]

    return SourcePhases(after_dedup=after_dedup, tables=tables)


@flow(name="books", log_prints=True)
def books_flow(config: BooksConfig) -> SourceRunSummary:
    """Read, strip, deduplicate and near-deduplicate books (see the module docstring)."""
    phases = near_dedup_phases(config.near_dedup.settings()) if config.near_dedup.enabled else None
    return run_source("books", config, config.recipe(), config.locations(), phases=phases)


cli = FlowCLI(books_flow, BooksConfig, "books.yaml", __doc__, report=print_summary, flags=[
    Flag("--inputs", "inputs", "book file path or glob (repeatable; ** allowed)", many=True),
    Flag("--books-per-input", "books_per_input", "books per task (default from config: 100)", type=int),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main


if __name__ == "__main__":
    sys.exit(main())
