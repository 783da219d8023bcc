"""Book-level near-dedup as a phase of a source run (``books``, ``science_books``).

Between the run-wide exact dedup and finalize (:class:`core.driver.SourcePhases`'s
``after_dedup``): MinHash every input's staged books (one call per input), then one run-wide
match that writes the match table and puts the near duplicates on the run's drop list. Each
call goes through the driver's executor, so the phase runs in process (the driver's tests) or
as the ``near-signatures`` and ``near-dedup`` Prefect tasks (``tasks.phases``) alike.
"""

from __future__ import annotations

from typing import Any

from core import pipeline
from core.driver import PhaseRun, SourcePhases
from dedupe import near_books


def match_near_duplicates(ctx: pipeline.RunContext, keys: list[str], settings: near_books.NearDupSettings) -> int:
    """Match the run's books, write the match table, put the near duplicates on the drop list."""
    matches = near_books.find_near_duplicates(near_books.load_signatures(ctx.out, ctx.source, keys), settings)
    near_books.write_matches(ctx.out, ctx.source, matches)
    pipeline.add_drops(ctx, near_books.drop_rows(matches))
    return len(matches)


def near_dedup_phases(settings: near_books.NearDupSettings) -> SourcePhases:
    """Book-level near-dedup between the run-wide exact dedup and finalize; its matches as a table."""
    rows: list[dict[str, Any]] = []

    def after_dedup(ctx: pipeline.RunContext, keys: list[str], run: PhaseRun) -> None:
        futures = [run.executor.submit(near_books.write_signatures, ctx.out, ctx.source, key, settings) for key in keys]
        books = sum(f.result() for f in futures)
        found = run.executor.submit(match_near_duplicates, ctx, keys, settings).result()
        run.log.info("near dedup (%s >= %.2f) over %d books: %d near duplicates",
                     settings.mode, settings.threshold, books, found)
        rows.extend({k: v for k, v in m.items() if k != "language"}
                    for m in near_books.iter_match_rows(near_books.read_matches(ctx.out, ctx.source)))

    def tables() -> list[tuple[str, list[dict[str, Any]], str]]:
        if not rows:
            return []
        return [("books-near-duplicates", rows[:1000], "Books dropped as near duplicates, and the book each matched")]

    return SourcePhases(after_dedup=after_dedup, tables=tables)
