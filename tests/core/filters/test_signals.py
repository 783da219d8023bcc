"""Quality signals: each definition on hand-made text, and the compiled pass against a plain oracle.

The oracle is the rules' published form written the obvious way (datatrove's filters, with our
word splitter, :func:`split_words`): strings joined for n-grams, a Counter for the top n-gram, the left-to-right scan
with a jump for duplicated n-grams. The compiled pass must agree on any text (hypothesis).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.filters.signal_kernel import char_flags, char_flags_of
from core.filters.signal_schema import SIGNAL_NAMES, SIGNAL_SCHEMA
from core.filters.signals import (
    STOP_WORDS,
    TERMINAL_PUNCTUATION,
    document_signals,
    signals_table,
    split_words,
)

PROSE = ("The river was wide and the water was cold. We walked to the bridge with the dog.\n"
         "It had rained for a week, and the fields that we crossed were soft.\n\n"
         "Nobody else was out.")


def _oracle_top(words: list[str], n: int) -> int:
    grams = [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        return 0
    gram, count = Counter(grams).most_common(1)[0]
    return len(gram) * count


def _oracle_dup(words: list[str], n: int) -> int:
    seen: set[tuple[str, ...]] = set()
    repeated = index = 0
    while index < len(words) - n + 1:
        gram = tuple(words[index:index + n])
        if gram in seen:
            repeated += sum(map(len, gram))
            index += n
        else:
            seen.add(gram)
            index += 1
    return repeated


def test_word_counts_and_lengths() -> None:
    signals = document_signals("The cat's toy -- is red, isn't it?")
    # words: The cat 's toy -- is red , is n't it ?  ('s and n't come off, as spaCy cuts them)
    assert signals["words"] == 12
    assert signals["symbol_free_words"] == 9  # "--", "," and "?" are symbols
    kept = ["The", "cat", "'s", "toy", "is", "red", "is", "n't", "it"]
    assert signals["mean_word_length"] == pytest.approx(sum(map(len, kept)) / 9)
    assert signals["alpha_words_frac"] == pytest.approx(9 / 12)


def test_symbols_are_datatrove_punctuation_with_control_characters_and_sentence_terminals() -> None:
    # "।" (a sentence terminal) and a control character are symbols, as in datatrove's PUNCTUATION_SET
    signals = document_signals("word । \x01 ¶")
    assert signals["words"] == 4
    assert signals["symbol_free_words"] == 2  # "word" and "¶" (not in the set)


def test_stop_words_are_distinct_and_case_sensitive() -> None:
    assert document_signals("the the the The of of")["stop_words"] == 2
    assert document_signals("The Of")["stop_words"] == 0
    assert document_signals(" ".join(sorted(STOP_WORDS)))["stop_words"] == 8


def test_hash_and_ellipsis_ratios() -> None:
    signals = document_signals("# one # two ... three …")
    assert signals["words"] == 7  # '#', one, '#', two, '...', three, '…'
    assert signals["symbol_free_words"] == 3
    assert signals["hash_word_ratio"] == pytest.approx(2 / 7)
    assert signals["ellipsis_word_ratio"] == pytest.approx(2 / 7)


def test_bullet_and_ellipsis_lines() -> None:
    signals = document_signals("- one\n• two\n  - three\nfour...\nfive…")
    assert signals["lines"] == 5
    assert signals["bullet_lines_frac"] == pytest.approx(3 / 5)
    assert signals["ellipsis_lines_frac"] == pytest.approx(2 / 5)


def test_duplicate_lines_and_paragraphs() -> None:
    text = "alpha\nbeta\nalpha\nalpha\n\nbeta\n\nalpha\nbeta\nalpha\nalpha"
    signals = document_signals(text)
    lines = re.split(r"\n+", text)  # alpha beta alpha alpha beta alpha beta alpha alpha: 7 repeats
    assert signals["dup_line_frac"] == pytest.approx(7 / len(lines))
    assert signals["dup_line_char_frac"] == pytest.approx((5 * 5 + 2 * 4) / len(text))
    assert signals["dup_para_frac"] == pytest.approx(1 / 3)  # the third paragraph repeats the first
    assert signals["dup_para_char_frac"] == pytest.approx(len("alpha\nbeta\nalpha\nalpha") / len(text))


def test_fineweb_line_rules() -> None:
    text = "A full sentence that ends well.\nshort\nAnother line that is long enough but has no stop\nshort\n\n"
    signals = document_signals(text)
    assert signals["line_punct_ratio"] == pytest.approx(1 / 4)
    assert signals["short_line_ratio"] == pytest.approx(2 / 4)
    assert signals["char_dup_ratio"] == pytest.approx(len("short") / (len(text) - text.count("\n")))
    assert signals["newline_word_ratio"] == pytest.approx(5 / signals["words"])


def test_ngram_repetition_on_a_repeated_sentence() -> None:
    sentence = "one two three four five six seven eight nine ten eleven"
    text = f"{sentence} {sentence}"
    signals = document_signals(text)
    words = sentence.split() * 2
    for n in (2, 3, 4):
        assert signals[f"top_{n}gram_char_frac"] == pytest.approx(_oracle_top(words, n) / len(text))
    for n in range(5, 11):
        assert signals[f"dup_{n}gram_char_frac"] == pytest.approx(_oracle_dup(words, n) / len(text))
    assert signals["dup_10gram_char_frac"] > 0.3


def test_empty_text_has_zero_signals() -> None:
    signals = document_signals("")
    assert all(signals[name] == 0 for name in SIGNAL_NAMES)


def test_table_schema_and_order() -> None:
    table = signals_table(["b", "a", "c"], [PROSE, "", "word " * 50])
    assert table.schema == SIGNAL_SCHEMA
    assert table.column("id").to_pylist() == ["b", "a", "c"]
    assert table.column("words").to_pylist() == [document_signals(t)["words"] for t in (PROSE, "", "word " * 50)]


_TEXT = st.lists(st.sampled_from([*"ab c.'’\n#-…é日,", "the", "of", " and "]), max_size=120).map("".join)


@given(st.lists(_TEXT, min_size=1, max_size=6))
@example(["a a a a a a a a a a a a"])
@example(["'a' b'c d'' é'é 日日 ."])
def test_compiled_pass_agrees_with_the_oracle(texts: list[str]) -> None:
    table = signals_table([str(i) for i in range(len(texts))], texts).to_pylist()
    for text, row in zip(texts, table, strict=True):
        words = split_words(text)
        assert row["words"] == len(words)
        assert row["stop_words"] == len(STOP_WORDS.intersection(words))
        assert row["alpha_words_frac"] == pytest.approx(
            sum(any(c.isalpha() for c in w) for w in words) / len(words) if words else 0.0, rel=1e-6)
        for n in (2, 3, 4):
            expected = _oracle_top(words, n) / len(text) if text else 0.0
            assert row[f"top_{n}gram_char_frac"] == pytest.approx(expected, rel=1e-6), (n, text)
        for n in range(5, 11):
            expected = _oracle_dup(words, n) / len(text) if text else 0.0
            assert row[f"dup_{n}gram_char_frac"] == pytest.approx(expected, rel=1e-6), (n, text)



def _oracle_repeats(parts: list[str]) -> tuple[int, int]:
    seen: set[str] = set()
    count = chars = 0
    for part in parts:
        if part in seen:
            count, chars = count + 1, chars + len(part)
        seen.add(part)
    return count, chars


def _oracle_lines(text: str) -> dict[str, float]:
    """The line and paragraph rules over Python strings, as datatrove writes them (splitlines, split, re)."""
    def ratio(part: float, whole: float) -> float:
        return part / whole if whole else 0.0

    lines = text.splitlines()
    nonblank = [line for line in text.split("\n") if line.strip()]
    stripped = text.strip()
    paragraphs = re.split(r"\n{2,}", stripped)
    gopher = re.split(r"\n+", text)
    return {
        "lines": len(lines),
        "bullet_lines_frac": ratio(sum(line.lstrip().startswith(("•", "-")) for line in lines), len(lines)),
        "ellipsis_lines_frac": ratio(sum(line.rstrip().endswith(("...", "…")) for line in lines), len(lines)),
        "line_punct_ratio": ratio(sum(line.endswith(TERMINAL_PUNCTUATION) for line in nonblank), len(nonblank)),
        "short_line_ratio": ratio(sum(len(line) <= 30 for line in nonblank), len(nonblank)),
        "char_dup_ratio": ratio(_oracle_repeats(nonblank)[1], len(text) - text.count("\n")),
        "dup_para_frac": ratio(_oracle_repeats(paragraphs)[0], len(paragraphs)),
        "dup_para_char_frac": ratio(_oracle_repeats(paragraphs)[1], len(text)),
        "dup_line_frac": ratio(_oracle_repeats(gopher)[0], len(gopher)),
        "dup_line_char_frac": ratio(_oracle_repeats(gopher)[1], len(text)),
    }


_LINES = st.lists(st.sampled_from(["\n", "\n\n", "\r", "\r\n", "\x0b", "\x85", "\u2028", " ", "\t", "•", "-",
                                   ".", "...", "…", "!", "。", "a", "bb", "日", "x" * 31]), max_size=60).map("".join)


@given(st.lists(_LINES, min_size=1, max_size=6))
@example(["\n\na\n\n\na\n\n"])
@example(["  \n  "])
@example(["a\r\n- b...  \r\n\r\n• c…\t"])
def test_line_rules_of_the_compiled_pass_agree_with_the_string_oracle(texts: list[str]) -> None:
    table = signals_table([str(i) for i in range(len(texts))], texts).to_pylist()
    for text, row in zip(texts, table, strict=True):
        for name, expected in _oracle_lines(text).items():
            assert row[name] == pytest.approx(expected, rel=1e-6), (name, text)


@given(st.lists(st.one_of(_TEXT, _LINES), min_size=1, max_size=6))
@example(["", "a\n\na", ""])
@example(["# x ... …\n\n# x ... …", "\n", "日本。"])
def test_signals_are_python_divisions_of_the_counts_bit_for_bit_in_any_batch(texts: list[str]) -> None:
    """The columns are computed over the whole batch as arrays: each ratio must still be exactly the
    Python ``int / int`` of its counts (0.0 over an empty whole), counts Python ints, and a text's row
    the same whatever else is in its batch."""
    table = signals_table([str(i) for i in range(len(texts))], texts).to_pylist()
    for text, row in zip(texts, table, strict=True):
        single = document_signals(text)
        total = len(split_words(text))
        assert single["hash_word_ratio"] == (text.count("#") / total if total else 0.0)
        assert single["ellipsis_word_ratio"] == ((text.count("...") + text.count("…")) / total if total else 0.0)
        assert single["newline_word_ratio"] == (text.count("\n") / total if total else 0.0)
        assert {name: single[name] for name in _oracle_lines(text)} == _oracle_lines(text)
        assert all(type(single[name]) is int for name in ("chars", "words", "symbol_free_words", "stop_words",
                                                           "lines", "emails", "ips"))
        assert row == {"id": row["id"], **{name: float(np.float32(value)) if type(value) is float else value
                                           for name, value in single.items()}}


def test_char_flags_classify_each_new_code_point_once_as_char_flags_of() -> None:
    """The table fills in as texts bring code points: a first batch (every code point new but ASCII, some
    twice), then one mixing known and new ones, each flagged as :func:`char_flags_of` says."""
    terminals = "\u0964!"  # a table of its own, empty but for ASCII
    for text in ("é日é\U0001F600\u2028x!\u0964日", "日a\udc80\u00a0é\u0964\n"):
        raw = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
        assert char_flags(raw, terminals).tolist() == [char_flags_of(ch, terminals) for ch in text]


#: Each case is one of the splitter's rules (docstring of core.filters.signal_kernel); the expected words
#: are what spaCy 3.8's blank English tokenizer (datatrove 0.10's word splitter) gives, whitespace dropped.
@pytest.mark.parametrize(("text", "words"), [
    ("The cat's toy -- is red, isn't it?", ["The", "cat", "'s", "toy", "--", "is", "red", ",", "is", "n't", "it", "?"]),
    ("It's 9/11, at 15:00 (U.S. time)...", ["It", "'s", "9/11", ",", "at", "15:00", "(", "U.S.", "time", ")", "..."]),
    ("an e-mail -- see example.com/a?", ["an", "e", "-", "mail", "--", "see", "example.com/a", "?"]),
    ("\"Quoted,\" she said.\n\n- item 2024-01-02", ["\"", "Quoted", ",", "\"", "she", "said", ".", "-", "item", "2024", "-", "01", "-", "02"]),
    ("I'm sure they're here; don't go, we can't.", ["I", "'m", "sure", "they", "'re", "here", ";", "do", "n't", "go", ",", "we", "ca", "n't", "."]),
    ("_Pisc_ said #### *bold*", ["_", "Pisc", "_", "said", "#", "#", "#", "#", "*", "bold", "*"]),
    ("Mr. Smith met Dr. Jones at 5 p.m. e.g. today :) ok", ["Mr.", "Smith", "met", "Dr.", "Jones", "at", "5", "p.m.", "e.g.", "today", ":)", "ok"]),
    ("title:elephant a,b 14-year 6oz 50% C++ $5 US$10", ["title", ":", "elephant", "a", ",", "b", "14", "-", "year", "6", "oz", "50", "%", "C++", "$", "5", "US$", "10"]),
    ("12.9'' dont cannot gonna", ["12.9", "''", "do", "nt", "can", "not", "gon", "na"]),
    ("see https://x.org/a-b, or |url=http://y.com/a", ["see", "https://x.org/a-b", ",", "or", "|url", "=", "http://y.com", "/", "a"]),
    ("end...start a…b", ["end", "...", "start", "a", "…", "b"]),
    ("USA. S. 85°C 3+4 x=y", ["USA", ".", "S.", "85", "°", "C", "3", "+", "4", "x", "=", "y"]),
    ("at 91 °C. or °A.", ["at", "91", "°", "C", ".", "or", "°", "A."]),
    ("mail me@example.com now!", ["mail", "me@example.com", "now", "!"]),
    ("the  \u00a0 tab\tand\u2003space", ["the", "tab", "and", "space"]),
])
def test_words_split_as_prose_tokenizers_do(text: str, words: list[str]) -> None:
    assert split_words(text) == words
    assert document_signals(text)["words"] == len(words)
