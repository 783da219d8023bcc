"""cc_net's cheap steps: tidy lines, minimum length, and the line normalization used for dedup.

cc_net (Wenzek et al. 2020) normalizes each line before hashing it for paragraph dedup, so that
lines differing only in case, digits, punctuation or invisible characters count as one line:
strip, lowercase, every digit -> ``0``, punctuation and non-printing characters removed. Here it is
one ``str.translate`` over a table filled as characters are first met (a dict whose misses look up
the character's category once: building it for all of Unicode up front cost every worker process
about 2 CPU-seconds), then ``lower()``: two passes over the line, no regular expressions.
:func:`normalize_lines_for_dedup` does the same for every line of a text in one pass over the
whole text (the same lines as calling :func:`normalize_for_dedup` per line, a third of its CPU on
web pages: the per-call overhead, not the characters, dominated).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import replace
from functools import cache

from core.document import Document, Drop
from core.filters import basic
from core.filters.record_bound import TextBound
from core.steps import Record, Step

#: cc_net's ``min_len``: shorter documents are dropped.
CCNET_MIN_CHARS = 300

_INNER_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200b\u3000]+")


class _DedupTable(dict[int, "str | int | None"]):
    """Unicode digits -> "0"; punctuation (P*), control and format characters (Cc, Cf) -> removed.

    Filled per code point on first use (``str.translate`` calls ``__missing__`` on a miss); other
    characters map to themselves. Unassigned, private-use and surrogate code points are left alone.
    """

    def __init__(self, keep_newline: bool = False) -> None:
        super().__init__()
        if keep_newline:
            self[10] = 10

    def __missing__(self, code: int) -> str | int | None:
        category = unicodedata.category(chr(code))
        value: str | int | None = code
        if category == "Nd":
            value = "0"
        elif category[0] == "P" or category in ("Cc", "Cf"):
            value = None
        self[code] = value
        return value


@cache
def _dedup_table(keep_newline: bool = False) -> _DedupTable:
    """The process's table (one per ``keep_newline``): filled as texts meet new characters."""
    return _DedupTable(keep_newline)


def normalize_for_dedup(line: str) -> str:
    """cc_net's dedup normalization of one line (see the module docstring)."""
    return line.strip().translate(_dedup_table()).lower().strip()


def normalize_lines_for_dedup(text: str) -> list[str]:
    """``[normalize_for_dedup(line) for line in text.split("\\n")]``, in one pass over the text.

    The same strings: the table keeps ``\\n`` (every other character maps as per line); ``lower``
    looks across no ``\\n`` (its only context rule, the final sigma, stops at a character that is
    neither cased nor case-ignorable); and stripping once after the translation removes what the
    per-line strip before it would (the translation deletes characters, it never adds whitespace).
    """
    return [line.strip() for line in text.translate(_dedup_table(True)).lower().split("\n")]


def tidy_lines(text: str) -> str:
    """Collapse runs of spaces inside lines, strip each line, drop empty lines.

    The line is the unit of paragraph dedup and of C4's rules, so this runs before both: it makes
    ``"Home  \\n\\n"`` and ``"Home"`` the same line and removes blank lines that would otherwise all
    be "duplicates" of each other.
    """
    lines = (line.strip() for line in _INNER_SPACES.sub(" ", text).splitlines())  # no run spans a line end
    return "\n".join(line for line in lines if line)


class TidyLines(Step):
    """Applies :func:`tidy_lines` under a time and size bound; drops documents left empty."""

    name = "tidy_lines"

    def __init__(self, bound: TextBound[str] | None = None) -> None:
        self.bound = bound or TextBound(tidy_lines)

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        for doc in docs:
            text = self.bound.run(doc, doc.text)
            if isinstance(text, Drop):
                yield text
            elif not text:
                yield Drop("empty", doc.id, language=doc.language)
            else:
                yield doc if text == doc.text else replace(doc, text=text)


class MinLength(basic.MinLength):
    """Drops documents shorter than ``min_chars`` characters (cc_net: 300)."""

    def __init__(self, min_chars: int = CCNET_MIN_CHARS) -> None:
        super().__init__(min_chars)
