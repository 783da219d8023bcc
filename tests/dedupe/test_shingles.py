"""The kernel's shingle hashes equal the slow per-shingle reference, for any text."""

from __future__ import annotations

import re
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dedupe import minhash_kernel
from dedupe import shingles as sh
from dedupe.shingles import ShingleConfig, reference_shingle_hash, shingle_hashes, shingle_items


def _reference(texts: list[str], ngram: int) -> list[list[int]]:
    config = ShingleConfig(ngram)
    return [[reference_shingle_hash(item, ngram) for item in shingle_items(t, config)] for t in texts]


def _vectorized(texts: list[str], ngram: int) -> list[list[int]]:
    hashes, offsets = shingle_hashes(texts, ShingleConfig(ngram))
    return [hashes[offsets[i] : offsets[i + 1]].tolist() for i in range(len(texts))]


def test_words_split_on_ascii_punctuation_and_case() -> None:
    assert shingle_items("Hello, WORLD! one-two", ShingleConfig(2)) == [b"hello world", b"world one", b"one two"]
    assert _vectorized(["Hello, world"], 2) == _vectorized(["hello   world!!"], 2)


def test_short_and_empty_documents() -> None:
    texts = ["", "   ...  ", "just three words", "five words are exactly enough"]
    _hashes, offsets = shingle_hashes(texts)
    assert np.diff(offsets).tolist() == [0, 0, 1, 1]  # no words -> no shingle; short -> one
    assert _vectorized(texts, 5) == _reference(texts, 5)


def test_non_ascii_text_and_documents_do_not_leak_into_each_other() -> None:
    texts = ["Привет мир это тест шинглов", "日本語 の テキスト", "a b", "c d e f g h"]
    assert _vectorized(texts, 3) == _reference(texts, 3)
    # the last words of one document never form a shingle with the first of the next
    alone = _vectorized(["c d e f g h"], 3)[0]
    assert _vectorized(texts, 3)[3] == alone


def test_big_document_read_in_pieces_has_the_same_hashes(monkeypatch) -> None:
    text = " ".join(f"w{i % 97}x{i}" for i in range(3000)) + " " + "z" * 2500 + " end"
    expected = _vectorized([text], 5)
    assert expected[0] == _reference([text], 5)[0]
    monkeypatch.setattr(minhash_kernel, "PIECE_BYTES", 1000)  # words and windows cross piece edges
    assert _vectorized([text, "tail words here"], 5)[0] == expected[0]


#: Any code point, lone surrogates included (texts are encoded with ``surrogatepass``).
ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=80)


@settings(max_examples=60, deadline=None)
@given(st.lists(ANY_TEXT, max_size=6), st.integers(1, 6), st.sampled_from([1, 2, 5, 64, 1 << 14]))
def test_kernel_equals_reference_for_any_text(texts: list[str], ngram: int, piece_bytes: int) -> None:
    saved = minhash_kernel.PIECE_BYTES
    minhash_kernel.PIECE_BYTES = piece_bytes  # hypothesis cannot take the function-scoped monkeypatch fixture
    try:
        assert _vectorized(texts, ngram) == _reference(texts, ngram)
    finally:
        minhash_kernel.PIECE_BYTES = saved


def test_folds_never_change_again_and_hold_no_ascii_capital() -> None:
    """Every character of a fold is its own fold and no fold holds an ASCII capital (all of Unicode):
    the ASCII lowering the signing kernel does never changes a folded byte."""
    capitals = re.compile(b"[A-Z]")
    everything = "".join(chr(c) for c in range(sys.maxunicode + 1))
    assert capitals.search(sh._encode(everything)) is None
    for point in range(sys.maxunicode + 1):
        folded = sh.fold_char(chr(point))
        assert all(sh.fold_char(c) == c for c in folded), hex(point)


def test_given_utf8_equals_encoding_here() -> None:
    texts = ["ÉCOLE “Quoted” — naïve", "ΣΟΦΙΑ σοφός", "İstanbul", "plain ASCII", "日本語 の テキスト"]
    given_hashes, given_offsets = shingle_hashes(texts, ShingleConfig(2), sh.encode_texts(texts))
    assert _vectorized(texts, 2) == [given_hashes[given_offsets[i]:given_offsets[i + 1]].tolist() for i in range(5)]
    assert _vectorized(texts, 2) == _reference(texts, 2)


def test_no_canonical_decomposition_beyond_the_scanned_range() -> None:
    """``_joins_previous`` scans code points below 0x30000: every decomposition lies there; and
    skipping the blocks that are NFD whole finds the same characters as reading every code point."""
    import unicodedata

    assert not any(unicodedata.decomposition(chr(c)) for c in range(0x30000, sys.maxunicode + 1))
    seconds = set(sh._HANGUL_JOINING)
    for point in range(0x30000):
        parts = unicodedata.decomposition(chr(point)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(chr(int(parts[1], 16)))
    assert sh._joins_previous() == seconds


def test_typography_case_and_nfkc_forms_give_the_same_words() -> None:
    """Issue 31, case 10: curly quotes, dashes, ellipses, capitals, NBSP, full-width forms,
    ligatures and soft hyphens never make a new word; accents and digits stay."""
    plain = "it's a day-by-day \"log\"... of 2024 fine ships"
    for variant in ["IT\u2019S A DAY\u2014BY\u2014DAY \u201cLOG\u201d\u2026 OF \uff12\uff10\uff12\uff14 \ufb01ne ships",
                    "it\u2019s\u00a0a day\u2010by\u2010day \u00ablog\u00bb\u2026 of 2024 \ufb01\u00adne ships"]:
        assert shingle_items(variant, ShingleConfig(2)) == shingle_items(plain, ShingleConfig(2))
        assert _vectorized([variant], 2) == _vectorized([plain], 2)
    assert shingle_items("r\u00e9sum\u00e9 1998") != shingle_items("resume 1999")
