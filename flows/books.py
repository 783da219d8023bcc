"""Books flow: Project Gutenberg texts -> stripped, exact- and near-deduplicated shards + manifest.

    python -m flows.books --inputs 'gutenberg/**/*.txt' --out data/
    python -m flows.books --inputs 'books3/*.txt' --set keep_without_header=true --out data/
    python -m flows.books --inputs 'gutenberg/**/*.txt' --set near_dedup.mode=containment --out data/

Phases: book lists (many small books per task) -> stage (read, strip, length floor) -> run-wide
exact dedup -> MinHash signatures per input -> run-wide near-dedup (>= 90% overlap) -> finalize
-> manifest. Near duplicates are dropped with reason ``near_duplicate``; the book each one
matched is in the manifest's ``errors`` table and in ``attributes/books/near_duplicates.parquet``.

Near-dedup runs between the run-wide exact dedup and finalize, through the generic runner's
:class:`flows.runtime.source_flow.SourcePhases`: the near duplicates go on the run's drop list with their
own reason and the book they matched, so finalize counts them as ``near_duplicate``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from core.config import PipelineConfig
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.config_parts import LateBoundsConfig
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.near_dedup import NearDedupConfig, near_dedup_phases
from flows.runtime.source_flow import (
    SourceRunSummary,
    expand_locations,
    print_summary,
    run_source,
    write_input_lists,
)

if TYPE_CHECKING:
    from sources.gutenberg import GutenbergRecipe
    from sources.samples.gutenberg import write_sample_inputs
else:  # the sample writer: for a sample run, not --help
    write_sample_inputs = LazyImport("sources.samples.gutenberg", "write_sample_inputs")


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
        from sources.gutenberg import BookSettings, GutenbergRecipe  # the recipe: for a run, not --help

        return GutenbergRecipe(BookSettings(self.keep_without_header, self.max_book_bytes, self.min_chars,
                                            clean_timeout_s=self.clean_timeout_s))

    def locations(self) -> list[str]:
        """Book files, or book lists grouping ``books_per_input`` files each."""
        from sources.gutenberg import BOOK_LIST_SUFFIX, book_list_payload

        if not self.inputs:
            raise ValueError("no input: give --inputs (paths or globs of book files)")
        files = expand_locations(self.inputs)
        if self.books_per_input == 1:
            return files
        lists_dir = Path(self.out).resolve() / "_inputs" / "books"
        return write_input_lists(lists_dir, "books", BOOK_LIST_SUFFIX, [Path(f) for f in files],
                                 self.books_per_input, book_list_payload)


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
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("books", BooksConfig, "llama", run=run, flow=books_flow, sample=write_sample_inputs)


if __name__ == "__main__":
    sys.exit(main())
