"""Fault injection: a reader holds the manifest open while a run writes (issue 24 item 10).

DuckDB lets no process write a file another process holds open, even read-only, and users do
hold it: a notebook, ``duckdb -readonly``, a long ``kinda manifest sql``. Before the fix a
reader open ~40 s ended the run with ``ManifestError ... stayed locked``. Now writes that cannot
get the file are queued in ``<out>/_state/manifest-queue/`` and applied by the next write that
can; reads include them meanwhile. The reader here is a separate process holding
``duckdb.connect(path, read_only=True)`` until the test lets it go: a 120 s hold and this short
one take the same path once the run's end-of-run wait (``KINDA_MANIFEST_WAIT_S``) is over, so the
test sets that wait to 1 s instead of holding for minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from core.manifest import Manifest
from kinda.cli import main as kinda_main

REPO = Path(__file__).resolve().parents[2]
_HOLD = ("import duckdb,sys;c=duckdb.connect(sys.argv[1],read_only=True);"
         "c.execute('SELECT count(*) FROM runs').fetchall();print('ready',flush=True);sys.stdin.read();c.close()")


@contextmanager
def reader_holding(path: Path) -> Iterator[subprocess.Popen[str]]:
    """A separate process with the manifest open read-only until the block ends (or it is closed)."""
    reader = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
        yield reader
    finally:
        release(reader)


def release(reader: subprocess.Popen[str]) -> None:
    """Let the reader close its connection and exit."""
    if reader.stdin is not None and not reader.stdin.closed:
        reader.stdin.close()
    reader.wait(timeout=60)


def _file_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    """Rows of the file itself, without the queue (a plain DuckDB read)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_writes_wait_in_the_queue_while_a_reader_holds_the_file(tmp_path: Path) -> None:
    manifest = Manifest.for_output(tmp_path)
    manifest.start_run("r0", "demo", None, "h", {}, "v")  # creates the file
    with reader_holding(manifest.path) as reader:
        manifest.start_run("r1", "demo", "src", "h", {"a": 1}, "v")
        manifest.record_shards("r1", [{"path": "docs/x/a.parquet", "source": "x", "docs": 2, "text_bytes": 3,
                                       "bytes": 4, "sha256": "s"}], "h", "demo", "v")
        assert manifest.finish_run("r1", "completed", wait_s=0.2) is False
        assert len(manifest.queued()) == 3
        # reads see the queued rows at once; the file itself does not have them yet
        assert manifest.query("SELECT run_id, status FROM runs ORDER BY run_id")[1] == [
            ("r0", "running"), ("r1", "completed")]
        assert manifest.query("SELECT path, docs FROM shards")[1] == [("docs/x/a.parquet", 2)]
        assert _file_rows(manifest.path, "SELECT count(*) FROM runs") == [(1,)]
        release(reader)
        assert manifest.apply_queued() == 0
    assert _file_rows(manifest.path, "SELECT run_id, status FROM runs ORDER BY run_id") == [
        ("r0", "running"), ("r1", "completed")]
    assert _file_rows(manifest.path, "SELECT path, docs FROM shards") == [("docs/x/a.parquet", 2)]
    assert not manifest.queued()


def test_the_last_write_waits_for_a_reader_that_closes(tmp_path: Path) -> None:
    manifest = Manifest.for_output(tmp_path)
    manifest.start_run("r1", "demo", None, "h", {}, "v")
    closer = subprocess.Popen([sys.executable, "-c", _HOLD.replace("sys.stdin.read()", "__import__('time').sleep(2)"),
                               str(manifest.path)], stdout=subprocess.PIPE, text=True)
    assert closer.stdout is not None and closer.stdout.readline().strip() == "ready"
    try:
        assert manifest.finish_run("r1", "completed", wait_s=120) is True  # it waited, nothing queued
    finally:
        closer.wait(timeout=60)
    assert not manifest.queued()
    assert _file_rows(manifest.path, "SELECT status FROM runs") == [("completed",)]


def _gsm8k(path: Path, rows: int) -> Path:
    """GSM8K JSON lines (question, answer with ``<<calc>>`` annotations and a ``#### N`` line)."""
    lines = [json.dumps({"question": f"Tom has {i} apples and buys {i + 3} more. How many does he have?",
                         "answer": f"He has {i} + {i + 3} = <<{i}+{i + 3}={2 * i + 3}>>{2 * i + 3} apples.\n"
                                   f"#### {2 * i + 3}"}) for i in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.prefect
def test_a_reader_open_for_the_whole_run_does_not_fail_it(
        prefect_api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _gsm8k(tmp_path / "gsm8k.jsonl", 300)
    out = tmp_path / "out"
    manifest = Manifest.for_output(out)
    manifest.start_run("earlier", "demo", None, "h", {}, "v")
    manifest.finish_run("earlier", "completed")
    env = {**os.environ, "PREFECT_API_URL": prefect_api_url, "KINDA_MANIFEST_WAIT_S": "1"}
    with reader_holding(manifest.path) as reader:
        run = subprocess.run([sys.executable, "-m", "flows.reasoning", "--inputs", str(data), "--out", str(out),
                              "--runner", "sequential"], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "held open by a reader" in run.stderr and "stayed locked" not in run.stderr
        assert manifest.queued()
        assert _file_rows(manifest.path, "SELECT count(*) FROM runs") == [(1,)]
        # the run's own summary and every read already count the queued rows
        assert manifest.query("SELECT sum(docs_kept) FROM inputs")[1] == [(300,)]
        release(reader)
        assert kinda_main(["--out", str(out), "manifest", "verify"]) == 0  # a kinda command applies the queue
    capsys.readouterr()
    assert not manifest.queued()
    assert _file_rows(manifest.path, "SELECT flow, status FROM runs ORDER BY started_at") == [
        ("demo", "completed"), ("reasoning", "completed")]
    assert _file_rows(manifest.path, "SELECT sum(docs_kept) FROM inputs") == [(300,)]


def _decisions(path: Path) -> Path:
    """A dedup run's decided documents, as flows.dedup leaves them in its work folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({
        "id": ["a", "b", "c", "d"], "source": ["wiki"] * 4,
        "shard": ["docs/wiki/en/x.parquet"] * 3 + ["docs/wiki/en/stored.parquet"],
        "duplicate_kind": [None, "near", None, "exact"], "duplicate_of": [None, "a", None, "a"],
        "duplicate_jaccard": [None, 0.91, None, 1.0],
        "reference_kind": [None, None, "exact", None], "reference_shard": [None, None, "00.jsonl.zst", None],
        "reference_line": pa.array([None, None, 7, None], pa.int64()), "reference_set": [None, None, "Wikipedia (en)", None],
        "reference_jaccard": [None, None, 1.0, None]}), path)
    return path


def test_dedup_matches_are_queued_while_a_reader_holds_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """flows.dedup's matches come from a Parquet in its work folder, gone before a queue is applied."""
    from dedupe.explain import record_matches

    monkeypatch.setenv("KINDA_MANIFEST_WAIT_S", "1")
    args = ("run-1", "idx", 0.8, "9x13", ["docs/wiki/en/x.parquet"])
    direct = Manifest.for_output(tmp_path / "direct")
    direct.start_run("run-1", "dedup", None, "h", {}, "v")
    assert record_matches(direct, args[0], _decisions(tmp_path / "d1.parquet"), *args[1:])
    held = Manifest.for_output(tmp_path / "held")
    held.start_run("run-1", "dedup", None, "h", {}, "v")
    decisions = _decisions(tmp_path / "d2.parquet")
    with reader_holding(held.path):
        assert not record_matches(held, args[0], decisions, *args[1:])
        decisions.unlink()  # the work folder is removed when the dedup run ends
        assert held.queued()
    assert held.apply_queued() == 0
    order = "SELECT * FROM matches ORDER BY doc_id, kind"
    assert _file_rows(held.path, order) == _file_rows(direct.path, order)
    assert [row[1] for row in _file_rows(held.path, order)] == ["b", "c"]  # the stored shard's row is not decided here
