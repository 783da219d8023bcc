"""The watchdog that ends a process's tree when the process ends (:mod:`core.reaper`).

A real process tree: a Python parent starts the watchdog, then a shell that keeps a ``sleep`` as its
own child (a program the parent did not start, with no death signal, as Ray's raylet starts its
agents). After a ``kill -9`` of the parent, the shell, the sleep and the watchdog are gone in seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.reaper import descendants

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="walks /proc")
REPO = Path(__file__).resolve().parents[2]

PARENT = """
import subprocess, sys, time
from core import reaper
watchdog = reaper.start()
shell = subprocess.Popen(["sh", "-c", "sleep 300 & echo $! ; wait"], stdout=subprocess.PIPE)
print(watchdog.pid, shell.pid, shell.stdout.readline().decode().strip(), flush=True)
time.sleep(300)
"""


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_kill9_of_the_watched_process_ends_its_whole_tree() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=REPO, stdout=subprocess.PIPE)
    assert parent.stdout is not None
    pids = [int(p) for p in parent.stdout.readline().split()]
    try:
        assert len(pids) == 3 and all(alive(p) for p in pids)
        time.sleep(1.5)  # the watchdog notes the tree twice a second
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in pids if alive(p)], "watchdog, shell or sleep alive 10 s after the kill"
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_reused_pid_is_not_taken_for_a_noted_process() -> None:
    # pid 20 was noted with start time 5; the process now at pid 20 started at 9: another process
    table = {10: (1, 3), 20: (10, 9), 30: (20, 9), 40: (10, 4)}
    assert descendants({10: 3, 20: 5}, table) == {10: 3, 20: 9, 30: 9, 40: 4}  # 20 found again as 10's child
    assert descendants({20: 5}, table) == {}
