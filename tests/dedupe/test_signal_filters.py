"""Filters as thresholds over signals (dedupe.signal_filters): each rule form on hand-made text.

The signals come from the real kernel (core.filters.signals.signals_table), so a rule is tested
on the value a run would store; the preset bounds are datatrove 0.10's defaults.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from core.filters.signals import signals_table
from dedupe.signal_filters import PRESETS, Rule, failures, parse_filters, set_threshold

PROSE = ("The river ran past the mill and the old stone bridge. The miller had lived there with his family for "
         "many years, and he knew every bend of the water. In spring the children would walk to the bridge to "
         "watch the boats go by, and that was the best part of the week for them.")
SHORT = "Buy now. Best price."
BULLETS = "\n".join(f"- item number {i} on the list" for i in range(12))
REPEATED = "\n".join(["Click here to subscribe to the newsletter."] * 8 + [PROSE])
NO_PUNCT = "\n".join(f"menu entry {i} home about contact shop" for i in range(10))


def _fail(texts: dict[str, str], section: dict) -> dict[str, tuple[str, ...]]:
    return failures(signals_table(list(texts), list(texts.values())), parse_filters(section))


def test_min_keeps_at_the_bound_and_max_keeps_at_the_bound() -> None:
    table = signals_table(["prose", "short"], [PROSE, SHORT])
    words = table.column("words").to_pylist()
    at = {"g": {"words_min": words[0], "words_max": words[0]}}
    assert failures(table, parse_filters(at)) == {"short": ("g.words_min",)}
    above = {"g": {"words_min": words[0] + 1}}
    assert set(failures(table, parse_filters(above))) == {"prose", "short"}


def test_gopher_preset_drops_short_text_and_bullet_lists_and_keeps_prose() -> None:
    failed = _fail({"prose": PROSE * 2, "short": SHORT, "bullets": BULLETS}, {"gopher": "defaults"})
    assert "prose" not in failed
    assert "gopher.symbol_free_words_min" in failed["short"] and "gopher.stop_words_min" in failed["short"]
    assert "gopher.bullet_lines_frac_max" in failed["bullets"]


def test_repetition_preset_drops_repeated_lines() -> None:
    failed = _fail({"prose": PROSE, "repeated": REPEATED}, {"gopher_repetition": "defaults"})
    assert "prose" not in failed
    assert {"gopher_repetition.dup_line_frac_max", "gopher_repetition.dup_line_char_frac_max"} <= set(failed["repeated"])


def test_fineweb_preset_drops_lines_without_terminal_punctuation() -> None:
    failed = _fail({"prose": PROSE, "menu": NO_PUNCT}, {"fineweb": "defaults"})
    assert "prose" not in failed
    assert "fineweb.line_punct_ratio_min" in failed["menu"]


def test_explicit_rules_and_their_names() -> None:
    section = {"mine": [{"signal": "chars", "op": ">", "value": 100}, {"signal": "emails", "op": "==", "value": 0,
                                                                          "name": "no_email"}]}
    rules = parse_filters(section)
    assert [r.name for r in rules] == ["mine.chars>100", "mine.no_email"]
    failed = _fail({"prose": PROSE, "mail": "Write to ada.lovelace@analytical-engines.net for the price list."},
                   section)
    assert failed == {"mail": ("mine.chars>100", "mine.no_email")}


def test_preset_override_and_null_switch_off() -> None:
    rules = {r.name: r for r in parse_filters({"gopher": {"preset": "defaults", "symbol_free_words_min": 80, "stop_words_min": None}})}
    assert rules["gopher.symbol_free_words_min"].value == 80 and "gopher.stop_words_min" not in rules
    assert len(rules) == len(PRESETS["gopher"]) - 1


def test_nan_fails_every_rule() -> None:
    rule = Rule("g.x", "mean_word_length", ">=", 0.0)
    assert rule.keeps(np.array([math.nan, 1.0])).tolist() == [False, True]
    table = pa.table({"id": ["a"], "mean_word_length": pa.array([math.nan], pa.float32())})
    assert failures(table, [rule]) == {"a": ("g.x",)}


@pytest.mark.parametrize("section, message", [
    ({"g": {"wordz_min": 3}}, "not <signal>_min"),
    ({"g": {"words_min": "many"}}, "not a number"),
    ({"g": [{"signal": "words", "op": "~", "value": 1}]}, "unknown op"),
    ({"g": [{"signal": "nope", "op": ">", "value": 1}]}, "unknown signal"),
    ({"g": "defaults"}, "preset"),
    ({"g": 3}, "a mapping"),
])
def test_bad_sections_are_refused_with_the_reason(section: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_filters(section)


def test_set_threshold_edits_one_bound() -> None:
    section = set_threshold({"gopher": "defaults"}, "gopher.symbol_free_words_min=80")
    assert {r.name: r.value for r in parse_filters(section)}["gopher.symbol_free_words_min"] == 80
    assert set_threshold({}, "fineweb.short_line_ratio_max=0.5") == {"fineweb": {"short_line_ratio_max": 0.5}}
    with pytest.raises(ValueError, match=r"group\.param=value"):
        set_threshold({}, "words_min=3")


def test_sql_condition_agrees_with_the_vectorized_rule() -> None:
    import duckdb

    table = signals_table(["prose", "short", "bullets"], [PROSE, SHORT, BULLETS])
    rules = parse_filters({"gopher": "defaults"})
    con = duckdb.connect()
    con.register("signals", table)
    for rule in rules:
        sql = {row[0] for row in con.execute(f"SELECT id FROM signals WHERE {rule.sql_fails()}").fetchall()}
        assert sql == {doc for doc, names in failures(table, [rule]).items()}, rule


def test_gopher_preset_bounds_words_that_are_not_symbols() -> None:
    # 45 words and 10 dashes: 55 words, 45 of them not symbols. datatrove's GopherQualityFilter counts the
    # 45 (n_non_symbol_words < 50: dropped); the preset bounds the same count, not `words`.
    words = ["the", "stone", "bridge", "over", "river"] * 9
    text = " - ".join(words[:11]) + " " + " ".join(words[11:])
    table = signals_table(["doc"], [text])
    assert table.column("words").to_pylist() == [55] and table.column("symbol_free_words").to_pylist() == [45]
    assert "gopher.symbol_free_words_min" in _fail({"doc": text}, {"gopher": "defaults"})["doc"]
    assert not any(r.signal == "words" for r in parse_filters({"gopher": "defaults"}))


def test_a_ratio_exactly_at_its_bound_passes_though_stored_as_float32() -> None:
    import duckdb

    # 3 of 10 lines repeat: dup_line_frac is 0.3, stored as float32(0.3) > 0.3 (double). datatrove keeps
    # it (0.3 > 0.3 is false); so does the rule, in numpy and in SQL.
    text = "\n".join([f"line number {i} of the text." for i in range(7)] + ["line number 0 of the text."] * 3)
    table = signals_table(["doc"], [text])
    assert table.column("dup_line_frac").to_pylist() == [pytest.approx(0.3)]
    rule = Rule("g.dup_line_frac_max", "dup_line_frac", "<=", 0.3)
    assert failures(table, [rule]) == {}
    con = duckdb.connect()
    con.register("signals", table)
    assert con.execute(f"SELECT count(*) FROM signals WHERE {rule.sql_fails()}").fetchone() == (0,)
    assert failures(table, [Rule("g.dup_line_frac_max", "dup_line_frac", "<=", 0.29)]) == {"doc": ("g.dup_line_frac_max",)}
