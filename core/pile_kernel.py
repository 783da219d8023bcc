"""The compiled read of Pile lines: each line's ``text`` string straight from JSON to UTF-8 (numba).

Parsing a line with orjson makes a ``str`` of the text (the Pile escapes every non-ASCII
character as ``\\uXXXX``, so it is a UCS-1/UCS-2 string), and the index then encoded it back to
UTF-8: two passes and two copies of every text, ~0.35 CPU-s per 100 MB. :func:`decode_lines`
reads a batch of lines once and writes each text's UTF-8 into one buffer, for lines of exactly
the shape ``{"text": "...", ...}`` whose text string holds only printable ASCII and escapes
(no raw control or non-ASCII byte, no lone surrogate). Everything else about a line (the keys
after the text, and any line of another shape) is left to :func:`core.pile_format._parse`, so
what a line yields and why one is dropped stays orjson's and the standard library's decision.

This module imports numba; :mod:`core.pile_format` imports it on first use.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.compiled import jit

#: ``status`` of a line: read here, with or without keys after the text (``rest`` >= 0: where they start).
DECODED = 0
#: Not of the shape read here: the caller parses the whole line.
OTHER = 1
_QUOTE, _BACKSLASH, _COMMA, _COLON, _OPEN, _CLOSE = 34, 92, 44, 58, 123, 125
_KEY = np.frombuffer(b'"text"', dtype=np.uint8)
#: ASCII bytes that are ``str.isspace()`` (with the separators \x1c-\x1f): a text of only these is empty.
_ASCII_SPACE = np.zeros(128, dtype=np.bool_)
_ASCII_SPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
#: 0 for a byte copied as is inside a JSON string (printable ASCII but ``"`` and ``\``), 1 for the others.
_KIND = np.ones(256, dtype=np.uint8)
_KIND[0x20:0x80] = 0
_KIND[[_QUOTE, _BACKSLASH]] = 1


@jit
def _skip_blank(data: np.ndarray, k: int, hi: int) -> int:  # pragma: no cover - compiled by numba
    """The first position from ``k`` that is not JSON whitespace (space, tab, newline, return)."""
    while k < hi and (data[k] == 32 or data[k] == 9 or data[k] == 10 or data[k] == 13):
        k += 1
    return k


@jit
def _hex4(data: np.ndarray, k: int, hi: int) -> int:  # pragma: no cover - compiled by numba
    """The value of the 4 hex digits at ``k``, or -1."""
    if k + 4 > hi:
        return -1
    value = 0
    for j in range(k, k + 4):
        c = data[j]
        if 48 <= c <= 57:
            digit = c - 48
        elif 97 <= c <= 102:
            digit = c - 87
        elif 65 <= c <= 70:
            digit = c - 55
        else:
            return -1
        value = value * 16 + digit
    return value


@jit
def _put_utf8(out: np.ndarray, at: int, code: int) -> int:  # pragma: no cover - compiled by numba
    """Write code point ``code`` (not a surrogate) as UTF-8 at ``out[at:]``; the new end."""
    if code < 0x80:
        out[at] = code
        return at + 1
    if code < 0x800:
        out[at] = 0xC0 | (code >> 6)
        out[at + 1] = 0x80 | (code & 0x3F)
        return at + 2
    if code < 0x10000:
        out[at] = 0xE0 | (code >> 12)
        out[at + 1] = 0x80 | ((code >> 6) & 0x3F)
        out[at + 2] = 0x80 | (code & 0x3F)
        return at + 3
    out[at] = 0xF0 | (code >> 18)
    out[at + 1] = 0x80 | ((code >> 12) & 0x3F)
    out[at + 2] = 0x80 | ((code >> 6) & 0x3F)
    out[at + 3] = 0x80 | (code & 0x3F)
    return at + 4


@jit
def _escape(data: np.ndarray, k: int, hi: int, out: np.ndarray, at: int) -> tuple[int, int]:  # pragma: no cover
    """Decode the escape whose backslash is at ``k`` into ``out[at:]``: ``(next k, new at)``, k = -1 if invalid."""
    if k + 1 >= hi:
        return -1, at
    c = data[k + 1]
    simple = -1
    if c == 34 or c == 92 or c == 47:
        simple = c
    elif c == 98:
        simple = 8
    elif c == 102:
        simple = 12
    elif c == 110:
        simple = 10
    elif c == 114:
        simple = 13
    elif c == 116:
        simple = 9
    if simple >= 0:
        out[at] = simple
        return k + 2, at + 1
    if c != 117:  # not \u
        return -1, at
    code = _hex4(data, k + 2, hi)
    if code < 0 or 0xDC00 <= code < 0xE000:  # bad digits, or a lone low surrogate
        return -1, at
    k += 6
    if 0xD800 <= code < 0xDC00:  # a high surrogate: a low one must follow
        if k + 1 >= hi or data[k] != 92 or data[k + 1] != 117:
            return -1, at
        low = _hex4(data, k + 2, hi)
        if not 0xDC00 <= low < 0xE000:
            return -1, at
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        k += 6
    return k, _put_utf8(out, at, code)


@jit
def _line(data: np.ndarray, lo: int, hi: int, key: np.ndarray, kind: np.ndarray, space: np.ndarray, out: np.ndarray,
          at: int) -> tuple[int, int, int, bool]:  # pragma: no cover - compiled by numba
    """Read line ``data[lo:hi]`` writing its text from ``out[at]``: ``(status, end in out, rest, blank)``.

    ``rest``: where the keys after the text start (a ``"``), or -1 when the object ends after
    the text. ``blank``: the text holds no ASCII byte that is not whitespace (empty if also no
    non-ASCII byte).
    """
    k = _skip_blank(data, lo, hi)
    if k >= hi or data[k] != _OPEN:
        return OTHER, at, -1, False
    k = _skip_blank(data, k + 1, hi)
    if k + len(key) > hi:
        return OTHER, at, -1, False
    for j in range(len(key)):
        if data[k + j] != key[j]:
            return OTHER, at, -1, False
    k = _skip_blank(data, k + len(key), hi)
    if k >= hi or data[k] != _COLON:
        return OTHER, at, -1, False
    k = _skip_blank(data, k + 1, hi)
    if k >= hi or data[k] != _QUOTE:
        return OTHER, at, -1, False
    k += 1
    start = at
    while True:
        if k >= hi:
            return OTHER, at, -1, False
        c = data[k]
        if kind[c] == 0:  # printable ASCII but ``"`` and ``\``: nearly every byte
            out[at] = c
            at += 1
            k += 1
            continue
        if c == _BACKSLASH:
            k, at = _escape(data, k, hi, out, at)
            if k < 0:
                return OTHER, at, -1, False
            continue
        if c == _QUOTE:
            break
        return OTHER, at, -1, False  # a raw control byte (orjson refuses it) or raw UTF-8 (orjson checks it)
    blank = True
    for j in range(start, at):  # usually stops at the first byte
        if out[j] < 0x80 and not space[out[j]]:
            blank = False
            break
    k = _skip_blank(data, k + 1, hi)
    if k < hi and data[k] == _CLOSE:
        if _skip_blank(data, k + 1, hi) != hi:
            return OTHER, at, -1, False
        return DECODED, at, -1, blank
    if k >= hi or data[k] != _COMMA:
        return OTHER, at, -1, False
    k = _skip_blank(data, k + 1, hi)
    if k >= hi or data[k] != _QUOTE:  # a key must follow the comma (``{"text": "a",}`` is not JSON)
        return OTHER, at, -1, False
    return DECODED, at, k, blank


@jit
def decode_lines_into(data: np.ndarray, offsets: np.ndarray, key: np.ndarray, kind: np.ndarray, space: np.ndarray,
                      out: np.ndarray,
                      status: np.ndarray, ends: np.ndarray, rest: np.ndarray,
                      blank: np.ndarray) -> None:  # pragma: no cover - compiled by numba
    """Line ``i`` is ``data[offsets[i]:offsets[i+1]]``; its text goes to ``out[ends[i-1]:ends[i]]``
    (from 0), the rest to ``status``, ``rest``, ``blank`` (see :func:`_line`). ``out`` needs
    ``len(data)`` bytes (no escape is shorter than its UTF-8)."""
    at = 0
    for i in range(len(offsets) - 1):
        status[i], end, rest[i], blank[i] = _line(data, offsets[i], offsets[i + 1], key, kind, space, out, at)
        at = end if status[i] == DECODED else at
        ends[i] = at


def decode_lines(lines: list[bytes]) -> tuple[memoryview, list[int], list[int], list[int], list[bool]]:
    """``(texts, cuts, status, rest, blank)`` of a batch of lines: line ``i``'s text is
    ``texts[cuts[i]:cuts[i+1]]`` when ``status[i] == DECODED``, and ``rest[i]`` is relative to the line."""
    offsets = np.zeros(len(lines) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, lines), np.int64, len(lines)), out=offsets[1:])
    data = np.frombuffer(b"".join(lines), dtype=np.uint8)
    out = np.empty(len(data), dtype=np.uint8)
    status = np.empty(len(lines), dtype=np.int64)
    ends = np.empty(len(lines), dtype=np.int64)
    rest = np.empty(len(lines), dtype=np.int64)
    blank = np.empty(len(lines), dtype=np.bool_)
    decode_lines_into(data, offsets, _KEY, _KIND, _ASCII_SPACE, out, status, ends, rest, blank)
    starts: Any = offsets[:-1]
    relative = np.where(rest >= 0, rest - starts, -1)
    return (memoryview(out.data), [0, *ends.tolist()], status.tolist(), relative.tolist(), blank.tolist())
