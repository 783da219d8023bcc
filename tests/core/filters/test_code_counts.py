"""The code filters' counts (numpy over code points) equal their plain per-character definitions.

The oracle is the code the filters ran before (issue 23 item 1): a Python generator over every
character for ``isalnum``/``isalpha`` and one ``finditer`` match per GPT-2 pre-token. Texts are
arbitrary Unicode, plus a mix weighted towards what the token rule turns on (spaces before
letters/digits/punctuation, other whitespace, underscores, apostrophes and contractions,
non-ASCII digits, letters and spaces).
"""

from __future__ import annotations

import re
import sysconfig
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.filters.text_counts import TextCounts, text_counts

#: The pattern as the filters define it, spelled out here so a change to the module's copy shows.
PRETOKEN = re.compile(r"""'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|_+|\s+(?!\S)|\s+""")
PIECES = [" ", "  ", "\t", "\n", "\r\n", "\x1c", "\x0b", "\u00a0", "\u2028", "\u3000", "'", "''", "'s", "'t", "'ll",
          "'ve", "'re", "'d", "'m", "'l", "'sx", "_", "__", "a", "Z", "word", "7", "42", "\u00b2", "\u00bd",
          "\u0663", "\u2167", "\u00e9", "\u4e2d\u6587", "\u0301", "(", ");", "#", "-", "\U0001f600", "\ud83d"]


def plain_counts(text: str) -> TextCounts:
    """The definitions, one Python step per character or match (the code before the change)."""
    return TextCounts(sum(ch.isalnum() for ch in text), sum(ch.isalpha() for ch in text),
                      sum(1 for _ in PRETOKEN.finditer(text)))


@settings(max_examples=400, deadline=None)
@given(st.text())
@example("")
@example("don't stop 'til it's 'll 'sx  'd\t're")
def test_counts_equal_the_definitions_on_any_unicode(text: str) -> None:
    assert text_counts(text) == plain_counts(text)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_counts_equal_the_definitions_where_the_token_rules_turn(text: str) -> None:
    assert text_counts(text) == plain_counts(text)


def test_counts_equal_the_definitions_on_real_code() -> None:
    """Standard-library modules: 20 with non-ASCII text (names, docstrings) and 20 ASCII ones."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = [path.read_text(encoding="utf-8", errors="surrogateescape") for path in sorted(stdlib.rglob("*.py"))]
    chosen = [t for t in texts if not t.isascii()][:20] + [t for t in texts if t.isascii()][:20]
    assert len(chosen) == 40
    for text in chosen:
        assert text_counts(text) == plain_counts(text)
