"""Fault injection, runs that collide: two flows into one ``--out`` at once, and a run killed mid-way.

Both are real ``python -m flows.wikipedia`` processes on the project's sample dumps, sharing one
Prefect API (the session's embedded server), so they start within a second of each other and
race for the output root exactly as two users' commands would. Issue 11 found that such a race
lost every document silently; here one run must be refused in one line naming the other, and a
normal run afterwards must leave documents on disk equal to what the manifest says was kept.
Runtime: ~60-150 s on a loaded 2-core machine (five flow processes, each importing Prefect).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from core.manifest import Manifest
from kinda.cli import main as kinda_main
from sources.samples.wikipedia import write_sample_dumps

pytestmark = pytest.mark.prefect
REPO = Path(__file__).resolve().parents[2]


def _flow(dumps: Path, out: Path, api: str) -> subprocess.Popen[str]:
    """One ``python -m flows.wikipedia`` process, as a user starts it."""
    return subprocess.Popen(
        [sys.executable, "-m", "flows.wikipedia", "--dump", str(dumps / "*.bz2"), "--out", str(out),
         "--runner", "sequential"],
        cwd=REPO, env={**os.environ, "PREFECT_API_URL": api}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True)


def _docs_on_disk(out: Path) -> int:
    """Documents in the final shards, from each file's Parquet footer."""
    return sum(pq.ParquetFile(p).metadata.num_rows for p in (out / "docs").rglob("*.parquet"))


def _kept(out: Path) -> int:
    _, rows = Manifest.for_output(out).query("SELECT coalesce(sum(docs_kept), 0) FROM latest_inputs")
    return int(rows[0][0])


def test_two_runs_into_one_out_refuse_in_one_line_and_lose_nothing(
        prefect_api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dumps = tmp_path / "dumps"
    write_sample_dumps(dumps, pages=1500, seed=3)
    out = tmp_path / "out"
    first, second = _flow(dumps, out, prefect_api_url), _flow(dumps, out, prefect_api_url)
    results = [(p.pid, *p.communicate(timeout=240), p.returncode) for p in (first, second)]
    winners = [r for r in results if r[3] == 0]
    losers = [r for r in results if r[3] != 0]
    assert len(winners) == 1 and len(losers) == 1, [(pid, rc, err[-2000:]) for pid, _, err, rc in results]
    (winner_pid, *_), (_, _, loser_err, loser_rc) = winners[0], losers[0]
    last = loser_err.strip().splitlines()[-1]
    assert loser_rc == 2 and last.startswith("python -m flows.wikipedia: error: "), loser_err
    assert "is in use by run" in last and f"pid {winner_pid}" in last and "flow wikipedia" in last

    kept = _kept(out)
    assert kept > 1000 and _docs_on_disk(out) == kept
    assert kinda_main(["--out", str(out), "manifest", "verify"]) == 0
    capsys.readouterr()
    _, rows = Manifest.for_output(out).query("SELECT status FROM runs")
    assert rows == [("completed",)]  # the refused run never started a run row

    rerun = _flow(dumps, out, prefect_api_url)
    _, err = rerun.communicate(timeout=240)
    assert rerun.returncode == 0, err[-2000:]
    assert _docs_on_disk(out) == _kept(out) == kept
    assert kinda_main(["--out", str(out), "manifest", "verify"]) == 0
    assert "documents kept on disk" in capsys.readouterr().out

    # the CLI holds the lock from its pre-Prefect check through the run: the loser never starts a flow
    assert "Traceback" not in loser_err, loser_err
    assert [line for line in loser_err.splitlines() if "error" in line.lower()] == [last]


def test_killed_run_is_marked_abandoned_by_the_next(prefect_api_url: str, tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    write_sample_dumps(dumps, pages=1500, seed=4)
    out = tmp_path / "out"
    manifest = Manifest.for_output(out)
    killed = _flow(dumps, out, prefect_api_url)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not list((out / "_state").rglob("*.stage.json")):
        time.sleep(0.02)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.communicate()
    assert list((out / "_state").rglob("*.stage.json")), "the flow never staged an input"
    _, rows = manifest.query("SELECT run_id, status FROM runs")
    assert [r[1] for r in rows] == ["running"]
    killed_id = rows[0][0]

    rerun = _flow(dumps, out, prefect_api_url)
    _, err = rerun.communicate(timeout=240)
    assert rerun.returncode == 0, err[-2000:]
    assert "1 earlier run(s) were killed mid-way; marked abandoned" in err
    _, rows = manifest.query("SELECT run_id, status FROM runs ORDER BY started_at")
    assert rows[0] == (killed_id, "abandoned") and rows[1][1] == "completed"
    assert _docs_on_disk(out) == _kept(out) > 1000
