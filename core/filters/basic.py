"""Generic filters a source composes, as datatrove's ``LambdaFilter`` and friends: no source knowledge.

* :class:`Predicate`: keep a document when a function of it is true, else drop it with a reason
  (``Predicate(lambda doc: "http" not in doc.text, "has_link", name="no_links")``);
* :class:`FieldPredicate`: the same on one field, ``text``/``id``/``source`` or a metadata key,
  dotted for nested metadata (``meta.answer_count``, ``meta.scores.reddit``);
* :class:`MinLength` (``too_short``) and :class:`NonEmpty` (``empty``).

Each is a :class:`core.steps.Filter`: the runner counts its drops per step name and reason and its
traffic and CPU time in the manifest (``drops``, ``step_stats``), so a one-line filter is as
accounted for as any other step. Give each a ``name`` that says what it checks: two filters of
one source with the same name add up in the manifest.

Pickling: a recipe is sent to process-pool workers. A filter built inside the recipe's ``steps()``
runs where it was built and may hold a lambda; one stored on the recipe (a field) must hold a
picklable function (a module-level function, ``functools.partial``, ``operator``), as
:class:`sources.stackexchange.MinAnswers` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from core.document import Document
from core.steps import Filter

#: The Document attributes :class:`FieldPredicate` reads directly; anything else is ``meta.<key>``.
DOCUMENT_FIELDS = ("text", "id", "source")


class Predicate(Filter):
    """Keeps a document when ``keep(doc)`` is true; otherwise drops it with ``reason``."""

    def __init__(self, keep: Callable[[Document], bool], reason: str, name: str = "predicate") -> None:
        self.keep = keep
        self.reason = reason
        self.name = name

    def decide(self, doc: Document) -> str | None:
        return None if self.keep(doc) else self.reason


def field_value(doc: Document, field: str, default: Any = None) -> Any:
    """``doc.text``/``id``/``source``, or the metadata value at ``meta.a.b`` (``default`` where a key is missing)."""
    if field in DOCUMENT_FIELDS:
        return getattr(doc, field)
    if not field.startswith("meta."):
        raise ValueError(f"field {field!r}: one of {', '.join(DOCUMENT_FIELDS)} or meta.<key>")
    value: Any = doc.meta
    for key in field[len("meta."):].split("."):
        if not isinstance(value, Mapping) or key not in value:
            return default
        value = value[key]
    return value


class FieldPredicate(Filter):
    """Keeps a document when ``keep(value)`` is true for one of its fields (:func:`field_value`); else drops it.

    ``default`` is the value a document without the field is judged on (None unless given), so
    ``FieldPredicate("meta.score", partial(operator.le, 3), "low_score", default=0)`` drops a
    document without a score as it drops one scored 0.
    """

    def __init__(self, field: str, keep: Callable[[Any], bool], reason: str, name: str | None = None,
                 default: Any = None) -> None:
        field_value(Document("", "", ""), field)  # a misspelt field fails here, not at the first document
        self.field = field
        self.keep = keep
        self.reason = reason
        self.default = default
        self.name = name or f"{field.replace('.', '_')}_predicate"

    def decide(self, doc: Document) -> str | None:
        return None if self.keep(field_value(doc, self.field, self.default)) else self.reason


class MinLength(Filter):
    """Drops documents whose text is shorter than ``min_chars`` characters (``too_short``; e.g. articles that were all markup)."""

    name = "min_length"

    def __init__(self, min_chars: int) -> None:
        self.min_chars = min_chars

    def decide(self, doc: Document) -> str | None:
        return "too_short" if len(doc.text) < self.min_chars else None


class NonEmpty(Filter):
    """Drops documents whose text is only whitespace (``empty``)."""

    name = "non_empty"

    def decide(self, doc: Document) -> str | None:
        return "empty" if not doc.text.strip() else None
