"""Tokenize flow: CLI end to end through Prefect (process workers), manifest rows, resume, loader."""

from __future__ import annotations

import collections
import json
import random
from pathlib import Path

import pytest

from core.document import Document, make_doc_id
from core.manifest import Manifest
from core.report import report_tables
from core.shards import ShardLimits, ShardWriter
from flows.tokenization import TokenizeConfig, main, parse_args
from kinda.cli_report import format_text
from loader.tensor_manifest import record_tensors
from loader.tensor_writer import find_input_shards, write_metadata
from tasks.tokenization import tokenize_task

WORDS = ["the", "river", "ran", "quiet", "in", "1999", "and", "2023", "under", "willows", "42", "angler"]


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 50))) for _ in range(n)]


@pytest.fixture
def data_root(tmp_path: Path, toy_tokenizer: Path) -> tuple[Path, Path]:
    """A data root with labeled shards of two sources recorded in its manifest, and a tokenizer."""
    out = tmp_path / "data"
    manifest = Manifest.for_output(out)
    for seed, (source, labels) in enumerate((("wikipedia", ["G1", "G2", "G3"]), ("c4", ["G1", "G2"]))):
        with ShardWriter(out, out / "labeled" / "llama" / source / "en", source, source, "en", labels,
                         ShardLimits(max_docs=30)) as writer:
            for i, text in enumerate(_texts(70, seed)):
                writer.write(Document(make_doc_id(source, str(i)), text, source, {"language": "en"}))
        manifest.record_shards("seed", [{**s.to_dict(), "inputs": []} for s in writer.finished], "cfg", "label", "t")
    return out, toy_tokenizer


def test_config_from_cli(data_root: tuple[Path, Path], tmp_path: Path) -> None:
    data, tokenizer = data_root
    config = parse_args(["--data", str(data), "--labels", "G3", "--tokenizer", str(tokenizer), "--no-split-digits",
                         "--out", str(tmp_path / "t"), "--set", "holdout_fraction=0.05"])
    assert config.labels == ["G3"] and not config.split_digits and config.holdout_fraction == 0.05
    moved = config.model_copy(update={"data": tmp_path / "elsewhere", "out": tmp_path / "x"})
    assert moved.config_hash() == config.config_hash()
    with pytest.raises(ValueError, match="no tokenizer"):
        TokenizeConfig().settings()


def test_task_function_and_manifest_rows(data_root: tuple[Path, Path], tmp_path: Path) -> None:
    data, tokenizer = data_root
    config = TokenizeConfig(data=data, tokenizer=str(tokenizer), out=tmp_path / "t", holdout_fraction=0.1)
    records = [tokenize_task.fn(data, s, config.out, config.settings()) for s in find_input_shards(data, ["G3"])]
    record_tensors(Manifest.for_output(data), config.out, "run-1", records, True)
    _, rows = Manifest.for_output(data).query("SELECT split, sum(tokens) FROM tensors GROUP BY 1 ORDER BY 1")
    expected = {split: sum(r["splits"][split]["tokens"] for r in records if split in r["splits"])
                for split in ("holdout", "train")}
    assert dict(rows) == expected


def test_report_tokens_are_per_tensor_root(data_root: tuple[Path, Path], tmp_path: Path) -> None:
    """Two tokenize runs into two roots (other holdout, other digit splitting): the report keeps
    each root's counts, equal to its metadata.json, whichever run came last (issue 25 item 7)."""
    data, tokenizer = data_root
    manifest = Manifest.for_output(data)
    roots = {"a": (0.1, True), "b": (0.4, False)}
    for name, (holdout, split_digits) in roots.items():
        config = TokenizeConfig(data=data, tokenizer=str(tokenizer), out=tmp_path / name, holdout_fraction=holdout,
                                split_digits=split_digits)
        records = [tokenize_task.fn(data, s, config.out, config.settings()) for s in find_input_shards(data)]
        write_metadata(config.out, records, config.settings())
        record_tensors(manifest, config.out, f"run-{name}", records, split_digits)
    tables = report_tables(manifest)
    assert "tokens" not in tables["sources"][0]  # no per-shard count that one root could overwrite
    reported: dict[tuple[str, str], int] = collections.Counter()
    for row in tables["tokens"]:
        reported[(Path(row["tensor_root"]).name, row["split"])] += row["tokens"]
    for name in roots:
        totals = json.loads((tmp_path / name / "metadata.json").read_text())["totals"]
        assert {split: reported[(name, split)] for split in totals} == {s: t["tokens"] for s, t in totals.items()}
    assert reported[("a", "holdout")] != reported[("b", "holdout")]  # the roots differ: both survived
    text = format_text(tables)
    assert str(tmp_path / "a") in text and str(tmp_path / "b") in text


@pytest.mark.prefect
def test_cli_end_to_end_with_process_workers(data_root: tuple[Path, Path], tmp_path: Path,
                                             prefect_api_url: str) -> None:
    data, tokenizer = data_root
    out = tmp_path / "tensors"
    argv = ["--data", str(data), "--labels", "G3", "--tokenizer", str(tokenizer), "--split-digits", "--out", str(out),
            "--workers", "2", "--runner", "process", "--megatron"]
    assert main(argv) == 0
    metadata = json.loads((out / "metadata.json").read_text())
    assert {s["source"] for s in metadata["shards"]} == {"wikipedia"}
    assert metadata["tokenizer"]["split_digits"] is True and metadata["labels"] == ["G3"]
    assert (out / "megatron" / "train_text_document.idx").exists()
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.tokens")}
    rerun = [*argv[:-5], "--runner", "thread", "--megatron"]
    assert main(rerun) == 0  # re-run on another runner: every shard skipped through its marker
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.tokens")} == before
    _, rows = Manifest.for_output(data).query("SELECT count(*), sum(tokens) FROM tensors WHERE split = 'train'")
    assert rows[0] == (len(metadata["shards"]), metadata["totals"]["train"]["tokens"])

    from loader import Recipe

    recipe = Recipe.model_validate({"locations": [str(out)], "components": [{"name": "wiki", "labels": ["G3"]}]})
    ds = recipe.dataset(context_length=16)
    assert len(ds) == sum(s["splits"]["train"]["tokens"] // 16 for s in metadata["shards"])
