"""End to end: the stack_code and reasoning flows on a real Prefect API, over samples and the shared real files."""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from pathlib import Path

import pytest

from core.manifest import Manifest
from core.shards import read_documents
from flows.reasoning import ReasoningConfig
from flows.reasoning import parse_args as reasoning_args
from flows.reasoning import run as run_reasoning
from flows.stack_code import StackCodeConfig
from flows.stack_code import parse_args as stack_args
from flows.stack_code import run as run_stack
from sources.samples import reasoning as reasoning_sample
from sources.samples import stack_code as stack_code_sample

pytestmark = pytest.mark.prefect


def shard_hashes(out: Path, source: str) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs" / source).rglob("*.parquet"))}


def drops(out: Path) -> dict[str, int]:
    _, rows = Manifest.for_output(out).query("SELECT reason, sum(count) FROM drops GROUP BY reason")
    return {reason: int(n) for reason, n in rows}


def test_stack_code_flow_on_sample_exports_with_resume(tmp_path: Path, prefect_api_url: str) -> None:
    inputs = stack_code_sample.write_sample_inputs(tmp_path / "in")
    out = tmp_path / "out"
    config = StackCodeConfig(inputs=inputs, out=out, runner="thread", workers=2, progress=False)
    summary = run_stack(config)
    assert not summary.failed and len(summary.records) == 3
    for record in summary.records:
        assert record.records_in == record.docs_kept + record.docs_dropped, record.input_key
    docs = [d for p in sorted((out / "docs" / "stack_code").rglob("*.parquet")) for d in read_documents(p)]
    # the same four files pass in both Parquet exports, three of them in the JSON lines: kept once each
    assert len(docs) == len({d.id for d in docs}) == 4
    assert Counter(d.language for d in docs) == {"python": 2, "shell": 1, "makefile": 1}
    assert sorted(p.name for p in (out / "docs" / "stack_code").iterdir()) == ["makefile", "python", "shell"]
    counted = drops(out)
    assert counted["license_lgpl-3.0"] == 2 and counted["license_none"] == 2 and counted["malformed_json"] == 1
    assert counted["duplicate_exact"] == 4 + 3  # staged 4 + 4 + 3 copies of the same 4 files
    first = shard_hashes(out, "stack_code")
    again = run_stack(config)
    assert again.kept == summary.kept and shard_hashes(out, "stack_code") == first


def test_reasoning_flow_on_sample(tmp_path: Path, prefect_api_url: str) -> None:
    sample = reasoning_sample.write_sample_inputs(tmp_path / "in")
    out = tmp_path / "out"
    config = reasoning_args(["--inputs", sample[0], "--out", str(out), "--runner", "thread", "--workers", "2"])
    summary = run_reasoning(config.model_copy(update={"progress": False}))
    assert not summary.failed and summary.kept == 4
    assert drops(out) == {"malformed_json": 1, "no_final_answer": 1}
    docs = [d for p in sorted((out / "docs" / "reasoning").rglob("*.parquet")) for d in read_documents(p)]
    assert Counter(d.meta["variant"] for d in docs) == {"main": 2, "socratic": 2}
    assert sorted(p.name for p in (out / "docs" / "reasoning").iterdir()) == ["main", "socratic"]
    assert all(d.text.count("<work>") == 1 and "<<" not in d.text for d in docs)
    first = shard_hashes(out, "reasoning")
    run_reasoning(config.model_copy(update={"progress": False}))
    assert shard_hashes(out, "reasoning") == first


def test_reasoning_flow_on_real_gsm8k(tmp_path: Path, prefect_api_url: str, realdata: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    shutil.copy(realdata / "reasoning" / "gsm8k_test.first500.jsonl", inputs / "test.jsonl")
    out = tmp_path / "out"
    config = reasoning_args(["--inputs", str(inputs / "test.jsonl"), "--out", str(out),
                             "--runner", "thread", "--workers", "2", "--annotations", "keep"])
    assert isinstance(config, ReasoningConfig) and config.annotations == "keep"
    summary = run_reasoning(config.model_copy(update={"progress": False}))
    assert not summary.failed and summary.kept == 500 and drops(out) == {}
    docs = [d for p in sorted((out / "docs" / "reasoning").rglob("*.parquet")) for d in read_documents(p)]
    assert len(docs) == 500 and all(d.meta["variant"] == "main" for d in docs)
    assert sum(d.text.count("<<") for d in docs) == 1582  # every calculator annotation kept, inside <work>


def test_stack_code_on_real_exports(tmp_path: Path, prefect_api_url: str, realdata: Path) -> None:
    code = realdata / "code"
    out = tmp_path / "out"
    config = stack_args(["--inputs", str(code / "*.parquet"), "--out", str(out), "--runner", "sequential"])
    summary = run_stack(config.model_copy(update={"progress": False}))
    assert not summary.failed and len(summary.records) == 2
    counted = drops(out)
    assert counted["license_lgpl-3.0"] == 4
    assert counted["duplicate_exact"] == 28  # every kept file of one export is in the other
    assert summary.kept == 28
