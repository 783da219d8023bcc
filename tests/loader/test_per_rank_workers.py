"""Per-rank streaming with tokenizer worker processes (issue 15.5): the resumption oracle in
test_resume.py runs in-process (``workers=0``); here the same rank, with its blocks tokenized ahead
by two worker processes, serves the same windows and resumes from a mid-stream state exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loader import Recipe


def _items(iterator: Any, limit: int | None = None) -> list[str]:
    out = []
    for batch in iterator:
        out += [json.dumps([batch[k][i].tolist() for k in sorted(batch)]) for i in range(len(batch["token_ids"]))]
        if limit is not None and len(out) >= limit:
            break
    return out


def test_per_rank_with_worker_processes_equals_in_process_and_resumes(corpus: tuple[Path, Path],
                                                                      toy_tokenizer: Path) -> None:
    data_root, tensors = corpus
    recipe = Recipe.model_validate({
        "locations": [str(tensors)], "documents": str(data_root), "tokenizer": str(toy_tokenizer),
        "split_digits": True, "block_docs": 8,
        "components": [{"name": "wiki", "sources": ["wiki"], "weight": 2}, {"name": "c4", "sources": ["c4"]}]})
    opts: dict[str, Any] = {"context_length": 16, "batch_size": 1, "rank": 1, "world_size": 2, "mode": "documents",
                            "per_rank": True, "prefetch": 2}
    with recipe.iterator(workers=0, **opts) as it:
        expected = _items(it)
    assert len(expected) > 40
    with recipe.iterator(workers=2, **opts) as it:
        head = _items(it, 25)
        state = json.loads(json.dumps(it.state_dict()))
    assert head == expected[:25]
    with recipe.iterator(workers=2, state_dict=state, **opts) as it:
        assert _items(it) == expected[25:]
