"""cc_net line normalization, tidy lines, minimum length."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from core.document import Document, Drop
from core.filters.ccnet import (
    MinLength,
    TidyLines,
    normalize_for_dedup,
    normalize_lines_for_dedup,
    tidy_lines,
)


def doc(text: str) -> Document:
    return Document("d1", text, "commoncrawl", {})


def test_normalize_for_dedup_matches_cc_net_rules() -> None:
    assert normalize_for_dedup("  Hello, World! 2023 ") == "hello world 0000"
    assert normalize_for_dedup("Posted on 12/05/2019 — «Ça va?»") == normalize_for_dedup("posted on 01/01/2020 - Ça va")
    assert normalize_for_dedup("zero\u200bwidth\x07") == "zerowidth"
    assert normalize_for_dedup("٣ apples") == "0 apples"  # any Unicode digit


@given(st.text(max_size=80))
def test_normalize_is_idempotent(line: str) -> None:
    once = normalize_for_dedup(line)
    assert normalize_for_dedup(once) == once


#: Characters where the whole-text and per-line passes could part: line ends of every kind, case
#: context (final sigma, dotted I), digits, punctuation, format and control characters, spaces.
TRICKY = "\n\r\x0b\x0c\x1c\x85\u2028 \t\u00a0\u3000\u200bΣσςİIi٣7.,-'’\u00adaZé\u0301"


@given(st.text(alphabet=st.sampled_from(TRICKY) | st.characters(), max_size=120))
def test_normalize_lines_is_normalize_for_dedup_per_line(text: str) -> None:
    assert normalize_lines_for_dedup(text) == [normalize_for_dedup(line) for line in text.split("\n")]


@given(st.text(alphabet=st.sampled_from(TRICKY) | st.characters(), max_size=120))
def test_tidy_lines_is_the_per_line_definition(text: str) -> None:
    inner = re.compile(r"[ \t\u00a0\u2000-\u200b\u3000]+")
    per_line = (inner.sub(" ", line).strip() for line in text.splitlines())
    assert tidy_lines(text) == "\n".join(line for line in per_line if line)


def test_tidy_lines_and_min_length() -> None:
    assert tidy_lines("  Home \t page \n\n\n Next\u00a0line  \n") == "Home page\nNext line"
    kept = list(TidyLines().run([doc("a  b\n\n c"), doc(" \n \n")]))
    assert kept[0].text == "a b\nc" and isinstance(kept[1], Drop) and kept[1].reason == "empty"
    step = MinLength(300)
    assert step.decide(doc("x" * 299)) == "too_short" and step.decide(doc("x" * 300)) is None
