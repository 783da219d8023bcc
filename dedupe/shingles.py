"""Word n-gram shingles, hashed with numpy over whole batches of documents.

Why not a Python loop over words: splitting and hashing ~900 words per 5 KB document one by
one is what makes the common MinHash tools slow (datasketch hashes every shingle with SHA1,
datatrove spends 95% of its time in spaCy). Here a batch of documents is concatenated into one
byte array and every step is an array operation:

1. **Normalize**: ``str.lower()`` (full Unicode case folding is left out on purpose: it is
   slower and rarely changes a duplicate decision), then UTF-8.
2. **Words**: maximal runs of *word bytes*: ASCII letters and digits and every byte >= 0x80
   (so non-Latin scripts form words). ASCII punctuation and whitespace separate words, which
   makes ``"Hello, world!"`` and ``"hello world"`` the same two words.
3. **Word hash**: a polynomial hash of the word's bytes modulo 2**64, computed for all words
   at once from one prefix sum (see :func:`word_hashes`), then avalanched with the 64-bit
   MurmurHash3 finalizer.
4. **Shingle hash**: ``fmix64(sum_k word[i + k] * C_k)`` over ``n`` consecutive words (order
   matters through the distinct odd constants ``C_k``). A document with fewer than ``n`` words
   but at least one gets exactly one shingle made of all its words, so short documents still
   take part in near-dedup; a document without any word gets no shingle (callers count it).

:func:`shingle_items` and :func:`reference_shingle_hash` are the slow, obviously-correct
per-shingle versions: tests prove the vectorized hashes equal them, and they are the ``hashfunc``
handed to ``datasketch.MinHash`` when signatures are compared with datasketch's.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

U64 = np.uint64
MASK64 = (1 << 64) - 1
#: Odd multiplier of the polynomial word hash, and its inverse modulo 2**64.
POLY_BASE = 0x100000001B3  # the FNV-1a 64-bit prime: odd, with well spread bits
POLY_BASE_INV = pow(POLY_BASE, -1, 1 << 64)
#: Seeds of the per-position shingle constants (odd, so each product is a bijection).
_SHINGLE_CONSTANT_SEED = 0x5EED5EED
#: Bytes of one hashing chunk; big documents are split at a separator byte to stay under it.
CHUNK_BYTES = 1 << 21

_WORD_TABLE = np.zeros(256, dtype=bool)
for _byte in range(256):
    _WORD_TABLE[_byte] = (
        ord("0") <= _byte <= ord("9") or ord("a") <= _byte <= ord("z") or ord("A") <= _byte <= ord("Z")
        or _byte >= 0x80
    )
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
    h = values.astype(U64, copy=True)
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


def shingle_constants(ngram: int) -> np.ndarray:
    """The odd per-position multipliers ``C_k`` of the shingle hash (fixed, seed-independent)."""
    rng = np.random.Generator(np.random.PCG64(_SHINGLE_CONSTANT_SEED))
    return rng.integers(0, 1 << 63, size=ngram, dtype=U64) * U64(2) + U64(1)


class _Powers:
    """Cached powers of the polynomial base and of its inverse, grown on demand."""

    def __init__(self) -> None:
        self.base = np.ones(1, dtype=U64)
        self.inverse = np.ones(1, dtype=U64)

    def ensure(self, size: int) -> None:
        if size <= len(self.base):
            return
        size = max(size, 2 * len(self.base))
        for name, factor in (("base", POLY_BASE), ("inverse", POLY_BASE_INV)):
            powers = np.full(size, factor, dtype=U64)
            powers[0] = 1
            setattr(self, name, np.cumprod(powers, dtype=U64))  # wraps modulo 2**64, as intended


_POWERS = _Powers()


def word_hashes(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(starts, hashes)`` of every word in a byte array.

    With ``G[i] = sum_{j<i} b_j * P^-j`` (one wrapping cumulative sum), the word ``[l, r)`` has
    ``(G[r] - G[l]) * P^r = sum_j b_j * P^(r - j)``: its polynomial hash, independent of where
    the word sits in the array, so any array cut at a separator byte gives the same hashes.
    """
    size = len(data)
    if size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=U64)
    is_word = _WORD_TABLE[data]
    edges = np.diff(is_word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    if len(starts) == 0:
        return starts, np.empty(0, dtype=U64)
    _POWERS.ensure(size + 1)
    prefix = np.empty(size + 1, dtype=U64)
    prefix[0] = 0
    np.cumsum(data.astype(U64) * _POWERS.inverse[:size], dtype=U64, out=prefix[1:])
    raw = (prefix[ends] - prefix[starts]) * _POWERS.base[ends]
    return starts, fmix64(raw)


def _split_points(data: np.ndarray, limit: int) -> list[int]:
    """Cut positions (at separator bytes) that keep each piece of ``data`` near ``limit`` bytes."""
    cuts = [0]
    while len(data) - cuts[-1] > limit:
        target = cuts[-1] + limit
        separators = np.flatnonzero(~_WORD_TABLE[data[target : target + limit]])
        if len(separators):
            cuts.append(target + int(separators[0]))
        else:  # a "word" longer than a chunk: cut inside it (it is noise, e.g. base64)
            cuts.append(target)
    return cuts


def _encode(text: str) -> bytes:
    return text.lower().encode("utf-8", errors="surrogatepass")


def _batch_word_hashes(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Word hashes of a batch and the number of words of each document."""
    hashes: list[np.ndarray] = []
    counts = np.zeros(len(texts), dtype=np.int64)
    pending: list[tuple[int, bytes]] = []
    pending_bytes = 0

    def flush() -> None:
        nonlocal pending, pending_bytes
        if not pending:
            return
        joined = b"\x00".join(part for _, part in pending)  # 0 is a separator: no word spans two docs
        data = np.frombuffer(joined, dtype=np.uint8)
        starts, batch_hashes = word_hashes(data)
        doc_starts = np.cumsum([0] + [len(part) + 1 for _, part in pending[:-1]])
        owner = np.searchsorted(doc_starts, starts, side="right") - 1
        per_doc = np.bincount(owner, minlength=len(pending))
        counts[[i for i, _ in pending]] = per_doc
        hashes.append(batch_hashes)
        pending, pending_bytes = [], 0

    for index, text in enumerate(texts):
        encoded = _encode(text)
        if len(encoded) > CHUNK_BYTES:
            flush()
            data = np.frombuffer(encoded, dtype=np.uint8)
            cuts = [*_split_points(data, CHUNK_BYTES), len(data)]
            pieces = [word_hashes(data[lo:hi])[1] for lo, hi in itertools.pairwise(cuts)]
            joined_hashes = np.concatenate(pieces) if pieces else np.empty(0, dtype=U64)
            counts[index] = len(joined_hashes)
            hashes.append(joined_hashes)
            continue
        if pending_bytes + len(encoded) > CHUNK_BYTES:
            flush()
        pending.append((index, encoded))
        pending_bytes += len(encoded) + 1
    flush()
    return (np.concatenate(hashes) if hashes else np.empty(0, dtype=U64)), counts


def shingle_hashes(texts: Sequence[str], config: ShingleConfig | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Hash every shingle of every document of a batch.

    Returns ``(hashes, offsets)``: 64-bit shingle hashes of all documents, concatenated, and
    ``offsets`` (length ``len(texts) + 1``) so document ``i`` owns ``hashes[offsets[i]:offsets[i+1]]``.
    Duplicate shingles inside a document are kept (MinHash ignores them).
    """
    ngram = (config or ShingleConfig()).ngram
    words, counts = _batch_word_hashes(texts)
    shingles_per_doc = np.where(counts >= ngram, counts - ngram + 1, np.minimum(counts, 1))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(shingles_per_doc, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        return np.empty(0, dtype=U64), offsets
    word_offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(counts, out=word_offsets[1:])
    # first word of each shingle, and how many words it spans (n, or all words of a short doc)
    doc_of_shingle = np.repeat(np.arange(len(texts)), shingles_per_doc)
    first = word_offsets[doc_of_shingle] + (np.arange(total) - offsets[doc_of_shingle])
    span = np.minimum(counts[doc_of_shingle], ngram)
    constants = shingle_constants(ngram)
    acc = np.zeros(total, dtype=U64)
    for k in range(ngram):
        use = span > k
        if not use.any():
            break
        acc[use] += words[first[use] + k] * constants[k]
    return fmix64(acc), offsets


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
