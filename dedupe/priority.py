"""Cross-source dedup where earlier sources win and later sources never change them.

``flows.dedup`` clusters either within each source or across all sources at once; in the second
mode a cluster's representative is its smallest global number, and numbers follow the source
*name*, so which copy is kept depends on spelling, and adding a source can change an existing
one: with ``github`` A ~ ``stack_code`` S ~ ``github`` B (A and B not similar themselves), S
joins A's and B's clusters and B becomes a duplicate of A, so G.1's GitHub loses a file because an
extension source was added. The extension sources must be added *on top of* G.1.

:func:`priority_roots` takes explicit *chains*, each an ordered list of sources (``[["github",
"stack_code"], ["books", "science_books"]]``; one flat list is one chain), and in each chain decides
level by level: the documents of ``order[k]`` are clustered over the edges among ``order[:k+1]``
only, and a cluster's representative is its member of the earliest source (then the smallest
number). So

* every decision about ``order[k]`` is the same whatever comes after it (G.1 is stable);
* a ``stack_code`` file that is an exact or near copy of a GitHub file is a duplicate *of that
  GitHub file* (a file G.1 already holds is not added twice), and duplicates inside
  ``stack_code`` are clustered as a within-source run would;
* sources not named in ``order`` are deduplicated within themselves, as before;
* chains never touch each other: a ``github`` file similar to a ``books`` document stays a
  ``github`` file (G.1's within-source decisions are kept), while a science book that is a copy
  of a Gutenberg book is a duplicate of that book (``[books, science_books]``).

Exact edges must be computed with the same priority (:func:`priority_exact_edges`): the flow's
exact edges are stars around the smallest number of a hash group, and a star centred on a document
of an unrelated source would vanish when the edges are restricted to a prefix of ``order``.
Near edges of buckets larger than ``max_bucket`` are stars too; in the rare case a star's centre
lies in another source the prefix loses that bucket's edges (as within-source mode already does).

The output is the ``roots.parquet`` of :func:`dedupe.explain.cluster_documents` (``doc``, ``root``,
``jaccard``), so decisions, attributes and the ``matches`` table follow unchanged.

:func:`reference_excluded` is the other half of "against the Pile's GitHub subset": a predicate
on a document's dedup attributes that tells the labeller to leave an extension document out when
it matches given Pile subsets (``stack_code`` vs ``Github``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from core.atomic import atomic_path
from dedupe.explain import write_roots
from dedupe.lsh import JoinSettings, SignatureStore
from dedupe.unionfind import UnionFind

#: Document numbers stay below this (2**40), so ``level * stride + doc`` orders by level, then number.
_LEVEL_STRIDE = 1 << 40

#: The Pile's name for its GitHub subset (``meta.pile_set_name``).
PILE_GITHUB = "Github"


def _doc_sources(parts: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, list[str]]:
    """Source index of every global document number, and the source names (sorted)."""
    names = sorted({str(p["source"]) for p in parts})
    total = sum(int(p["count"]) for p in parts)
    sources = np.full(total, -1, dtype=np.int64)
    for part in parts:
        first, count = int(part["first"]), int(part["count"])
        sources[first:first + count] = names.index(str(part["source"]))
    return sources, names


Order = Sequence[str] | Sequence[Sequence[str]]


def as_chains(order: Order) -> list[list[str]]:
    """Chains of an order: a flat list of names is one chain, a list of lists is several.

    A source in two chains (or twice in one) would have two levels: refused, as is an empty chain.
    """
    if all(isinstance(item, str) for item in order):
        chains = [[str(name) for name in order]] if order else []
    elif any(isinstance(item, str) for item in order):
        raise ValueError(f"priority: give one list of sources or a list of lists, not a mix: {order!r}")
    else:
        chains = [[str(name) for name in chain] for chain in order]
    seen: set[str] = set()
    for chain in chains:
        if not chain:
            raise ValueError(f"priority: every chain needs at least one source, got {order!r}")
        for name in chain:
            if name in seen:
                raise ValueError(f"priority: source {name!r} is listed twice in {order!r}")
            seen.add(name)
    return chains


def _levels(sources: np.ndarray, names: Sequence[str], order: Sequence[str]) -> np.ndarray:
    """Priority level of each document: its source's position in ``order``, or -1 (unlisted)."""
    by_name = {name: order.index(name) if name in order else -1 for name in names}
    table = np.array([by_name[name] for name in names], dtype=np.int64)
    return table[sources] if len(sources) else np.zeros(0, dtype=np.int64)


def _read_edges(edge_files: Sequence[Path], batch: int) -> tuple[np.ndarray, np.ndarray]:
    lefts, rights = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for path in edge_files:
        if not Path(path).exists():
            continue
        for record_batch in pq.ParquetFile(path).iter_batches(batch_size=batch, columns=["a", "b"]):
            lefts.append(record_batch.column("a").to_numpy().astype(np.int64))
            rights.append(record_batch.column("b").to_numpy().astype(np.int64))
    return np.concatenate(lefts), np.concatenate(rights)


def _chain_roots(levels: np.ndarray, left: np.ndarray, right: np.ndarray, roots: np.ndarray) -> None:
    """Set ``roots`` of one chain's documents (``levels >= 0``), level by level (module docstring)."""
    total = len(levels)
    # rank: listed sources first, in order, then by number; unions keep the smallest rank as root
    rank_key = np.where(levels >= 0, levels, np.iinfo(np.int64).max)
    doc_of_rank = np.lexsort((np.arange(total), rank_key))
    rank_of = np.empty(total, dtype=np.int64)
    rank_of[doc_of_rank] = np.arange(total)
    for level in sorted(set(levels[levels >= 0].tolist())):
        allowed = (levels[left] >= 0) & (levels[left] <= level) & (levels[right] >= 0) & (levels[right] <= level)
        forest = UnionFind(total)
        forest.union_pairs(rank_of[left[allowed]], rank_of[right[allowed]])
        members = np.flatnonzero(levels == level)
        roots[members] = doc_of_rank[forest.roots()[rank_of[members]]]


def chain_clusters(sources: np.ndarray, chain_levels: Sequence[np.ndarray], left: np.ndarray,
                   right: np.ndarray) -> np.ndarray:
    """The representative of every document under the priority rule, for several independent chains.

    ``chain_levels[c][d]`` is document ``d``'s level in chain ``c`` (-1 when its source is not in
    that chain); a document in no chain is clustered within its own source only. Returns ``root``
    with ``root[d] == d`` for every document kept. Pure and in memory (8 bytes per document per
    array); each level of each chain costs one union-find pass over the edges.
    """
    total = len(sources)
    roots = np.arange(total, dtype=np.int64)
    if total == 0:
        return roots
    listed = np.zeros(total, dtype=bool)
    for levels in chain_levels:
        _chain_roots(levels, left, right, roots)
        listed |= levels >= 0
    unlisted = np.flatnonzero(~listed)
    if len(unlisted):
        inside = (sources[left] == sources[right]) & ~listed[left]
        forest = UnionFind(total)
        forest.union_pairs(left[inside], right[inside])
        roots[unlisted] = forest.roots()[unlisted]
    return roots


def priority_clusters(sources: np.ndarray, levels: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """:func:`chain_clusters` with one chain: ``levels`` per document (-1: unlisted), undirected edges."""
    return chain_clusters(sources, [levels], left, right)


def priority_roots(parts: Sequence[Mapping[str, Any]], store: SignatureStore, edge_files: Sequence[Path],
                   target: Path, order: Order, batch: int = 262_144) -> dict[str, int]:
    """:func:`dedupe.explain.cluster_documents` with the priority rule; writes ``roots.parquet``.

    ``edge_files`` hold ``(a, b)`` edges: the verified near pairs of every band and the exact
    edges of :func:`priority_exact_edges`; ``order`` is one chain or several (:func:`as_chains`).
    Returns counts: documents, clusters, duplicates.
    """
    sources, names = _doc_sources(parts)
    chain_levels = [_levels(sources, names, chain) for chain in as_chains(order)]
    left, right = _read_edges(edge_files, batch)
    return write_roots(chain_clusters(sources, chain_levels, left, right), store, target, batch)


def priority_exact_edges(root: Path, parts: Sequence[Mapping[str, Any]], target: Path, settings: JoinSettings,
                         order: Order) -> int:
    """Exact edges for :func:`priority_roots`: per text hash, a star around its earliest-priority member.

    Within a chain the centre is the member of the chain's earliest source (then the smallest
    number), so the edges restricted to any prefix of the chain still connect every copy in that
    prefix; each chain and each unlisted source gets its own stars (no edge joins two of them).
    """
    files = json.dumps([(root / "docs" / f"{p['part']}.parquet").as_posix() for p in parts])
    rows = [(name, c, level) for c, chain in enumerate(as_chains(order)) for level, name in enumerate(chain)]
    listed = ", ".join(f"('{name.replace(chr(39), chr(39) * 2)}', {c}, {level})" for name, c, level in rows) \
        or "(NULL, NULL, NULL)"
    con = settings.connect()
    try:
        with atomic_path(target) as tmp:
            con.execute(f"""
                COPY (
                  WITH d AS (
                    SELECT f.doc, f.hash, f.source, o.chain, o.level FROM read_parquet({files}) f
                    LEFT JOIN (VALUES {listed}) o(name, chain, level) ON o.name = f.source),
                  g AS (
                    SELECT doc, CASE WHEN chain IS NULL THEN 's:' || source ELSE 'c:' || chain::VARCHAR END AS grp,
                           hash, coalesce(level, 0) AS level FROM d)
                  SELECT min(level * {_LEVEL_STRIDE} + doc) OVER (PARTITION BY grp, hash) % {_LEVEL_STRIDE} AS a,
                         doc AS b FROM g
                  QUALIFY a <> b ORDER BY a, b
                ) TO '{tmp.as_posix()}' (FORMAT parquet)""")
        row = con.execute(f"SELECT count(*) FROM '{target.as_posix()}'").fetchone()
        return int(row[0]) if row is not None else 0
    finally:
        con.close()


def reference_excluded(source: str, attributes: Mapping[str, Any] | None,
                       rules: Mapping[str, Sequence[str]]) -> bool:
    """True when ``source``'s document matches a reference subset listed for it in ``rules``.

    ``rules`` maps a source to Pile subsets (``{"stack_code": ["Github"]}``): an extension code
    file found (exact or near) in the Pile's GitHub subset is left out, as a G.1 duplicate would be.
    """
    subsets = rules.get(source)
    if not subsets or attributes is None or attributes.get("reference_kind") is None:
        return False
    return attributes.get("reference_set") in set(subsets)
