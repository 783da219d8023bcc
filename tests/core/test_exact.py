"""Exact-dedup normalization: the fast ``str.split`` form equals the documented regex definition,
and the batch form over UTF-8 bytes equals the one-text form."""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.exact import (
    _COMPOSES_WITH_PREVIOUS,
    _bytes_path_flags,
    _bytes_path_ok,
    exact_hash,
    exact_hashes,
    non_ascii_chars,
    normalize_for_exact,
)

_WHITESPACE = re.compile(r"\s+")
#: Every whitespace character Python knows, plus look-alikes that are not whitespace.
SPACES = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()] + ["\u200b", "\ufeff", "\u2060"]


def oracle(text: str) -> str:
    """The definition in core/exact.py's docstring, written as the regex it was first written with."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


@given(st.lists(st.one_of(st.text(max_size=8), st.sampled_from(SPACES)), max_size=30).map("".join))
def test_normalization_equals_the_regex_definition(text: str) -> None:
    assert normalize_for_exact(text) == oracle(text)


def test_every_unicode_whitespace_character_is_a_separator() -> None:
    for space in SPACES:
        assert normalize_for_exact(f"{space}a{space}{space}b{space}") == oracle(f"{space}a{space}{space}b{space}")


def test_hash_ignores_whitespace_runs_and_composition_only() -> None:
    assert exact_hash("Caf\u00e9  au\tlait\n") == exact_hash("Cafe\u0301 au lait")
    assert exact_hash("cafe au lait") != exact_hash("Cafe au lait")


@given(st.lists(st.lists(st.one_of(st.text(max_size=8), st.sampled_from(SPACES), st.sampled_from(["\x1c", "e\u0301", "\u00e9"])),
                         max_size=20).map("".join), max_size=6))
def test_batch_hashes_equal_one_at_a_time(texts: list[str]) -> None:
    assert exact_hashes(texts) == [exact_hash(t) for t in texts]
    assert exact_hashes(texts, [t.encode("utf-8") for t in texts]) == [exact_hash(t) for t in texts]


def test_batch_hashes_raise_on_lone_surrogates_like_one_at_a_time() -> None:
    with pytest.raises(UnicodeEncodeError):
        exact_hashes(["fine", "bad \ud800 text"])


def test_every_non_ascii_whitespace_takes_the_text_path() -> None:
    """The bytes path only collapses ASCII whitespace: every other whitespace character must be found."""
    for space in SPACES:
        if space.isspace() and not space.isascii():
            assert not _bytes_path_ok(f"a{space}b", non_ascii_chars(f"a{space}b", f"a{space}b".encode()))


def test_every_class_0_character_that_composes_with_the_previous_one_is_listed() -> None:
    """The shortcut trusts the non-ASCII characters' own quick check only without a character that
    composes with the one before it: every such character of combining class 0 (all of Unicode,
    from the canonical decompositions, and Hangul's algorithmic ones) must be listed."""
    for point in range(sys.maxunicode + 1):
        parts = unicodedata.decomposition(chr(point)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            second = chr(int(parts[1], 16))
            if unicodedata.combining(second) == 0:
                assert _COMPOSES_WITH_PREVIOUS.match(second), hex(ord(second))
    for point in range(0x1100, 0x1200):
        if 1 in (len(unicodedata.normalize("NFC", "\u1100" + chr(point))), len(unicodedata.normalize("NFC", "\uac00" + chr(point)))):
            assert _COMPOSES_WITH_PREVIOUS.match(chr(point)), hex(point)


def test_batch_hashes_equal_one_at_a_time_after_every_bmp_character() -> None:
    """Each BMP character after an ASCII letter, beside a precomposed one: composing, reordering,
    decomposing and whitespace characters all hash as :func:`exact_hash` does."""
    texts = [f"Ae{chr(point)}{chr(point)} \u00e9" for point in range(0x80, 0x10000) if not 0xD800 <= point < 0xE000]
    assert exact_hashes(texts) == [exact_hash(t) for t in texts]


#: Characters that keep a document off the bytes path (NFC_QC=No singletons, combining marks, a
#: vowel sign and a Hangul jamo that compose with the character before them, non-ASCII spaces)
#: among plain non-ASCII letters, which do not.
_TRICKY = ["\u212b", "\u0301", "\u0bbe", "\u1161", "\u00a0", "\u3000", "\u0345"]
_PLAIN = ["\u00e9", "\u00df", "\u4e2d", "\u0416", "\u05d0", "\u0b95", "\u1100", "\uac00", "\u2019"]


@given(st.lists(st.lists(st.one_of(st.sampled_from(_PLAIN), st.sampled_from(_PLAIN + _TRICKY), st.sampled_from("aZ 1")),
                         max_size=12).map("".join), max_size=8))
def test_batch_flags_equal_each_documents_own(texts: list[str]) -> None:
    """Deciding the batch at once (its non-ASCII characters joined by an ASCII letter) gives every
    document the flag it gets alone: a tricky character anywhere sends the batch to per-document
    checks, and joining never lets two documents' characters compose across the seam."""
    others = [non_ascii_chars(t, t.encode("utf-8")) for t in texts]
    assert _bytes_path_flags(texts, others) == [_bytes_path_ok(t, o) for t, o in zip(texts, others, strict=True)]
    assert exact_hashes(texts) == [exact_hash(t) for t in texts]
