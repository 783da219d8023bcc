"""Deterministic clusters of near-duplicate documents.

Documents are numbered ``0..n-1`` in a fixed global order (source, shard path, row), and every
cluster is represented by its *smallest* member: union always hangs the larger root under the
smaller one. Connected components do not depend on the order in which edges arrive, and the
representative is a property of the component, so the kept set (one representative per cluster)
is the same whatever the number of workers that found the edges or the order they finished in.
"""

from __future__ import annotations

import numpy as np


class UnionFind:
    """Union-find over ``0..size-1`` in a numpy array (8 bytes per document, no Python objects)."""

    def __init__(self, size: int) -> None:
        self.parent = np.arange(size, dtype=np.int64)

    def find(self, item: int) -> int:
        """Root of ``item``'s cluster (its smallest member), with path halving."""
        parent = self.parent
        while parent[item] != item:
            parent[item] = parent[parent[item]]
            item = int(parent[item])
        return item

    def union(self, left: int, right: int) -> int:
        """Merge two clusters; the smaller root becomes the root of both. Returns it."""
        root_left, root_right = self.find(left), self.find(right)
        if root_left == root_right:
            return root_left
        low, high = (root_left, root_right) if root_left < root_right else (root_right, root_left)
        self.parent[high] = low
        return low

    def union_pairs(self, left: np.ndarray, right: np.ndarray) -> None:
        """Merge every pair ``(left[i], right[i])``."""
        for a, b in zip(left.tolist(), right.tolist(), strict=True):
            self.union(a, b)

    def roots(self) -> np.ndarray:
        """The cluster representative (smallest member) of every item, fully resolved, vectorized."""
        parent = self.parent
        while True:
            grand = parent[parent]
            if np.array_equal(grand, parent):
                return parent.copy()
            parent[:] = grand


def cluster_roots(size: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Cluster representative of each of ``size`` items given the edges ``left[i] -- right[i]``."""
    forest = UnionFind(size)
    forest.union_pairs(np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64))
    return forest.roots()
