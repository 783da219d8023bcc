"""Tokenize any Parquet / JSONL dataset: reading, drops, holdout, host shares, resume, the CLI flow.

Datasets are real files: Parquet written by pyarrow (several row groups), JSONL.gz by gzip,
JSONL.zst by zstandard; the tokenizer is the session's real BPE (``toy_tokenizer``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from tokenizers import Tokenizer

from core.manifest import Manifest
from loader.tensor_writer import TokenizeSettings, in_holdout, open_tokens
from sources.formats.datasets_text import (
    DatasetFile,
    DatasetInputError,
    DropLog,
    ReadOptions,
    expand_inputs,
    host_of,
    host_share,
    read_texts,
)
from tasks.tokenize_external import ExternalJob, tokenize_file
from tests.fixed import gzip_text

WORDS = ["the", "river", "ran", "quiet", "in", "1999", "and", "2023", "under", "willows", "42", "angler", "é"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40)))


def write_dataset(root: Path, files: int = 3, rows: int = 300) -> dict[str, Any]:
    """``root/data/part-*.parquet`` (ids, some null/empty texts, 3 row groups each), a JSONL.gz with
    bad lines, a JSONL.zst, a Parquet file without the text column and a README that is skipped."""
    rng = random.Random(1)
    expected: dict[str, Any] = {"texts": {}, "drops": {}}
    (root / "data").mkdir(parents=True)
    for f in range(files):
        ids, texts = [], []
        for r in range(rows):
            ids.append(f * 100_000 + r)
            texts.append(None if r % 97 == 5 else "" if r % 89 == 7 else _text(rng))
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "text": pa.array(texts, pa.string())}),
                       root / "data" / f"part-{f:03d}.parquet", row_group_size=rows // 3)
        expected["texts"].update({str(i): t for i, t in zip(ids, texts, strict=True) if t})
    lines = [json.dumps({"id": f"j{r}", "text": _text(rng)}) for r in range(50)]
    lines[3] = '{"id": "j3", "text": '                       # cut JSON
    lines[4] = json.dumps({"id": "j4", "body": "no text key"})
    lines[5] = json.dumps({"id": "j5", "text": None})
    lines[6] = json.dumps(["not", "an", "object"])
    lines[7] = json.dumps({"id": "j7", "text": 12})
    (root / "data" / "extra").mkdir()
    with gzip_text(root / "data" / "extra" / "lines.jsonl.gz") as handle:
        handle.write("\n".join(lines) + "\n")
    for r, line in enumerate(lines):
        obj = json.loads(line) if r not in (3,) else None
        if isinstance(obj, dict) and isinstance(obj.get("text"), str):
            expected["texts"][obj["id"]] = obj["text"]
    zst = [json.dumps({"id": f"z{r}", "text": _text(rng)}) for r in range(40)]
    (root / "data" / "extra" / "more.jsonl.zst").write_bytes(
        zstandard.ZstdCompressor().compress(("\n".join(zst) + "\n").encode()))
    expected["texts"].update({f"z{r}": json.loads(x)["text"] for r, x in enumerate(zst)})
    pq.write_table(pa.table({"content": ["a", "b", "c"]}), root / "data" / "extra" / "no_text.parquet")
    (root / "data" / "README.md").write_text("not a dataset file")
    return expected


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, toy_tokenizer: Path) -> tuple[Path, Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("ext")
    expected = write_dataset(root / "ds")
    return root / "ds", toy_tokenizer, expected


def _job(out: Path, tokenizer: Path, fraction: float = 0.1, id_column: str | None = "id") -> ExternalJob:
    return ExternalJob(out, "fineweb", TokenizeSettings(tokenizer=str(tokenizer), holdout_fraction=fraction,
                                                        batch_docs=64),
                       ReadOptions(id_column=id_column, batch_rows=64))


def _documents(out: Path, info: dict[str, Any], dtype: str) -> list[np.ndarray]:
    tokens, offsets = open_tokens(out / info["tokens_path"], out / info["docs_path"], dtype)
    return [np.asarray(tokens[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]


def test_expand_inputs_relative_paths_and_formats(dataset: tuple[Path, Path, dict[str, Any]]) -> None:
    ds, _, _ = dataset
    files = expand_inputs([f"{ds}/**/*.parquet", f"{ds}/data/extra/*.jsonl*"])
    assert [(f.rel, f.fmt) for f in files] == [  # relative to each pattern's base (before the first glob)
        ("data/extra/no_text.parquet", "parquet"), ("data/part-000.parquet", "parquet"),
        ("data/part-001.parquet", "parquet"), ("data/part-002.parquet", "parquet"),
        ("lines.jsonl.gz", "jsonl"), ("more.jsonl.zst", "jsonl")]
    whole = expand_inputs([str(ds)])  # a folder: every dataset file below it, README skipped
    assert [f.rel for f in whole] == ["data/extra/lines.jsonl.gz", "data/extra/more.jsonl.zst",
                                      "data/extra/no_text.parquet", "data/part-000.parquet",
                                      "data/part-001.parquet", "data/part-002.parquet"]
    (ds.parent / "copy").mkdir(exist_ok=True)
    (ds.parent / "copy" / "part-000.parquet").write_bytes((ds / "data" / "part-000.parquet").read_bytes())
    with pytest.raises(DatasetInputError, match="same relative path"):
        expand_inputs([f"{ds}/data/*.parquet", f"{ds.parent}/copy/*.parquet"])


def test_host_shares_partition_and_stay_put(dataset: tuple[Path, Path, dict[str, Any]]) -> None:
    names = [f"shard-{i:05d}.parquet" for i in range(400)]
    files = [DatasetFile(n, n, "parquet") for n in names]
    shares = [host_share(files, 3, i) for i in range(3)]
    assert sorted(f.rel for share in shares for f in share) == sorted(names)   # a partition
    assert all(90 < len(share) < 180 for share in shares)                      # roughly even
    more = files + [DatasetFile(f"new-{i}.parquet", f"new-{i}.parquet", "parquet") for i in range(50)]
    assert [f.rel for f in host_share(more, 3, 1) if f.rel in names] == [f.rel for f in shares[1]]
    assert host_of("a/b.parquet", 7) == host_of("a/b.parquet", 7)
    with pytest.raises(DatasetInputError, match="host index 3"):
        host_share(files, 3, 3)


def test_parquet_file_tokens_drops_and_holdout(dataset: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    ds, tokenizer, _ = dataset
    file = next(f for f in expand_inputs([str(ds)]) if f.rel == "data/part-001.parquet")
    job = _job(tmp_path / "t", tokenizer, fraction=0.1)
    rec = tokenize_file(file, job)
    assert rec["status"] == "done"
    drops = {d["reason"]: d["count"] for d in rec["drops"]}
    assert drops == {"null-text": 4, "empty-text": 4}
    assert rec["records_in"] == 300 == rec["docs_kept"] + sum(drops.values())
    assert any(e["record"] == "data/part-001.parquet#5" and e["reason"] == "null-text" for e in rec["drop_examples"])
    # every kept row is in exactly one split, decoded back to its text; holdout = in_holdout(id)
    tok = Tokenizer.from_file(str(tokenizer))
    ids = pq.read_table(file.location).column("id").to_pylist()
    texts = pq.read_table(file.location).column("text").to_pylist()
    kept = [(str(i), t) for i, t in zip(ids, texts, strict=True) if t]
    for split, want in (("train", False), ("holdout", True)):
        docs = _documents(job.out, rec["splits"][split], rec["dtype"])
        chosen = [t for i, t in kept if in_holdout(i, 0.1) is want]
        assert [tok.decode(d[:-1].tolist()) for d in docs] == chosen
        assert all(d[-1] == tok.token_to_id("<|endoftext|>") for d in docs)
    assert 10 < rec["splits"]["holdout"]["docs"] < 50


def test_jsonl_bad_lines_are_counted_drops(dataset: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    ds, tokenizer, _ = dataset
    file = next(f for f in expand_inputs([str(ds)]) if f.rel.endswith("lines.jsonl.gz"))
    rec = tokenize_file(file, _job(tmp_path / "t", tokenizer))
    drops = {d["reason"]: d["count"] for d in rec["drops"]}
    assert drops == {"bad-json": 1, "missing-column:text": 1, "null-text": 1, "not-object": 1,
                     "text-not-string": 1}
    assert rec["records_in"] == 50 and rec["docs_kept"] == 45
    assert {e["record"] for e in rec["drop_examples"]} == {f"data/extra/lines.jsonl.gz#{r}" for r in range(3, 8)}
    # a file without the text column: all rows dropped under one reason, no tensor, not a crash
    missing = next(f for f in expand_inputs([str(ds)]) if f.rel.endswith("no_text.parquet"))
    rec = tokenize_file(missing, _job(tmp_path / "t", tokenizer))
    assert rec["status"] == "done" and rec["splits"] == {}
    assert rec["drops"] == [{"step": "read", "reason": "missing-column:text", "count": 3}]


def test_oversized_lines_and_texts_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"text": "x" * 5000}) + "\n" + json.dumps({"text": "ok"}) + "\n"
                    + json.dumps({"text": "y" * 300}) + "\n")
    log = DropLog()
    batches = list(read_texts(DatasetFile(str(path), "big.jsonl", "jsonl"),
                              ReadOptions(max_line_bytes=1000, max_text_chars=200), log))
    assert [b.texts for b in batches] == [["ok"]] and [b.keys for b in batches] == [["big.jsonl#1"]]
    assert dict(log.counts) == {"line-too-large": 1, "text-too-large": 1}


def test_truncated_file_fails_alone_without_partial_files(dataset: tuple[Path, Path, dict[str, Any]],
                                                         tmp_path: Path) -> None:
    ds, tokenizer, _ = dataset
    whole = (ds / "data" / "extra" / "lines.jsonl.gz").read_bytes()
    cut = tmp_path / "in" / "cut.jsonl.gz"
    cut.parent.mkdir()
    cut.write_bytes(whole[: len(whole) // 2])
    out = tmp_path / "t"
    rec = tokenize_file(expand_inputs([str(cut)])[0], _job(out, tokenizer))
    assert rec["status"] == "failed" and str(cut) in rec["error"]
    assert not [p for p in out.rglob("*") if p.is_file()]  # no tensor, no marker, no temporary file


def test_resume_skips_finished_file_and_redoes_changed_one(dataset: tuple[Path, Path, dict[str, Any]],
                                                           tmp_path: Path) -> None:
    ds, tokenizer, _ = dataset
    src = tmp_path / "in" / "a.parquet"
    src.parent.mkdir()
    src.write_bytes((ds / "data" / "part-000.parquet").read_bytes())
    file = expand_inputs([str(src)])[0]
    job = _job(tmp_path / "t", tokenizer, id_column=None)
    first = tokenize_file(file, job)
    tokens = job.out / first["splits"]["train"]["tokens_path"]
    stamp = tokens.stat().st_mtime_ns
    assert tokenize_file(file, job) == first and tokens.stat().st_mtime_ns == stamp
    # no id column: the holdout key is file#row, so it is stable too
    holdout = _documents(job.out, first["splits"]["holdout"], first["dtype"])
    assert len(holdout) == sum(in_holdout(f"a.parquet#{r}", 0.1) for r in range(300)
                               if r % 97 != 5 and r % 89 != 7)
    pq.write_table(pq.read_table(src).slice(0, 100), src)  # the input changed: tokenized again
    again = tokenize_file(file, job)
    assert again["input_sha256"] != first["input_sha256"] and again["records_in"] == 100


@pytest.mark.prefect
def test_cli_single_host_run_manifest_and_loader(dataset: tuple[Path, Path, dict[str, Any]], tmp_path: Path,
                                                 prefect_api_url: str) -> None:
    from flows.tokenization import main

    ds, tokenizer, expected = dataset
    out = tmp_path / "tensors"
    argv = ["--inputs", f"{ds}/**/*.parquet", "--inputs", f"{ds}/**/*.jsonl.*", "--text-column", "text",
            "--id-column", "id", "--tokenizer", str(tokenizer), "--source", "fineweb", "--out", str(out),
            "--runner", "thread", "--workers", "2", "--set", "holdout_fraction=0.05"]
    assert main(argv) == 0
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["hosts"]["count"] == 1 and len(metadata["hosts"]["files"]) == 6
    assert metadata["totals"]["train"]["docs"] + metadata["totals"]["holdout"]["docs"] == len(expected["texts"])
    manifest = Manifest.for_output(out)
    _, rows = manifest.query("SELECT sum(records_in), sum(docs_kept), sum(docs_dropped) FROM latest_inputs")
    records_in, kept, dropped = rows[0]
    assert records_in == kept + dropped == 3 * 300 + 50 + 40 + 3 and kept == len(expected["texts"])
    _, rows = manifest.query("SELECT reason, sum(count) FROM latest_drops GROUP BY 1 ORDER BY 1")
    assert dict(rows) == {"bad-json": 1, "empty-text": 12, "missing-column:text": 4, "not-object": 1,
                          "null-text": 13, "text-not-string": 1}
    _, rows = manifest.query("SELECT split, sum(docs), count(*) FROM tensors GROUP BY 1 ORDER BY 1")
    assert {r[0]: r[1] for r in rows} == {s: metadata["totals"][s]["docs"] for s in ("holdout", "train")}
    _, rows = manifest.query("SELECT count(*) FROM errors WHERE record = 'data/extra/lines.jsonl.gz#3'")
    assert rows[0][0] == 1  # the dropped record is named
    from loader import Recipe

    recipe = Recipe.model_validate({"locations": [str(out)], "components": [{"name": "fw", "sources": ["fineweb"]}]})
    ds_train = recipe.dataset(context_length=8)
    assert len(ds_train) == sum(s["splits"].get("train", {}).get("tokens", 0) // 8 for s in metadata["shards"])


@pytest.mark.prefect
def test_collect_reports_unreachable_host_and_mismatched_shares(dataset: tuple[Path, Path, dict[str, Any]],
                                                                tmp_path: Path, prefect_api_url: str) -> None:
    from flows.tokenization import main

    ds, tokenizer, _ = dataset
    common = ["--inputs", f"{ds}/**/*.parquet", "--tokenizer", str(tokenizer), "--runner", "thread"]
    share = tmp_path / "share0"
    assert main([*common, "--host-count", "2", "--host-index", "0", "--out", str(share)]) == 0
    # host "sh" answers (remote "{host} -c" runs `sh -c cat ...`); host "false" cannot be reached
    launcher = tmp_path / "launcher"
    argv = [*common, "--hosts", "sh,false", "--remote", "{host} -c", "--host-out", str(share),
            "--out", str(launcher), "--collect-only"]
    assert main(argv) == 1
    hosts = json.loads((launcher / "hosts.json").read_text())
    assert hosts["problems"] == [] and hosts["hosts"][0]["error"] is None
    assert "false: cannot read" in hosts["hosts"][1]["error"]
    _, rows = Manifest.for_output(launcher).query("SELECT DISTINCT tensor_root FROM tensors")
    assert rows == [(f"sh:{share}",)]
    _, rows = Manifest.for_output(launcher).query("SELECT status FROM runs")
    assert rows == [("partial",)]
    # the same root collected as both hosts: index mismatch and files on the wrong host are problems
    argv = [*common, "--hosts", "a,b", "--remote", "sh -c", "--host-out", str(share),
            "--out", str(tmp_path / "mixed"), "--collect-only"]
    assert main(argv) == 1
    problems = json.loads((tmp_path / "mixed" / "hosts.json").read_text())["problems"]
    assert any(p == "b: its run was host 0 of 2, not 1 of 2" for p in problems)
    assert any(p.startswith("b: ") and "belongs to host 0" in p for p in problems)
    assert any("is on both a and b" in p for p in problems)
