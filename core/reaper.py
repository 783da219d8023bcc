"""A watchdog process that ends a process's whole tree when that process ends, ``kill -9`` included.

:mod:`core.lifeline` covers the children this project starts itself: each asks Linux for a death
signal. Programs that *other* programs start are out of its reach. A private local Ray instance
is one: the flow process (the Ray driver) starts gcs_server and the raylet with a death signal,
but the raylet starts the dashboard and runtime-env agents, and after a ``kill -9`` of the flow
those notice the raylet is gone, try to exit, and hang on for good (Ray 2.60:
``ray::DashboardAgent`` and ``ray::RuntimeEnvAgent`` orphaned, in the flow's session).

The watchdog is a small process of its own (``python -m core.reaper PID``), in its own session so
a terminal's Ctrl-C does not reach it. Twice a second it notes every descendant of the watched
process with its start time, so a pid the kernel reuses later is never taken for one of them. When
the watched process ends, the pipe it holds to the watchdog's stdin is closed by the kernel (on
any death, and on a normal exit after its own cleanup ran), and the watchdog SIGKILLs every noted
process still alive, and their children; then it exits.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

#: How often the watchdog notes the tree (a look at /proc costs a few milliseconds).
NOTE_INTERVAL_S = 0.5

#: pid -> (parent pid, start time in clock ticks since boot), from ``/proc/<pid>/stat``.
ProcessTable = dict[int, tuple[int, int]]


def process_table() -> ProcessTable:
    """Every process's parent and start time; processes that vanish meanwhile are left out."""
    table: ProcessTable = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":  # a zombie is dead already: nothing to kill
            table[int(entry.name)] = (int(fields[1]), int(fields[19]))
    return table


def descendants(roots: dict[int, int], table: ProcessTable) -> dict[int, int]:
    """``roots`` (pid -> start time, those still the same process) and all their descendants in ``table``."""
    found = {pid: start for pid, start in roots.items() if table.get(pid, (0, -1))[1] == start}
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    queue = list(found)
    while queue:
        for child in children.get(queue.pop(), []):
            if child not in found:
                found[child] = table[child][1]
                queue.append(child)
    return found


def watch(root: int, pipe: int, interval_s: float = NOTE_INTERVAL_S) -> list[int]:
    """Note ``root``'s tree until ``pipe`` reaches its end, then kill what is left; the pids killed."""
    table = process_table()
    if root not in table:
        return []
    noted = descendants({root: table[root][1]}, table)
    while not _ended(pipe, interval_s):
        table = process_table()
        noted = descendants(noted, table)  # root is noted: its new children are found through it
    return kill_tree(noted)


def _ended(pipe: int, timeout_s: float) -> bool:
    """True once the pipe's writer is gone (end of file), after waiting up to ``timeout_s`` for it."""
    readable, _, _ = select.select([pipe], [], [], timeout_s)
    return bool(readable) and not os.read(pipe, 4096)


def kill_tree(noted: dict[int, int]) -> list[int]:
    """SIGKILL the noted processes still alive (same start time) and their descendants, never this one."""
    killed = []
    for pid in sorted(descendants(noted, process_table())):
        if pid in (os.getpid(), 1):
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        killed.append(pid)
    return killed


def start(root: int | None = None) -> subprocess.Popen[bytes]:
    """Start a watchdog of ``root`` (default: this process), which must hold the returned pipe open.

    Keep the returned object referenced for the life of the process: its stdin is the pipe whose
    end tells the watchdog the process is gone. The pipe's write end is not inheritable, so no
    other child holds it open.
    """
    return subprocess.Popen([sys.executable, "-m", "core.reaper", str(root or os.getpid())],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)


def main() -> None:
    """``python -m core.reaper PID``: watch PID through stdin (see the module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(int(sys.argv[1]), sys.stdin.fileno())


if __name__ == "__main__":
    main()
