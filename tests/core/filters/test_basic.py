"""The generic filters of core.filters.basic on hand-made documents: each keeps what it should and
drops the rest under its reason, counted per step by the runner; a filter stored on a recipe pickles."""

from __future__ import annotations

import operator
import pickle
from functools import partial

import pytest

from core.document import Document
from core.filters.basic import FieldPredicate, MinLength, NonEmpty, Predicate, field_value
from core.steps import Step, StepStats, run_steps
from sources.stackexchange import MinAnswers


def doc(text: str, **meta: object) -> Document:
    return Document(f"id-{text[:8]}", text, "toy", meta)


def kept(step: Step, docs: list[Document]) -> tuple[list[str], dict[tuple[str, str], int]]:
    stats = StepStats()
    texts = [d.text for d in run_steps(iter(docs), [step], stats)]
    return texts, {(s, r): n for (s, r, _), n in stats.drops.items()}


def test_predicate_on_the_document() -> None:
    step = Predicate(lambda d: "http" not in d.text, "has_link", name="no_links")
    texts, drops = kept(step, [doc("plain words"), doc("see http://x.example"), doc("more words")])
    assert texts == ["plain words", "more words"] and drops == {("no_links", "has_link"): 1}


def test_field_predicate_on_nested_metadata_with_a_default() -> None:
    step = FieldPredicate("meta.scores.reddit", partial(operator.le, 3), "low_score", name="min_score", default=0)
    docs = [doc("a", scores={"reddit": 5}), doc("b", scores={"reddit": 2}), doc("c"), doc("d", scores={"reddit": 3})]
    texts, drops = kept(step, docs)
    assert texts == ["a", "d"] and drops == {("min_score", "low_score"): 2}  # "c" has no score: judged as 0
    assert field_value(doc("e", url="https://x.example"), "meta.url") == "https://x.example"
    assert field_value(doc("f"), "text") == "f" and field_value(doc("f"), "source") == "toy"


def test_field_predicate_on_text_and_a_misspelt_field() -> None:
    texts, _ = kept(FieldPredicate("text", str.isascii, "not_ascii"), [doc("caf\u00e9"), doc("cafe")])
    assert texts == ["cafe"]
    with pytest.raises(ValueError, match=r"meta\.<key>"):
        FieldPredicate("answer_count", bool, "x")  # a metadata key needs its meta. prefix


def test_min_length_and_non_empty() -> None:
    texts, drops = kept(MinLength(5), [doc("four"), doc("fives"), doc("")])
    assert texts == ["fives"] and drops == {("min_length", "too_short"): 2}
    texts, drops = kept(NonEmpty(), [doc(" \n\t "), doc(" x "), doc("")])
    assert texts == [" x "] and drops == {("non_empty", "empty"): 2}


def test_min_answers_is_the_field_predicate_and_pickles() -> None:
    step = pickle.loads(pickle.dumps(MinAnswers(2)))
    assert isinstance(step, FieldPredicate) and step.name == "min_answers"
    texts, drops = kept(step, [doc("q1", answer_count=3), doc("q2", answer_count=1), doc("q3"), doc("q4", answer_count=2)])
    assert texts == ["q1", "q4"] and drops == {("min_answers", "too_few_answers"): 2}
