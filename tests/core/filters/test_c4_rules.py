"""C4 cleaning rules, bad words, sentence-span units."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.document import Document, Drop
from core.filters.c4_rules import (
    BadWords,
    C4CleanPage,
    C4Rules,
    MinSentences,
    SentenceSpanUnits,
    clean_page,
    find_bad_word,
    split_sentences,
)

GOOD = [
    "The river flooded the valley twice in the spring of that year.",
    "Farmers moved their cattle to the hills and waited for the water to fall.",
    "By June the fields were green again, and the harvest was better than expected.",
    "Local historians still collect letters written during those months.",
    "Some of them describe the boats that carried bread to the villages.",
]


def test_line_rules() -> None:
    page = "\n".join([
        "Home | About | Contact",                         # no terminal punctuation
        GOOD[0] + " [1]",                                  # citation removed, kept
        "Read more...",                                    # ellipsis
        "Too short.",                                      # < 3 words
        "Please enable JavaScript to view this page.",     # javascript
        "This site uses cookies to improve your experience.",  # policy
        *GOOD[1:],
    ])
    text, reason = clean_page(page, C4Rules())
    assert reason is None
    assert text == "\n".join(GOOD)


@pytest.mark.parametrize(("extra", "reason"), [
    ("Lorem ipsum dolor sit amet, consectetur adipiscing elit.", "lorem_ipsum"),
    ("The function returns { value: 1 } when called twice.", "curly_bracket"),
])
def test_page_rules(extra: str, reason: str) -> None:
    assert clean_page("\n".join([*GOOD, extra]), C4Rules()) == (None, reason)


def test_too_few_sentences_and_long_words() -> None:
    assert clean_page("\n".join(GOOD[:4]), C4Rules())[1] == "too_few_sentences"
    long_word = "A line with " + "x" * 1001 + " in it."
    assert long_word not in (clean_page("\n".join([*GOOD, long_word]), C4Rules())[0] or "")
    out = list(C4CleanPage().run([Document("a", "\n".join(GOOD[:2]), "c4", {})]))
    assert isinstance(out[0], Drop) and out[0].reason == "too_few_sentences"
    assert MinSentences(5).decide(Document("b", " ".join(GOOD), "c4", {})) is None


def test_bad_words() -> None:
    assert find_bad_word("A perfectly clean sentence about bass fishing.") is None
    assert find_bad_word("Visit our XXX site.") == "xxx"
    assert find_bad_word("Classic reading: Assessment of the classes.") is None  # whole words only
    assert BadWords().decide(Document("d", "Free porn here.", "c4", {})) == "bad_words"


def test_split_sentences() -> None:
    assert split_sentences('He said "stop." Then he left! Why? Nobody knows') == [
        'He said "stop."', "Then he left!", "Why?", "Nobody knows"]


def test_sentence_span_units_and_removal() -> None:
    units = SentenceSpanUnits(3)
    text = "A one. B two. C three.\nD four. E five."
    windows = units.units(text)
    assert windows == ["a one. b two. c three.", "b two. c three. d four.", "c three. d four. e five."]
    assert units.apply(text, np.array([True, False, False])) == "D four. E five."
    assert units.apply(text, np.zeros(3, dtype=bool)) == "A one. B two. C three.\nD four. E five."
    assert units.units("Just one.") == ["just one."]
    with pytest.raises(ValueError):
        units.apply(text, np.zeros(2, dtype=bool))


@given(st.lists(st.sampled_from([*GOOD, "Short one.", "Why?"]), min_size=0, max_size=8))
def test_span_removal_with_empty_mask_is_identity(lines: list[str]) -> None:
    units = SentenceSpanUnits(3)
    text = "\n".join(lines)
    assert units.apply(text, np.zeros(len(units.units(text)), dtype=bool)) == text
