"""Character-class, pre-token and line counts of a text at compiled speed (what the code filters measure).

:mod:`core.filters.code_quality` drops files on the share of ``str.isalnum`` characters, the
number of ``str.isalpha`` characters, the number of GPT-2-style pre-tokens (matches of its
``_PRETOKEN`` pattern) and the lines of ``str.splitlines`` (their number and longest length).
Written as a Python step per character, per match or per line, these were most of the GitHub and
stack_code paths' CPU.

A batch of texts is joined and counted by one compiled pass (:func:`_counts_into`, numba): each
character's class by table, every count from the classes of a character and the two after it,
so nothing is written per character. The characters are the bytes of ASCII texts (nearly all
code); for other texts, the UTF-32 code points with one key byte each, the few distinct
non-ASCII characters classified in Python (cached). numpy's dozen passes over the same
characters before (a ``bytes.translate``, boolean arrays per rule, a search for the line
breaks) cost about twice as much. The filters of one document share the counts
(:func:`text_counts` keeps the last few texts by identity, without hashing them). Equal to the
per-character definitions on any Unicode text: property tests in
tests/core/filters/test_code_counts.py, with the plain code as the oracle. numba is imported with
this module and the kernel loaded from its disk cache on the first count (~0.7 CPU-s, once per
process: :mod:`core.compiled`).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from core.compiled import jit


class TextCounts(NamedTuple):
    """Per-text counts the filters need.

    ``alnum``/``alpha``: characters for which ``str.isalnum``/``str.isalpha`` hold; ``pretokens``:
    GPT-2-style pre-tokens; ``lines`` and ``max_line_length``: the number of ``str.splitlines``
    pieces and the length of the longest (line breaks not counted). A named tuple: one is made
    per document, and a frozen dataclass pays an ``object.__setattr__`` per field.
    """

    alnum: int
    alpha: int
    pretokens: int
    lines: int
    max_line_length: int


#: Class codes, one per character. The first five are the classes of the pre-token pattern
#: (``_PRETOKEN`` of :mod:`core.filters.code_quality`): letters ``[^\W\d_]``, digits ``\d``,
#: punctuation ``[^\s\w]``, underscore, whitespace ``\s``; every character is in exactly one,
#: each decided by ``re`` itself, so the classes are the pattern's own. Whitespace is split further
#: into ``" "`` (which a following token may take) and the line breaks of ``str.splitlines``.
#: The order is chosen so that one comparison answers each question: ``< PUNCT + 1`` takes a
#: leading ``" "``, ``>= SPACE`` is whitespace.
LETTER, DIGIT, PUNCT, UNDERSCORE, SPACE, BLANK, BREAK = range(7)
_CLASS_PATTERNS = ((LETTER, re.compile(r"[^\W\d_]")), (DIGIT, re.compile(r"\d")), (UNDERSCORE, re.compile("_")),
                   (SPACE, re.compile(r"\s")))
_CR, _LF, _APOSTROPHE = 13, 10, 39


def _is_line_break(ch: str) -> bool:
    return len(f"a{ch}b".splitlines()) == 2


@functools.lru_cache(maxsize=1 << 16)
def _char_flags(ch: str) -> tuple[int, bool, bool]:
    """``(class code, isalnum, isalpha)`` of one character (cached: a text has few distinct ones)."""
    code = next((code for code, pattern in _CLASS_PATTERNS if pattern.match(ch)), PUNCT)
    if _is_line_break(ch):
        code = BREAK  # every splitlines break is whitespace (tested); the run rules see it as SPACE
    elif ch == " ":
        code = BLANK
    return code, ch.isalnum(), ch.isalpha()


#: ASCII byte -> class, a ``bytes.translate`` table. In ASCII, ``isalpha`` is exactly LETTER and
#: ``isalnum`` LETTER or DIGIT.
_ASCII_CLASSES = bytes(_char_flags(chr(value))[0] if value < 128 else PUNCT for value in range(256))


class _Recent:
    """Counts of recently counted texts, found by identity (``is``), so a lookup costs no hash of the text.

    The filters of one document ask in turn about the same string object, and the first of them
    counts a whole batch ahead (:func:`remember_counts`); holding the strings keeps their
    identities from being reused while they are here. A miss only costs a recount.

    Two generations of up to half of ``size`` texts each: new counts go into the newer one, and
    when it is full it becomes the older one (the oldest is let go). A put costs its own texts, not a
    copy of everything kept; a dictionary is only ever added to, so a lookup needs no lock.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.newer: dict[int, tuple[str, TextCounts]] = {}
        self.older: dict[int, tuple[str, TextCounts]] = {}
        self.lock = threading.Lock()

    def get(self, text: str) -> TextCounts | None:
        found = self.newer.get(id(text)) or self.older.get(id(text))
        return found[1] if found is not None and found[0] is text else None

    def put(self, texts: Sequence[str], counts: Sequence[TextCounts]) -> None:
        with self.lock:
            if len(self.newer) + len(texts) > self.size // 2:
                self.older, self.newer = self.newer, {}
            newer = self.newer
            for text, count in zip(texts, counts, strict=True):
                newer[id(text)] = (text, count)


_RECENT = _Recent(1024)
_EMPTY = TextCounts(0, 0, 0, 0, 0)


def text_counts(text: str) -> TextCounts:
    """The counts of ``text`` without a Python step per character (the filters spend their time here)."""
    counts = _RECENT.get(text)
    if counts is None:
        counts = count_texts([text])[0]
        _RECENT.put([text], [counts])
    return counts


def remember_counts(texts: Sequence[str]) -> None:
    """Count ``texts`` in one batch so that :func:`text_counts` finds each of them without counting."""
    missing = [text for text in texts if _RECENT.get(text) is None]
    if missing:
        _RECENT.put(missing, count_texts(missing))


def count_texts(texts: Sequence[str]) -> list[TextCounts]:
    """The counts of each text, computed a batch at a time (the per-call costs paid once per batch).

    ASCII texts are counted from their joined bytes, the others from the class keys of their
    joined code points; one compiled pass (:func:`_counts_into`) counts both.
    """
    results = [_EMPTY] * len(texts)
    ascii_texts = [i for i, text in enumerate(texts) if text and text.isascii()]
    other_texts = [i for i, text in enumerate(texts) if text and not text.isascii()]
    for chosen, characters in ((ascii_texts, _ascii_keys), (other_texts, _unicode_keys)):
        if chosen:
            group = [texts[i] for i in chosen]
            keys, raw = characters("".join(group))
            for i, counts in zip(chosen, _counted(keys, raw, group), strict=True):
                results[i] = counts
    return results


#: The kernel's class codes: the pre-token classes, with the apostrophe (punctuation to the
#: pattern) apart, since a contraction starts there, and END for "past the text's end".
_APOSTROPHE_CODE, _END = 7, 8
#: A character's key (one byte): an ASCII character's own code; another's is ``_OTHER`` plus its
#: class code, 8 if ``isalnum`` and 16 if ``isalpha`` (the few distinct ones classified in Python).
_OTHER = 128
_ALNUM, _ALPHA = 1, 2


def _key_tables() -> tuple[np.ndarray, np.ndarray]:
    """(key -> kernel class code, key -> ``_ALNUM | _ALPHA`` flags) for every key of :func:`_ascii_keys`/:func:`_unicode_keys`."""
    classes = np.zeros(256, np.uint8)
    flags = np.zeros(256, np.uint8)
    for key in range(128):  # in ASCII, isalpha is exactly LETTER and isalnum LETTER or DIGIT
        code = _ASCII_CLASSES[key]
        classes[key] = _APOSTROPHE_CODE if key == _APOSTROPHE else code
        flags[key] = _ALNUM * (code <= DIGIT) + _ALPHA * (code == LETTER)
    for bits in range(32):
        classes[_OTHER + bits] = bits & 7
        flags[_OTHER + bits] = _ALNUM * (bits >> 3 & 1) + _ALPHA * (bits >> 4 & 1)
    return classes, flags


def _token_starts() -> np.ndarray:
    """The pre-token start rule of every triple of kernel classes, one lookup.

    ``starts[a * 256 + b * 16 + c]`` is 1 where a pre-token starts after a character of class
    ``a`` followed by ``b`` then ``c``: a new run of equal classes (the whitespace codes as one
    class) unless a ``" "`` before letters, digits or punctuation joins that run (the `` ?`` of
    their branches), or the end of a whitespace run of two or more that text follows (its last
    character is left to what follows). ``b == END``: no pair, no start; ``c == END``: nothing
    known to follow ``b``.
    """
    def meaning(code: int) -> int:
        return PUNCT if code == _APOSTROPHE_CODE else code

    starts = np.zeros(16 * 16 * 16, np.uint8)
    for a in range(_END):
        for b in range(_END):
            for c in range(_END + 1):
                first, second = meaning(a), meaning(b)
                both_white = first >= SPACE and second >= SPACE
                new_run = first != second and not both_white
                joins = first == BLANK and second <= PUNCT
                more_white = both_white and c != _END and meaning(c) < SPACE
                starts[a * 256 + b * 16 + c] = (new_run != joins) or more_white
    return starts


_KEY_CLASSES, _KEY_FLAGS = _key_tables()
_TOKEN_STARTS = _token_starts()


def _ascii_keys(joined: str) -> tuple[np.ndarray, np.ndarray]:
    """(keys, characters) of ASCII text: its bytes are both."""
    data = np.frombuffer(joined.encode("ascii"), np.uint8)
    return data, data


def _unicode_keys(joined: str) -> tuple[np.ndarray, np.ndarray]:
    """(keys, UTF-32 code points) of any text: the few distinct non-ASCII characters keyed one by one."""
    raw = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32)
    high = raw >= 128
    distinct, where = np.unique(raw[high], return_inverse=True)
    keyed = [_OTHER + code + 8 * alnum + 16 * alpha
             for code, alnum, alpha in map(_char_flags, map(chr, distinct.tolist()))]
    keys = raw.astype(np.uint8)  # an ASCII character's key is its code; the others are set below
    keys[high] = np.array(keyed, np.uint8)[where]
    return keys, raw


def _counted(keys: np.ndarray, raw: np.ndarray, texts: Sequence[str]) -> list[TextCounts]:
    """The counts of non-empty texts joined into ``keys``/``raw``, by :func:`_counts_into`."""
    ends = np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts)))
    out = np.empty((len(texts), 5), np.int64)
    _counts_into(keys, raw, _KEY_CLASSES, _KEY_FLAGS, _TOKEN_STARTS, ends, out)
    return [TextCounts(*row) for row in out.tolist()]


@jit
def _counts_into(keys: np.ndarray, raw: np.ndarray, classes: np.ndarray, flags: np.ndarray, starts: np.ndarray,
                 ends: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled by numba, tested through it
    """Fill ``out[i]`` with the :class:`TextCounts` fields of text ``i``: characters ``ends[i - 1]`` to ``ends[i]``.

    One step per character, reading the classes of the character and the two after it (``_END``
    past the text), so no count crosses into the next text: ``isalnum``/``isalpha`` by flag; a
    pre-token starts where :data:`_TOKEN_STARTS` says, less the contractions (an apostrophe not
    after ``" "`` or punctuation, followed by ``s d m t`` or ``ll ve re`` that end the letter
    run: the pattern takes the two runs as one token); a line ends at each break character,
    ``"\r\n"`` being one break. ``raw``: the characters, ``keys``: their keys in the tables.
    """
    first = 0
    for text in range(len(ends)):
        end = ends[text]
        alnum = alpha = inner = contractions = lines = longest = 0
        line_start = first
        here = classes[keys[first]]
        after = classes[keys[first + 1]] if first + 1 < end else _END
        for j in range(first, end):
            # unsigned indices: numba then skips the wrap-around of negative ones (15% of the loop)
            then = classes[keys[np.uint64(j + 2)]] if j + 2 < end else _END
            inner += starts[np.uint64(here * 256 + after * 16 + then)]
            flag = flags[keys[np.uint64(j)]]
            alnum += flag & _ALNUM
            alpha += flag >> 1
            if here == BREAK:
                if raw[j] == _LF and j > first and raw[j - 1] == _CR:
                    line_start = j + 1  # the \n of a \r\n: no line of its own
                else:
                    lines += 1
                    longest = max(longest, j - line_start)
                    line_start = j + 1
            elif here == _APOSTROPHE_CODE and after != _END:
                before = classes[keys[j - 1]] if j > first else LETTER
                if before != BLANK and before != PUNCT and before != _APOSTROPHE_CODE:
                    one = raw[j + 1]
                    two = raw[j + 2] if j + 2 < end else 0
                    if one == 115 or one == 100 or one == 109 or one == 116:  # s d m t
                        contractions += then != LETTER
                    elif (one == 108 and two == 108) or ((one == 118 or one == 114) and two == 101):  # ll ve re
                        contractions += not (j + 3 < end and classes[keys[j + 3]] == LETTER)
            here, after = after, then
        tail = end - line_start
        if tail > 0:
            lines += 1
            longest = max(longest, tail)
        out[text, 0] = alnum
        out[text, 1] = alpha
        out[text, 2] = 1 + inner - contractions
        out[text, 3] = lines
        out[text, 4] = longest
        first = end
