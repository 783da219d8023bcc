"""A time and size bound for the regex steps that run on one document at a time.

The filters' regexes are written to be linear, but "written to be" is a claim, and ``re``
cannot be interrupted: a backtracking pattern, or a quadratic one such as RedPajama's C comment
pattern on a file of ``/*`` without ``*/``, holds a worker for hours on one document. Each step
therefore runs its per-document function through a :class:`TextBound`:

* documents up to ``inline_below`` characters run in this process (a helper round trip costs
  more than the regexes on a small page, and linear work on 64 K characters is milliseconds;
  the exception, the RedPajama comment pattern, sets its own lower threshold);
* larger ones run in a :class:`core.bounded.BoundedCleaner` helper under ``timeout_s``: past it
  the document is a ``cleaner_timeout`` drop and the next one goes on;
* documents over ``max_chars`` are ``record_too_large`` drops without running at all.

A step holding a :class:`TextBound` still pickles (it is sent to process-pool workers): the
helper is dropped from the pickle and started again, on first need, where the step runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from core.bounded import DEFAULT_TIMEOUT_S, BoundedCleaner
from core.document import Document, Drop
from core.steps import Filter, Record

R = TypeVar("R")

#: Below this many characters a document's regex work runs in-process (see the module docstring).
INLINE_CHARS = 64 << 10
#: Above this many characters a document is not given to a regex step at all.
MAX_CHARS = 16 << 20


class TextBound(Generic[R]):
    """Run ``func(text, *args)`` for one document under a time and size bound (module docstring)."""

    def __init__(self, func: Callable[..., R], *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 max_chars: int = MAX_CHARS, inline_below: int = INLINE_CHARS) -> None:
        self.func = func
        self.timeout_s = timeout_s
        self.max_chars = max_chars
        self.inline_below = inline_below
        self._cleaner: BoundedCleaner[R] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_cleaner": None}

    def run(self, doc: Document, text: str, *args: Any) -> R | Drop:
        """The function's result, or a Drop naming ``doc`` (with its language) when bounded."""
        if len(text) > self.max_chars:
            return Drop("record_too_large", doc.id, f"{len(text):,} > {self.max_chars:,} characters (regex step bound)",
                        language=doc.language)
        if len(text) <= self.inline_below:
            return self.func(text, *args)
        if self._cleaner is None:
            self._cleaner = BoundedCleaner(self.func, timeout_s=self.timeout_s, max_input=self.max_chars,
                                           shared=True)
        result = self._cleaner.run(doc.id, text, *args)
        if isinstance(result, Drop):
            return Drop(result.reason, result.record, result.detail, language=doc.language)
        return result


class BoundedFilter(Filter):
    """A :class:`Filter` whose decision on a document's text runs under :attr:`bound`.

    Subclasses set ``bound`` (a :class:`TextBound` of a module-level ``func(text, *args) ->
    reason or None``) and, when the function needs more than the text, :meth:`bound_args`.
    """

    bound: TextBound[str | None]

    def bound_args(self, doc: Document) -> tuple[Any, ...]:
        """Arguments after the text."""
        return ()

    def decide(self, doc: Document) -> str | None:
        """The unbounded decision (for callers that hold one document and no deadline)."""
        return self.bound.func(doc.text, *self.bound_args(doc))

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        for doc in docs:
            reason = self.bound.run(doc, doc.text, *self.bound_args(doc))
            if isinstance(reason, Drop):
                yield reason
            elif reason is None:
                yield doc
            else:
                yield Drop(reason=reason, record=doc.id, language=doc.language)
