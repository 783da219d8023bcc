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
bytes whose non-ASCII characters are normalized already (:func:`dedupe.shingles.lowered_batch`),
which :func:`fold_into` writes: each UTF-8 character looked up in a per-code-point table of what
the normalization makes of it (kept, replaced by given bytes, or "needs its neighbours": then the
caller normalizes that document whole).

Compilation (:func:`core.compiled.jit`): numba compiles on the first call (~4 CPU-s for both
entry points) and caches the machine code on disk; a later process loads it in ~0.3 CPU-s. This
module imports numba; its users import it on first use. The kernels release the GIL and hold no
state: threads may share them.
"""

from __future__ import annotations

import functools
from typing import Any

import numba
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


#: :func:`fold_into`'s table entries below 0 (an entry >= 0 is the number of the character's replacement):
#: the character stays as it is; NFKC may join it to the character before it or reorder it with
#: its neighbours (a combining mark, a Hangul vowel jamo: it continues the segment before it); or it
#: starts a segment but its NFKC form holds such a character (``´`` -> space + U+0301).
KEEP = -1
JOINS = -2
STARTS = -3
#: Why :func:`fold_into` stopped before the end (``state[0]``): ``out`` is full, or the table lacks
#: characters (listed in ``missing``).
FULL = 1
MISSING = 2
_HIGH_BITS = np.uint64(0x8080808080808080)
#: The entry of a code point not in the table yet (and what :func:`_entry` gives when its block is not).
NOT_BUILT = -4
BLOCK_BITS = 8
#: Two spans to be normalized whole that are at most this many bytes apart become one (a Python call
#: per span costs about what NFKC of ~40 characters does; Tamil or Myanmar text is then one span).
SPAN_GAP = 64
#: Small helpers of :func:`fold_into`, inlined into it by numba (as separate functions they made its
#: loop over characters ~1.6x slower).
_inline = numba.njit(inline="always", nogil=True)


@_inline
def _entry(blocks: np.ndarray, entries: np.ndarray, point: int) -> int:  # pragma: no cover - compiled by numba
    row = blocks[point >> BLOCK_BITS]
    if row < 0:
        return NOT_BUILT
    return entries[(np.int64(row) << BLOCK_BITS) | (point & 0xFF)]


@_inline
def _decode(data: np.ndarray, i: int) -> tuple[Any, int]:  # pragma: no cover - compiled by numba
    """The code point of the multi-byte UTF-8 character at ``data[i]`` and its size in bytes."""
    byte = np.int64(data[i])
    if byte < 0xE0:
        return ((byte & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F), 2
    if byte < 0xF0:
        return ((byte & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (np.int64(data[i + 2]) & 0x3F), 3
    return (((byte & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12) | ((np.int64(data[i + 2]) & 0x3F) << 6)
            | (np.int64(data[i + 3]) & 0x3F)), 4


@_inline
def _segment_end(data: np.ndarray, i: int, hi: int, blocks: np.ndarray, entries: np.ndarray) -> int:  # pragma: no cover - compiled by numba
    """Where the run of segments to normalize whole that starts at ``data[i]`` ends: the first character
    after it that starts a segment and needs no neighbour (or ``hi``); -1 where the table lacks a character."""
    i += _decode(data, i)[1]  # the character that made the run: a JOINS or STARTS one
    while i < hi and data[i] >= 0x80:
        point, size = _decode(data, i)
        entry = _entry(blocks, entries, point)
        if entry == NOT_BUILT:
            return -1
        if not STARTS <= entry <= JOINS:
            break
        i += size
    return i


@jit
def fold_in_place(data: np.ndarray, offsets: np.ndarray, plain: np.ndarray, blocks: np.ndarray, entries: np.ndarray,
                  starts: np.ndarray, pool: np.ndarray, separators: np.ndarray, hard: np.ndarray,
                  ends: np.ndarray) -> int:  # pragma: no cover - compiled by numba, tested through it
    """Fold each document of ``data`` that is not ``plain`` where it lies, or mark it ``hard``; return how many are.

    Each non-ASCII character the table keeps is left alone. One with a replacement is overwritten
    by it: a shorter replacement made of separators only (NBSP, curly quotes, dashes -> a space)
    is padded with spaces, so words stay the normalized text's and nothing moves (most web pages
    need no more, and their ASCII bytes are not even written); any other shorter one (``²`` ->
    ``2``, a zero-width space removed) moves the rest of the document down, and the end of its
    place is filled with spaces (trailing separators add no word). A document holding a character
    the table lacks, one needing its neighbours, or a replacement longer than the room made so far
    is left half done and marked ``hard``: the caller folds it again from its own bytes
    (:func:`fold_into`). ``ends[i]``: where a folded document's bytes end, before the spaces.
    """
    count = 0
    words = data[: len(data) & ~7].view(np.uint64)  # 8 bytes at a time over ASCII text nothing moved yet
    for doc in range(len(offsets) - 1):
        if plain[doc]:
            continue
        i = offsets[doc]
        o = i  # where the next byte goes: o <= i, so nothing unread is overwritten
        hi = offsets[doc + 1]
        while i < hi:
            if o == i and (i & 7) == 0:
                while i + 8 <= hi and (words[i >> 3] & _HIGH_BITS) == 0:
                    i += 8
                o = i
                if i == hi:
                    break
            byte = data[i]
            if byte < 0x80:
                if o != i:
                    data[o] = byte
                i += 1
                o += 1
                continue
            point, size = _decode(data, i)
            entry = _entry(blocks, entries, point)
            if entry == KEEP:
                if o != i:
                    for k in range(size):
                        data[o + k] = data[i + k]
                i += size
                o += size
                continue
            if entry < 0:
                break
            start = starts[entry]
            length = starts[entry + 1] - start
            if o + length > i + size:
                break
            for k in range(length):
                data[o + k] = pool[start + k]
            if length < size and separators[entry]:
                for k in range(length, size):
                    data[o + k] = 32
                length = size
            i += size
            o += length
        if i < hi:
            hard[doc] = True
            count += 1
        else:
            ends[doc] = o
            data[o:hi] = 32
    return count


@jit
def place(data: np.ndarray, offsets: np.ndarray, docs: np.ndarray, folded: np.ndarray,
          folded_offsets: np.ndarray) -> bool:  # pragma: no cover - compiled by numba, tested through it
    """Write ``folded``'s document ``k`` over document ``docs[k]`` of ``data``, spaces after it to the end of
    its place (trailing separators add no word); False, writing nothing, if one is longer than its place."""
    for k in range(len(docs)):
        if folded_offsets[k + 1] - folded_offsets[k] > offsets[docs[k] + 1] - offsets[docs[k]]:
            return False
    for k in range(len(docs)):
        at = offsets[docs[k]]
        length = folded_offsets[k + 1] - folded_offsets[k]
        data[at : at + length] = folded[folded_offsets[k] : folded_offsets[k + 1]]
        data[at + length : offsets[docs[k] + 1]] = 32
    return True


@jit
def _scan(data: np.ndarray, offsets: np.ndarray, plain: np.ndarray, doc: int, i: int, blocks: np.ndarray,
          entries: np.ndarray, missing: np.ndarray, state: np.ndarray) -> None:  # pragma: no cover - compiled by numba
    """Write to ``missing`` each code point the table lacks, once, from ``data[i]`` (in document ``doc``) to the end."""
    seen = np.zeros((0x110000 >> 6) + 1, dtype=np.uint64)
    count = len(offsets) - 1
    while doc < count:
        hi = offsets[doc + 1]
        if not plain[doc]:
            while i < hi:
                if data[i] < 0x80:
                    i += 1
                    continue
                point, size = _decode(data, i)
                i += size
                if _entry(blocks, entries, point) != NOT_BUILT:
                    continue
                bit = np.uint64(1) << np.uint64(point & 63)
                if seen[point >> 6] & bit == 0 and state[1] < len(missing):
                    seen[point >> 6] |= bit
                    missing[state[1]] = point
                    state[1] += 1
        doc += 1
        if doc < count:
            i = offsets[doc]


@jit
def fold_into(data: np.ndarray, offsets: np.ndarray, plain: np.ndarray, first: int, blocks: np.ndarray,
              entries: np.ndarray, starts: np.ndarray, pool: np.ndarray, out: np.ndarray, out_offsets: np.ndarray,
              spans: np.ndarray, missing: np.ndarray,
              state: np.ndarray) -> int:  # pragma: no cover - compiled by numba, tested through it
    """Write each document of ``data`` from document ``first`` on to ``out``, every non-ASCII character replaced
    as the table says; return the document it stopped at (``len(offsets) - 1``: all done).

    Document ``i`` is ``data[offsets[i]:offsets[i+1]]`` (UTF-8, lone surrogates as 3 bytes) and goes
    to ``out[out_offsets[i]:out_offsets[i+1]]`` (``out_offsets[first]`` is set by the caller); a
    ``plain`` one (ASCII) is copied as it is, and so is every ASCII byte: the signing kernels lower
    ASCII letters and cut words at ASCII punctuation themselves. A character's entry is
    ``entries[blocks[cp >> 8] * 256 + (cp & 255)]``: :data:`KEEP` or the replacement
    ``pool[starts[e]:starts[e + 1]]``; a :data:`JOINS` or :data:`STARTS` character and the segment
    it belongs to (from the character that starts it, which a JOINS one continues, to the next
    character that starts one) are copied as they are, and the span they take in ``out`` is
    appended to ``spans`` (pairs; ``state[2]`` of them), spans at most :data:`SPAN_GAP` bytes apart
    merged (so a document of ``m`` bytes has at most ``m // SPAN_GAP + 1``): the caller normalizes
    each span whole. On a full ``out`` it stops with ``state[0]`` = why; the caller grows it and
    calls again from the returned document. On a
    character the table lacks (:data:`NOT_BUILT`) it stops too, having written to ``missing``
    (``state[1]`` of them) every such code point from there to the end of the batch, so that the
    caller adds them all to the table at once.
    """
    count = len(offsets) - 1
    room = len(out)
    o = out_offsets[first]
    for doc in range(first, count):
        lo = offsets[doc]
        hi = offsets[doc + 1]
        if plain[doc]:
            if o + hi - lo > room:
                state[0] = FULL
                return doc
            out[o : o + hi - lo] = data[lo:hi]
            o += hi - lo
            out_offsets[doc + 1] = o
            continue
        if o + hi - lo > room:
            state[0] = FULL
            return doc
        doc_spans = state[2]
        last_in = lo  # where the last non-ASCII character read began, in data and in out
        last_out = o
        span_end = -1  # where the last span of this document ends in data
        why = 0
        i = lo
        while i < hi:
            byte = data[i]
            if byte < 0x80:
                out[o] = byte
                o += 1
                i += 1
                continue
            point, size = _decode(data, i)
            entry = _entry(blocks, entries, point)
            if entry == NOT_BUILT:
                why = MISSING
                break
            if STARTS <= entry <= JOINS:  # needs its segment normalized whole
                begin, at = i, o  # the segment starts here (STARTS), or one character before (JOINS)
                if entry == JOINS and i > lo:
                    if data[i - 1] < 0x80:
                        begin, at = i - 1, o - 1
                    else:
                        begin, at = last_in, last_out
                end = _segment_end(data, i, hi, blocks, entries)
                if end < 0:
                    why = MISSING
                    break
                merged = span_end >= 0 and begin - span_end <= SPAN_GAP
                if merged:  # one span with the last one: its bytes are in out already, copy what follows
                    begin, at = span_end, spans[2 * state[2] - 1]
                for k in range(end - begin):  # a loop: numba's slice assignment costs ~0.2 us a call
                    out[at + k] = data[begin + k]
                o = at + end - begin
                if not merged:
                    spans[2 * state[2]] = at
                    state[2] += 1
                spans[2 * state[2] - 1] = o
                span_end = end
                i = end
                continue
            last_in, last_out = i, o
            if entry == KEEP:
                for k in range(size):
                    out[o + k] = data[i + k]
                o += size
            else:
                start = starts[entry]
                length = starts[entry + 1] - start
                if o + length + hi - i - size > room:
                    why = FULL
                    break
                for k in range(length):
                    out[o + k] = pool[start + k]
                o += length
            i += size
        if why != 0:
            if why == MISSING:
                _scan(data, offsets, plain, doc, i, blocks, entries, missing, state)
            state[0] = why
            state[2] = doc_spans
            return doc
        out_offsets[doc + 1] = o
    return count
