"""Clusters and their representatives do not depend on edge order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dedupe.unionfind import UnionFind, cluster_roots


def test_root_is_the_smallest_member() -> None:
    roots = cluster_roots(6, np.array([5, 3, 4]), np.array([3, 1, 5]))
    assert roots.tolist() == [0, 1, 2, 1, 1, 1]


def test_union_returns_the_shared_root() -> None:
    forest = UnionFind(4)
    assert forest.union(3, 2) == 2
    assert forest.union(2, 0) == 0
    assert forest.find(3) == 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=40), st.randoms())
def test_edge_order_does_not_matter(edges: list[tuple[int, int]], rnd) -> None:
    left = np.array([a for a, _ in edges], dtype=np.int64)
    right = np.array([b for _, b in edges], dtype=np.int64)
    shuffled = list(range(len(edges)))
    rnd.shuffle(shuffled)
    first = cluster_roots(30, left, right)
    second = cluster_roots(30, right[shuffled], left[shuffled])
    assert first.tolist() == second.tolist()
    for a, b in edges:  # every edge ends inside one cluster whose root is its minimum
        assert first[a] == first[b] <= min(a, b)
