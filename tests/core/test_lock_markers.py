"""The output-root lock and completion markers: one writer per --out, markers that cannot lie."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.lock import PENDING_RUN, OutputLock
from core.manifest import InputRecord, Manifest
from core.markers import Marker


def test_second_process_is_refused_naming_the_holder(tmp_path: Path) -> None:
    with OutputLock(tmp_path, "wikipedia", "run-1"):
        script = textwrap.dedent(f"""
            from pathlib import Path
            from core.lock import OutputLock, OutputLockedError
            try:
                OutputLock(Path({str(tmp_path)!r}), "books", "run-2").acquire()
            except OutputLockedError as exc:
                print(exc)
        """)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert "in use by run run-1 (flow wikipedia" in out and "another --out" in out


def test_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    script = f"from pathlib import Path; from core.lock import OutputLock; import os; " \
             f"OutputLock(Path({str(tmp_path)!r}), 'x', 'dead').acquire(); os._exit(9)"
    subprocess.run([sys.executable, "-c", script], check=False)
    lock = OutputLock(tmp_path, "y", "alive")
    assert lock.acquire() is True
    lock.release()


def test_lock_is_reentrant_within_a_process(tmp_path: Path) -> None:
    outer, inner = OutputLock(tmp_path, "llama", "a"), OutputLock(tmp_path, "wikipedia", "a")
    assert outer.acquire() is True and inner.acquire() is False
    inner.release()
    other = subprocess.run([sys.executable, "-c", f"from pathlib import Path; from core.lock import OutputLock; "
                            f"OutputLock(Path({str(tmp_path)!r}), 'z', 'b').acquire()"], capture_output=True, text=True)
    assert other.returncode != 0 and "in use by run a (flow llama" in other.stderr  # still held by the outer
    outer.release()


def test_a_pending_lock_names_the_run_that_re_enters_it(tmp_path: Path) -> None:
    """The command line locks before the run has an id; the first run that re-enters names itself."""
    cli = OutputLock(tmp_path, "llama", PENDING_RUN)
    run, subflow = OutputLock(tmp_path, "llama", "run-7"), OutputLock(tmp_path, "wikipedia", "run-8")
    assert cli.acquire() is True and run.acquire() is False and subflow.acquire() is False
    holder = json.loads((tmp_path / ".kinda.lock").read_text())
    assert holder["run_id"] == "run-7" and holder["flow"] == "llama"  # the outermost run, not its subflow
    for lock in (subflow, run, cli):
        lock.release()
    again = OutputLock(tmp_path, "z", "b")
    assert again.acquire() is True  # fully released
    again.release()


def test_marker_promising_documents_without_shards_is_not_trusted(tmp_path: Path) -> None:
    marker = Marker(tmp_path / "_state" / "x.done.json", {"config_hash": "c"})
    marker.write({"record": {"docs_kept": 1080}}, outputs=[], promised_docs=1080)
    assert marker.read() is not None and marker.load(tmp_path) is None
    shard = tmp_path / "docs" / "a.parquet"
    shard.parent.mkdir(parents=True)
    shard.write_bytes(b"x" * 10)
    marker.write({"record": {}}, outputs=[{"path": "docs/a.parquet", "bytes": 10, "docs": 1080}], promised_docs=1080)
    assert marker.load(tmp_path) is not None
    shard.write_bytes(b"x" * 9)  # truncated by someone else
    assert marker.load(tmp_path) is None
    assert Marker(marker.path, {"config_hash": "other"}).read() is None


def test_stale_running_runs_become_abandoned(tmp_path: Path) -> None:
    manifest = Manifest.for_output(tmp_path)
    manifest.start_run("killed", "wikipedia", "wikipedia", "c", {}, "v")
    manifest.record_inputs("killed", [InputRecord("k", "wikipedia", "l", None, "c")], recipe="wikipedia",
                           code_version="v")
    assert manifest.abandon_stale_runs() == 1
    _, rows = manifest.query("SELECT status FROM runs WHERE run_id = 'killed'")
    assert rows == [("abandoned",)]


def test_damaged_manifest_is_one_error_without_retries(tmp_path: Path) -> None:
    path = tmp_path / "manifest.duckdb"
    path.write_bytes(b"not a duckdb file" * 1000)
    from core.manifest import ManifestError

    with pytest.raises(ManifestError, match="cannot be opened") as info:
        Manifest(path).query("SELECT 1")
    assert "\n" not in str(info.value) and json.dumps(str(info.value))
