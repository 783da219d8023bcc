"""MinHash signatures with datasketch's semantics, computed for a whole batch at once.

datasketch 2.x (scheme ``affine32``, its default) defines a signature as, for each of the
``num_perm`` permutations ``(a_k, b_k)`` drawn from ``numpy.random.RandomState(seed)``::

    sig[k] = min over shingles s of (a_k * fmix32(hashfunc(s)) + b_k) mod 2**32

and an empty document has every value at 2**32 - 1. This module computes exactly that, with
``hashfunc`` = the upper 32 bits of :mod:`dedupe.shingles`' 64-bit shingle hash, so a signature
made here equals ``datasketch.MinHash(num_perm, seed, hashfunc=...)`` fed the same shingles
(tested), and can be put into datasketch's ``MinHashLSH`` or Redis storage unchanged.

:meth:`MinHasher.signatures` runs the compiled kernel (:mod:`dedupe.minhash_kernel`): bytes to
signatures in one pass per document, no shingle array in memory. :meth:`MinHasher.signatures_from_hashes`
(for shingle values already at hand, e.g. books' distinct values) does it with numpy, one
permutation at a time: multiply, add and ``minimum.reduceat`` over the concatenated values of
all documents, with wrapping uint32 arithmetic standing in for the ``mod 2**32``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dedupe.shingles import ShingleConfig, lowered_batch, shingle_constants

U32 = np.uint32
EMPTY_VALUE = np.uint32(0xFFFFFFFF)
#: Shingles per window: bounds the scratch row (4 bytes each) and the per-window minima.
CHUNK_SHINGLES = 1 << 19


def fmix32(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer, as datasketch applies it before its affine permutations."""
    h = values.astype(U32, copy=True)
    h ^= h >> U32(16)
    h *= U32(0x85EBCA6B)
    h ^= h >> U32(13)
    h *= U32(0xC2B2AE35)
    h ^= h >> U32(16)
    return h


def datasketch_permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(a, b)`` arrays datasketch draws for scheme ``affine32`` (same generator, same order)."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=U32) * U32(2) + U32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=U32)
    return a, b


def to_hashfunc_value(shingle_hash64: np.ndarray) -> np.ndarray:
    """The 32-bit value datasketch's ``hashfunc`` returns for a 64-bit shingle hash."""
    return (shingle_hash64 >> np.uint64(32)).astype(U32)


@dataclass(frozen=True)
class MinHashConfig:
    """Signature parameters; an index only accepts signatures made with the same ones."""

    num_perm: int = 128
    seed: int = 1
    shingles: ShingleConfig = field(default_factory=ShingleConfig)

    def to_dict(self) -> dict[str, int]:
        """Plain dict for index metadata."""
        return {"num_perm": self.num_perm, "seed": self.seed, "ngram": self.shingles.ngram}

    @classmethod
    def from_dict(cls, payload: dict[str, int]) -> MinHashConfig:
        """Inverse of :meth:`to_dict`."""
        return cls(num_perm=int(payload["num_perm"]), seed=int(payload["seed"]),
                   shingles=ShingleConfig(ngram=int(payload["ngram"])))


class MinHasher:
    """Compute MinHash signatures of batches of texts (thread-safe: holds only read-only arrays)."""

    def __init__(self, config: MinHashConfig | None = None) -> None:
        self.config = config or MinHashConfig()
        if self.config.num_perm < 1:
            raise ValueError("num_perm must be positive")
        self.a, self.b = datasketch_permutations(self.config.num_perm, self.config.seed)
        self.a.setflags(write=False)
        self.b.setflags(write=False)

    def signatures(self, texts: Sequence[str], encoded: Sequence[bytes] | None = None,
                   others: Sequence[str] | None = None) -> np.ndarray:
        """A ``(len(texts), num_perm)`` uint32 array; a text without words gets an all-max row.

        ``encoded``: the texts as UTF-8 (:func:`dedupe.shingles.encode_texts`), and ``others``
        their non-ASCII characters (:func:`core.exact.non_ascii_chars`), when the caller needs
        them too, so each is computed once.
        """
        from dedupe import minhash_kernel as kernel  # numba: imported on first use only

        data, offsets = lowered_batch(texts, encoded, others)
        out = np.full((len(texts), self.config.num_perm), EMPTY_VALUE, dtype=U32)
        kernel.signatures_into(data, offsets, *kernel.tables(), shingle_constants(self.config.shingles.ngram),
                               self.a, self.b, out)
        return out

    def signatures_from_hashes(self, values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Signatures from 32-bit ``hashfunc`` values, document ``i`` owning ``values[offsets[i]:offsets[i+1]]``."""
        out = np.full((len(offsets) - 1, self.config.num_perm), EMPTY_VALUE, dtype=U32)
        if len(values) == 0:
            return out
        mixed = fmix32(values)
        owners = np.flatnonzero(np.diff(offsets) > 0)  # empty documents keep the empty row
        starts = np.asarray(offsets, dtype=np.int64)[owners]
        row = np.empty(min(CHUNK_SHINGLES, len(mixed)), dtype=U32)
        for lo in range(0, len(mixed), CHUNK_SHINGLES):
            hi = min(lo + CHUNK_SHINGLES, len(mixed))
            first = int(np.searchsorted(starts, lo, side="right")) - 1  # the document holding ``lo``
            last = int(np.searchsorted(starts, hi, side="left"))
            segments = np.maximum(starts[first:last] - lo, 0)
            mins = self._window_minima(mixed[lo:hi], segments, row[: hi - lo])
            docs = owners[first:last]  # each at most once per window: plain fancy assignment is safe
            out[docs] = np.minimum(out[docs], mins.T)
        return out

    def _window_minima(self, mixed: np.ndarray, segments: np.ndarray, row: np.ndarray) -> np.ndarray:
        """``(num_perm, len(segments))`` minima of each permutation over each document segment.

        One permutation at a time over the whole window: the multiply, add and segmented minimum
        then run over long contiguous arrays (SIMD, no per-document Python loop), ~3x faster than
        a ``(shingles, num_perm)`` block per document.
        """
        mins = np.empty((self.config.num_perm, len(segments)), dtype=U32)
        for k in range(self.config.num_perm):
            np.multiply(mixed, self.a[k], out=row)
            row += self.b[k]
            np.minimum.reduceat(row, segments, out=mins[k])
        return mins


def is_empty(signatures: np.ndarray) -> np.ndarray:
    """Rows of documents that had no shingle (they must stay out of LSH: they all look alike)."""
    return np.all(signatures == EMPTY_VALUE, axis=1)


def estimated_jaccard(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Fraction of equal signature values, row by row (datasketch's ``MinHash.jaccard``)."""
    return np.mean(np.asarray(left) == np.asarray(right), axis=-1)
