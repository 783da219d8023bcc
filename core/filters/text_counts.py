"""Character-class and pre-token counts of a text at numpy speed (what the code filters measure).

:mod:`core.filters.code_quality` drops files on the share of ``str.isalnum`` characters, the
number of ``str.isalpha`` characters and the number of GPT-2-style pre-tokens (matches of its
``_PRETOKEN`` pattern). Written as a Python step per character or per match, these were ~85% of
the GitHub and stack_code paths' CPU. Here a text becomes code points in numpy (one byte each
for ASCII text, UTF-32 otherwise): ASCII characters are classified by table, the few distinct
others one by one (cached), and the pre-tokens are counted from the runs of equal character
classes. Equal to the per-character definitions on any Unicode text: property test in
tests/core/filters/test_code_counts.py, with the plain per-character code as the oracle.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TextCounts:
    """Per-text counts the filters need: ``isalnum`` and ``isalpha`` characters, GPT-2-style pre-tokens."""

    alnum: int
    alpha: int
    pretokens: int


#: Character classes of the pre-token pattern (``_PRETOKEN`` of :mod:`core.filters.code_quality`):
#: letters ``[^\W\d_]``, digits ``\d``, underscore, punctuation ``[^\s\w]``, whitespace ``\s``.
#: Every character is in exactly one; each is decided by ``re`` itself, so the classes are the
#: pattern's own.
LETTER, DIGIT, UNDERSCORE, PUNCT, SPACE = range(5)
_CLASS_PATTERNS = ((LETTER, re.compile(r"[^\W\d_]")), (DIGIT, re.compile(r"\d")), (UNDERSCORE, re.compile("_")),
                   (SPACE, re.compile(r"\s")))


@functools.lru_cache(maxsize=1 << 16)
def _char_flags(ch: str) -> tuple[int, bool, bool]:
    """``(pre-token class, isalnum, isalpha)`` of one character (cached: a text has few distinct ones)."""
    code = next((code for code, pattern in _CLASS_PATTERNS if pattern.match(ch)), PUNCT)
    return code, ch.isalnum(), ch.isalpha()


#: ASCII byte -> class, a ``bytes.translate`` table. In ASCII, ``isalpha`` is exactly LETTER and
#: ``isalnum`` LETTER or DIGIT.
_ASCII_CLASSES = bytes(_char_flags(chr(value))[0] if value < 128 else PUNCT for value in range(256))
_ASCII_CLASS_ARRAY = np.frombuffer(_ASCII_CLASSES[:128], np.uint8)
#: A contraction branch that fires: an apostrophe starting a token (not after ``" "``, whose branch
#: takes it, nor after punctuation, whose run it continues) whose letters are the whole letter run.
_CONTRACTION = re.compile(r"'(?<!(?: |[^\s\w])')(?:[sdmt]|ll|ve|re)(?![^\W\d_])")


@functools.lru_cache(maxsize=4)
def text_counts(text: str) -> TextCounts:
    """The counts of ``text`` without a Python step per character (the filters spend their time here).

    Cached for the last few texts: the alphanumeric and alpha-per-token filters ask about the
    same document in turn.
    """
    if not text:
        return TextCounts(0, 0, 0)
    if text.isascii():
        data = text.encode("ascii")
        classes = np.frombuffer(data.translate(_ASCII_CLASSES), np.uint8)
        letters, digits = int(np.count_nonzero(classes == LETTER)), int(np.count_nonzero(classes == DIGIT))
        blanks = np.frombuffer(data, np.uint8) == 32
        return TextCounts(letters + digits, letters, _pretoken_count(classes, blanks, text))
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    high = points >= 128
    low_classes = _ASCII_CLASS_ARRAY[points[~high]]
    distinct, where, times = np.unique(points[high], return_inverse=True, return_counts=True)
    flags = np.array([_char_flags(chr(p)) for p in distinct.tolist()], np.int64).reshape(-1, 3)
    classes = np.empty(len(points), np.uint8)
    classes[~high] = low_classes
    classes[high] = flags[:, 0][where]
    letters, digits = int(np.count_nonzero(low_classes == LETTER)), int(np.count_nonzero(low_classes == DIGIT))
    return TextCounts(letters + digits + int(times @ flags[:, 1]), letters + int(times @ flags[:, 2]),
                      _pretoken_count(classes, points == 32, text))


def _pretoken_count(classes: np.ndarray, blanks: np.ndarray, text: str) -> int:
    """Matches of ``_PRETOKEN`` in ``text`` from its runs of equal classes (``blanks``: ``" "`` positions).

    The pattern takes every maximal run of letters, digits, underscores or punctuation as one
    token. A whitespace run before more text leaves its last character to what follows: that
    character joins the next token when it is ``" "`` and the next run is letters, digits or
    punctuation (the `` ?`` of their branches), else it is a token alone; the rest of the run
    (two characters or more) is one token; a run at the end is one token. So: one per run, one
    more per whitespace run of two or more before text, one less per ``" "`` that joins. A
    contraction (``'s``, ``'ll``...) that starts a token makes the apostrophe and its letters
    one token where the runs count two.
    """
    tokens = 1 + int(np.count_nonzero(classes[1:] != classes[:-1]))
    white = classes == SPACE
    tokens += int(np.count_nonzero(white[:-2] & white[1:-1] & ~white[2:]))
    takes_blank = ~white[1:] & (classes[1:] != UNDERSCORE)
    tokens -= int(np.count_nonzero(blanks[:-1] & takes_blank))
    if "'" in text:
        tokens -= len(_CONTRACTION.findall(text))
    return tokens
