"""cc_net line normalization, tidy lines, minimum length."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.document import Document, Drop
from core.filters.ccnet import MinLength, TidyLines, normalize_for_dedup, tidy_lines


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


def test_tidy_lines_and_min_length() -> None:
    assert tidy_lines("  Home \t page \n\n\n Next\u00a0line  \n") == "Home page\nNext line"
    kept = list(TidyLines().run([doc("a  b\n\n c"), doc(" \n \n")]))
    assert kept[0].text == "a b\nc" and isinstance(kept[1], Drop) and kept[1].reason == "empty"
    step = MinLength(300)
    assert step.decide(doc("x" * 299)) == "too_short" and step.decide(doc("x" * 300)) is None
