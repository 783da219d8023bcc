"""``kinda manifest verify`` on a real Wikipedia run's output: every way disk and manifest can disagree.

The output is a real flow run (the project's sample dumps, in-process through Prefect); each case
damages a copy of it the way issue 11 found it damaged (a shard deleted by another run's clean-up,
inputs recorded as kept with no shard rows) or the way a person might (an edited count, a
scribbled shard, a stray file), and the command must exit 1 naming the shard or the source and
input. Runtime: ~15-30 s, most of it the one flow run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.manifest import RELEASED_SQL, Manifest
from flows.wikipedia import parse_args, run
from kinda.cli import main
from sources.samples.wikipedia import write_sample_dumps

pytestmark = pytest.mark.prefect


@pytest.fixture(scope="module")
def finished(prefect_api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output root of one completed Wikipedia run over the English and German sample dumps."""
    base = tmp_path_factory.mktemp("verify")
    dumps = write_sample_dumps(base / "dumps", pages=80, seed=11)
    out = base / "out"
    summary = run(parse_args([*(f"--dump={d}" for d in dumps), "--out", str(out), "--runner", "sequential"]))
    assert summary.kept > 0 and not summary.failed
    return out


@pytest.fixture()
def out(finished: Path, tmp_path: Path) -> Path:
    """A private copy of the finished output, free to damage."""
    return Path(shutil.copytree(finished, tmp_path / "out"))


def verify(out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    status = main(["--out", str(out), "manifest", "verify"])
    captured = capsys.readouterr()
    assert captured.err == ""
    return status, captured.out.splitlines()


def _inputs(out: Path) -> list[tuple[str, str, int]]:
    _, rows = Manifest.for_output(out).query("SELECT source, input_key, docs_kept FROM inputs ORDER BY input_key")
    return [(str(s), str(k), int(n)) for s, k, n in rows]


def _shard_of(out: Path, key: str) -> str:
    _, rows = Manifest.for_output(out).query(
        "SELECT path FROM shards WHERE list_contains(inputs, ?) ORDER BY path", [key])
    return str(rows[0][0])


def _execute(out: Path, *statements: str) -> None:
    with Manifest.for_output(out).connect() as con:
        for sql in statements:
            con.execute(sql)


def test_a_clean_run_verifies(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, lines = verify(out, capsys)
    kept = sum(n for _, _, n in _inputs(out))
    assert status == 0, lines
    assert lines == ["2 of 2 shards ok", f"2 of 2 inputs ok: {kept:,} documents kept on disk, as the manifest says"]


def test_a_deleted_shard_is_missing_and_a_gap_naming_source_and_input(
        out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, key, kept = _inputs(out)[0]
    shard = _shard_of(out, key)
    (out / shard).unlink()
    status, lines = verify(out, capsys)
    assert status == 1
    assert f"missing: {shard}" in lines
    assert f"gap: source {source}, input {key}: the manifest kept {kept:,} documents, its shards on disk hold 0" \
        in lines
    assert "1 of 2 shards ok" in lines and any(line.startswith("1 of 2 inputs ok") for line in lines)


def test_kept_documents_without_shard_rows_fail(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 11's case: inputs say documents were kept, the shards table names none ("0 of 0 ok")."""
    _execute(out, "DELETE FROM shards")
    for path in (out / "docs").rglob("*.parquet"):
        path.unlink()
    status, lines = verify(out, capsys)
    assert status == 1 and "0 of 0 shards ok" in lines
    gaps = [line for line in lines if line.startswith("gap: ")]
    assert len(gaps) == 2 and all("its shards on disk hold 0" in line for line in gaps)


def test_an_edited_manifest_is_a_gap_or_a_row_count(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (source, key, kept), (_, other, _) = _inputs(out)
    shard = _shard_of(out, other)
    _execute(out, f"UPDATE inputs SET docs_kept = docs_kept + 5 WHERE input_key = '{key}'",
             f"UPDATE shards SET docs = docs - 1 WHERE path = '{shard}'")
    status, lines = verify(out, capsys)
    assert status == 1
    assert f"gap: source {source}, input {key}: the manifest kept {kept + 5:,} documents, " \
           f"its shards on disk hold {kept:,}" in lines
    assert any(line.startswith(f"rows: {shard} holds ") and line.endswith("documents, the manifest says "
                                                                         f"{_docs(out, shard):,}") for line in lines)


def _docs(out: Path, shard: str) -> int:
    _, rows = Manifest.for_output(out).query("SELECT docs FROM shards WHERE path = ?", [shard])
    return int(rows[0][0])


def test_a_scribbled_or_stray_shard_fails(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, key, _ = _inputs(out)[0]
    shard = out / _shard_of(out, key)
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size: only the checksum tells
    shard.write_bytes(bytes(data))
    stray = shard.with_name("stray-00000.parquet")
    shutil.copyfile(out / _shard_of(out, _inputs(out)[1][1]), stray)
    status, lines = verify(out, capsys)
    rel = shard.relative_to(out).as_posix()
    assert status == 1 and f"checksum mismatch: {rel}" in lines
    assert any(line.startswith(f"unrecorded: {stray.relative_to(out).as_posix()} (") for line in lines)


def test_a_released_shard_counts_with_its_documents(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A label run deletes ``docs/`` shards it moved to class shards; their documents still count."""
    source, key, kept = _inputs(out)[0]
    shard = _shard_of(out, key)
    _execute(out, RELEASED_SQL,
             "INSERT INTO released SELECT path, source, language, docs, text_bytes, bytes, sha256, [], 0, run_id, "
             f"created_at FROM shards WHERE path = '{shard}'",
             f"DELETE FROM shards WHERE path = '{shard}'")
    (out / shard).unlink()
    status, lines = verify(out, capsys)
    assert status == 0, lines
    _execute(out, f"UPDATE released SET docs = docs - 2 WHERE path = '{shard}'")
    status, lines = verify(out, capsys)
    assert status == 1 and f"gap: source {source}, input {key}: the manifest kept {kept:,} documents, " \
                           f"its shards on disk hold {kept - 2:,}" in lines
