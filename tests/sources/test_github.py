"""Tests for the GitHub reader: local clones (real stdlib code) and BigQuery-export rows."""

from __future__ import annotations

import hashlib
import json
import shutil
import sysconfig
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.document import Document, Drop, InputSpec
from core.pipeline import RunContext, stage_input
from core.shards import ShardLimits
from core.steps import StepStats, run_steps
from sources.github import (
    EXTENSION_LANGUAGES,
    GithubRecipe,
    GithubSettings,
    is_binary,
    language_for,
    repo_list_payload,
    skip_reason,
)
from tests.fixed import gzip_text

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MIT = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this software.\n"
       "The above copyright notice and this permission notice shall be included in all copies.\n")


def make_clone(root: Path, license_text: str | None = MIT) -> Path:
    """A fake clone: real stdlib modules, a licence, a binary, a certificate, a symlink, .git."""
    shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    if license_text is not None:
        (root / "LICENSE").write_text(license_text)
    (root / "json" / "blob.py").write_bytes(b"x = 1\x00\x01\x02")
    (root / "server.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    (root / "latin1.c").write_bytes("/* caf\xe9 */ int a;\n".encode("latin-1"))
    (root / "link.py").symlink_to(STDLIB / "os.py")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:octo/demo.git\n')
    return root


def read_all(recipe: GithubRecipe, path: Path) -> tuple[list[Document], StepStats]:
    stats = StepStats()
    docs = list(run_steps(recipe.read(InputSpec(str(path), path, path.name)), recipe.steps(), stats))
    return docs, stats


def repo_list(tmp_path: Path, roots: list[Path]) -> Path:
    path = tmp_path / "batch.repos.json"
    path.write_text(json.dumps(repo_list_payload(roots)))
    return path


def test_clone_reader_real_code(tmp_path: Path) -> None:
    clone = make_clone(tmp_path / "demo")
    docs, stats = read_all(GithubRecipe(), repo_list(tmp_path, [clone]))
    paths = {d.meta["path"] for d in docs}
    assert {"json/__init__.py", "json/decoder.py", "json/encoder.py"} <= paths
    assert stats.balanced()
    reasons = {reason for (_, reason, _) in stats.drops}
    assert {"binary", "skipped_certificate", "skipped_license_file", "symlink", "not_utf8"} <= reasons
    first = next(d for d in docs if d.meta["path"] == "json/decoder.py")
    assert first.meta["repo"] == "octo/demo" and first.meta["license"] == "mit" and first.meta["language"] == "python"
    raw = (clone / "json" / "decoder.py").read_bytes()
    assert first.meta["content_sha256"] == hashlib.sha256(raw).hexdigest()
    assert first.meta["url"] == "https://github.com/octo/demo/blob/HEAD/json/decoder.py"
    assert not any(".git" in d.meta["path"] for d in docs)


def test_clone_order_is_deterministic(tmp_path: Path) -> None:
    listing = repo_list(tmp_path, [make_clone(tmp_path / "demo")])
    assert [d.id for d in read_all(GithubRecipe(), listing)[0]] == [d.id for d in read_all(GithubRecipe(), listing)[0]]


def test_gpl_clone_dropped_with_licence_reason(tmp_path: Path) -> None:
    clone = make_clone(tmp_path / "gpl", "GNU GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007\n")
    docs, stats = read_all(GithubRecipe(), repo_list(tmp_path, [clone]))
    assert docs == []
    assert sum(n for (_, reason, _), n in stats.drops.items() if reason == "license_gpl-3.0") == stats.records_in - 1


def test_missing_repo_and_broken_list_are_reasoned_drops(tmp_path: Path) -> None:
    listing = tmp_path / "x.repos.json"
    listing.write_text(json.dumps({"repos": [{"name": "gone", "root": str(tmp_path / "gone")}]}))
    _, stats = read_all(GithubRecipe(), listing)
    assert stats.errors[0]["reason"] == "missing_repo"
    listing.write_text("{broken")
    _, stats = read_all(GithubRecipe(), listing)
    assert stats.errors[0]["reason"] == "truncated_input" and "x.repos.json" in stats.errors[0]["record"]


def write_rows(path: Path, rows: list[dict[str, object]], extra_lines: list[str] = ()) -> Path:  # type: ignore[assignment]
    with gzip_text(path) as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
        for line in extra_lines:
            handle.write(line + "\n")
    return path


def test_bigquery_rows_round_trip(tmp_path: Path) -> None:
    source = (STDLIB / "json" / "scanner.py").read_text(encoding="utf-8")
    rows = [
        {"repo_name": "octo/a", "path": "json/scanner.py", "license": "mit", "content": source, "id": "abc"},
        {"repo_name": "octo/b", "path": "x.py", "license": "gpl-2.0", "content": "print(1)\n"},
        {"repo_name": "octo/a", "path": "LICENSE", "license": "mit", "content": MIT},
        {"repo_name": "octo/a", "path": "img.py", "license": "mit", "content": None, "binary": True},
    ]
    path = write_rows(tmp_path / "bq.jsonl.gz", rows, ["{not json"])
    docs, stats = read_all(GithubRecipe(), path)
    assert [d.text for d in docs] == [source]
    assert docs[0].meta["blob_id"] == "abc" and docs[0].meta["format"] == "bigquery"
    reasons = {reason for (_, reason, _) in stats.drops}
    assert reasons == {"license_gpl-2.0", "skipped_license_file", "binary", "malformed_json"}
    assert stats.balanced() and stats.records_in == 5


def test_not_gzip_and_truncated_gzip(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"plain text, not gzip\n")
    _, stats = read_all(GithubRecipe(), bad)
    assert stats.errors[0]["reason"] == "truncated_input" and "bad.jsonl.gz" in stats.errors[0]["record"]
    good = write_rows(tmp_path / "cut.jsonl.gz", [
        {"repo_name": "o/r", "path": f"m{i}.py", "license": "mit", "content": f"# module number {i}\nresult = compute_everything(items)\n" * 20}
        for i in range(200)])
    cut = tmp_path / "cut2.jsonl.gz"
    cut.write_bytes(good.read_bytes()[:-200])
    docs, stats = read_all(GithubRecipe(), cut)
    assert 0 < len(docs) < 200 and stats.drops[("reader", "truncated_input", "")] == 1


def test_size_limit(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "big.jsonl.gz", [{"repo_name": "o/r", "path": "a.py", "license": "mit",
                                                   "content": "a = 1\n" * 100}])
    _, stats = read_all(GithubRecipe(GithubSettings(max_file_bytes=50)), path)
    assert stats.drops[("reader", "too_large", "python")] == 1


@pytest.mark.parametrize(
    ("path", "language"),
    [("a/b.py", "python"), ("x.C", "c++"), ("x.c", "c"), ("Dockerfile", "dockerfile"), ("src/Makefile", "makefile"),
     ("x.PY", None), ("x.json", None), ("a.phps", "php"), ("a.h++", "c++")],
)
def test_whitelist(path: str, language: str | None) -> None:
    assert language_for(path) == language


@given(st.lists(st.sampled_from([*EXTENSION_LANGUAGES, "a", "/", ".", "x.", "+", "F", "ile"]), max_size=6).map("".join))
def test_whitelist_is_the_longest_matching_suffix(path: str) -> None:
    """The lookup by suffix length equals RedPajama's rule: ``endswith``, longest suffix first."""
    name = path.rsplit("/", 1)[-1]
    matches = [suffix for suffix in sorted(EXTENSION_LANGUAGES, key=len, reverse=True) if name.endswith(suffix)]
    assert language_for(path) == (EXTENSION_LANGUAGES[matches[0]] if matches else None)


def test_skip_names() -> None:
    assert skip_reason("certs/server.crt") == "skipped_certificate"
    assert skip_reason("LICENSE") == skip_reason("sub/LICENSE.md") == "skipped_license_file"
    assert skip_reason("license_check.py") is None


@given(st.binary(max_size=200))
def test_binary_detection_is_nul_in_head(data: bytes) -> None:
    assert is_binary(data) == (b"\x00" in data[:8000])


def test_raw_dedup_key_hashes_raw_content(tmp_path: Path) -> None:
    text = "value = compute(1)\nother = compute(2)\n"
    rows = [{"repo_name": "o/r", "path": "a.py", "license": "mit", "content": "# Copyright 2020 A\n" + text},
            {"repo_name": "o/s", "path": "a.py", "license": "mit", "content": "# Copyright 2021 B\n" + text}]
    path = write_rows(tmp_path / "rows.jsonl.gz", rows)
    ctx = RunContext(tmp_path / "out", "github", "cfg", ShardLimits(), "github")
    record = stage_input(GithubRecipe(), InputSpec(str(path), path, path.name), ctx)
    hashes = tmp_path / "out" / "_staging" / "github" / "rows.jsonl.gz" / "hashes.parquet"
    cleaned = pq.read_table(hashes).column("hash").to_pylist()
    assert record.docs_kept == 2 and cleaned[0] == cleaned[1]  # same code once headers are gone
    raw_ctx = RunContext(tmp_path / "raw", "github", "cfg", ShardLimits(), "github")
    stage_input(GithubRecipe(raw_dedup=True), InputSpec(str(path), path, path.name), raw_ctx)
    raw_hashes = tmp_path / "raw" / "_staging" / "github" / "rows.jsonl.gz" / "hashes.parquet"
    raw = pq.read_table(raw_hashes).column("hash").to_pylist()
    assert raw[0] != raw[1] and raw[0] == hashlib.sha256(rows[0]["content"].encode()).digest()  # type: ignore[union-attr]


def test_drop_is_not_an_error_for_filter_decisions(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl.gz", [{"repo_name": "o/r", "path": "a.py", "license": "gpl-3.0", "content": "x"}])
    record = next(iter(GithubRecipe().read(InputSpec(str(path), path, path.name))))
    assert isinstance(record, Drop) and not record.is_error
