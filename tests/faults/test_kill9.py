"""Fault injection: ``kill -9`` of a flow process takes every process of its run along (issue 24 item 6).

A scheduler or the OOM killer ends a flow with SIGKILL. Before the fix its pool workers, bounded
helpers and the temporary Prefect server ran on for minutes, writing into ``--out`` without the
lock, and a re-run started at once collided with them. Here a real ``python -m flows.reasoning``
runs in its own session as a user starts it, with two inputs and two workers: a real GSM8K-format
file and a slow one, a named pipe the test feeds and then holds open, so a worker is reliably
mid-input when the flow is killed. Every process of the run carries a marker in its environment
(inherited from the flow process), so the test finds them all in ``/proc``, including ones it
never saw start. After the kill: none alive 5 s later; a re-run is refused while a writer of the
killed run lives; the re-run after that gives the same bytes as a clean run.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.time_limits import Deadline, timeout_for

pytestmark = [pytest.mark.prefect, pytest.mark.skipif(not sys.platform.startswith("linux"),
                                                      reason="walks /proc")]
REPO = Path(__file__).resolve().parents[2]
MARK = "KINDA_TEST_RUN_MARK"


def _gsm8k_lines(start: int, rows: int) -> list[str]:
    """GSM8K JSON lines (question; answer with ``<<calc>>`` annotations and a ``#### N`` line)."""
    return [json.dumps({"question": f"Ann has {i} pens and buys {i + 4} more. How many pens does she have?",
                        "answer": f"She has {i} + {i + 4} = <<{i}+{i + 4}={2 * i + 4}>>{2 * i + 4} pens.\n"
                                  f"#### {2 * i + 4}"}) + "\n" for i in range(start, start + rows)]


def marked(token: str) -> dict[int, str]:
    """Live (not zombie) processes whose environment carries ``MARK=token``: pid -> command line [name]."""
    found = {}
    needle = f"{MARK}={token}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            command += f" [{(entry / 'comm').read_text().strip()}]"  # the run's API server: forked, named by comm
        except OSError:  # gone meanwhile, or not ours
            continue
        if state != "Z":
            found[int(entry.name)] = command
    return found


def _flow(inputs: list[Path], out: Path, env: dict[str, str], logs: Path) -> subprocess.Popen[bytes]:
    """``setsid python -m flows.reasoning --inputs ... --workers 2 --out O``, as a user starts it."""
    args = [sys.executable, "-m", "flows.reasoning", *[a for p in inputs for a in ("--inputs", str(p))],
            "--workers", "2", "--out", str(out)]
    with open(logs, "wb") as log:
        return subprocess.Popen(args, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _open_when_read(fifo: Path, flow: subprocess.Popen[bytes], logs: Path, timeout_s: float) -> int:
    """The pipe's write end, once a process of the run opened it for reading (the input is mid-read)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: nobody reads yet
            assert flow.poll() is None, logs.read_text(errors="replace")[-3000:]
            time.sleep(0.1)
            continue
        os.set_blocking(fd, True)
        return fd
    raise AssertionError(f"no process opened {fifo} within {timeout_s} s")


def _digests(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs").rglob("*")) if p.is_file()}


#: The test's waits together (four flow runs, each up to a few minutes at load 10): each wait takes
#: at most what is left, and pytest-timeout's limit is derived from the same figure (tests/time_limits.py).
BUDGET_S = 1200


@timeout_for(BUDGET_S)
def test_kill9_of_the_flow_takes_its_workers_and_server_along(prefect_api_url: str, tmp_path: Path) -> None:
    budget = Deadline(BUDGET_S)
    token = uuid.uuid4().hex
    base = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # its own temporary server
    env = {**base, MARK: token}
    slow_lines, real_lines = _gsm8k_lines(1000, 200), _gsm8k_lines(0, 300)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    slow, real = inputs / "slow.jsonl", inputs / "real.jsonl"
    real.write_text("".join(real_lines), encoding="utf-8")
    os.mkfifo(slow)
    out = tmp_path / "out"
    flow = _flow([slow, real], out, env, tmp_path / "killed.log")
    try:
        feed = _open_when_read(slow, flow, tmp_path / "killed.log", budget.left(400))
        os.write(feed, "".join(slow_lines[:50]).encode())  # part of the input; the pipe stays open
        run = marked(token)
        commands = " | ".join(run.values())
        assert flow.pid in run and "[prefect-api]" in commands and commands.count("multiprocessing") >= 2, commands
        os.kill(flow.pid, signal.SIGKILL)
        flow.wait(timeout=budget.left(30))
        deadline = time.monotonic() + 5
        while marked(token) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marked(token) == {}, f"alive 5 s after the kill: {marked(token)}"
        os.close(feed)
    finally:
        for pid in marked(token):
            os.kill(pid, signal.SIGKILL)

    # a writer of the killed run that is still alive (on a system without the death signal, say):
    # the re-run must refuse to start beside it
    rerun_env = {**base, "PREFECT_API_URL": prefect_api_url}
    writer = subprocess.Popen([sys.executable, "-c", "import sys;from core.lock import join_writers;"
                               "join_writers(sys.argv[1]);print('ready',flush=True);sys.stdin.read()", str(out)],
                              cwd=REPO, env=rerun_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert writer.stdout is not None and writer.stdout.readline().strip() == b"ready"
    slow.unlink()
    slow.write_text("".join(slow_lines), encoding="utf-8")
    refused = _flow([slow, real], out, rerun_env, tmp_path / "refused.log")
    assert refused.wait(timeout=budget.left(300)) == 2
    message = (tmp_path / "refused.log").read_text(errors="replace")
    assert f"still being written by process(es) {writer.pid}" in message and "Traceback" not in message, message
    assert writer.stdin is not None
    writer.stdin.close()
    writer.wait(timeout=budget.left(30))

    rerun = _flow([slow, real], out, rerun_env, tmp_path / "rerun.log")
    assert rerun.wait(timeout=budget.left(400)) == 0, (tmp_path / "rerun.log").read_text(errors="replace")[-3000:]
    clean_out = tmp_path / "clean"
    clean = _flow([slow, real], clean_out, rerun_env, tmp_path / "clean.log")
    assert clean.wait(timeout=budget.left(400)) == 0, (tmp_path / "clean.log").read_text(errors="replace")[-3000:]
    rerun_docs = _digests(out)
    assert rerun_docs and rerun_docs == _digests(clean_out)
