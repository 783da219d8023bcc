"""Priority dedup: a later source (stack_code) is deduplicated against an earlier one (github) and never changes it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.document import Document
from core.shards import ShardWriter
from dedupe import explain as decisions
from dedupe.lsh import (
    BandLayout,
    JoinSettings,
    band_dir,
    band_pairs_within,
    merge_pairs,
    verify_pairs,
    write_verified,
)
from dedupe.minhash import MinHashConfig
from dedupe.priority import (
    as_chains,
    chain_clusters,
    priority_clusters,
    priority_exact_edges,
    priority_roots,
    reference_excluded,
)
from dedupe.reference import sign_document_shard, signature_parts
from dedupe.unionfind import cluster_roots


def test_a_later_source_cannot_chain_two_earlier_documents() -> None:
    # github A=0, B=1 (not similar); stack_code S=2 is similar to both; T=3 is a copy of S
    sources = np.array([0, 0, 1, 1])
    levels = np.array([0, 0, 1, 1])
    left, right = np.array([0, 1, 2]), np.array([2, 2, 3])
    roots = priority_clusters(sources, levels, left, right)
    assert roots.tolist() == [0, 1, 0, 0]  # A and B both kept; S and T are duplicates of A
    # plain across-sources clustering would have made B a duplicate of A
    assert cluster_roots(4, left, right).tolist() == [0, 0, 0, 0]


def test_earlier_source_wins_whatever_the_numbers() -> None:
    # numbers follow source names: "alpha" (0, 1) sorts before "github" (2); github is listed first
    sources = np.array([0, 0, 1])
    levels = np.array([1, 1, 0])
    roots = priority_clusters(sources, levels, np.array([0, 1]), np.array([2, 0]))
    assert roots.tolist() == [2, 2, 2]


def test_unlisted_sources_stay_within_themselves() -> None:
    sources = np.array([0, 0, 1, 2, 2])
    levels = np.array([0, 0, 1, -1, -1])
    roots = priority_clusters(sources, levels, np.array([0, 2, 3, 1]), np.array([1, 3, 4, 4]))
    assert roots.tolist() == [0, 0, 2, 3, 3]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=1, max_size=14).flatmap(
    lambda srcs: st.tuples(st.just(srcs), st.lists(st.tuples(st.integers(0, len(srcs) - 1),
                                                             st.integers(0, len(srcs) - 1)), max_size=25))))
def test_properties(case: tuple[list[int], list[tuple[int, int]]]) -> None:
    srcs, edges = case
    sources = np.array(srcs, dtype=np.int64)
    levels = sources.copy()  # order = [0, 1, 2]
    left = np.array([a for a, _ in edges], dtype=np.int64)
    right = np.array([b for _, b in edges], dtype=np.int64)
    roots = priority_clusters(sources, levels, left, right)
    assert (roots[roots] == roots).all()  # a representative represents itself
    assert (levels[roots] <= levels).all()  # never a later source's document
    # decisions about sources 0..k do not depend on later sources' documents or edges
    for k in (0, 1):
        keep = np.flatnonzero(levels <= k)
        index = {int(d): i for i, d in enumerate(keep)}
        sub = [(index[a], index[b]) for a, b in edges if a in index and b in index]
        sub_roots = priority_clusters(sources[keep], levels[keep], np.array([a for a, _ in sub], dtype=np.int64),
                                      np.array([b for _, b in sub], dtype=np.int64))
        assert keep[sub_roots].tolist() == roots[keep].tolist()
    # level 0 alone is exactly within-source clustering
    zero = np.flatnonzero(levels == 0)
    inner = [(a, b) for a, b in edges if levels[a] == 0 and levels[b] == 0]
    plain = cluster_roots(len(sources), np.array([a for a, _ in inner], dtype=np.int64),
                          np.array([b for _, b in inner], dtype=np.int64))
    assert roots[zero].tolist() == plain[zero].tolist()


def test_chains_never_touch_each_other() -> None:
    # sources: 0 books, 1 github, 2 science_books, 3 stack_code; chains [github, stack_code], [books, science_books]
    sources = np.array([0, 1, 2, 3, 1])
    code = np.array([-1, 0, -1, 1, 0])
    books = np.array([0, -1, 1, -1, -1])
    # edges: book 0 ~ github 1 (a code file that quotes a book), science 2 ~ book 0, stack 3 ~ github 4
    left, right = np.array([0, 2, 3]), np.array([1, 0, 4])
    roots = chain_clusters(sources, [code, books], left, right)
    assert roots.tolist() == [0, 1, 0, 4, 4]  # github 1 stays (other chain); science 2 -> book 0; stack 3 -> github 4


def test_as_chains() -> None:
    assert as_chains(["github", "stack_code"]) == [["github", "stack_code"]]
    assert as_chains([["github", "stack_code"], ["books"]]) == [["github", "stack_code"], ["books"]]
    assert as_chains([]) == []
    bad: list[Any] = [["github", "github"], [["github"], ["books", "github"]], [[]], ["github", ["books"]]]
    for order in bad:
        with pytest.raises(ValueError, match="priority"):
            as_chains(order)


WORDS = [f"w{i}" for i in range(400)]


def _text(rng: random.Random, n: int = 150) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def test_with_the_dedup_flow_building_blocks(tmp_path: Path) -> None:
    """Sign real shards, find near pairs by LSH, then priority-cluster: the flow's path with this module."""
    rng = random.Random(3)
    shared, near_base, own = _text(rng), _text(rng), _text(rng)
    near = near_base.split()
    near[70] = "edited"
    corpus = {
        "github": [shared, near_base, _text(rng)],
        "stack_code": [_text(rng), " ".join(near), own, own, shared],
        "wiki": [shared, _text(rng)],  # an unrelated source that sorts last and also holds the copy
    }
    out = tmp_path / "data"
    shards = []
    for source, texts in corpus.items():
        with ShardWriter(out, out / "docs" / source / "x", "part", source) as writer:
            for i, text in enumerate(texts):
                writer.write(Document(f"{source}-{i}", text, source))
        shards.append((writer.finished[0].path, source))
    work = tmp_path / "work"
    minhash, layout, join = MinHashConfig(), BandLayout.named("16x8", 0.8), JoinSettings()
    parts, first = [], 0
    for i, (shard, source) in enumerate(shards):
        part = sign_document_shard(out, shard, work, f"{i:06d}", first, minhash, [layout])
        parts.append({**part, "source": source})
        first += int(part["count"])
    pair_files = []
    for band in range(layout.bands):
        target = work / "within" / f"band{band}.parquet"
        band_pairs_within(band_dir(work / "bands", layout, band), target, join)
        pair_files.append(target)
    merged, verified = work / "candidates.parquet", work / "verified.parquet"
    merge_pairs(pair_files, merged, join)
    store = signature_parts(work, parts)
    write_verified(verify_pairs(merged, store, store, layout.threshold), verified)
    exact = work / "exact.parquet"
    priority_exact_edges(work, parts, exact, join, ["github", "stack_code"])
    counts = priority_roots(parts, store, [verified, exact], work / "roots.parquet", ["github", "stack_code"])
    decided = work / "decisions.parquet"
    decisions.write_decisions(work, parts, work / "roots.parquet", None, [], decided, join)
    rows = {r["id"]: r for r in pq.read_table(decided).to_pylist()}
    assert rows["stack_code-4"]["duplicate_of"] == "github-0" and rows["stack_code-4"]["duplicate_kind"] == "exact"
    assert rows["stack_code-1"]["duplicate_of"] == "github-1" and rows["stack_code-1"]["duplicate_kind"] == "near"
    assert rows["stack_code-3"]["duplicate_of"] == "stack_code-2"  # within the source
    assert rows["wiki-0"]["duplicate_of"] is None  # unlisted: only within itself
    assert all(rows[f"github-{i}"]["duplicate_of"] is None for i in range(3))
    assert counts["duplicates"] == 3


def test_reference_excluded_only_for_listed_subsets() -> None:
    rules = {"stack_code": ["Github"]}
    hit = {"reference_kind": "near", "reference_set": "Github"}
    assert reference_excluded("stack_code", hit, rules)
    assert not reference_excluded("stack_code", {"reference_kind": "exact", "reference_set": "Pile-CC"}, rules)
    assert not reference_excluded("stack_code", {"reference_kind": None, "reference_set": None}, rules)
    assert not reference_excluded("github", hit, rules) and not reference_excluded("stack_code", None, rules)
