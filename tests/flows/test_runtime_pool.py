"""The run's worker pool ends with the run, also when no task ever ran on it (a fully resumed run).

Regression (seen once in three resumed sample runs): a parent run whose every stage resumed
opened the pool, submitted nothing, and then waited for ever stopping the fork server. The idle
workers are told to stop only by the executor's manager thread, which starts with the first task;
they wait on the call queue until its last writer closes, and that happens whenever the garbage
collector gets to the queue (it sits in reference cycles). Meanwhile they hold the fork server's
pipe open, so the server never sees its end. The test keeps the queue alive, as an uncollected
cycle does, so the hang is certain without the fix instead of a matter of GC timing.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

from flows import _runtime


def test_an_unused_pool_closes_and_leaves_no_process(tmp_path: Path) -> None:
    pool, shared = _runtime._borrow(2, tmp_path)
    held = pool.executor._call_queue  # not collected yet: its write end stays open in this process
    done = threading.Event()

    def close() -> None:
        _runtime._give_back(pool, shared)
        done.set()

    threading.Thread(target=close, daemon=True).start()
    assert done.wait(60), "closing a pool that ran no task hung"
    del held
    assert multiprocessing.active_children() == []
    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    assert getattr(server, "_forkserver_pid", None) is None  # stopped and reaped
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    if children.exists():  # Linux: no fork server or worker left (multiprocessing's resource tracker may stay)
        left = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in children.read_text().split()
                if Path(f"/proc/{pid}/cmdline").exists()]
        assert [cmd for cmd in left if b"resource_tracker" not in cmd] == []
