"""Signatures equal datasketch.MinHash's for the same seed and shingles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from datasketch import MinHash
from hypothesis import given, settings
from hypothesis import strategies as st

from dedupe import minhash as mh
from dedupe import minhash_kernel
from dedupe.minhash import EMPTY_VALUE, MinHashConfig, MinHasher, estimated_jaccard, fmix32, is_empty
from dedupe.shingles import ShingleConfig, reference_shingle_hash, shingle_items

TEXTS = [
    "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat.",
    "Ein kurzer deutscher Satz über Füchse, Hunde und Katzen im Garten hinter dem Haus.",
    "tiny",
    "",
    " ".join(f"token{i}" for i in range(5000)),  # longer than one permutation block
]


def _datasketch(text: str, config: MinHashConfig) -> np.ndarray:
    ngram = config.shingles.ngram
    sketch = MinHash(num_perm=config.num_perm, seed=config.seed,
                     hashfunc=lambda item: reference_shingle_hash(item, ngram) >> 32)
    sketch.update_batch(shingle_items(text, config.shingles))
    return sketch.hashvalues


@pytest.mark.parametrize("seed", [1, 42])
@pytest.mark.parametrize("num_perm", [128, 64])
def test_signatures_equal_datasketch(seed: int, num_perm: int) -> None:
    config = MinHashConfig(num_perm=num_perm, seed=seed)
    ours = MinHasher(config).signatures(TEXTS)
    assert ours.dtype == np.uint32 and ours.shape == (len(TEXTS), num_perm)
    for row, text in zip(ours, TEXTS, strict=True):
        np.testing.assert_array_equal(row, _datasketch(text, config))


def test_empty_document_has_the_empty_signature() -> None:
    sig = MinHasher().signatures(["", "...", "word"])
    assert is_empty(sig).tolist() == [True, True, False]
    assert (sig[0] == EMPTY_VALUE).all()


def test_jaccard_estimate_tracks_the_true_value() -> None:
    words = [f"w{i}" for i in range(400)]
    changed = words.copy()
    for i in range(0, 400, 20):  # 20 replaced words -> about 100 of 396 shingles differ
        changed[i] = f"x{i}"
    config = ShingleConfig(5)
    a, b = set(shingle_items(" ".join(words), config)), set(shingle_items(" ".join(changed), config))
    truth = len(a & b) / len(a | b)
    sig = MinHasher(MinHashConfig(num_perm=256)).signatures([" ".join(words), " ".join(changed)])
    assert abs(float(estimated_jaccard(sig[0], sig[1])) - truth) < 0.1


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=5), st.integers(0, 2**31))
def test_batching_does_not_change_signatures(texts: list[str], seed: int) -> None:
    hasher = MinHasher(MinHashConfig(num_perm=32, seed=seed))
    together = hasher.signatures(texts)
    one_by_one = np.vstack([hasher.signatures([t]) for t in texts])
    np.testing.assert_array_equal(together, one_by_one)


MIXED_BATCH = [*TEXTS, "two words", " ".join(f"w{i % 13}" for i in range(700)), "...", "a b c d e f"]


@pytest.mark.parametrize("piece_bytes", [1, 7, 600, 4096])
def test_reading_documents_in_small_pieces_keeps_datasketch_signatures(monkeypatch, piece_bytes: int) -> None:
    """Documents read in pieces (words and shingle windows crossing piece edges) still match."""
    monkeypatch.setattr(minhash_kernel, "PIECE_BYTES", piece_bytes)
    config = MinHashConfig(num_perm=16, seed=3)
    ours = MinHasher(config).signatures(MIXED_BATCH)
    for row, text in zip(ours, MIXED_BATCH, strict=True):
        np.testing.assert_array_equal(row, _datasketch(text, config))


def _direct_signatures(values: np.ndarray, offsets: np.ndarray, hasher: MinHasher) -> np.ndarray:
    """The affine32 definition evaluated document by document with Python-int arithmetic."""
    a, b = hasher.a.astype(np.uint64), hasher.b.astype(np.uint64)
    rows = []
    for lo, hi in itertools.pairwise(offsets.tolist()):
        if lo == hi:
            rows.append(np.full(len(a), EMPTY_VALUE, dtype=np.uint32))
            continue
        mixed = fmix32(values[lo:hi]).astype(np.uint64)
        rows.append(((mixed[:, None] * a + b) % (1 << 32)).min(axis=0).astype(np.uint32))
    return np.vstack(rows)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=12), min_size=1, max_size=8), st.integers(1, 9))
def test_windowed_minima_equal_the_definition(docs: list[list[int]], window: int) -> None:
    values = np.array([v for doc in docs for v in doc], dtype=np.uint32)
    offsets = np.concatenate([[0], np.cumsum([len(doc) for doc in docs])]).astype(np.int64)
    hasher = MinHasher(MinHashConfig(num_perm=8, seed=window))
    saved = mh.CHUNK_SHINGLES
    mh.CHUNK_SHINGLES = window  # hypothesis cannot take the function-scoped monkeypatch fixture
    try:
        ours = hasher.signatures_from_hashes(values, offsets)
    finally:
        mh.CHUNK_SHINGLES = saved
    np.testing.assert_array_equal(ours, _direct_signatures(values, offsets, hasher))
