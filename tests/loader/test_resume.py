"""The resumption oracle: every iterator and transform resumes exactly, also with another world size.

Pipelines covered: tensors (IndexedSource over a MixtureDataset or a single component, with
repeat across epochs) and documents (ParquetDocuments -> Tokenize -> Chunk -> Mix), each under
Stride -> Batch -> Prefetch (on or off). Oracle: read k batches, save the state, read n more;
a fresh iterator loaded with the state reads the same n batches; and with another world size,
the ranks together continue the same global stream from the saved position.
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
def test_resume_oracle(corpus: tuple[Path, Path], tokenizer_file: Path, mode: str, mixture: bool,
                       context_length: int, batch_size: int, world_size: int, new_world_size: int,
                       new_batch_size: int, k: int, n: int, prefetch: int, repeat: bool, seed: int,
                       data: st.DataObject) -> None:
    data_root, tensors = corpus
    recipe = _recipe(data_root, tensors, tokenizer_file, mixture)
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
