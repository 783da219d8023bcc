"""On-the-fly mode: tokenizing Parquet shards in worker processes gives the tensor path's windows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from core.shards import read_documents
from loader import Recipe
from loader.stream import ParquetDocuments

from .conftest import build_tensors, write_corpus  # type: ignore[import-not-found]


def test_parquet_documents_resume_inside_row_groups(corpus: tuple[Path, Path]) -> None:
    data, _ = corpus
    paths = sorted((data / "docs").rglob("*.parquet"))
    texts = [doc.text for path in paths for doc in read_documents(path)]
    reader = ParquetDocuments(paths, batch_rows=5)
    assert list(reader) == texts
    for cut in (0, 1, 17, 39, 40, 41, len(texts) - 1, len(texts)):
        head = ParquetDocuments(paths, batch_rows=7)
        for _ in range(cut):
            next(head)
        tail = ParquetDocuments(paths, batch_rows=3)
        tail.load_state_dict(head.state_dict())
        assert list(tail) == texts[cut:]


def test_on_the_fly_equals_pretokenized_with_worker_processes(toy_tokenizer: Path, tmp_path: Path) -> None:
    write_corpus(tmp_path / "data", {"wiki": (60, ["G.3"])}, per_shard=1000)  # one shard: same windows
    tensors = build_tensors(tmp_path / "data", tmp_path / "tensors", toy_tokenizer)
    recipe = Recipe.model_validate({
        "locations": [str(tensors)], "documents": str(tmp_path / "data"), "tokenizer": str(toy_tokenizer),
        "shuffle": False, "components": [{"name": "wiki"}]})
    with recipe.iterator(context_length=24, batch_size=4, mode="tensors") as pre:
        expected = [b["token_ids"] for b in pre]
    with recipe.iterator(context_length=24, batch_size=4, mode="documents", workers=2) as fly:
        first = [next(fly)["token_ids"] for _ in range(3)]
        state = fly.state_dict()
        rest = [b["token_ids"] for b in fly]
    assert len(expected) > 5
    assert all(torch.equal(a, b) for a, b in zip(first + rest, expected, strict=True))
    with recipe.iterator(context_length=24, batch_size=4, mode="documents", workers=1, state_dict=state) as again:
        resumed = [b["token_ids"] for b in again]
    assert all(torch.equal(a, b) for a, b in zip(resumed, rest, strict=True)) and len(resumed) == len(rest)
    assert np.unique(torch.cat(expected).numpy()).size > 20
