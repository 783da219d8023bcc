"""Exact deduplication keys: SHA256 over normalized text.

Normalization (what counts as "the same text"):
1. Unicode NFC, so composed and decomposed accents hash alike;
2. every run of Unicode whitespace (spaces, tabs, newlines, NBSP) becomes one space;
3. leading and trailing whitespace is removed.
Case, punctuation and digits are kept: two documents that differ only there are different
documents for exact dedup (near-dedup catches the rest).

:func:`exact_hash` is the definition (one document); :func:`exact_hashes` gives the same digests
for a whole batch from the documents' UTF-8 bytes, with the whitespace collapse done on the
batch's bytes by a few array passes (the ``split``/``join`` makes ~900 string objects per 5 KB
document and was the largest cost of building the Pile index).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

import numpy as np

#: Bytes that are whitespace for ``str.split()`` on their own: ASCII ``\t\n\v\f\r``, the
#: separators ``\x1c``-``\x1f`` and the space. Non-ASCII whitespace (NBSP, U+2000..., U+3000) is
#: multi-byte in UTF-8; documents holding one take the :func:`exact_hash` path.
_ASCII_SPACES = bytes([9, 10, 11, 12, 13, 28, 29, 30, 31, 32])
_TO_SPACE = bytes(32 if byte in _ASCII_SPACES else byte for byte in range(256))
_ASCII_BYTES = bytes(range(128))
#: Every non-ASCII character ``str.split()`` cuts at (they all lie in the BMP; a test checks all of Unicode).
_NON_ASCII_SPACE = "".join(chr(c) for c in range(128, 0x10000) if chr(c).isspace())
#: The characters of combining class 0 that compose with the character before them (NFC_QC=Maybe):
#: Indic vowel signs and length marks, and Hangul medial vowels and final consonants. A test
#: derives them from ``unicodedata`` for all of Unicode.
_COMPOSES_WITH_PREVIOUS = re.compile(
    "[\u09be\u09d7\u0b3e\u0b56\u0b57\u0bbe\u0bd7\u0cc2\u0cd5\u0cd6\u0d3e\u0d57\u0dcf\u0ddf\u0fb5\u0fb7"
    "\u102e\u1161-\u1175\u11a8-\u11c2\u1b35\U00011127\U0001133e\U00011357\U000114b0\U000114ba\U000114bd"
    "\U000115af\U00011930]")
#: What keeps a document off the bytes path: a non-ASCII space, or a lone surrogate (kept by surrogatepass).
_NOT_BYTES_PATH = re.compile(f"[{_NON_ASCII_SPACE}\ud800-\udfff]")


def normalize_for_exact(text: str) -> str:
    """Normalize ``text`` as documented in the module docstring.

    ``str.split()`` with no separator cuts at runs of exactly the characters ``re``'s ``\\s``
    matches (both use Python's Unicode whitespace table) and drops the ends, so the join is the
    regex substitution plus ``strip()``, about 10x faster (it was most of the Pile index's CPU).
    The equivalence is a property test (tests/core/test_exact.py).
    """
    return " ".join(unicodedata.normalize("NFC", text).split())


def exact_hash(text: str) -> bytes:
    """The 32-byte SHA256 digest of the normalized text."""
    return hashlib.sha256(normalize_for_exact(text).encode("utf-8")).digest()


def non_ascii_chars(text: str, raw: bytes) -> str:
    """The non-ASCII characters of ``text`` in order (``raw`` is ``text`` as UTF-8, lone surrogates kept).

    One C-speed ``translate`` deletes the ASCII bytes; ``""`` for ASCII text (``isascii`` is O(1)).
    The exact hash and the shingler both decide their fast paths from it, so a batch computes it
    once per document for both (:func:`dedupe.shingles.shingle_hashes` takes it too).
    """
    return "" if text.isascii() else raw.translate(None, _ASCII_BYTES).decode("utf-8", errors="surrogatepass")


def _bytes_path_ok(text: str, others: str) -> bool:
    """Whether ``text`` (with non-ASCII characters ``others``) only needs the ASCII whitespace collapse:
    it is NFC and holds no non-ASCII whitespace (nor a lone surrogate: :func:`exact_hash` raises on those)."""
    return not others or (_NOT_BYTES_PATH.search(others) is None and (_surely_nfc(others)
                                                                      or unicodedata.is_normalized("NFC", text)))


def _bytes_path_flags(texts: Sequence[str], others: Sequence[str]) -> list[bool]:
    """``[_bytes_path_ok(t, o) ...]`` for a batch, decided for the whole batch at once when it can be.

    The checks look at each character on its own, except the NFC check, which also looks at
    neighbours; joined with an ASCII letter between documents (a starter that composes with
    nothing around it, as ASCII text does), the batch's non-ASCII characters pass them only if
    every document's do (:func:`_surely_nfc`). One check of the batch's ~40,000 non-ASCII
    characters instead of 1,024 calls (about half the time on Pile documents); a batch that fails
    is decided document by document. Equality with the per-document flags is a property test.
    """
    joined = "a".join(others)
    if joined.isascii() or (_NOT_BYTES_PATH.search(joined) is None and _surely_nfc(joined)):
        return [True] * len(texts)
    return [_bytes_path_ok(text, other) for text, other in zip(texts, others, strict=True)]


def _surely_nfc(others: str) -> bool:
    """True only if a text whose non-ASCII characters are ``others`` is NFC (False: look at the whole text).

    Unicode's NFC quick check says YES for a text when no character is NFC_QC=No or Maybe and no
    two neighbours break the canonical order; ASCII characters pass it and reset the order (class
    0). So when ``others`` holds no character that composes with the one before it (Maybe: every
    combining mark, class != 0, plus :data:`_COMPOSES_WITH_PREVIOUS`), the quick check of
    ``others`` alone (what ``is_normalized`` then returns) decides for the text: ~40 characters
    per document instead of the ~5,000 of the text, the exact hash's largest cost.
    """
    return (unicodedata.is_normalized("NFC", others) and _COMPOSES_WITH_PREVIOUS.search(others) is None
            and not any(map(unicodedata.combining, set(others))))


def exact_hashes(texts: Sequence[str], encoded: Sequence[bytes] | None = None,
                 others: Sequence[str] | None = None) -> list[bytes]:
    """``[exact_hash(t) for t in texts]``, computed from the texts' UTF-8 bytes where that is exact.

    ``encoded`` (optional) is each text as UTF-8 when the caller has it already, ``others`` its
    :func:`non_ascii_chars`. Documents that are NFC and hold only ASCII whitespace (nearly all)
    are collapsed as bytes, the whole batch at once (:func:`collapsed_digests`); the others take
    :func:`exact_hash`. Equality with :func:`exact_hash` is a property test.
    """
    raws = encoded if encoded is not None else [t.encode("utf-8", errors="surrogatepass") for t in texts]
    if others is None:
        others = [non_ascii_chars(text, raw) for text, raw in zip(texts, raws, strict=True)]
    fast = _bytes_path_flags(texts, others)
    digests = iter(collapsed_digests([raw for raw, ok in zip(raws, fast, strict=True) if ok]))
    return [next(digests) if ok else exact_hash(text) for text, ok in zip(texts, fast, strict=True)]


def collapsed_digests(raws: Sequence[bytes]) -> list[bytes]:
    """``[sha256(collapse_ascii_whitespace(raw)).digest() for raw in raws]``, one batch at a time.

    The batch is joined and translated once; a space is dropped where the byte before it (in the
    same document) is a space or where it starts a document, and one space left at a document's
    end is cut off: the runs collapse and both ends are stripped, as in
    :func:`collapse_ascii_whitespace`, with a few array passes instead of the search for a double
    space in every document (slow: single spaces are everywhere). Each document's digest is taken
    over its slice of the result, without copying it out.
    """
    if not raws:
        return []
    lengths = np.fromiter(map(len, raws), np.int64, len(raws))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    joined = np.frombuffer(b"".join(raws).translate(_TO_SPACE), dtype=np.uint8)
    space = joined == 32
    drop = np.empty_like(space)
    drop[1:] = space[1:] & space[:-1]
    filled = lengths > 0
    drop[starts[filled]] = space[starts[filled]]
    kept = joined[~drop] if drop.any() else joined
    if len(kept) < len(joined):
        lengths = lengths.copy()
        lengths[filled] -= np.add.reduceat(drop, starts[filled], dtype=np.int64)
        ends = np.cumsum(lengths)
        starts = ends - lengths
    trailing = np.zeros(len(raws), dtype=bool)
    trailing[lengths > 0] = kept[ends[lengths > 0] - 1] == 32
    view = memoryview(kept.data)
    return [hashlib.sha256(view[lo:hi]).digest()
            for lo, hi in zip(starts.tolist(), (ends - trailing).tolist(), strict=True)]


def collapse_ascii_whitespace(raw: bytes) -> bytes:
    """``b" ".join(raw.split(<the ASCII whitespace of str.split>))`` without one object per word.

    Every whitespace byte becomes a space (one C-speed ``translate``), runs of spaces are halved
    by ``replace`` until none is left (prose has few: usually one pass that finds nothing), and
    the ends are stripped: ~5x faster than ``str.split``/``join`` on a 5 KB document.
    """
    spaced = raw.translate(_TO_SPACE)
    while b"  " in spaced:
        spaced = spaced.replace(b"  ", b" ")
    return spaced.strip(b" ")
