"""The resumption oracle: every iterator and transform resumes exactly, also with another world size.

Pipelines covered: tensors (IndexedSource over a MixtureDataset or a single component, with
repeat across epochs) and documents (ParquetDocuments -> Tokenize -> Chunk -> Mix), each under
Stride -> Batch -> Prefetch (on or off). Oracle: read k batches, save the state, read n more;
a fresh iterator loaded with the state reads the same n batches; and with another world size,
the ranks together continue the same global stream from the saved position.

Per-rank streaming (documents mode, ``per_rank=True``: each rank tokenizes only its own blocks)
has its own oracle: each rank's state resumes its exact batches on the same world size, and the
states of all ranks resume on another world size with every window served exactly once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loader import Recipe


def _key(batch: dict[str, Any]) -> list[tuple[Any, ...]]:
    fields = [batch[k].tolist() for k in sorted(batch)]
    return [tuple(json.dumps(f[i]) for f in fields) for i in range(len(fields[0]))]


def _take(iterator: Any, n: int) -> list[list[tuple[Any, ...]]]:
    out = []
    for _ in range(n):
        try:
            out.append(_key(next(iterator)))
        except StopIteration:
            break
    return out


def _recipe(data: Path, tensors: Path, tokenizer: Path, mixture: bool) -> Recipe:
    components = [{"name": "wiki", "sources": ["wiki"], "labels": ["G3"], "weight": 2, "epochs": 1.5}]
    if mixture:
        components.append({"name": "c4", "sources": ["c4"], "weight": 1})
    return Recipe.model_validate({"locations": [str(tensors)], "components": components,
                                  "documents": str(data), "tokenizer": str(tokenizer), "split_digits": True})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mode=st.sampled_from(["tensors", "documents"]),
    mixture=st.booleans(),
    context_length=st.sampled_from([8, 13, 32]),
    batch_size=st.integers(1, 3),
    world_size=st.integers(1, 3),
    new_world_size=st.integers(1, 4),
    new_batch_size=st.integers(1, 3),
    k=st.integers(0, 12),
    n=st.integers(1, 6),
    prefetch=st.sampled_from([0, 2]),
    repeat=st.booleans(),
    seed=st.integers(0, 3),
    data=st.data(),
)
def test_resume_oracle(corpus: tuple[Path, Path], toy_tokenizer: Path, mode: str, mixture: bool,
                       context_length: int, batch_size: int, world_size: int, new_world_size: int,
                       new_batch_size: int, k: int, n: int, prefetch: int, repeat: bool, seed: int,
                       data: st.DataObject) -> None:
    data_root, tensors = corpus
    recipe = _recipe(data_root, tensors, toy_tokenizer, mixture)
    rank = data.draw(st.integers(0, world_size - 1), label="rank")
    opts = {"context_length": context_length, "seed": seed, "mode": mode, "workers": 0,
            "repeat": repeat and mode == "tensors"}

    with recipe.iterator(batch_size=batch_size, rank=rank, world_size=world_size, prefetch=prefetch,
                         **opts) as it:
        _take(it, k)
        state = json.loads(json.dumps(it.state_dict()))  # states survive JSON
        expected = _take(it, n)
    with recipe.iterator(batch_size=batch_size, rank=rank, world_size=world_size, prefetch=prefetch,
                         state_dict=state, **opts) as resumed:
        assert _take(resumed, n) == expected

    # Elastic: the ranks of another world size continue the global stream from the same position.
    limit = 400
    with recipe.iterator(batch_size=1, prefetch=0, **opts) as whole:
        stream = [b[0] for b in _take(whole, limit)]
    consumed = 0 if not expected and k == 0 else None
    with recipe.iterator(batch_size=batch_size, rank=0, world_size=world_size, prefetch=0, **opts) as lead:
        got = _take(lead, k)
        consumed = len(got) * batch_size * world_size
        lead_state = lead.state_dict()
    for new_rank in range(new_world_size):
        with recipe.iterator(batch_size=new_batch_size, rank=new_rank, world_size=new_world_size,
                             prefetch=prefetch, state_dict=lead_state, **opts) as elastic:
            for step, batch in enumerate(_take(elastic, 3)):
                for b, item in enumerate(batch):
                    position = consumed + (step * new_batch_size + b) * new_world_size + new_rank
                    if position < len(stream):
                        assert item == stream[position]


# -- per-rank streaming (documents mode, per_rank=True) -------------------------------------------
def _items(iterator: Any, limit: int = 100_000) -> list[tuple[Any, ...]]:
    return [item for batch in _take(iterator, limit) for item in batch]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mixture=st.booleans(),
    context_length=st.sampled_from([8, 13, 32]),
    block_docs=st.sampled_from([3, 16, 64]),
    batch_size=st.integers(1, 3),
    world_size=st.integers(1, 3),
    new_world_size=st.integers(1, 4),
    k=st.integers(0, 10),
    n=st.integers(1, 5),
    prefetch=st.sampled_from([0, 2]),
    seed=st.integers(0, 3),
)
def test_per_rank_resume_oracle(corpus: tuple[Path, Path], toy_tokenizer: Path, mixture: bool,
                                context_length: int, block_docs: int, batch_size: int, world_size: int,
                                new_world_size: int, k: int, n: int, prefetch: int, seed: int) -> None:
    """Same world size: each rank's own state resumes its exact batches. Another world size: the
    states of all ranks resume the job, and every window of the stream is served exactly once."""
    data_root, tensors = corpus
    recipe = _recipe(data_root, tensors, toy_tokenizer, mixture).model_copy(update={"block_docs": block_docs})
    opts = {"context_length": context_length, "seed": seed, "mode": "documents", "workers": 0, "per_rank": True}
    with recipe.iterator(batch_size=1, prefetch=0, **opts) as whole:
        everything = sorted(_items(whole))  # a multiset: a short document can repeat a window
    assert everything

    seen, states = [], []
    for rank in range(world_size):
        with recipe.iterator(batch_size=batch_size, rank=rank, world_size=world_size, prefetch=prefetch,
                             **opts) as it:
            seen += [item for batch in _take(it, k) for item in batch]
            state = json.loads(json.dumps(it.state_dict()))
            expected = _take(it, n)
        with recipe.iterator(batch_size=batch_size, rank=rank, world_size=world_size, prefetch=prefetch,
                             state_dict=state, **opts) as resumed:
            assert _take(resumed, n) == expected
        states.append(state)

    for new_rank in range(new_world_size):
        with recipe.iterator(batch_size=1, rank=new_rank, world_size=new_world_size, prefetch=prefetch,
                             state_dict=states, **opts) as elastic:
            seen += _items(elastic)
    assert sorted(seen) == everything


def test_per_rank_streaming_tokenizes_only_each_ranks_share(corpus: tuple[Path, Path], toy_tokenizer: Path,
                                                            monkeypatch: Any) -> None:
    import loader.stream

    data_root, tensors = corpus
    recipe = _recipe(data_root, tensors, toy_tokenizer, True).model_copy(update={"block_docs": 8})
    counted: list[int] = []
    real = loader.stream.encode

    def counting(texts: list[str]) -> Any:
        counted.append(len(texts))
        return real(texts)

    monkeypatch.setattr(loader.stream, "encode", counting)
    total_docs = 120 + 90
    per_rank, windows = [], 0
    for rank in range(3):
        counted.clear()
        with recipe.iterator(context_length=16, batch_size=1, rank=rank, world_size=3, mode="documents",
                             workers=0, per_rank=True) as it:
            windows += len(_items(it))
        per_rank.append(sum(counted))
    assert sum(per_rank) == total_docs and max(per_rank) < total_docs / 2  # each document tokenized once, by one rank
    counted.clear()
    with recipe.iterator(context_length=16, batch_size=1, rank=0, world_size=3, mode="documents", workers=0) as it:
        _items(it)
    assert sum(counted) >= total_docs  # the global stream: every rank tokenizes everything
    assert windows > 0


def test_per_rank_state_of_one_rank_is_refused_on_another_world_size(corpus: tuple[Path, Path],
                                                                     toy_tokenizer: Path) -> None:
    import pytest

    data_root, tensors = corpus
    recipe = _recipe(data_root, tensors, toy_tokenizer, False).model_copy(update={"block_docs": 8})
    opts = {"context_length": 8, "mode": "documents", "workers": 0, "per_rank": True, "batch_size": 2}
    with recipe.iterator(rank=1, world_size=2, **opts) as it:
        next(it)
        state = it.state_dict()
    with pytest.raises(ValueError, match="pass the states of all 2 ranks"):
        recipe.iterator(rank=0, world_size=3, state_dict=state, **opts)
    with pytest.raises(ValueError, match="all 2 ranks"):
        recipe.iterator(rank=0, world_size=3, state_dict=[state], **opts)
    with pytest.raises(ValueError, match="per_rank"):
        recipe.iterator(context_length=8, mode="documents", workers=0, batch_size=2, state_dict=state)
