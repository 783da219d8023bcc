"""cc_net's cheap steps: tidy lines, minimum length, and the line normalization used for dedup.

cc_net (Wenzek et al. 2020) normalizes each line before hashing it for paragraph dedup, so that
lines differing only in case, digits, punctuation or invisible characters count as one line:
strip, lowercase, every digit -> ``0``, punctuation and non-printing characters removed. Here it is
one ``str.translate`` over a table filled as characters are first met (a dict whose misses look up
the character's category once: building it for all of Unicode up front cost every worker process
about 2 CPU-seconds), then ``lower()``: two passes over the line, no regular expressions.
:func:`normalize_lines_for_dedup` does the same for every line of a text in one pass over the
whole text (the same lines as calling :func:`normalize_for_dedup` per line, a third of its CPU on
web pages: the per-call overhead, not the characters, dominated), and maps the characters with
an array instead of ``str.translate`` (which looks each non-ASCII character up as a Python object:
2.5 of 2.7 CPU-s per 48 MB of web text; the array lookup 0.9): the text as UTF-32 code points, a
gather through a code point table filled as characters are first met, the deleted ones left out.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import replace
from functools import cache

import numpy as np

from core.document import Document, Drop
from core.filters import basic
from core.filters.record_bound import TextBound
from core.steps import Record, Step

#: cc_net's ``min_len``: shorter documents are dropped.
CCNET_MIN_CHARS = 300

#: What tidy_lines collapses to one " " inside a line: a run of two or more of these spaces, or
#: any one of them but " " itself (a lone " " is already what the collapse would give).
_SPACES_TO_TIDY = re.compile(r"[ \t\u00a0\u2000-\u200b\u3000]{2,}|[\t\u00a0\u2000-\u200b\u3000]")


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
        value = _dedup_value(code)
        self[code] = value
        return value


def _dedup_value(code: int) -> str | int | None:
    """The table's rule for one code point: "0", None (removed) or the code point itself."""
    category = unicodedata.category(chr(code))
    if category == "Nd":
        return "0"
    if category[0] == "P" or category in ("Cc", "Cf"):
        return None
    return code


class _CodePointMap:
    """The same mapping as an array over all code points (``\\n`` kept), for whole texts.

    Entries start as ``UNKNOWN`` and are filled from :func:`_dedup_value` for the code points a
    text brings that were not met before (one ``np.unique`` of the misses); ``DELETE`` marks the
    removed ones. 4.4 MB per process.
    """

    UNKNOWN = np.uint32(0xFFFFFFFE)
    DELETE = np.uint32(0xFFFFFFFF)

    def __init__(self) -> None:
        self.table = np.full(0x110000, self.UNKNOWN, dtype=np.uint32)
        self.table[10] = 10

    def apply(self, text: str) -> str:
        """``text.translate(_dedup_table(True))``."""
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        mapped = self.table[codes]
        unknown = mapped == self.UNKNOWN
        if unknown.any():
            for code in np.unique(codes[unknown]).tolist():
                value = _dedup_value(code)
                self.table[code] = 48 if value == "0" else (self.DELETE if value is None else code)
            mapped = self.table[codes]
        kept = mapped[mapped != self.DELETE]
        return kept.tobytes().decode("utf-32-le", "surrogatepass")


@cache
def _code_point_map() -> _CodePointMap:
    return _CodePointMap()


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
    return [line.strip() for line in _code_point_map().apply(text).lower().split("\n")]


def tidy_lines(text: str) -> str:
    """Collapse runs of spaces inside lines, strip each line, drop empty lines.

    The line is the unit of paragraph dedup and of C4's rules, so this runs before both: it makes
    ``"Home  \\n\\n"`` and ``"Home"`` the same line and removes blank lines that would otherwise all
    be "duplicates" of each other.
    """
    if _SPACES_TO_TIDY.search(text) is not None:  # most lines have single spaces only: nothing to replace
        text = _SPACES_TO_TIDY.sub(" ", text)
    lines = (line.strip() for line in text.splitlines())  # no run spans a line end
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
