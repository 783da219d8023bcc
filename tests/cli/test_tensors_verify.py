"""``kinda tensors verify DIR`` on a real tensor set (the session's BPE tokenizer, shards tokenized by the writer)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.document import Document, make_doc_id
from core.shards import ShardLimits, ShardWriter
from kinda.cli import main
from loader.tensor_writer import TokenizeSettings, find_input_shards, tokenize_shard, write_metadata

REPO = Path(__file__).resolve().parents[2]
WORDS = ["the", "of", "river", "stone", "light", "market", "1999", "paper", "north", "window", "城市", "café"]


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 60))) for _ in range(n)]


@pytest.fixture(scope="module")
def tensors(tmp_path_factory: pytest.TempPathFactory, toy_tokenizer: Path) -> Path:
    base = tmp_path_factory.mktemp("tensors")
    data = base / "data"
    with ShardWriter(data, data / "docs" / "wiki" / "en", "wiki", "wiki", "en", ["G.1"],
                     ShardLimits(max_docs=40, row_group_docs=16)) as writer:
        for i, text in enumerate(_texts(100, 2)):
            writer.write(Document(make_doc_id("wiki", str(i)), text, "wiki", {"language": "en"}))
    settings = TokenizeSettings(tokenizer=str(toy_tokenizer), holdout_fraction=0.0, batch_docs=16)
    out = base / "set"
    write_metadata(out, [tokenize_shard(data, shard, out, settings) for shard in find_input_shards(data)], settings)
    return out


def _verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    status = main(["tensors", "verify", *argv])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def test_intact_set_exits_0(tensors: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, lines, err = _verify(capsys, str(tensors))
    assert status == 0 and err == "" and len(lines) == 1
    assert lines[0].startswith(f"{tensors}: ") and lines[0].endswith("(sizes, checksums and token ids): ok")


def test_each_damaged_file_is_one_line_and_exit_1(tensors: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(shutil.copytree(tensors, tmp_path / "set"))
    meta = json.loads((root / "metadata.json").read_text())
    first, second = (shard["splits"]["train"] for shard in meta["shards"][:2])
    flipped = root / first["tokens_path"]
    ids = np.fromfile(flipped, dtype=meta["dtype"])
    ids[0] = 1 if ids[0] == 0 else 0  # a valid id, same size: only the SHA256 tells
    ids.tofile(flipped)
    (root / second["docs_path"]).unlink()
    status, lines, err = _verify(capsys, str(root))
    assert status == 1 and err == ""
    assert len(lines) == 3, lines
    assert lines[0] == f"{flipped}: SHA256 differs from metadata.json (tokens_sha256)"
    assert lines[1] == f"{root / second['docs_path']}: missing"
    assert lines[2].endswith("checksums and token ids): 2 problem(s)")
    status, lines, _ = _verify(capsys, str(root), "--no-checksums")
    assert status == 1 and lines[:-1] == [f"{root / second['docs_path']}: missing"]


def test_not_a_tensor_set_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "kinda.cli", "tensors", "verify", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [f"kinda: {tmp_path}: {tmp_path / 'metadata.json'}: no metadata.json "
                                                "(not a tensor set)"]
