"""Corrupt local tensors are refused (issue 11.7): ids past the vocabulary on open, checksums by verify."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from loader import Recipe, verify_tensor_set
from loader.tensor_writer import TensorFormatError
from loader.tensors import check_token_ids, open_tensor_set


def _copy(tensors: Path, target: Path) -> tuple[Path, dict]:
    shutil.copytree(tensors, target)
    return target, json.loads((target / "metadata.json").read_text())


def test_ids_past_the_vocabulary_are_refused_on_open(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    _, tensors = corpus
    root, meta = _copy(tensors, tmp_path / "set")
    vocab = meta["tokenizer"]["vocab_size"]
    victim = open_tensor_set(root).files[1]
    path = root / victim.tokens_path
    ids = np.fromfile(path, dtype=meta["dtype"])
    ids[len(ids) // 2] = 0xFFFF  # same size, same index: only the id check can tell
    ids.tofile(path)
    with pytest.raises(TensorFormatError, match=rf"{path.name}: token id 65535 at position {len(ids) // 2} "
                                                rf"is past the vocabulary \({vocab} ids\)"):
        open_tensor_set(root).files[1].open()
    recipe = Recipe.model_validate({"locations": [str(root)], "components": [{"name": "all"}]})
    with pytest.raises(TensorFormatError, match="past the vocabulary"), \
            recipe.iterator(context_length=8, batch_size=4, prefetch=0) as it:
        list(it)
    assert not verify_tensor_set(root).ok


def test_id_check_blocks_and_edges() -> None:
    ids = np.arange(70_000, dtype=np.uint32) % 1000
    check_token_ids(ids, 1000, "x")  # every id < vocab
    ids[-1] = 1000
    with pytest.raises(TensorFormatError, match="position 69999"):
        check_token_ids(ids, 1000, "x")
    check_token_ids(np.full(10, 0xFFFF, dtype=np.uint16), 1 << 16, "x")  # every uint16 fits a 65,536 vocab


def test_verify_finds_every_kind_of_damage(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    _, tensors = corpus
    clean = verify_tensor_set(tensors)
    files = open_tensor_set(tensors).files
    assert clean.ok and clean.files == 2 * len(files) and clean.bytes > 0

    root, meta = _copy(tensors, tmp_path / "set")
    shards = meta["shards"]
    edited = shards[0]["splits"]["train"]
    edited["tokens_sha256"] = "0" * 64  # an edited checksum is no longer ignored
    (root / "metadata.json").write_text(json.dumps(meta))
    flipped = root / shards[1]["splits"]["train"]["tokens_path"]
    data = bytearray(flipped.read_bytes())
    data[2], data[3] = data[0], data[1]  # a valid id, same size: only the checksum tells
    flipped.write_bytes(bytes(data))
    (root / shards[2]["splits"]["train"]["docs_path"]).unlink()
    cut = root / shards[3]["splits"]["train"]["tokens_path"]
    cut.write_bytes(cut.read_bytes()[:-2])
    report = verify_tensor_set(root)
    text = "\n".join(report.problems)
    assert len(report.problems) == 4, text
    assert f"{edited['tokens_path']}: SHA256 differs" in text
    assert f"{flipped.name}: SHA256 differs" in text
    assert "docs.npy: missing" in text
    assert f"{cut.name}: {cut.stat().st_size} bytes, metadata.json says" in text
    assert verify_tensor_set(root, checksums=False, check_ids=False).problems == report.problems[2:]
    with pytest.raises(ValueError, match="local"):
        verify_tensor_set("http://127.0.0.1:9/x")


def test_id_bound_follows_a_tokenizer_with_gaps(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    _, tensors = corpus
    root, meta = _copy(tensors, tmp_path / "set")
    vocab = meta["tokenizer"]["vocab_size"]
    config = json.loads((root / "tokenizer.json").read_text())
    config["added_tokens"].append({"id": vocab + 10, "content": "<gap>", "single_word": False, "lstrip": False,
                                   "rstrip": False, "normalized": False, "special": True})
    (root / "tokenizer.json").write_text(json.dumps(config))
    victim = open_tensor_set(root).files[0]
    ids = np.fromfile(root / victim.tokens_path, dtype=meta["dtype"])
    ids[0] = vocab + 10  # a real id of this tokenizer, past its count of ids
    ids.tofile(root / victim.tokens_path)
    open_tensor_set(root).files[0].open()
    ids[0] = vocab + 11
    ids.tofile(root / victim.tokens_path)
    with pytest.raises(TensorFormatError, match=rf"past the vocabulary \({vocab + 11} ids\)"):
        open_tensor_set(root).files[0].open()
