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

from core.exact import non_ascii_chars

U64 = np.uint64
MASK64 = (1 << 64) - 1
#: Odd multiplier of the polynomial word hash, and its inverse modulo 2**64.
POLY_BASE = 0x100000001B3  # the FNV-1a 64-bit prime: odd, with well spread bits
POLY_BASE_INV = pow(POLY_BASE, -1, 1 << 64)
#: Seeds of the per-position shingle constants (odd, so each product is a bijection).
_SHINGLE_CONSTANT_SEED = 0x5EED5EED
#: Bytes of one hashing chunk: its uint64 prefix sums and power tables stay near the L2 cache (measured
#: ~1.5x faster than 2 MiB chunks). Big documents are split at a separator byte to stay under it.
CHUNK_BYTES = 1 << 18
#: Shingle windows summed per block (8 bytes each: the block and its scratch stay in L2).
WINDOW_BLOCK = 1 << 16

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


def _word_byte_mask(data: np.ndarray) -> np.ndarray:
    """``_WORD_TABLE[data]`` as three SIMD byte comparisons (a table gather is ~4x slower)."""
    is_word = data >= 0x80
    is_word |= (data | np.uint8(0x20)) - np.uint8(ord("a")) < 26  # ASCII letters, either case
    is_word |= data - np.uint8(ord("0")) < 10
    return is_word


def word_hashes(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(starts, hashes)`` of every word in a byte array.

    With ``G[i] = sum_{j<i} b_j * P^-j`` (one wrapping cumulative sum), the word ``[l, r)`` has
    ``(G[r] - G[l]) * P^r = sum_j b_j * P^(r - j)``: its polynomial hash, independent of where
    the word sits in the array, so any array cut at a separator byte gives the same hashes.
    """
    size = len(data)
    if size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=U64)
    padded = np.zeros(size + 2, dtype=bool)
    padded[1:-1] = _word_byte_mask(data)
    # word starts and ends alternate: one pass finds both, as [start0, end0, start1, end1, ...]
    bounds = np.flatnonzero(padded[1:] != padded[:-1])
    if len(bounds) == 0:
        return bounds, np.empty(0, dtype=U64)
    _POWERS.ensure(size + 1)
    prefix = np.empty(size + 1, dtype=U64)
    prefix[0] = 0
    prefix[1:] = data  # widen, then multiply in place: faster than one mixed-type multiply (a casting loop)
    prefix[1:] *= _POWERS.inverse[:size]
    np.cumsum(prefix[1:], dtype=U64, out=prefix[1:])
    at_bounds = prefix[bounds]
    starts, ends = bounds[0::2], bounds[1::2]
    raw = at_bounds[1::2] - at_bounds[0::2]
    raw *= _POWERS.base[ends]
    return starts, fmix64_inplace(raw)


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


def _batch_word_hashes(texts: Sequence[str], encoded: Sequence[bytes] | None = None,
                       others: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Word hashes of a batch and the number of words of each document.

    ``encoded``: the texts as UTF-8; ``others``: their non-ASCII characters (:func:`core.exact.non_ascii_chars`).
    """
    hashes: list[np.ndarray] = []
    counts = np.zeros(len(texts), dtype=np.int64)
    pending: list[tuple[int, bytes]] = []
    pending_bytes = 0

    def flush() -> None:
        nonlocal pending, pending_bytes
        if not pending:
            return
        # 0 is a separator: no word spans two docs; ``lower`` finishes every document's lowering
        joined = b"\x00".join(part for _, part in pending).lower()
        data = np.frombuffer(joined, dtype=np.uint8)
        starts, batch_hashes = word_hashes(data)
        # words per document: locate the document boundaries among the (sorted) word starts
        doc_bounds = np.zeros(len(pending) + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(part) + 1 for _, part in pending), np.int64, len(pending)), out=doc_bounds[1:])
        counts[[i for i, _ in pending]] = np.diff(np.searchsorted(starts, doc_bounds))
        hashes.append(batch_hashes)
        pending, pending_bytes = [], 0

    raws = encoded if encoded is not None else encode_texts(texts)
    if others is None:
        others = [non_ascii_chars(text, raw) for text, raw in zip(texts, raws, strict=True)]
    for index, (text, raw, other) in enumerate(zip(texts, raws, others, strict=True)):
        lowerable = _lowerable_bytes(text, raw, other)
        if len(lowerable) > CHUNK_BYTES:
            flush()
            data = np.frombuffer(lowerable.lower(), dtype=np.uint8)
            cuts = [*_split_points(data, CHUNK_BYTES), len(data)]
            pieces = [word_hashes(data[lo:hi])[1] for lo, hi in itertools.pairwise(cuts)]
            joined_hashes = np.concatenate(pieces) if pieces else np.empty(0, dtype=U64)
            counts[index] = len(joined_hashes)
            hashes.append(joined_hashes)
            continue
        if pending_bytes + len(lowerable) > CHUNK_BYTES:
            flush()
        pending.append((index, lowerable))
        pending_bytes += len(lowerable) + 1
    flush()
    return (np.concatenate(hashes) if hashes else np.empty(0, dtype=U64)), counts


def shingle_hashes(texts: Sequence[str], config: ShingleConfig | None = None, encoded: Sequence[bytes] | None = None,
                   others: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Hash every shingle of every document of a batch.

    ``encoded``: the texts as UTF-8, and ``others``: their :func:`core.exact.non_ascii_chars`, if known.

    Returns ``(hashes, offsets)``: 64-bit shingle hashes of all documents, concatenated, and
    ``offsets`` (length ``len(texts) + 1``) so document ``i`` owns ``hashes[offsets[i]:offsets[i+1]]``.
    Duplicate shingles inside a document are kept (MinHash ignores them).
    """
    ngram = (config or ShingleConfig()).ngram
    words, counts = _batch_word_hashes(texts, encoded, others)
    shingles_per_doc = np.where(counts >= ngram, counts - ngram + 1, np.minimum(counts, 1))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(shingles_per_doc, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        return np.empty(0, dtype=U64), offsets
    word_offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(counts, out=word_offsets[1:])
    constants = shingle_constants(ngram)
    short_docs = np.flatnonzero((counts > 0) & (counts < ngram))
    if len(short_docs) == 0:  # the usual batch: every shingle is a full window
        return fmix64_inplace(_full_windows(words, word_offsets, constants)), offsets
    hashes = np.empty(total, dtype=U64)
    is_short_slot = np.zeros(total, dtype=bool)
    is_short_slot[offsets[short_docs]] = True
    hashes[~is_short_slot] = _full_windows(words, word_offsets, constants)
    hashes[is_short_slot] = _short_document_sums(words, word_offsets[short_docs], counts[short_docs], constants)
    return fmix64_inplace(hashes), offsets


def _full_windows(words: np.ndarray, word_offsets: np.ndarray, constants: np.ndarray) -> np.ndarray:
    """``sum_k words[j + k] * C_k`` for every window ``j`` of ``n`` words inside one document.

    Computed as ``n`` shifted multiply-adds over the whole concatenated batch (no per-document
    work; in blocks that stay in the L2 cache), then the windows that cross a document boundary
    are dropped.
    """
    ngram = len(constants)
    windows = len(words) - ngram + 1
    if windows <= 0:
        return np.empty(0, dtype=U64)
    acc = np.empty(windows, dtype=U64)
    term = np.empty(min(WINDOW_BLOCK, windows), dtype=U64)
    for lo in range(0, windows, WINDOW_BLOCK):
        hi = min(lo + WINDOW_BLOCK, windows)
        block, scratch = acc[lo:hi], term[: hi - lo]
        np.multiply(words[lo:hi], constants[0], out=block)
        for k in range(1, ngram):
            np.multiply(words[lo + k : hi + k], constants[k], out=scratch)
            block += scratch
    if ngram == 1 or len(word_offsets) <= 2:
        return acc
    # window j crosses the boundary e of a document (e = its end, not the batch's) when e - n < j < e
    crossing = (word_offsets[1:-1, None] - np.arange(1, ngram)).ravel()
    inside = np.ones(windows, dtype=bool)
    inside[crossing[(crossing >= 0) & (crossing < windows)]] = False
    return acc[inside]


def _short_document_sums(words: np.ndarray, firsts: np.ndarray, counts: np.ndarray,
                         constants: np.ndarray) -> np.ndarray:
    """The one shingle of each document with fewer than ``n`` words (all its words)."""
    acc = np.zeros(len(firsts), dtype=U64)
    for k in range(int(counts.max())):
        use = counts > k
        acc[use] += words[firsts[use] + k] * constants[k]
    return acc


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
