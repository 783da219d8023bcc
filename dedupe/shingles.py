"""Word n-gram shingles and their 64-bit hashes: the definition, and the batch entry point.

Why not a Python loop over words: splitting and hashing ~900 words per 5 KB document one by
one is what makes the common MinHash tools slow (datasketch hashes every shingle with SHA1,
datatrove spends 95% of its time in spaCy). Here a batch of documents is concatenated into one
byte array and hashed by the compiled kernel (:mod:`dedupe.minhash_kernel`), which computes:

1. **Normalize**: ``str.lower()`` (full Unicode case folding is left out on purpose: it is
   slower and rarely changes a duplicate decision), then UTF-8.
2. **Words**: maximal runs of *word bytes*: ASCII letters and digits and every byte >= 0x80
   (so non-Latin scripts form words). ASCII punctuation and whitespace separate words, which
   makes ``"Hello, world!"`` and ``"hello world"`` the same two words.
3. **Word hash**: a polynomial hash of the word's bytes modulo 2**64 (``sum_j b_j P^(m - j)``
   for a word of ``m`` bytes, ``P`` = :data:`POLY_BASE`), then avalanched with the 64-bit
   MurmurHash3 finalizer.
4. **Shingle hash**: ``fmix64(sum_k word[i + k] * C_k)`` over ``n`` consecutive words (order
   matters through the distinct odd constants ``C_k``). A document with fewer than ``n`` words
   but at least one gets exactly one shingle made of all its words, so short documents still
   take part in near-dedup; a document without any word gets no shingle (callers count it).

:func:`shingle_items` and :func:`reference_shingle_hash` are the slow, obviously-correct
per-shingle versions: tests prove the kernel's hashes equal them, and they are the ``hashfunc``
handed to ``datasketch.MinHash`` when signatures are compared with datasketch's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.exact import non_ascii_chars
from dedupe.word_hash import MASK64, POLY_BASE

U64 = np.uint64
#: Seeds of the per-position shingle constants (odd, so each product is a bijection).
_SHINGLE_CONSTANT_SEED = 0x5EED5EED
_WORD_RE = re.compile(rb"[0-9A-Za-z\x80-\xff]+")


@dataclass(frozen=True)
class ShingleConfig:
    """How documents are cut into shingles; part of every index's identity."""

    ngram: int = 5

    def __post_init__(self) -> None:
        if not 1 <= self.ngram <= 64:
            raise ValueError(f"ngram must be in 1..64, got {self.ngram}")


def fmix64(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer: a bijection that spreads every input bit (array in, array out)."""
    return fmix64_inplace(values.astype(U64, copy=True))


def fmix64_inplace(h: np.ndarray) -> np.ndarray:
    """:func:`fmix64` overwriting a uint64 array the caller owns (saves a copy on hot paths)."""
    h ^= h >> U64(33)
    h *= U64(0xFF51AFD7ED558CCD)
    h ^= h >> U64(33)
    h *= U64(0xC4CEB9FE1A85EC53)
    h ^= h >> U64(33)
    return h


def _fmix64_int(value: int) -> int:
    value ^= value >> 33
    value = (value * 0xFF51AFD7ED558CCD) & MASK64
    value ^= value >> 33
    value = (value * 0xC4CEB9FE1A85EC53) & MASK64
    return value ^ (value >> 33)


@functools.cache
def shingle_constants(ngram: int) -> np.ndarray:
    """The odd per-position multipliers ``C_k`` of the shingle hash (fixed, seed-independent; read-only)."""
    rng = np.random.Generator(np.random.PCG64(_SHINGLE_CONSTANT_SEED))
    constants = rng.integers(0, 1 << 63, size=ngram, dtype=U64) * U64(2) + U64(1)
    constants.setflags(write=False)
    return constants


def _encode(text: str) -> bytes:
    return text.lower().encode("utf-8", errors="surrogatepass")


def encode_texts(texts: Sequence[str]) -> list[bytes]:
    """The texts as UTF-8 (lone surrogates kept), encoded once per batch for every consumer."""
    return [text.encode("utf-8", errors="surrogatepass") for text in texts]


#: The one character ``str.lower`` maps by context (final sigma): a text holding it is lowered whole.
_CONTEXT_LOWERED = "\u03a3"


def _lowerable_bytes(text: str, raw: bytes, others: str | None = None) -> bytes:
    """Bytes whose ASCII lowering (``bytes.lower``) is ``_encode(text)``, given ``raw`` = ``text`` as UTF-8.

    ``others``: the text's non-ASCII characters (:func:`core.exact.non_ascii_chars`), computed
    here when not given. ``str.lower`` maps each character on its own (its one context rule, the
    final sigma, only touches ``Σ``), so lowering the ASCII letters of ``raw`` (one
    ``bytes.lower`` of the batch buffer does that) and replacing, in the bytes, each distinct
    non-ASCII character that changes by its lowered form is the whole job (``str.lower`` on a
    non-ASCII string was the shingler's largest cost). UTF-8 is self-synchronizing, so a
    character's bytes never match across a character boundary; no lowered character changes
    when lowered again, and none holds an ASCII capital (both tested for every code point), so
    the replacements do not interfere with each other or with ``bytes.lower``. A text holding
    ``Σ`` is lowered by ``str.lower`` itself.
    """
    if others is None:
        others = non_ascii_chars(text, raw)
    if not others or others.lower() == others:
        return raw
    if _CONTEXT_LOWERED in others:
        return _encode(text)
    for char in set(others):
        lowered = char.lower()
        if lowered != char:
            raw = raw.replace(char.encode("utf-8"), lowered.encode("utf-8"))
    return raw


def lowered_batch(texts: Sequence[str], encoded: Sequence[bytes] | None = None,
                  others: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(data, offsets)``: the batch's bytes whose ASCII lowering is each text's ``_encode``, joined.

    Document ``i`` owns ``data[offsets[i]:offsets[i+1]]``; the kernel lowers the ASCII letters as
    it reads them. ``encoded``: the texts as UTF-8; ``others``: their non-ASCII characters
    (:func:`core.exact.non_ascii_chars`), when the caller has them.
    """
    raws = encoded if encoded is not None else encode_texts(texts)
    if others is None:
        others = [non_ascii_chars(text, raw) for text, raw in zip(texts, raws, strict=True)]
    parts = [raw if not other else _lowerable_bytes(text, raw, other)
             for text, raw, other in zip(texts, raws, others, strict=True)]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, parts), np.int64, len(parts)), out=offsets[1:])
    return np.frombuffer(b"".join(parts), dtype=np.uint8), offsets


def shingle_hashes(texts: Sequence[str], config: ShingleConfig | None = None, encoded: Sequence[bytes] | None = None,
                   others: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Hash every shingle of every document of a batch.

    ``encoded``: the texts as UTF-8, and ``others``: their :func:`core.exact.non_ascii_chars`, if known.

    Returns ``(hashes, offsets)``: 64-bit shingle hashes of all documents, concatenated, and
    ``offsets`` (length ``len(texts) + 1``) so document ``i`` owns ``hashes[offsets[i]:offsets[i+1]]``.
    Duplicate shingles inside a document are kept (MinHash ignores them).
    """
    from dedupe import minhash_kernel as kernel  # numba: imported on first use only

    ngram = (config or ShingleConfig()).ngram
    data, bounds = lowered_batch(texts, encoded, others)
    hashes = np.empty(len(data) // 2 + len(texts), dtype=U64)  # a word is a byte and a separator
    counts = np.zeros(len(texts), dtype=np.int64)
    total = kernel.shingle_hashes_into(data, bounds, *kernel.tables(), shingle_constants(ngram), hashes, counts)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return hashes[:total].copy(), offsets


def shingle_items(text: str, config: ShingleConfig | None = None) -> list[bytes]:
    """The shingles of one document as bytes (words joined by a space); the slow reference path."""
    ngram = (config or ShingleConfig()).ngram
    words = _WORD_RE.findall(_encode(text))
    if not words:
        return []
    if len(words) < ngram:
        return [b" ".join(words)]
    return [b" ".join(words[i : i + ngram]) for i in range(len(words) - ngram + 1)]


def _word_hash_int(word: bytes) -> int:
    value = 0
    for byte in word:
        value = (value * POLY_BASE + byte) & MASK64
    return _fmix64_int((value * POLY_BASE) & MASK64)


def reference_shingle_hash(item: bytes, ngram: int = 5) -> int:
    """The 64-bit hash of one shingle from :func:`shingle_items`, computed one byte at a time."""
    constants = [int(c) for c in shingle_constants(ngram)]
    acc = 0
    for k, word in enumerate(item.split(b" ")):
        acc = (acc + _word_hash_int(word) * constants[k]) & MASK64
    return _fmix64_int(acc)
