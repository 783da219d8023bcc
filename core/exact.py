"""Exact deduplication keys: SHA256 over normalized text.

Normalization (what counts as "the same text"):
1. Unicode NFC, so composed and decomposed accents hash alike;
2. every run of Unicode whitespace (spaces, tabs, newlines, NBSP) becomes one space;
3. leading and trailing whitespace is removed.
Case, punctuation and digits are kept: two documents that differ only there are different
documents for exact dedup (near-dedup catches the rest).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WHITESPACE = re.compile(r"\s+")


def normalize_for_exact(text: str) -> str:
    """Normalize ``text`` as documented in the module docstring."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def exact_hash(text: str) -> bytes:
    """The 32-byte SHA256 digest of the normalized text."""
    return hashlib.sha256(normalize_for_exact(text).encode("utf-8")).digest()
