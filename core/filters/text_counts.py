"""Character-class, pre-token and line counts of a text at compiled speed (what the code filters measure).

:mod:`core.filters.code_quality` drops files on the share of ``str.isalnum`` characters, the
number of ``str.isalpha`` characters, the number of GPT-2-style pre-tokens (matches of its
``_PRETOKEN`` pattern) and the lines of ``str.splitlines`` (their number and longest length).
Written as a Python step per character, per match or per line, these were most of the GitHub and
stack_code paths' CPU.

ASCII texts (nearly all code) are counted by one compiled pass over their joined bytes
(:func:`_ascii_counts_into`, numba): each byte's class by table, every count from the classes of
a byte and the two after it, so no intermediate array is written. numpy's dozen passes over the
same bytes (a ``bytes.translate``, boolean arrays per rule, a search for the line breaks) cost
twice as much. Other texts become one class code per character in numpy from their UTF-32 code
points: ASCII characters are classified by table, the few distinct others one by one (cached);
the pre-tokens are counted from the runs of equal classes and the lines from the positions of
the line breaks. The filters of one document share the counts (:func:`text_counts` keeps the
last few texts by identity, without hashing them). Equal to the per-character definitions on any
Unicode text: property tests in tests/core/filters/test_code_counts.py, with the plain code as the
oracle. numba is imported with this module (~0.3 CPU-s, once per process; the kernel's machine
code is cached on disk, :mod:`core.compiled`).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
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

    ASCII texts are counted by the compiled pass over their joined bytes, the others from the
    UTF-32 code points of theirs (numpy).
    """
    results = [_EMPTY] * len(texts)
    ascii_texts = [i for i, text in enumerate(texts) if text and text.isascii()]
    other_texts = [i for i, text in enumerate(texts) if text and not text.isascii()]
    for chosen, count in ((ascii_texts, _ascii_counts), (other_texts, _unicode_counts)):
        if chosen:
            for i, counts in zip(chosen, count([texts[i] for i in chosen]), strict=True):
                results[i] = counts
    return results


def _unicode_counts(texts: Sequence[str]) -> list[TextCounts]:
    return _segment_counts(_unicode_chars("".join(texts)), [len(t) for t in texts])


#: The kernel's class codes: the pre-token classes, with the apostrophe (punctuation to the
#: pattern) apart, since a contraction starts there, and END for "past the text's end".
_APOSTROPHE_CODE, _END = 7, 8


def _kernel_tables() -> tuple[np.ndarray, np.ndarray]:
    """(ASCII byte -> kernel class, the pre-token start rule of every triple of classes).

    ``starts[a * 256 + b * 16 + c]`` is 1 where a pre-token starts after a character of class
    ``a`` followed by ``b`` then ``c`` (the rules of :func:`_pretoken_counts`, one lookup): a new
    run (whitespace codes as one class) unless a ``" "`` joins the run after it, or the end of a
    whitespace run of two or more that text follows. ``b == END``: no pair, no start; ``c ==
    END``: the run after ``b`` is not known to be text.
    """
    classes = np.frombuffer(_ASCII_CLASSES, np.uint8).copy()
    classes[_APOSTROPHE] = _APOSTROPHE_CODE

    def meaning(code: int) -> int:
        return PUNCT if code == _APOSTROPHE_CODE else code

    starts = np.zeros(16 * 16 * 16, np.uint8)
    for a in range(_END):
        for b in range(_END):
            for c in range(_END + 1):
                first, second, third = meaning(a), meaning(b), meaning(c)
                both_white = first >= SPACE and second >= SPACE
                new_run = first != second and not both_white
                joins = first == BLANK and second <= PUNCT
                more_white = both_white and c != _END and third < SPACE
                starts[a * 256 + b * 16 + c] = (new_run != joins) or more_white
    return classes, starts


_KERNEL_CLASSES, _TOKEN_STARTS = _kernel_tables()


def _ascii_counts(texts: Sequence[str]) -> list[TextCounts]:
    """The counts of non-empty ASCII texts, by :func:`_ascii_counts_into` over their joined bytes."""
    data = np.frombuffer("".join(texts).encode("ascii"), np.uint8)
    ends = np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts)))
    out = np.empty((len(texts), 5), np.int64)
    _ascii_counts_into(data, _KERNEL_CLASSES, _TOKEN_STARTS, ends, out)
    return [TextCounts(*row) for row in out.tolist()]


@jit
def _ascii_counts_into(data: np.ndarray, classes: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                       out: np.ndarray) -> None:  # pragma: no cover - compiled by numba, tested through it
    """Fill ``out[i]`` with the :class:`TextCounts` fields of the text ``data[ends[i - 1]:ends[i]]`` (non-empty).

    One step per byte, reading the classes of the byte and the two after it (``_END`` past the
    text): ``isalnum``/``isalpha`` are LETTER or DIGIT / LETTER in ASCII; a pre-token starts
    where :data:`_TOKEN_STARTS` says, less the contractions (an apostrophe not after ``" "`` or
    punctuation, followed by ``s d m t`` or ``ll ve re`` ending the letter run); a line ends at
    each break, ``"\r\n"`` being one.
    """
    first = 0
    for text in range(len(ends)):
        end = ends[text]
        alnum = alpha = inner = contractions = lines = longest = 0
        line_start = first
        here = classes[data[first]]
        after = classes[data[first + 1]] if first + 1 < end else _END
        for j in range(first, end):
            then = classes[data[j + 2]] if j + 2 < end else _END
            inner += starts[here * 256 + after * 16 + then]
            alnum += here <= DIGIT
            alpha += here == LETTER
            if here == BREAK:
                if data[j] == _LF and j > first and data[j - 1] == _CR:
                    line_start = j + 1  # the \n of a \r\n: no line of its own
                else:
                    lines += 1
                    longest = max(longest, j - line_start)
                    line_start = j + 1
            elif here == _APOSTROPHE_CODE and after != _END:
                before = classes[data[j - 1]] if j > first else LETTER
                if before != BLANK and before != PUNCT and before != _APOSTROPHE_CODE:
                    one = data[j + 1]
                    two = data[j + 2] if j + 2 < end else 0
                    if one == 115 or one == 100 or one == 109 or one == 116:  # s d m t
                        contractions += then != LETTER
                    elif (one == 108 and two == 108) or ((one == 118 or one == 114) and two == 101):  # ll ve re
                        contractions += not (j + 3 < end and classes[data[j + 3]] == LETTER)
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


@dataclass(frozen=True)
class _Chars:
    """The characters of joined texts: code points, class codes, ``isalnum``/``isalpha`` as booleans, and
    boolean work rows as long as the text (:class:`_Work`: the counts write into them, not into new arrays)."""

    raw: np.ndarray
    classes: np.ndarray
    alnum: np.ndarray
    alpha: np.ndarray
    work: np.ndarray


#: Boolean work arrays one batch needs: ``isalnum``, ``isalpha``, then five for the pre-token rules.
_WORK_ROWS = 7
#: Work arrays up to this many characters are kept for the next batch (7 bytes a character).
_KEPT_WORK_CHARS = 1 << 22


class _Work(threading.local):
    """Boolean work arrays reused from batch to batch, one set per thread.

    A batch's dozen temporaries of a megabyte each, allocated afresh, are returned to the system
    and faulted in again at every batch: that cost as much as the counting itself.
    """

    rows: np.ndarray = np.empty((_WORK_ROWS, 0), bool)

    def take(self, chars: int) -> np.ndarray:
        """``_WORK_ROWS`` rows of ``chars`` booleans (contents undefined)."""
        if chars > _KEPT_WORK_CHARS:
            return np.empty((_WORK_ROWS, chars), bool)
        if self.rows.shape[1] < chars:
            self.rows = np.empty((_WORK_ROWS, max(chars, 1 << 21)), bool)
        return self.rows[:, :chars]


_WORK = _Work()


def _unicode_chars(joined: str) -> _Chars:
    raw = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32)
    high = raw >= 128
    distinct, where = np.unique(raw[high], return_inverse=True)
    flags = np.array([_char_flags(chr(p)) for p in distinct.tolist()], np.int8).reshape(-1, 3)
    # the ASCII characters' classes by table (the low byte of a high one gives a class overwritten below)
    classes = np.frombuffer(bytearray(raw.astype(np.uint8)).translate(_ASCII_CLASSES), np.uint8)
    classes[high] = flags[:, 0][where]
    work = _WORK.take(len(raw))
    alnum, alpha = np.less_equal(classes, DIGIT, out=work[0]), np.equal(classes, LETTER, out=work[1])
    alnum[high], alpha[high] = flags[:, 1][where], flags[:, 2][where]  # isalnum is more than \w minus _ there
    return _Chars(raw, classes, alnum, alpha, work[2:])


Spans = list[tuple[int, int]]


def _segment_counts(chars: _Chars, lengths: Sequence[int]) -> list[TextCounts]:
    """Per-text counts of joined non-empty texts of ``lengths`` characters (no count crosses a join)."""
    ends = np.cumsum(np.asarray(lengths, np.int64))
    starts = ends - np.asarray(lengths, np.int64)
    spans = list(zip(starts.tolist(), ends.tolist(), strict=True))
    alnum = _span_counts(chars.alnum, spans)
    alpha = _span_counts(chars.alpha, spans)
    breaks, apostrophes = _marks(chars)
    tokens = _pretoken_counts(chars, starts, ends, spans, apostrophes)
    lines, longest = _line_counts(chars, starts, ends, breaks)
    return [TextCounts(*row) for row in zip(alnum, alpha, tokens.tolist(), lines.tolist(), longest.tolist(),
                                            strict=True)]


def _marks(chars: _Chars) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the line breaks and of the apostrophes: few characters.

    Two searches: one over both kinds costs as much (the search's time goes on the characters
    found, not the ones passed), and its result had to be told apart again, by indexing.
    """
    breaks = np.flatnonzero(np.equal(chars.classes, BREAK, out=chars.work[-1]))
    return breaks, np.flatnonzero(np.equal(chars.raw, _APOSTROPHE, out=chars.work[-2]))


def _span_counts(flags: np.ndarray, spans: Spans) -> list[int]:
    """The true values of ``flags`` in each ``[start, end)`` span (``count_nonzero`` of a view: no copy, no cast)."""
    count = np.count_nonzero
    return [int(count(flags[start:end])) for start, end in spans]


def _pretoken_counts(chars: _Chars, starts: np.ndarray, ends: np.ndarray, spans: Spans,
                     apostrophes: np.ndarray) -> np.ndarray:
    """Matches of ``_PRETOKEN`` in each text, from its runs of equal classes (whitespace codes as one class).

    The pattern takes every maximal run of letters, digits, underscores or punctuation as one
    token. A whitespace run before more text leaves its last character to what follows: that
    character joins the next token when it is ``" "`` and the next run is letters, digits or
    punctuation (the `` ?`` of their branches), else it is a token alone; the rest of the run
    (two characters or more) is one token; a run at the end is one token. So: one per run, one
    more per whitespace run of two or more before text, one less per ``" "`` that joins. A
    contraction (``'s``, ``'ll``...) that starts a token makes the apostrophe and its letters
    one token where the runs count two.

    Each rule looks at a pair (or triple) of neighbours, as one boolean array over the joined
    texts indexed by the pair's first character; counted per text over the pairs that lie inside
    it, so nothing is counted across the join of two texts.
    """
    classes, (white, both_white, starts_token, joins, spare) = chars.classes, chars.work
    np.greater_equal(classes, SPACE, out=white)
    both_white, starts_token, joins, spare = both_white[:-1], starts_token[:-1], joins[:-1], spare[:-1]
    np.logical_and(white[:-1], white[1:], out=both_white)
    np.not_equal(classes[:-1], classes[1:], out=starts_token)  # a new run starts at j + 1 ...
    starts_token &= np.logical_not(both_white, out=spare)  # ... (the whitespace codes are one class) ...
    np.equal(classes[:-1], BLANK, out=joins)
    joins &= np.less_equal(classes[1:], PUNCT, out=spare)
    starts_token ^= joins  # ... unless a " " at j joins it (a join is always a new run)
    more_white = both_white[:-1]  # j ends a whitespace run of 2+ that text follows, at j + 1
    more_white &= np.logical_not(white[2:], out=spare[:-1])
    inside = ends - starts >= 2
    crossing = ends[inside] - 2  # "before text" would be the next text's first character (none after the last)
    more_white[crossing[crossing < len(more_white)]] = False
    starts_token[:-1] |= more_white  # never both: a run start is not inside a whitespace run
    inner = np.array(_span_counts(starts_token, [(start, end - 1) for start, end in spans]), np.int64)
    return 1 + inner - _contractions(chars, starts, ends, apostrophes)


def _text_of(positions: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The text each of the ascending ``positions`` lies in (``starts``: the texts' first characters, ascending).

    The texts' first positions are looked up (one search per text), and each text's index
    repeated over its positions: no search per position.
    """
    first = np.searchsorted(positions, starts)
    return np.repeat(np.arange(len(starts)), np.diff(first, append=len(positions)))


#: ASCII code point -> whether it can follow the apostrophe of a contraction (``s d m t l v r``).
_CONTRACTION_FIRST = np.isin(np.arange(128), [ord(ch) for ch in "sdmtlvr"])


def _contractions(chars: _Chars, starts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per text, the apostrophes where the contraction branch ``'(?:[sdmt]|ll|ve|re)`` takes the token.

    An apostrophe not after ``" "`` or punctuation (a text's first character has nothing before
    it), followed inside its text by ``s``/``d``/``m``/``t`` or ``ll``/``ve``/``re`` that are the
    whole letter run (the text ends, or a non-letter follows).
    """
    raw, classes = chars.raw, chars.classes
    last = len(raw) - 1
    following = raw[np.minimum(at + 1, last)]  # by table (np.isin sorts): DEL (127) stands for every non-ASCII one
    at = at[_CONTRACTION_FIRST[np.minimum(following, 127)]]  # most apostrophes are quotes: not further
    if not len(at):
        return np.zeros(len(starts), np.int64)
    text = _text_of(at, starts)
    first, end = starts[text], ends[text]

    def code_point(offset: int) -> np.ndarray:  # the character ``offset`` after, 0 past the text's end
        return np.where(at + offset < end, raw[np.minimum(at + offset, last)], 0)

    def letter(offset: int) -> np.ndarray:
        return (at + offset < end) & (classes[np.minimum(at + offset, last)] == LETTER)

    before = classes[at - 1]  # at - 1 == -1 only for the first text's first character, masked below
    starts_token = (at == first) | ((before != BLANK) & (before != PUNCT))
    one, two = code_point(1), code_point(2)
    single = ((one == 115) | (one == 100) | (one == 109) | (one == 116)) & ~letter(2)  # s d m t
    double = (((one == 108) & (two == 108)) | (((one == 118) | (one == 114)) & (two == 101))) & ~letter(3)  # ll ve re
    return np.bincount(text[starts_token & (single | double)], minlength=len(starts))


def _line_counts(chars: _Chars, starts: np.ndarray, ends: np.ndarray,
                 breaks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per text, the number and the longest length of the pieces of ``str.splitlines``.

    A line ends at each break character, except that ``"\\r\\n"`` is one break; a text that
    does not end with a break has one more line after its last break.
    """
    raw = chars.raw
    text = _text_of(breaks, starts)
    crlf_tail = (raw[breaks] == _LF) & (breaks > starts[text]) & (raw[breaks - 1] == _CR)
    following = breaks + 1  # where the next line starts
    if crlf_tail.any():  # the \n of a \r\n is no break of its own: the next line starts after it
        carriage_returns = breaks[crlf_tail] - 1
        breaks, text = breaks[~crlf_tail], text[~crlf_tail]
        following = breaks + 1
        following[np.searchsorted(breaks, carriage_returns)] += 1
    count = np.bincount(text, minlength=len(starts))
    line_start = np.empty_like(breaks)
    line_start[1:] = following[:-1]
    first_of_text = np.ones(len(breaks), bool)
    first_of_text[1:] = text[1:] != text[:-1]
    line_start[first_of_text] = starts[text[first_of_text]]
    longest = np.zeros(len(starts), np.int64)
    after_last = starts.copy()  # where the line after each text's last break starts
    if len(breaks):
        groups = np.flatnonzero(first_of_text)  # each text's breaks are contiguous
        longest[text[groups]] = np.maximum.reduceat(breaks - line_start, groups)
        last_of_text = np.append(first_of_text[1:], True)
        after_last[text[last_of_text]] = following[last_of_text]
    tail = ends - after_last
    longest = np.maximum(longest, tail)
    return count + (tail > 0), longest
