"""Exact-dedup normalization: the fast ``str.split`` form equals the documented regex definition,
and the batch form over UTF-8 bytes equals the one-text form."""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.exact import _bytes_path_ok, exact_hash, exact_hashes, non_ascii_chars, normalize_for_exact

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
