"""The compiled normalization (per-code-point tables, :func:`dedupe.shingles.lowered_batch`) gives the
words of the definition, :func:`dedupe.shingles.normalize_for_shingles`, for every code point and any text.

The batch bytes may differ from the definition's by separators only (a curly quote becomes spaces
where it stood, a folded document ends in spaces), so what is compared is what the signing kernel
reads: the words (ASCII letters and digits, bytes >= 0x80) in order, per document.
"""

from __future__ import annotations

import sys
import threading
import unicodedata

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dedupe import minhash_kernel
from dedupe import shingles as sh

#: Characters whose folding is not one-for-one: combining marks (they join or reorder with the
#: character before them), a spacing accent whose NFKC holds one, Hangul jamo, Indic vowel signs
#: and viramas, ligatures and compatibility forms (longer, shorter, in a word), format characters
#: (removed), separators and punctuation (spaces), capitals that case folding lengthens, and U+FDFA,
#: whose NFKC is 18 characters.
TRICKY = ("\u0301\u0323\u0308\u0345\u00b4\u1100\u1161\u11a8\uac00\u0bbe\u0bcd\u0bc6\u09c7\u09be\u0915\u094d"
          "\u093c\u1025\u102e\u1039\u103a\u0e33\u05b4\u05bc\ufb01\u00b2\u00bd\u01c6\u0149\u2126\u212b\u1e9b"
          "\u00ad\u200b\ufeff\u200d\u00a0\u3000\u2019\u201c\u2014\u2026\u00ab\u00df\u1e9e\u0130\u03a3\u0390"
          "\u1fbc\uff21\uff12\u33cf\u2460\ufdfa\U0001d400\U0001f600\ud800\x1c")
TEXT = st.text(alphabet=st.one_of(st.sampled_from(TRICKY), st.characters(exclude_categories=()),
                                  st.sampled_from("aZ09 ,.'\n")), max_size=60)


def _words(data: bytes) -> list[bytes]:
    return sh._WORD_RE.findall(data.lower())


def _batch_words(texts: list[str]) -> list[list[bytes]]:
    data, offsets = sh.lowered_batch(texts)
    return [_words(data[offsets[i] : offsets[i + 1]].tobytes()) for i in range(len(texts))]


def _definition_words(texts: list[str]) -> list[list[bytes]]:
    return [_words(sh._encode(text)) for text in texts]


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT, max_size=8))
@example(["e\u0301\u0323x \u00b4\u0323", "\u1100\u1161\u11a8 \uac00\u11a8", "\ufdfa" * 3, "A\ufb01\u00b2\u00ad\u200b"])
@example(["\u0301 at the start", "ends in a mark\u0301", "\u0bae\u0bcd\u0bb4\u0bcd" * 40 + " " + "x" * 100 + "\u0301"])
def test_batch_words_are_the_definitions_for_any_text(texts: list[str]) -> None:
    assert _batch_words(texts) == _definition_words(texts)
    assert sh.batch_words(texts) == [sh._WORD_RE.findall(sh.normalize_for_shingles(t).encode("utf-8", "surrogatepass"))
                                     for t in texts]


def test_every_code_point_in_every_context() -> None:
    """Each code point of planes 0, 1 and 14's first two blocks (every 17th block elsewhere: CJK, unassigned,
    private use) inside a word, at its end, doubled,
    between ASCII capitals, before two combining marks (so it starts a segment NFKC must see whole),
    after a Hangul leading jamo and after a Latin letter (so it may join them); one text per block of 256."""
    blocks = [b for b in range(0x1100) if b >> 8 in (0, 1) or b in (0xE00, 0xE01) or b % 17 == 0]
    texts = []
    for block in blocks:
        chars = map(chr, range(block << 8, (block + 1) << 8))
        texts.append("".join(f"Ab{c}CD x{c} {c}{c}\u00c9 {c}\u0323\u0301 \u1100{c} e{c}. " for c in chars))
    for lo in range(0, len(texts), 64):
        batch = texts[lo : lo + 64]
        assert _batch_words(batch) == _definition_words(batch), hex(blocks[lo] << 8)


def test_plain_blocks_keep_every_character() -> None:
    """A block entered whole as ``KEEP`` (:func:`dedupe.shingles._plain_block`) holds only characters both
    folds keep and that start a segment, checked one by one for every block that passes (planes 0-3)."""
    passed = 0
    for block in range(0x400):
        chars = "".join(map(chr, range(block << 8, (block + 1) << 8)))
        if sh._plain_block(chars):
            passed += 1
            for char in chars:
                assert sh.fold_alone(char) == char and sh.fold_char(char) == char and sh._starts_segment(char), hex(ord(char))
    assert passed > 300  # CJK, Hangul syllables, ... are entered whole


def test_growth_spans_and_merges_on_long_documents() -> None:
    """The kernel's paths, each on a document long enough to take it many times: a replacement longer
    than its place (U+FDFA, 3 bytes -> 33), the copy buffer grown, spans far apart and merged, a
    Myanmar-like text where every word needs NFKC, documents that are ASCII between them."""
    texts = [
        "\ufdfa " * 500 + "ends here",
        ("\ufdfa" * 50 + "e\u0301 ") * 40,  # longer than its place and needing NFKC: the copy path grows ``out``
        ("word " * 30 + "cafe\u0301 ") * 60,  # spans far apart (> SPAN_GAP bytes)
        "\u1000\u1039\u1001\u102c\u103a " * 2000,  # Myanmar: one merged span
        "plain ascii " * 100,
        "NBSP\u00a0and \u201cquotes\u201d\u2026 " * 200,  # folded where it lies, no span
        "\u00b2\u00ba\u2122\ufeff in words: x\u00b2y n\u00bax " * 100,  # shorter inside a word: moved down
    ]
    assert _batch_words(texts) == _definition_words(texts)
    for text in texts:
        assert _batch_words([text]) == _definition_words([text])


def test_a_shorter_separator_pads_and_the_rest_does_not_move() -> None:
    """NBSP and curly quotes are replaced where they lie (spaces), so the document keeps its length;
    ``²`` -> ``2`` moves what follows down, and the place's end (with its slack) is filled with spaces."""
    text = "It\u2019s\u00a0\u201cok\u201d"
    sh.lowered_batch([text, "m\u00b2"])  # the first time, characters the table lacks send a document the copying way
    data, offsets = sh.lowered_batch([text])
    assert data[offsets[0] : offsets[1]].tobytes() == b"It   s" + b"  " + b"   ok   " + b" " * sh.SLACK
    data, offsets = sh.lowered_batch(["m\u00b2 area"])
    assert data[offsets[0] : offsets[1]].tobytes() == b"m2 area " + b" " * sh.SLACK
    data, offsets = sh.lowered_batch(["\u00bd" * 8 + "x", "y"])  # 16 -> 24 bytes: back in its place and slack
    assert data[offsets[0] : offsets[1]].tobytes() == b"1 2" * 8 + b"x" + b" " * 8
    assert offsets.tolist() == [0, 17 + sh.SLACK, 18 + 2 * sh.SLACK]


def test_tables_are_built_as_text_reaches_them_and_threads_share_them(monkeypatch) -> None:
    """Fresh tables hold no character; eight threads signing at once each add what they meet (the table
    is replaced whole, never changed under a kernel) and all get the definition's words."""
    monkeypatch.setattr(sh, "_RAW_TABLE", sh.LazyFoldTable(sh._raw_entry))
    monkeypatch.setattr(sh, "_NFKC_TABLE", sh.LazyFoldTable(sh.fold_char))
    assert (sh._RAW_TABLE.current.blocks < 0).all()
    texts = ["".join(chr(c) for c in range(start, start + 3000, 7)) + " e\u0301" for start in range(0x80, 0x30000, 3001)]
    expected = _definition_words(texts)
    results: dict[int, list[list[bytes]]] = {}

    def sign(k: int) -> None:
        results[k] = _batch_words(texts[k::8])

    threads = [threading.Thread(target=sign, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for k in range(8):
        assert results[k] == expected[k::8]
    built = sh._RAW_TABLE.current
    assert 0 < (built.blocks >= 0).sum() < len(built.blocks)
    assert (built.entries != minhash_kernel.NOT_BUILT).sum() < 50_000  # characters met, not whole blocks


def test_case_10_typography_takes_no_span() -> None:
    """The common web characters (NBSP, curly quotes, dashes, ellipsis, accented letters) fold where they
    lie: no document goes the slower way, and the words are those of the ASCII text."""
    smart = "\u201cWe didn\u2019t\u00a0know\u2014at all\u2026\u201d said Ren\u00e9e."
    raws = sh.encode_texts([smart])
    data, offsets = sh._joined(raws)
    now = sh._RAW_TABLE.current
    sh.lowered_batch([smart])  # the table holds its characters now
    now = sh._RAW_TABLE.current
    hard = np.zeros(1, dtype=np.bool_)
    minhash_kernel.fold_in_place(data, offsets, np.zeros(1, dtype=np.bool_), now.blocks, now.entries, now.starts,
                                 now.pool, now.separators, hard, np.empty(1, dtype=np.int64))
    assert not hard[0]
    assert _words(data.tobytes()) == _words(b'"we didn\'t know-at all..." said ren\xc3\xa9e.')


def test_surrogates_and_the_last_code_point() -> None:
    texts = ["\ud800x\udfff", "\U0010ffff\u0301", unicodedata.lookup("LATIN CAPITAL LETTER A WITH RING ABOVE") + "\U000e0041"]
    assert _batch_words(texts) == _definition_words(texts)
    assert sys.maxunicode >> minhash_kernel.BLOCK_BITS < len(sh._RAW_TABLE.current.blocks)


def test_ascii_runs_at_every_alignment() -> None:
    """ASCII is skipped 8 bytes at a time where nothing has moved yet: characters to fold at every offset
    modulo 8, before and after a replacement that moves the rest down (``²``) and one that does not."""
    texts = [("A" * k + "\u00e9" + "b" * 20 + "\u201c" + "c" * 9 + "\u00b2" + "d" * 17 + "\u00a0X") * 3 for k in range(17)]
    assert _batch_words(texts) == _definition_words(texts)
    data, offsets = sh.lowered_batch(texts)
    for i, text in enumerate(texts):
        kept = data[offsets[i] : offsets[i + 1]].tobytes()
        assert kept.rstrip(b" ").endswith(b"X") and len(kept) == len(text.encode("utf-8")) + sh.SLACK
