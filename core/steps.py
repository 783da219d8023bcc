"""Steps: small objects with one ``run(docs)`` generator, chained by :func:`run_steps`.

A step receives Documents and yields Documents (kept, possibly transformed) or :class:`Drop`
records (not kept, with a reason). A :class:`Filter` only decides keep-or-drop; the runner does
the counting, per step and reason, so every step's effect shows up in the manifest without the
step knowing about it. Steps hold no global state; heavy state (a model) is loaded lazily on
first use inside the worker that runs the step.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.document import Document, Drop

log = logging.getLogger(__name__)

Record = Document | Drop

#: How many error details (bad records) are kept per input for the manifest; counts are exact,
#: the list of examples is bounded so a pathological file cannot blow up memory.
MAX_ERROR_EXAMPLES = 200


class Step:
    """Base class of a pipeline step; subclasses implement :meth:`run`."""

    #: Stable name recorded with every drop this step makes.
    name: str = "step"

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        """Yield each document to keep, or a Drop for each one not kept."""
        raise NotImplementedError


class BatchedStep(Step):
    """A step that decides on documents a batch at a time (model inference is cheaper batched).

    Subclasses set ``batch_size`` and implement :meth:`_flush`, which yields a Document or a Drop
    for every document of the batch, in order.
    """

    batch_size: int = 256

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        batch: list[Document] = []
        for doc in docs:
            batch.append(doc)
            if len(batch) >= self.batch_size:
                yield from self._flush(batch)
                batch = []
        yield from self._flush(batch)

    def _flush(self, batch: list[Document]) -> Iterator[Record]:
        raise NotImplementedError


class Filter(Step):
    """A step that keeps or drops documents unchanged; subclasses implement :meth:`decide`."""

    def decide(self, doc: Document) -> str | None:
        """Return None to keep ``doc``, or the reason to drop it."""
        raise NotImplementedError

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        for doc in docs:
            reason = self.decide(doc)
            if reason is None:
                yield doc
            else:
                yield Drop(reason=reason, record=doc.id, language=doc.language)


class MinLength(Filter):
    """Drops documents whose text is shorter than ``min_chars`` (e.g. articles that were all markup)."""

    name = "min_length"

    def __init__(self, min_chars: int) -> None:
        self.min_chars = min_chars

    def decide(self, doc: Document) -> str | None:
        return "too_short" if len(doc.text) < self.min_chars else None


@dataclass
class StepStats:
    """What happened to the records of one input: read, kept, dropped by (step, reason)."""

    records_in: int = 0
    kept: int = 0
    drops: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    errors: list[dict[str, str]] = field(default_factory=list)
    error_count: int = 0

    def count_drop(self, step: str, drop: Drop, default_language: str | None = None) -> None:
        """Count one dropped record; keep a bounded list of error examples for the manifest."""
        language = drop.language or default_language or ""
        self.drops[(step, drop.reason, language)] += 1
        if drop.is_error:
            self.error_count += 1
            if len(self.errors) < MAX_ERROR_EXAMPLES:
                self.errors.append(
                    {"step": step, "reason": drop.reason, "record": drop.record, "detail": drop.detail}
                )

    def drop_rows(self) -> list[dict[str, Any]]:
        """Drops as manifest rows: one per (step, reason, language), sorted."""
        return [
            {"step": step, "reason": reason, "language": lang or None, "count": count}
            for (step, reason, lang), count in sorted(self.drops.items())
        ]

    @property
    def dropped(self) -> int:
        """Total number of dropped records."""
        return sum(self.drops.values())

    def balanced(self) -> bool:
        """The accounting invariant: every record read was kept or dropped with a reason."""
        return self.records_in == self.kept + self.dropped


def _documents_only(
    records: Iterable[Record], step_name: str, stats: StepStats, language: str | None
) -> Iterator[Document]:
    """Pass Documents on and count the Drops that ``step_name`` produced."""
    for record in records:
        if isinstance(record, Drop):
            stats.count_drop(step_name, record, language)
            if record.is_error:
                log.warning("%s dropped %s: %s (%s)", step_name, record.record, record.reason, record.detail)
        else:
            yield record


def _counted_input(records: Iterable[Record], stats: StepStats) -> Iterator[Record]:
    for record in records:
        stats.records_in += 1
        yield record


def run_steps(
    records: Iterable[Record],
    steps: Sequence[Step],
    stats: StepStats,
    reader_name: str = "reader",
    language: str | None = None,
) -> Iterator[Document]:
    """Chain a reader's records through ``steps``; yield kept documents, count everything.

    ``language`` is the default language for drops that do not carry one (e.g. a whole
    Wikipedia dump is one language), so drop counts can be reported per language.
    """
    stream: Iterator[Document] = _documents_only(_counted_input(records, stats), reader_name, stats, language)
    for step in steps:
        stream = _documents_only(step.run(stream), step.name, stats, language)
    for doc in stream:
        stats.kept += 1
        yield doc
