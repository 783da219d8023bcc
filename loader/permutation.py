"""A seeded random permutation of ``range(n)`` with O(1) memory and O(1) random access.

Shuffling a corpus of billions of windows with an index array costs gigabytes per epoch
(Megatron caches such arrays on disk). A Feistel network over the next power of four, with
cycle walking back into ``range(n)``, is a bijection that maps any index independently: the
map-style dataset stays random-access, resuming needs only a position, and the scalar and
vectorized implementations below agree bit for bit (a test checks it).
"""

from __future__ import annotations

import numpy as np

_MASK64 = (1 << 64) - 1
_ROUNDS = 4
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def _mix_key(seed: int, salt: int, round_: int) -> int:
    """A 64-bit round key from (seed, salt, round) via splitmix64."""
    x = (seed * 0x9E3779B97F4A7C15 + salt * 0xD1B54A32D192ED03 + round_ * 0x8CB92BA72F3D8DD7) & _MASK64
    x = ((x ^ (x >> 30)) * _M1) & _MASK64
    x = ((x ^ (x >> 27)) * _M2) & _MASK64
    return x ^ (x >> 31)


class Permutation:
    """``p(i)`` for ``i`` in ``range(n)``: a pseudo-random bijection keyed by ``(seed, salt)``."""

    def __init__(self, n: int, seed: int = 0, salt: int = 0) -> None:
        if n < 0:
            raise ValueError("n must be >= 0")
        self.n = n
        bits = max(2, (max(n - 1, 1)).bit_length())
        self._half = (bits + 1) // 2
        self._mask = (1 << self._half) - 1
        self._keys = [_mix_key(seed, salt, r) for r in range(_ROUNDS)]

    def __len__(self) -> int:
        return self.n

    def _round(self, value: int) -> int:
        left, right = value >> self._half, value & self._mask
        for key in self._keys:
            x = ((right ^ key) * _M1) & _MASK64
            x ^= x >> 29
            left, right = right, left ^ (x & self._mask)
        return (left << self._half) | right

    def __call__(self, index: int) -> int:
        if not 0 <= index < self.n:
            raise IndexError(f"index {index} out of range({self.n})")
        value = self._round(index)
        while value >= self.n:  # cycle walking: at most a few steps on average (domain < 4n)
            value = self._round(value)
        return value

    def map(self, indices: np.ndarray) -> np.ndarray:
        """Vectorized ``p`` over an integer array (same results as the scalar call)."""
        values = np.asarray(indices, dtype=np.uint64)
        if values.size and int(values.max()) >= self.n:
            raise IndexError("index out of range")
        out = self._round_array(values)
        todo = out >= self.n
        while todo.any():
            out[todo] = self._round_array(out[todo])
            todo = out >= self.n
        return out.astype(np.int64)

    def _round_array(self, values: np.ndarray) -> np.ndarray:
        half, mask = np.uint64(self._half), np.uint64(self._mask)
        left, right = values >> half, values & mask
        with np.errstate(over="ignore"):
            for key in self._keys:
                x = (right ^ np.uint64(key)) * np.uint64(_M1)
                x ^= x >> np.uint64(29)
                left, right = right, left ^ (x & mask)
        return (left << half) | right
