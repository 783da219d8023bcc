"""LSH finds planted near-duplicates: precision and recall at 0.8 against exact Jaccard."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import dedupe.lsh
from dedupe.lsh import (
    BandKeyWriter,
    BandLayout,
    JoinSettings,
    SignaturePart,
    SignatureStore,
    band_dir,
    band_keys,
    in_memory_pairs,
    near_duplicate_pairs,
    save_signatures,
    write_band_keys,
)
from dedupe.minhash import MinHasher
from dedupe.shingles import shingle_items
from dedupe.unionfind import cluster_roots

POSITIVE_LEVELS = (0.85, 0.9, 0.95, 1.0)
NEGATIVE_LEVELS = (0.3, 0.5, 0.65)


def planted_corpus(families: int, seed: int = 0, words: int = 300) -> tuple[list[str], list[tuple[int, int]]]:
    """Base documents of random words, each followed by one variant at a planted Jaccard level."""
    rnd = random.Random(seed)
    vocab = [f"{rnd.choice('bcdfghklmnprst')}{rnd.choice('aeiou')}{i}" for i in range(5000)]
    texts: list[str] = []
    planted: list[tuple[int, int]] = []
    shingles = words - 4
    for family in range(families):
        base = [rnd.choice(vocab) for _ in range(words)]
        level = (POSITIVE_LEVELS + NEGATIVE_LEVELS)[family % 7]
        changes = round(shingles * (1 - level) / (5 * (1 + level)))  # each change touches ~5 shingles
        variant = base.copy()
        for position in rnd.sample(range(0, words, 6), changes):
            variant[position] = f"changed{family}x{position}"
        texts += [" ".join(base), " ".join(variant)]
        planted.append((2 * family, 2 * family + 1))
    return texts, planted


def true_jaccard(a: str, b: str) -> float:
    left, right = set(shingle_items(a)), set(shingle_items(b))
    return len(left & right) / len(left | right)


def precision_recall(found: set[tuple[int, int]], texts: list[str], planted) -> tuple[float, float]:
    positives = {pair for pair in planted if true_jaccard(texts[pair[0]], texts[pair[1]]) >= 0.8}
    true_found = {pair for pair in found if true_jaccard(texts[pair[0]], texts[pair[1]]) >= 0.8}
    precision = len(true_found) / max(len(found), 1)
    recall = len(true_found & positives) / max(len(positives), 1)
    return precision, recall


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[tuple[int, int]], np.ndarray]:
    texts, planted = planted_corpus(families=350)
    return texts, planted, MinHasher().signatures(texts)


def _out_of_core(tmp_path: Path, signatures: np.ndarray, layout: BandLayout, parts: int) -> set[tuple[int, int]]:
    """Run the Parquet + DuckDB path with the signatures split into ``parts`` shards."""
    bounds = np.linspace(0, len(signatures), parts + 1).astype(int)
    store_parts = []
    for index, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        path = tmp_path / "sigs" / f"part{index}.u32"
        save_signatures(path, signatures[lo:hi])
        store_parts.append(SignaturePart(path, int(lo), int(hi - lo)))
        write_band_keys(signatures[lo:hi], int(lo), layout, tmp_path / "bands", f"part{index}")
    verified = near_duplicate_pairs(tmp_path / "bands", tmp_path / "work", SignatureStore(store_parts),
                                    layout, JoinSettings(memory_limit="256MB", temp_directory=tmp_path / "tmp"))
    table = pq.read_table(verified)
    return set(zip(table.column("a").to_pylist(), table.column("b").to_pylist(), strict=True))


def test_recall_layout_meets_target_at_08(tmp_path: Path, corpus) -> None:
    texts, planted, signatures = corpus
    found = _out_of_core(tmp_path, signatures, BandLayout.named("16x8", threshold=0.8), parts=3)
    precision, recall = precision_recall(found, texts, planted)
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)


def test_recipe_layout_follows_its_s_curve(tmp_path: Path, corpus) -> None:
    """9 x 13 (RedPajama-v2) is tuned for few false positives: nearly all pairs at >= 0.9 are found."""
    texts, planted, signatures = corpus
    layout = BandLayout.named("0.8")
    found = _out_of_core(tmp_path, signatures, layout, parts=2)
    precision, _ = precision_recall(found, texts, planted)
    assert precision >= 0.95
    high = [p for p in planted if true_jaccard(texts[p[0]], texts[p[1]]) >= 0.93]
    assert sum(p in found for p in high) / len(high) >= 0.95
    assert layout.candidate_probability(0.95) > 0.99 > layout.candidate_probability(0.8)


def test_out_of_core_equals_in_memory_datasketch(tmp_path: Path, corpus) -> None:
    _, _, signatures = corpus
    layout = BandLayout.named("0.8")
    a, b, _ = in_memory_pairs(signatures, layout)
    assert _out_of_core(tmp_path, signatures, layout, parts=4) == set(zip(a.tolist(), b.tolist(), strict=True))


def test_kept_set_does_not_depend_on_sharding(tmp_path: Path, corpus) -> None:
    _, _, signatures = corpus
    layout = BandLayout.named("0.8")
    kept = []
    for parts in (1, 5):
        found = _out_of_core(tmp_path / str(parts), signatures, layout, parts)
        left = np.array([a for a, _ in sorted(found)], dtype=np.int64)
        right = np.array([b for _, b in sorted(found)], dtype=np.int64)
        roots = cluster_roots(len(signatures), left, right)
        kept.append(np.flatnonzero(roots == np.arange(len(signatures))).tolist())
    assert kept[0] == kept[1]


def test_empty_documents_never_match(tmp_path: Path) -> None:
    signatures = MinHasher().signatures(["", "...", "!!!", "real words in a real sentence here"])
    assert _out_of_core(tmp_path, signatures, BandLayout.named("0.8"), parts=1) == set()


def test_giant_bucket_becomes_star_edges(tmp_path: Path) -> None:
    signatures = MinHasher().signatures(["the same boilerplate text for every page of a site"] * 30)
    part = save_signatures(tmp_path / "s.u32", signatures)
    layout = BandLayout.named("0.9")
    write_band_keys(signatures, 0, layout, tmp_path / "bands", "p")
    verified = near_duplicate_pairs(tmp_path / "bands", tmp_path / "w", SignatureStore([part]),
                                    layout, JoinSettings(max_bucket=8))
    table = pq.read_table(verified)
    assert set(table.column("a").to_pylist()) == {0} and len(table) == 29


def test_layouts_and_keys() -> None:
    assert [BandLayout.named(n).name for n in ("0.7", "0.8", "0.9")] == ["14x9", "9x13", "5x25"]
    with pytest.raises(ValueError):
        BandLayout.named("nonsense")
    with pytest.raises(ValueError):
        BandLayout(20, 13, 0.8).check(128)
    sig = MinHasher().signatures(["one two three four five six", "one two three four five six"])
    keys = band_keys(sig, BandLayout.named("0.8"))
    assert keys.shape == (2, 9) and (keys[0] == keys[1]).all() and len(set(keys[0].tolist())) == 9


def test_band_files_gather_blocks_into_row_groups_without_dictionaries(tmp_path: Path, monkeypatch) -> None:
    """Blocks are written as few row groups (a write per block cost a fifth of the index build) and
    the random keys are stored plainly; the rows are exactly the blocks' band keys, in order,
    documents without shingles left out."""
    monkeypatch.setattr(dedupe.lsh, "BAND_ROW_GROUP", 2000)
    rng = np.random.default_rng(7)
    layout = BandLayout.named("0.8")
    blocks = [rng.integers(0, 2**32, size=(1000, 128), dtype=np.uint64).astype(np.uint32) for _ in range(5)]
    blocks[2][10] = 0xFFFFFFFF  # an empty document: no band keys
    writer = BandKeyWriter(tmp_path, layout, "p")
    for number, block in enumerate(blocks):
        writer.write(block, np.arange(number * 1000, (number + 1) * 1000))
    assert writer.close() == 4999
    everything = np.concatenate(blocks)
    kept = np.flatnonzero(~(everything == 0xFFFFFFFF).all(axis=1))
    expected = band_keys(everything[kept], layout)
    for band in range(layout.bands):
        parquet = pq.ParquetFile(band_dir(tmp_path, layout, band) / "p.parquet")
        groups = [parquet.metadata.row_group(g) for g in range(parquet.metadata.num_row_groups)]
        assert [g.num_rows for g in groups] == [2000, 2999]  # flushed once 2,000 rows are gathered
        assert not any("DICTIONARY" in str(g.column(0).encodings) for g in groups)
        table = parquet.read()
        assert table.column("key").to_numpy().tolist() == expected[:, band].tolist()
        assert table.column("doc").to_numpy().tolist() == kept.tolist()


def test_an_aborted_band_writer_leaves_no_file(tmp_path: Path) -> None:
    layout = BandLayout.named("0.9")
    writer = BandKeyWriter(tmp_path, layout, "p")
    writer.write(MinHasher().signatures(["some words to sign here"]), np.arange(1))
    writer.abort()
    assert not list(tmp_path.rglob("*.parquet"))
