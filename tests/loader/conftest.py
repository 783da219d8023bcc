"""Fixtures for the loader tests: document shards and a tensor set (the tokenizer: ``toy_tokenizer``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.document import Document, make_doc_id
from core.shards import ShardLimits, ShardWriter
from loader.tensor_writer import TokenizeSettings, find_input_shards, tokenize_shard, write_metadata
from tests.toy import toy_texts as make_texts
from tests.toy import train_toy_tokenizer


def train_tokenizer(path: Path, vocab_size: int = 300, seed: int = 0) -> Path:
    """The toy tokenizer's recipe on another seed's texts (a tokenizer that differs from the session's)."""
    return train_toy_tokenizer(path, make_texts(200, seed=99 + seed), vocab_size)


def write_corpus(root: Path, sources: dict[str, tuple[int, list[str]]], per_shard: int = 40) -> None:
    for seed, (source, (n, labels)) in enumerate(sorted(sources.items())):
        with ShardWriter(root, root / "docs" / source / "en", source, source, "en", labels,
                         ShardLimits(max_docs=per_shard, row_group_docs=16)) as writer:
            for i, text in enumerate(make_texts(n, seed)):
                writer.write(Document(make_doc_id(source, str(i)), text, source, {"language": "en"}))


def build_tensors(data: Path, out: Path, tokenizer: Path, holdout: float = 0.0) -> Path:
    settings = TokenizeSettings(tokenizer=str(tokenizer), holdout_fraction=holdout, batch_docs=16)
    records = [tokenize_shard(data, shard, out, settings) for shard in find_input_shards(data)]
    write_metadata(out, records, settings)
    return out


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory, toy_tokenizer: Path) -> tuple[Path, Path]:
    """(data root with shards of two sources, tensor set built from it)."""
    base = tmp_path_factory.mktemp("corpus")
    write_corpus(base / "data", {"wiki": (120, ["G.1", "G.3"]), "c4": (90, ["G.1"])})
    return base / "data", build_tensors(base / "data", base / "tensors", toy_tokenizer)
