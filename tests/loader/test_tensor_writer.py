"""Data tensors: exact tokens per document, EOS, holdout by hash, resume, bad input, Megatron export."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.document import Document, make_doc_id
from core.shards import ShardLimits, ShardWriter
from loader.tensor_writer import (
    EMPTY_SPLIT_NOTE,
    TensorFormatError,
    TokenizeSettings,
    _SplitWriter,
    export_megatron,
    export_megatron_splits,
    find_input_shards,
    in_holdout,
    open_tokens,
    read_megatron_index,
    read_metadata,
    split_paths,
    token_dtype,
    tokenize_shard,
    write_metadata,
)
from tests.toy import train_toy_tokenizer

WORDS = ["the", "of", "and", "river", "stone", "light", "market", "1999", "2023", "42", "paper", "north", "window", "7", "seven"]


def make_texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 60))) for _ in range(n)]


@pytest.fixture(scope="module")
def tokenizer_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_toy_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer.json", make_texts(200, seed=1))


def write_shards(root: Path, source: str, texts: list[str], labels: list[str], per_shard: int = 60) -> None:
    with ShardWriter(root, root / "docs" / source / "en", source, source, "en", labels,
                     ShardLimits(max_docs=per_shard, row_group_docs=25)) as writer:
        for i, text in enumerate(texts):
            writer.write(Document(make_doc_id(source, str(i)), text, source, {"language": "en"}))


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, list[str]]:
    texts = make_texts(150)
    write_shards(tmp_path / "data", "wiki", texts, ["G.1", "G.3"])
    write_shards(tmp_path / "data", "c4", make_texts(30, seed=5), ["G.1"])
    return tmp_path / "data", texts


def _settings(tokenizer_path: Path, **kw: object) -> TokenizeSettings:
    return TokenizeSettings(tokenizer=str(tokenizer_path), holdout_fraction=0.2, batch_docs=16, **kw)  # type: ignore[arg-type]


def test_label_selection_reads_shard_metadata(corpus: tuple[Path, list[str]]) -> None:
    data, _ = corpus
    assert {s.source for s in find_input_shards(data, ["G3"])} == {"wiki"}
    assert {s.source for s in find_input_shards(data, ["g.1"])} == {"wiki", "c4"}
    assert find_input_shards(data, ["G2"]) == []
    assert [s.source for s in find_input_shards(data, [], ["c4"])] == ["c4"]


def test_tokens_per_document_with_eos_and_holdout(
    corpus: tuple[Path, list[str]], tokenizer_path: Path, tmp_path: Path
) -> None:
    data, texts = corpus
    st_ = _settings(tokenizer_path)
    loaded = st_.load()
    out = tmp_path / "tensors"
    shards = find_input_shards(data, ["G3"])
    records = [tokenize_shard(data, s, out, st_) for s in shards]
    assert all(r["status"] == "done" for r in records)
    got: dict[str, list[list[int]]] = {"train": [], "holdout": []}
    for shard in shards:
        for split in got:
            tokens_path, docs_path = split_paths(out, split, shard)
            if tokens_path.exists():
                tokens, offsets = open_tokens(tokens_path, docs_path, token_dtype(loaded.vocab_size).str)
                got[split] += [tokens[a:b].tolist() for a, b in itertools.pairwise(offsets)]
    ids = [make_doc_id("wiki", str(i)) for i in range(len(texts))]
    for split, holdout in (("train", False), ("holdout", True)):
        expected = [[*loaded.tokenizer.encode(t, add_special_tokens=False).ids, loaded.eos_id]
                    for doc_id, t in zip(ids, texts, strict=True) if t and in_holdout(doc_id, 0.2) is holdout]
        assert got[split] == expected
    assert 0 < len(got["holdout"]) < len(got["train"])
    assert sum(r["docs_empty"] for r in records) == sum(1 for t in texts if not t)
    metadata = write_metadata(out, records, st_, ["G.3"])
    assert read_metadata(out)["tokenizer"]["hash"] == loaded.hash == metadata["tokenizer"]["hash"]
    assert metadata["tokenizer"]["split_digits"] is True and metadata["dtype"] == "<u2"
    assert metadata["totals"]["train"]["docs"] == len(got["train"])
    assert json.loads((out / "tokenizer.json").read_text()) == loaded.config


def test_rerun_skips_and_rebuild_is_byte_identical(
    corpus: tuple[Path, list[str]], tokenizer_path: Path, tmp_path: Path
) -> None:
    data, _ = corpus
    st_ = _settings(tokenizer_path)
    shard = find_input_shards(data, ["G3"])[0]
    first = tokenize_shard(data, shard, tmp_path / "a", st_)
    again = tokenize_shard(data, shard, tmp_path / "a", st_)
    assert again["seconds"] == first["seconds"]  # the marker was returned, nothing re-ran
    other = tokenize_shard(data, shard, tmp_path / "b", st_)
    for split in ("train", "holdout"):
        for key in ("tokens_path", "docs_path"):
            assert (tmp_path / "a" / first["splits"][split][key]).read_bytes() == \
                (tmp_path / "b" / other["splits"][split][key]).read_bytes()
    changed = tokenize_shard(data, shard, tmp_path / "a", _settings(tokenizer_path, split_digits=False))
    assert changed["tokenizer_hash"] != first["tokenizer_hash"]


def test_corrupt_shard_fails_cleanly(corpus: tuple[Path, list[str]], tokenizer_path: Path, tmp_path: Path) -> None:
    data, _ = corpus
    shard = find_input_shards(data, ["G3"])[0]
    path = data / shard.rel_path
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    record = tokenize_shard(data, shard, tmp_path / "t", _settings(tokenizer_path))
    assert record["status"] == "failed" and str(path) in record["error"]
    assert not [p for p in (tmp_path / "t").rglob("*") if p.is_file()]


def test_size_disagreeing_with_index_is_refused(
    corpus: tuple[Path, list[str]], tokenizer_path: Path, tmp_path: Path
) -> None:
    data, _ = corpus
    shard = find_input_shards(data, ["G3"])[0]
    tokenize_shard(data, shard, tmp_path, _settings(tokenizer_path))
    tokens_path, docs_path = split_paths(tmp_path, "train", shard)
    with open(tokens_path, "ab") as handle:
        handle.write(b"\x00\x00")
    with pytest.raises(TensorFormatError, match="bytes but its index"):
        open_tokens(tokens_path, docs_path, "<u2")
    np.save(docs_path, np.array([0, 5, 3], dtype=np.int64))
    with pytest.raises(TensorFormatError, match="not a valid document index"):
        open_tokens(tokens_path, docs_path, "<u2")


def test_megatron_export_round_trip(corpus: tuple[Path, list[str]], tokenizer_path: Path, tmp_path: Path) -> None:
    data, _ = corpus
    st_ = _settings(tokenizer_path)
    out = tmp_path / "tensors"
    records = [tokenize_shard(data, s, out, st_) for s in find_input_shards(data)]
    metadata = write_metadata(out, records, st_)
    result = export_megatron(out, tmp_path / "mega" / "corpus_text_document")
    index = read_megatron_index(tmp_path / "mega" / "corpus_text_document.idx")
    assert index["dtype"] == "<u2" and index["version"] == 1
    assert result["tokens"] == metadata["totals"]["train"]["tokens"] == int(index["sizes"].sum())
    assert index["doc_idx"].tolist() == list(range(len(index["sizes"]) + 1))
    tokens = np.fromfile(tmp_path / "mega" / "corpus_text_document.bin", dtype="<u2")
    eos = st_.load().eos_id
    for size, pointer in zip(index["sizes"], index["pointers"], strict=True):
        doc = tokens[pointer // 2: pointer // 2 + size]
        assert doc[-1] == eos and eos not in doc[:-1]


def test_empty_split_gets_no_megatron_pair_and_a_note(corpus: tuple[Path, list[str]], tokenizer_path: Path,
                                                      tmp_path: Path) -> None:
    """A holdout with no documents (0.1% of a small run) would be a 0-byte .bin that megatron-core
    cannot map: it is skipped, a pair left by an earlier run is removed, the metadata says why."""
    data, _ = corpus
    st_ = TokenizeSettings(tokenizer=str(tokenizer_path), holdout_fraction=0.0, batch_docs=16)
    out = tmp_path / "tensors"
    records = [tokenize_shard(data, s, out, st_) for s in find_input_shards(data)]
    write_metadata(out, records, st_)
    stale = [out / "megatron" / f"holdout_text_document.{ext}" for ext in ("bin", "idx")]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")  # what an earlier export of the empty split wrote
    assert export_megatron(out, out / "megatron" / "holdout_text_document", "holdout") is None
    assert not any(path.exists() for path in stale)

    notes = export_megatron_splits(out, out / "megatron")
    assert notes["holdout"] == {"skipped": EMPTY_SPLIT_NOTE} and not any(path.exists() for path in stale)
    train = notes["train"]
    assert train["prefix"] == "megatron/train_text_document" and train["sequences"] > 0
    index = read_megatron_index(out / "megatron" / "train_text_document.idx")
    assert int(index["sizes"].sum()) == train["tokens"] and len(index["sizes"]) == train["sequences"]
    assert (out / "megatron" / "train_text_document.bin").stat().st_size > 0


def test_token_dtype_boundary() -> None:
    assert token_dtype(65_536) == np.dtype("<u2")
    assert token_dtype(65_537) == np.dtype("<u4")


@settings(max_examples=50, deadline=None)
@given(docs=st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=20), min_size=1, max_size=20))
def test_split_writer_round_trip(tmp_path_factory: pytest.TempPathFactory, docs: list[list[int]]) -> None:
    path = tmp_path_factory.mktemp("w") / "x.tokens"
    writer = _SplitWriter(path, np.dtype("<u4"))
    for start in range(0, len(docs), 3):
        chunk = [[*d, 7] for d in docs[start:start + 3]]
        writer.write(np.asarray([t for d in chunk for t in d], dtype=np.int64), [len(d) for d in chunk])
    info = writer.finish()
    assert info is not None and info["docs"] == len(docs)
    tokens, offsets = open_tokens(path, path.with_name("x.docs.npy"), "<u4")
    assert [tokens[a:b].tolist() for a, b in itertools.pairwise(offsets)] == \
        [[*d, 7] for d in docs]


def test_holdout_is_a_stable_fraction() -> None:
    ids = [make_doc_id("x", str(i)) for i in range(20_000)]
    chosen = [i for i in ids if in_holdout(i, 0.001)]
    assert 5 <= len(chosen) <= 45
    assert chosen == [i for i in ids if in_holdout(i, 0.001)]
    assert not any(in_holdout(i, 0.0) for i in ids[:100])
