"""The compiled MinHash kernel: document bytes in, signatures (or shingle hashes) out (numba).

It computes exactly what :mod:`dedupe.shingles` and :mod:`dedupe.minhash` define (words, word
hashes, shingle hashes, datasketch's ``affine32`` permutations), one document at a time, in
pieces of :data:`PIECE_BYTES` whose work arrays stay in the L2 cache:

1. one branch-free pass over the piece's bytes finds the word edges and the prefix sums that
   give every word's polynomial hash (:func:`_piece_words`);
2. word hashes, then shingle hashes (windows of ``n`` words, crossing piece edges) are computed
   in short loops over small arrays (:func:`_window_hashes`);
3. each permutation's minimum over the piece's shingle values is one vectorized
   multiply-add-min reduction (:func:`_fold`).

The numpy path it replaced made each step an array pass over the whole batch (word hashes,
windows, shingle values, one ``minimum.reduceat`` per permutation): ~1.3 CPU-s per 100 MB of
Pile text against ~0.3 here (docs/dedup.md has the measured figures).

Lowering: the kernel lowers ASCII letters itself (:func:`lowering_table`); the caller hands it
bytes whose non-ASCII characters are lowered already (:func:`dedupe.shingles.lowered_batch`).

Compilation (:func:`core.compiled.jit`): numba compiles on the first call (~4 CPU-s for both
entry points) and caches the machine code on disk; a later process loads it in ~0.3 CPU-s. This
module imports numba; its users import it on first use. The kernels release the GIL and hold no
state: threads may share them.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from core.compiled import jit
from dedupe.word_hash import POLY_BASE, POLY_BASE_INV

#: Bytes of a document read per piece: the piece's prefix sums are read back from the L2 cache.
PIECE_BYTES = 1 << 14
_M64A = 0xFF51AFD7ED558CCD
_M64B = 0xC4CEB9FE1A85EC53
_M32A = 0x85EBCA6B
_M32B = 0xC2B2AE35


def lowering_table() -> np.ndarray:
    """Byte -> what the word hash reads for it: the lowered ASCII letter or digit, any byte >= 0x80
    as is, and 0 for a separator (no word byte is 0)."""
    table = np.zeros(256, dtype=np.uint8)
    for byte in range(256):
        if ord("0") <= byte <= ord("9") or ord("a") <= byte <= ord("z") or byte >= 0x80:
            table[byte] = byte
        elif ord("A") <= byte <= ord("Z"):
            table[byte] = byte + 32
    return table


def power_tables(size: int = PIECE_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """``(P^i, P^-i)`` modulo 2**64 for ``i`` in ``0..size`` (``P`` the word hash's base)."""
    tables = []
    for factor in (POLY_BASE, POLY_BASE_INV):
        steps = np.full(size + 1, factor, dtype=np.uint64)
        steps[0] = 1
        tables.append(np.cumprod(steps, dtype=np.uint64))  # wraps modulo 2**64, as intended
    return tables[0], tables[1]


def tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lowering_table(), *power_tables(PIECE_BYTES))``: the kernels' read-only tables."""
    return _tables(PIECE_BYTES)


@functools.cache
def _tables(piece_bytes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    made = (lowering_table(), *power_tables(piece_bytes))
    for table in made:
        table.setflags(write=False)
    return made


@jit
def _fmix64(h: Any) -> Any:  # pragma: no cover - compiled by numba
    h ^= h >> np.uint64(33)
    h *= np.uint64(_M64A)
    h ^= h >> np.uint64(33)
    h *= np.uint64(_M64B)
    return h ^ (h >> np.uint64(33))


@jit
def _piece_words(data: np.ndarray, lo: int, size: int, last: bool, table: np.ndarray, powers: np.ndarray,
                 inverse: np.ndarray, open_word: bool, carried: Any, positions: np.ndarray, prefixes: np.ndarray,
                 words: np.ndarray, at: int) -> tuple[int, bool, Any]:  # pragma: no cover - compiled by numba
    """Hash the words of ``data[lo:lo + size]`` into ``words[at:]``; ``(count, open_word, carried)``.

    One branch-free pass keeps the prefix sum ``G[i] = sum_{j<i} b_j P^-j`` and writes, at each
    word start and end, the position and ``G`` there; a word ``[l, r)`` then hashes to
    ``(G[r] - G[l]) P^r`` (:func:`dedupe.shingles.word_hashes`' identity). A branch per byte (in
    a word or not) was mispredicted at every word edge and cost twice as much. A word still open
    at the end of a piece that is not the document's ``last`` is returned as its hash so far
    ``h`` (``carried``) and finished in the next piece as ``(h + G[r]) P^r``.
    """
    found = 0
    in_word = open_word
    if open_word:  # the carried word "starts" where G = -h
        positions[0] = 0
        prefixes[0] = np.uint64(0) - carried
        found = 1
    prefix = np.uint64(0)
    for i in range(size):
        value = table[data[lo + i]]
        is_word = value != 0
        positions[found] = i
        prefixes[found] = prefix
        found += is_word != in_word
        in_word = is_word
        prefix += np.uint64(value) * inverse[i]
    open_word = False
    if in_word:
        if last:
            positions[found] = size
            prefixes[found] = prefix
            found += 1
        else:
            found -= 1
            carried = (prefix - prefixes[found]) * powers[size]
            open_word = True
    count = found // 2
    for k in range(count):
        words[at + k] = _fmix64((prefixes[2 * k + 1] - prefixes[2 * k]) * powers[positions[2 * k + 1]])
    return count, open_word, carried


@jit
def _window_hashes(words: np.ndarray, count: int, constants: np.ndarray, hashes: np.ndarray,
                   at: int) -> int:  # pragma: no cover - compiled by numba
    """``fmix64(sum_k words[j + k] C_k)`` of every full window of ``words[:count]`` into ``hashes[at:]``.

    One position ``k`` at a time over all windows (contiguous multiply-adds that LLVM vectorizes),
    not one window at a time: ~0.04 CPU-s less per 100 MB."""
    ngram = len(constants)
    windows = max(count - ngram + 1, 0)
    out = hashes[at : at + windows]
    first = constants[0]
    for j in range(windows):
        out[j] = words[j] * first
    for k in range(1, ngram):  # one position at a time: contiguous multiply-adds, vectorized
        weight = constants[k]
        shifted = words[k : k + windows]
        for j in range(windows):
            out[j] += shifted[j] * weight
    for j in range(windows):
        out[j] = _fmix64(out[j])
    return windows


@jit
def _fold(hashes: np.ndarray, count: int, a: np.ndarray, b: np.ndarray, row: np.ndarray,
          values: np.ndarray) -> None:  # pragma: no cover - compiled by numba
    """Fold ``hashes[:count]`` into the running minima ``row``: ``min(a_k fmix32(h >> 32) + b_k)`` per permutation.

    Each shingle value is mixed once into the uint32 scratch ``values``, then each permutation's
    minimum is one multiply-add-min reduction over them (vectorized by LLVM over 16 lanes of
    uint32, the minimum in registers): ~3x faster than updating all ``num_perm`` minima in memory
    for each shingle in turn, and ~2x faster than reducing over the uint64 hashes directly.
    """
    for j in range(count):
        value = np.uint32(hashes[j] >> np.uint64(32))
        value ^= value >> np.uint32(16)
        value = np.uint32(value * np.uint32(_M32A))
        value ^= value >> np.uint32(13)
        value = np.uint32(value * np.uint32(_M32B))
        values[j] = value ^ (value >> np.uint32(16))
    mixed = values[:count]
    for k in range(len(a)):
        ak, bk = a[k], b[k]
        least = row[k]
        for j in range(count):
            least = min(least, np.uint32(ak * mixed[j] + bk))
        row[k] = least


@jit
def _document(data: np.ndarray, lo: int, hi: int, table: np.ndarray, powers: np.ndarray, inverse: np.ndarray,
              constants: np.ndarray, a: np.ndarray, b: np.ndarray, row: np.ndarray, positions: np.ndarray,
              prefixes: np.ndarray, words: np.ndarray, hashes: np.ndarray, values: np.ndarray,
              emit_at: int) -> int:  # pragma: no cover - compiled by numba
    """The shingles of document ``data[lo:hi]``: folded into ``row`` piece by piece (``emit_at < 0``)
    or written to ``hashes[emit_at:]``; returns how many.

    ``words`` holds the last ``n - 1`` word hashes of the previous piece before this piece's
    words, so windows that cross a piece edge are hashed too. A document of 1..n-1 words gets one
    shingle of all its words (``C_0, C_1, ...``).
    """
    ngram = len(constants)
    piece_bytes = len(powers) - 1
    open_word = False
    carried = np.uint64(0)
    kept = 0
    total_words = 0
    shingles = 0
    piece = lo
    while piece < hi:
        size = min(piece_bytes, hi - piece)
        count, open_word, carried = _piece_words(data, piece, size, piece + size == hi, table, powers, inverse,
                                                 open_word, carried, positions, prefixes, words, kept)
        piece += size
        total_words += count
        at = emit_at + shingles if emit_at >= 0 else 0
        made = _window_hashes(words, kept + count, constants, hashes, at)
        if emit_at < 0:
            _fold(hashes, made, a, b, row, values)
        shingles += made
        keep = min(kept + count, ngram - 1)
        for k in range(keep):
            words[k] = words[kept + count - keep + k]
        kept = keep
    if 0 < total_words < ngram:  # a short document: one shingle of all its words
        acc = np.uint64(0)
        for k in range(total_words):
            acc += words[k] * constants[k]
        at = emit_at if emit_at >= 0 else 0
        hashes[at] = _fmix64(acc)
        if emit_at < 0:
            _fold(hashes, 1, a, b, row, values)
        shingles = 1
    return shingles


@jit
def signatures_into(data: np.ndarray, offsets: np.ndarray, table: np.ndarray, powers: np.ndarray,
                    inverse: np.ndarray, constants: np.ndarray, a: np.ndarray, b: np.ndarray,
                    out: np.ndarray) -> None:  # pragma: no cover - compiled by numba, tested through it
    """Fill ``out[i]`` with the signature of document ``i`` (``data[offsets[i]:offsets[i+1]]``).

    ``out`` must hold 0xFFFFFFFF everywhere on entry (a document without words keeps that row);
    ``table``: :func:`lowering_table`; ``powers``, ``inverse``: :func:`power_tables`.
    """
    piece_bytes = len(powers) - 1
    edges = piece_bytes + 2
    positions = np.empty(edges, dtype=np.int64)
    prefixes = np.empty(edges, dtype=np.uint64)
    words = np.empty(edges // 2 + len(constants), dtype=np.uint64)
    hashes = np.empty(edges // 2 + len(constants), dtype=np.uint64)
    values = np.empty(edges // 2 + len(constants), dtype=np.uint32)
    for doc in range(len(offsets) - 1):
        _document(data, offsets[doc], offsets[doc + 1], table, powers, inverse, constants, a, b, out[doc],
                  positions, prefixes, words, hashes, values, -1)


@jit
def shingle_hashes_into(data: np.ndarray, offsets: np.ndarray, table: np.ndarray, powers: np.ndarray,
                        inverse: np.ndarray, constants: np.ndarray, hashes: np.ndarray,
                        counts: np.ndarray) -> int:  # pragma: no cover - compiled by numba, tested through it
    """Write every shingle hash of every document to ``hashes`` (in order) and each document's
    number of shingles to ``counts``; returns the total. ``hashes`` must hold ``len(data) // 2 +
    len(counts)`` values (a word takes a byte and a separator)."""
    piece_bytes = len(powers) - 1
    edges = piece_bytes + 2
    positions = np.empty(edges, dtype=np.int64)
    prefixes = np.empty(edges, dtype=np.uint64)
    words = np.empty(edges // 2 + len(constants), dtype=np.uint64)
    none32 = np.empty(0, dtype=np.uint32)
    total = 0
    for doc in range(len(offsets) - 1):
        counts[doc] = _document(data, offsets[doc], offsets[doc + 1], table, powers, inverse, constants, none32,
                                none32, none32, positions, prefixes, words, hashes, none32, total)
        total += counts[doc]
    return total
