"""The run's worker pool ends with the run, also when no task ever ran on it (a fully resumed run).

Regression (seen once in three resumed sample runs): a parent run whose every stage resumed
opened the pool, submitted nothing, and then waited for ever stopping the fork server. The idle
workers are told to stop only by the executor's manager thread, which starts with the first task;
they wait on the call queue until its last writer closes, and that happens whenever the garbage
collector gets to the queue (it sits in reference cycles). Meanwhile they hold the fork server's
pipe open, so the server never sees its end. The test keeps the queue alive, as an uncollected
cycle does, and lets the workers finish starting first, so without the fix the close hangs (it
can still pass by luck when a worker's start-up races the close).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path

from flows.runtime import prefect_internals, runner


def _child_pids() -> set[int]:
    """Live children of this process (Linux); other tests' helpers may be among them."""
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    return {int(pid) for pid in children.read_text().split()} if children.exists() else set()


def _wait_for_workers(count: int, seconds: float = 60) -> None:
    """Until the fork server has forked ``count`` workers, plus a moment for them to reach their queue."""
    pid = prefect_internals.forkserver_pid()
    children = Path(f"/proc/{pid}/task/{pid}/children")
    deadline = time.monotonic() + seconds
    while pid is not None and children.exists() and time.monotonic() < deadline:
        if len(children.read_text().split()) >= count:
            break
        time.sleep(0.05)
    time.sleep(1.0)


def test_an_unused_pool_closes_and_leaves_no_process(tmp_path: Path) -> None:
    before_children, before_pids = set(multiprocessing.active_children()), _child_pids()
    pool, shared = runner._borrow(2, tmp_path)
    held = prefect_internals.pool_call_queue(pool.executor)  # not collected yet: its write end stays open in this process
    _wait_for_workers(2)  # started and waiting for work, as in a run whose every stage resumed
    done = threading.Event()

    def close() -> None:
        runner._give_back(pool, shared)
        done.set()

    threading.Thread(target=close, daemon=True).start()
    assert done.wait(60), "closing a pool that ran no task hung"
    del held
    assert set(multiprocessing.active_children()) <= before_children  # the pool's workers are gone
    assert prefect_internals.forkserver_pid() is None  # stopped and reaped
    left = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in _child_pids() - before_pids
            if Path(f"/proc/{pid}/cmdline").exists()]
    assert [cmd for cmd in left if b"resource_tracker" not in cmd] == []  # nor the fork server
