"""The code filters' counts (numpy over code points) equal their plain per-character definitions.

The oracle is the code the filters ran before (issue 23 item 1): a Python generator over every
character for ``isalnum``/``isalpha``, one ``finditer`` match per GPT-2 pre-token and
``str.splitlines`` for the lines (RedPajama's line statistics). Texts are arbitrary Unicode, plus
a mix weighted towards what the token and line rules turn on (spaces before
letters/digits/punctuation, other whitespace, every kind of line break and ``\r\n``,
underscores, apostrophes and contractions, non-ASCII digits, letters and spaces).
"""

from __future__ import annotations

import re
import sysconfig
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.filters.text_counts import TextCounts, count_texts, text_counts

#: The pattern as the filters define it, spelled out here so a change to the module's copy shows.
PRETOKEN = re.compile(r"""'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|_+|\s+(?!\S)|\s+""")
PIECES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\r\r\n", "\x0c", "\x85", "\u2029", "\x1f", "\x1c", "\x0b",
          "\u00a0", "\u2028", "\u3000", "'", "''", "'s", "'t", "'ll",
          "'ve", "'re", "'d", "'m", "'l", "'sx", "_", "__", "a", "Z", "word", "7", "42", "\u00b2", "\u00bd",
          "\u0663", "\u2167", "\u00e9", "\u4e2d\u6587", "\u0301", "(", ");", "#", "-", "\U0001f600", "\ud83d"]


def plain_counts(text: str) -> TextCounts:
    """The definitions, one Python step per character or match (the code before the change)."""
    lines = text.splitlines()
    return TextCounts(sum(ch.isalnum() for ch in text), sum(ch.isalpha() for ch in text),
                      sum(1 for _ in PRETOKEN.finditer(text)), len(lines), max(map(len, lines), default=0))


@settings(max_examples=400, deadline=None)
@given(st.text())
@example("")
@example("don't stop 'til it's 'll 'sx  'd\t're")
def test_counts_equal_the_definitions_on_any_unicode(text: str) -> None:
    assert text_counts(text) == plain_counts(text)


TURNING = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(TURNING)
def test_counts_equal_the_definitions_where_the_token_rules_turn(text: str) -> None:
    assert text_counts(text) == plain_counts(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(TURNING, st.text(max_size=12), st.sampled_from(["", "a", " ", "'", "\n", "\r", "é"])),
                max_size=10))
@example(["ab  ", "x", "\r", "\ny", "'s", "a '", "ll"])
def test_a_batch_counts_each_text_as_alone(texts: list[str]) -> None:
    """Texts counted together (joined, one numpy pass): no count crosses from one text into the next."""
    assert count_texts(texts) == [plain_counts(text) for text in texts]


#: ASCII texts take the compiled pass (every other text the numpy one): the turning pieces that are ASCII.
ASCII_TURNING = st.lists(st.sampled_from([piece for piece in PIECES if piece.isascii()]), max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(ASCII_TURNING)
@example("'s")
@example("a'll'")
@example(" 've\r\n\r")
def test_ascii_counts_equal_the_definitions_where_the_token_rules_turn(text: str) -> None:
    assert text_counts(text) == plain_counts(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(ASCII_TURNING, st.text(st.characters(max_codepoint=127), max_size=12)), max_size=10))
@example(["ab  ", "x", "\r", "\ny", "'s", "a '", "ll", "'", "re"])
def test_an_ascii_batch_counts_each_text_as_alone(texts: list[str]) -> None:
    """The compiled pass over joined ASCII texts: no count crosses from one text into the next."""
    assert count_texts(texts) == [plain_counts(text) for text in texts]


def test_counts_equal_the_definitions_on_real_code() -> None:
    """Standard-library modules: 20 with non-ASCII text (names, docstrings) and 20 ASCII ones."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    wide: list[str] = []
    narrow: list[str] = []
    for path in sorted(stdlib.rglob("*.py")):  # the first 20 of each kind, read no further
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        chosen_kind = narrow if text.isascii() else wide
        if len(chosen_kind) < 20:
            chosen_kind.append(text)
        if len(wide) == len(narrow) == 20:
            break
    chosen = wide + narrow
    assert len(chosen) == 40
    assert count_texts(chosen) == [plain_counts(text) for text in chosen]
