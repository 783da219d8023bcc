"""cc_net's cheap steps: tidy lines, minimum length, and the line normalization used for dedup.

cc_net (Wenzek et al. 2020) normalizes each line before hashing it for paragraph dedup, so that
lines differing only in case, digits, punctuation or invisible characters count as one line:
strip, lowercase, every digit -> ``0``, punctuation and non-printing characters removed. Here it is
one ``str.translate`` over a table built once for all of Unicode, then ``lower()``: two passes over
the line, no regular expressions.
"""

from __future__ import annotations

import re
import sys
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


@cache
def _dedup_table() -> dict[int, str | None]:
    """Unicode digits -> "0"; punctuation (P*), control and format characters (Cc, Cf) -> removed.

    Unassigned, private-use and surrogate code points are left alone: they would make the table
    a million entries large, for characters that hardly ever occur in text.
    """
    table: dict[int, str | None] = {}
    for code in range(sys.maxunicode + 1):
        category = unicodedata.category(chr(code))
        if category == "Nd":
            table[code] = "0"
        elif category[0] == "P" or category in ("Cc", "Cf"):
            table[code] = None
    return table


def normalize_for_dedup(line: str) -> str:
    """cc_net's dedup normalization of one line (see the module docstring)."""
    return line.strip().translate(_dedup_table()).lower().strip()


def tidy_lines(text: str) -> str:
    """Collapse runs of spaces inside lines, strip each line, drop empty lines.

    The line is the unit of paragraph dedup and of C4's rules, so this runs before both: it makes
    ``"Home  \\n\\n"`` and ``"Home"`` the same line and removes blank lines that would otherwise all
    be "duplicates" of each other.
    """
    lines = (_INNER_SPACES.sub(" ", line).strip() for line in text.splitlines())
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
