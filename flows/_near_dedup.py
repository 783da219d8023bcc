"""Book-level near-dedup as a phase of a source run: shared by ``flows.books`` and ``flows.science_books``.

Its settings (the ``near_dedup`` section of both configs) and its two tasks (MinHash per input,
one run-wide match) run between the run-wide exact dedup and finalize, through the generic
runner's :class:`flows._source_flow.SourcePhases`. Here, not in ``flows.books``, so neither flow
imports the other's module (``tests/test_layout_rules.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from flows._lazy import NO_CACHE, LazyImport, task
from flows._source_flow import SourcePhases

if TYPE_CHECKING:
    from prefect import get_run_logger

    from core import pipeline
    from dedupe import near_books
else:  # only a run needs them (Prefect, pyarrow): not --help or a refused command
    near_books = LazyImport("dedupe.near_books")
    get_run_logger = LazyImport("prefect", "get_run_logger")
    pipeline = LazyImport("core.pipeline")


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
