"""Fixtures for the loader tests: a small real BPE tokenizer, document shards and a tensor set."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from core.document import Document, make_doc_id
from core.shards import ShardLimits, ShardWriter
from loader.tensor_writer import TokenizeSettings, find_input_shards, tokenize_shard, write_metadata

WORDS = ["the", "of", "river", "stone", "light", "market", "1999", "2023", "42", "paper", "north",
         "window", "seven", "and", "a", "bridge", "城市", "café"]


def make_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 80))) for _ in range(n)]


def train_tokenizer(path: Path, vocab_size: int = 300, seed: int = 0) -> Path:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(make_texts(200, seed=99 + seed), trainer)
    tok.save(str(path))
    return path


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
def tokenizer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer.json")


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory, tokenizer_file: Path) -> tuple[Path, Path]:
    """(data root with shards of two sources, tensor set built from it)."""
    base = tmp_path_factory.mktemp("corpus")
    write_corpus(base / "data", {"wiki": (120, ["G.1", "G.3"]), "c4": (90, ["G.1"])})
    return base / "data", build_tensors(base / "data", base / "tensors", tokenizer_file)
