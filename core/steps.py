"""Steps: small objects with one ``run(docs)`` generator, chained by :func:`run_steps`.

A step receives Documents and yields Documents (kept, possibly transformed) or :class:`Drop`
records (not kept, with a reason). A :class:`Filter` only decides keep-or-drop; the runner does
the counting, per step and reason, so every step's effect shows up in the manifest without the
step knowing about it. Steps hold no global state; heavy state (a model) is loaded lazily on
first use inside the worker that runs the step.
"""

from __future__ import annotations

import logging
import time
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


@dataclass
class StepCounts:
    """One step's traffic over one input: documents and characters out, CPU seconds spent.

    ``cpu_total`` includes the time of the steps before it (they run inside its ``next()``);
    :meth:`StepStats.step_rows` subtracts them, and takes a step's ``docs_in``/``chars_in`` from
    the step before it (the chain is linear: a step receives exactly what its predecessor gave
    out). The reader's ``docs_in`` is every record it gave (documents and drops alike,
    :attr:`StepStats.records_in`); its ``chars_in`` is None: what it read was bytes of a file.
    """

    step: str
    docs_out: int = 0
    chars_out: int = 0
    cpu_total: float = 0.0


@dataclass
class StepStats:
    """What happened to the records of one input: read, kept, dropped by (step, reason), per-step traffic."""

    records_in: int = 0
    kept: int = 0
    drops: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    errors: list[dict[str, str]] = field(default_factory=list)
    error_count: int = 0
    #: Per stage in chain order (the reader first); filled by :func:`run_steps`.
    steps: list[StepCounts] = field(default_factory=list)

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

    def step_rows(self) -> list[dict[str, Any]]:
        """Per-step traffic as manifest rows, in chain order, each step's own CPU seconds (see :class:`StepCounts`)."""
        rows: list[dict[str, Any]] = []
        previous: StepCounts | None = None
        for position, counts in enumerate(self.steps):
            rows.append({
                "position": position, "step": counts.step,
                "docs_in": self.records_in if previous is None else previous.docs_out,
                "docs_out": counts.docs_out,
                "chars_in": None if previous is None else previous.chars_out, "chars_out": counts.chars_out,
                "cpu_seconds": round(max(0.0, counts.cpu_total - (previous.cpu_total if previous else 0.0)), 6),
            })
            previous = counts
        return rows

    @property
    def dropped(self) -> int:
        """Total number of dropped records."""
        return sum(self.drops.values())

    def balanced(self) -> bool:
        """The accounting invariant: every record read was kept or dropped with a reason."""
        return self.records_in == self.kept + self.dropped


def sum_step_rows(parts: Iterable[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The step rows of several runs of one chain (the ranges of a split input) summed per position.

    Counts add; ``chars_in`` stays None where it is None (the reader); CPU seconds add.
    """
    summed: dict[tuple[int, str], dict[str, Any]] = {}
    for rows in parts:
        for row in rows:
            key = (int(row["position"]), str(row["step"]))
            into = summed.setdefault(key, {"position": key[0], "step": key[1], "docs_in": 0, "docs_out": 0,
                                           "chars_in": None, "chars_out": 0, "cpu_seconds": 0.0})
            for name in ("docs_in", "docs_out", "chars_out"):
                into[name] += int(row[name])
            if row["chars_in"] is not None:
                into["chars_in"] = (into["chars_in"] or 0) + int(row["chars_in"])
            into["cpu_seconds"] = round(into["cpu_seconds"] + float(row["cpu_seconds"]), 6)
    return [summed[key] for key in sorted(summed)]


def chain_step_rows(first: Sequence[dict[str, Any]], then: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The step rows of two phases over one input (an extraction, then staging) as one chain, positions after ``first``'s."""
    offset = len(first)
    return [*first, *({**row, "position": row["position"] + offset} for row in then)]


def _documents_only(
    records: Iterable[Record], counts: StepCounts, stats: StepStats, language: str | None
) -> Iterator[Document]:
    """Pass Documents on, count the Drops that ``counts.step`` produced, and time the step (module docstring)."""
    clock = time.thread_time
    step_name = counts.step
    started = clock()
    for record in records:
        if isinstance(record, Drop):
            stats.count_drop(step_name, record, language)
            if record.is_error:
                log.warning("%s dropped %s: %s (%s)", step_name, record.record, record.reason, record.detail)
        else:
            counts.docs_out += 1
            counts.chars_out += len(record.text)
            counts.cpu_total += clock() - started
            yield record  # the time suspended here is the consumer's
            started = clock()
    counts.cpu_total += clock() - started


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
    reader = StepCounts(reader_name)
    stats.steps.append(reader)
    stream: Iterator[Document] = _documents_only(_counted_input(records, stats), reader, stats, language)
    for step in steps:
        counts = StepCounts(step.name)
        stats.steps.append(counts)
        stream = _documents_only(step.run(stream), counts, stats, language)
    for doc in stream:
        stats.kept += 1
        yield doc
