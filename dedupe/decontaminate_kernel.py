"""The compiled membership test of decontamination: which shingle hashes are evaluation n-grams.

Apart from :mod:`dedupe.decontaminate` so that the label stage, which reads only the attribute
files, never loads numba. One pass over a batch's hashes: a bit test in a packed table of the
evaluation hashes' top bits (2 MB for 2^24 slots, mostly in cache; a few percent of slots set for
10k items), then a binary search in the sorted hashes for the few that pass. numpy's gather and
``searchsorted`` did the same in three passes with temporaries, at a third of the speed.
"""

from __future__ import annotations

import numpy as np

from core.compiled import jit

TABLE_BITS = 24
SHIFT = np.uint64(64 - TABLE_BITS)


def bit_table(keys: np.ndarray) -> np.ndarray:
    """The packed table: bit ``k >> SHIFT`` set for every key ``k`` (uint64 words)."""
    table = np.zeros((1 << TABLE_BITS) // 64, dtype=np.uint64)
    slots = keys >> SHIFT
    np.bitwise_or.at(table, (slots >> np.uint64(6)).astype(np.int64), np.uint64(1) << (slots & np.uint64(63)))
    return table


@jit
def hit_positions(hashes: np.ndarray, table: np.ndarray, keys: np.ndarray,
                  out: np.ndarray) -> int:  # pragma: no cover - compiled by numba, tested through it
    """Write to ``out`` the positions of ``hashes`` found in the sorted ``keys``; return how many."""
    found = 0
    size = len(keys)
    shift = np.uint64(64 - TABLE_BITS)
    for i in range(len(hashes)):
        value = hashes[i]
        slot = value >> shift
        if (table[slot >> np.uint64(6)] >> (slot & np.uint64(63))) & np.uint64(1) == 0:
            continue
        lo, hi = 0, size
        while lo < hi:
            mid = (lo + hi) >> 1
            if keys[mid] < value:
                lo = mid + 1
            else:
                hi = mid
        if lo < size and keys[lo] == value:
            out[found] = i
            found += 1
    return found
