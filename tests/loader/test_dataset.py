"""Windows, document ids, masks, mixtures, DataLoader/DistributedSampler, and refused bad input."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader, DistributedSampler

from loader import Recipe
from loader.dataset import ItemOptions, WindowDataset, plan_counts
from loader.permutation import Permutation
from loader.tensor_writer import TensorFormatError
from loader.tensors import open_tensor_set

from .conftest import build_tensors, train_tokenizer, write_corpus  # type: ignore[import-not-found]


def test_windows_and_document_fields(corpus: tuple[Path, Path]) -> None:
    _, tensors = corpus
    files = open_tensor_set(tensors).files
    length = 37
    ds = WindowDataset(files, length, ItemOptions(document_ids=True, position_ids=True, attention_mask=True))
    assert len(ds) == sum(f.tokens // length for f in files)
    base_doc = 0
    index = 0
    for file in files:
        tokens, offsets = file.open()
        doc_of = np.repeat(np.arange(file.docs), np.diff(offsets)) + base_doc
        for k in range(file.tokens // length):
            item = ds[index]
            window = slice(k * length, (k + 1) * length)
            assert item["token_ids"].tolist() == tokens[window].tolist()
            assert item["document_ids"].tolist() == doc_of[window].tolist()
            pos = item["position_ids"].tolist()
            docs = item["document_ids"].tolist()
            for j in range(length):
                assert pos[j] == (0 if j == 0 or docs[j] != docs[j - 1] else pos[j - 1] + 1)
            mask = item["attention_mask"]
            same_doc = item["document_ids"][:, None] == item["document_ids"][None, :]
            assert torch.equal(mask, same_doc & torch.ones(length, length, dtype=torch.bool).tril())
            index += 1
        base_doc += file.docs
    with pytest.raises(IndexError):
        ds[len(ds)]


@settings(max_examples=40, deadline=None)
@given(windows=st.lists(st.integers(1, 500), min_size=1, max_size=6),
       weights=st.lists(st.floats(0.1, 10), min_size=6, max_size=6),
       epochs=st.lists(st.one_of(st.none(), st.floats(0.2, 3)), min_size=6, max_size=6))
def test_plan_counts(windows: list[int], weights: list[float], epochs: list[float | None]) -> None:
    k = len(windows)
    counts = plan_counts(windows, weights[:k], epochs[:k], "weights")
    caps = [(1.0 if e is None else e) * w for e, w in zip(epochs[:k], windows, strict=True)]
    assert all(c <= cap + 1 for c, cap in zip(counts, caps, strict=True))
    fixed = plan_counts(windows, weights[:k], epochs[:k], "weights", total_windows=1000)
    assert sum(fixed) == 1000
    for c, w in zip(fixed, weights[:k], strict=True):
        assert abs(c - 1000 * w / sum(weights[:k])) <= 1
    by_epochs = plan_counts(windows, weights[:k], epochs[:k], "epochs")
    assert by_epochs == [max(1, round((1.0 if e is None else e) * w)) for e, w in zip(epochs[:k], windows, strict=True)]


def _recipe(tensors: Path, **kw: object) -> Recipe:
    return Recipe.model_validate({
        "locations": [str(tensors)],
        "components": [{"name": "wiki", "sources": ["wiki"], "weight": 3, "epochs": 2.0},
                       {"name": "c4", "sources": ["c4"], "weight": 1}],
        **kw,
    })


def test_mixture_is_deterministic_and_follows_counts(corpus: tuple[Path, Path]) -> None:
    _, tensors = corpus
    recipe = _recipe(tensors)
    ds = recipe.dataset(context_length=16, seed=0)
    again = _recipe(tensors).dataset(context_length=16, seed=0)
    other = recipe.dataset(context_length=16, seed=1)
    assert sum(ds.counts) == len(ds)
    assert abs(ds.counts[0] - 3 * ds.counts[1]) <= 3
    picks = [ds.source_of(i) for i in range(len(ds))]
    assert picks == [again.source_of(i) for i in range(len(ds))]
    assert picks != [other.source_of(i) for i in range(len(ds))]
    per_component = Counter(c for c, _ in picks)
    assert [per_component[0], per_component[1]] == ds.counts
    wiki_windows = Counter(w for c, w in picks if c == 0)
    size = len(ds.components[0])
    assert set(wiki_windows.values()) <= {ds.counts[0] // size, ds.counts[0] // size + 1}
    item = ds[5]
    assert torch.equal(item["token_ids"], ds.components[picks[5][0]][picks[5][1]]["token_ids"])


def test_dataloader_and_distributed_sampler(corpus: tuple[Path, Path]) -> None:
    _, tensors = corpus
    ds = _recipe(tensors).dataset(context_length=16, seed=0)
    seen = []
    for rank in range(2):
        # spawn: a forked worker of a process that already ran Prefect flows (earlier tests) exits at
        # start-up in Prefect's at-fork handlers; training processes rarely run flows, see docs/loader.md
        sampler = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=False, drop_last=True)
        loader = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=1 if rank else 0,
                            multiprocessing_context="spawn" if rank else None)
        for batch in loader:
            assert batch["token_ids"].shape == (4, 16) and batch["token_ids"].dtype == torch.int64
            seen.extend(batch["token_ids"].tolist())
    assert len(seen) == 2 * (len(ds) // 2)


def test_mixing_tokenizers_is_refused(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    data, tensors = corpus
    other_tok = train_tokenizer(tmp_path / "other.json", vocab_size=280, seed=1)
    other = build_tensors(data, tmp_path / "other_tensors", other_tok)
    recipe = Recipe.model_validate({"components": [
        {"name": "a", "locations": [str(tensors)]}, {"name": "b", "locations": [str(other)]}]})
    with pytest.raises(TensorFormatError, match="different tokenizers"):
        recipe.dataset(context_length=16)
    wrong = _recipe(tensors, tokenizer_hash=open_tensor_set(other).tokenizer_hash)
    with pytest.raises(TensorFormatError, match="built with tokenizer"):
        wrong.dataset(context_length=16)


def test_tensor_disagreeing_with_metadata_is_refused(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    _, tensors = corpus
    copy = tmp_path / "copy"
    shutil.copytree(tensors, copy)
    file = open_tensor_set(copy).files[0]
    with open(copy / file.tokens_path, "ab") as handle:
        handle.write(b"\x01\x00")
    ds = WindowDataset(open_tensor_set(copy).files, 16)
    with pytest.raises(TensorFormatError, match="bytes but its index"):
        ds[0]
    meta = json.loads((copy / "metadata.json").read_text())
    meta["format_version"] = 99
    (copy / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(TensorFormatError, match="is not kinda-tensors v1"):
        open_tensor_set(copy)


def test_label_selection(corpus: tuple[Path, Path]) -> None:
    _, tensors = corpus
    ts = open_tensor_set(tensors)
    assert {f.source for f in ts.select(labels=["G3"])} == {"wiki"}
    assert {f.source for f in ts.select(labels=["G.1"])} == {"wiki", "c4"}


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 3000), seed=st.integers(0, 2**40), salt=st.integers(0, 100))
def test_permutation_is_a_bijection_and_vectorized_agrees(n: int, seed: int, salt: int) -> None:
    perm = Permutation(n, seed, salt)
    scalar = [perm(i) for i in range(n)]
    assert sorted(scalar) == list(range(n))
    assert perm.map(np.arange(n)).tolist() == scalar


def test_unused_fixture_helpers_build(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"x": (3, [])})
    assert len(list(tmp_path.rglob("*.parquet"))) == 1
