"""Exact deduplication keys: SHA256 over normalized text.

Normalization (what counts as "the same text"):
1. Unicode NFC, so composed and decomposed accents hash alike;
2. every run of Unicode whitespace (spaces, tabs, newlines, NBSP) becomes one space;
3. leading and trailing whitespace is removed.
Case, punctuation and digits are kept: two documents that differ only there are different
documents for exact dedup (near-dedup catches the rest).

:func:`exact_hash` is the definition (one document); :func:`exact_hashes` gives the same digests
for a whole batch from the documents' UTF-8 bytes, with the whitespace collapse done by bytes
methods (the ``split``/``join`` makes ~900 string objects per 5 KB document and was the largest
cost of building the Pile index).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

#: Bytes that are whitespace for ``str.split()`` on their own: ASCII ``\t\n\v\f\r``, the
#: separators ``\x1c``-``\x1f`` and the space. Non-ASCII whitespace (NBSP, U+2000..., U+3000) is
#: multi-byte in UTF-8; documents holding one take the :func:`exact_hash` path.
_ASCII_SPACES = bytes([9, 10, 11, 12, 13, 28, 29, 30, 31, 32])
_TO_SPACE = bytes(32 if byte in _ASCII_SPACES else byte for byte in range(256))
_ASCII_BYTES = bytes(range(128))
#: Every non-ASCII character ``str.split()`` cuts at (they all lie in the BMP; a test checks all of Unicode).
_NON_ASCII_SPACE = re.compile("[" + "".join(chr(c) for c in range(128, 0x10000) if chr(c).isspace()) + "]")


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


def _bytes_path_ok(text: str, raw: bytes) -> bool:
    """Whether ``raw`` (``text`` as UTF-8) only needs the ASCII whitespace collapse: ``text`` is
    already NFC and holds no non-ASCII whitespace. ASCII text always is (``isascii`` is O(1))."""
    if text.isascii():
        return True
    try:
        others = raw.translate(None, _ASCII_BYTES).decode("utf-8")
    except UnicodeDecodeError:  # surrogates (encoded with surrogatepass): exact_hash raises as before
        return False
    return _NON_ASCII_SPACE.search(others) is None and unicodedata.is_normalized("NFC", text)


def exact_hashes(texts: Sequence[str], encoded: Sequence[bytes] | None = None) -> list[bytes]:
    """``[exact_hash(t) for t in texts]``, computed from the texts' UTF-8 bytes where that is exact.

    ``encoded`` (optional) is each text as UTF-8 when the caller has it already. Documents that
    are NFC and hold only ASCII whitespace (nearly all) are collapsed as bytes by
    :func:`collapse_ascii_whitespace`; the others take :func:`exact_hash`. Equality with
    :func:`exact_hash` is a property test.
    """
    raws = encoded if encoded is not None else [t.encode("utf-8", errors="surrogatepass") for t in texts]
    return [hashlib.sha256(collapse_ascii_whitespace(raw)).digest() if _bytes_path_ok(text, raw) else exact_hash(text)
            for text, raw in zip(texts, raws, strict=True)]


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
