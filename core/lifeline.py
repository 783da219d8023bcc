"""Processes of a run die with it: a ``kill -9`` of the flow process takes its children along.

A scheduler or the OOM killer ends a flow with SIGKILL, which no handler sees. Without help its
children live on: process-pool workers finish the task they hold (writing ``_staging/`` and
``_state/`` into ``--out``, now without the run's lock) and then wait forever on their queue,
bounded cleaner helpers go on with their record, and the temporary Prefect server serves no one
(issue 24 item 6 saw them for more than 9 minutes). Each child therefore asks Linux to SIGKILL it
when its parent dies (``prctl(PR_SET_PDEATHSIG)``), checks the parent did not die before that
took effect, and runs a small watchdog thread that polls ``getppid()`` as a fallback (other
kernels, and the case where the signal never comes).

One kernel detail decides where children are started: the death signal follows the parent
*thread* that forked the child, not its process. Children are therefore started by threads that
live as long as the children are wanted (the main thread, a pool's own threads), never by a
short-lived thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: ``prctl`` option numbers (linux/prctl.h).
PR_SET_PDEATHSIG = 1
#: How often the fallback watchdog looks at the parent (a poll costs about a microsecond).
WATCH_INTERVAL_S = 0.5
#: The environment variable a child reads its parent's pid from when it arms itself.
PARENT_ENV = "KINDA_LIFELINE_PARENT"


def _prctl() -> Callable[..., Any] | None:
    """libc's ``prctl``, or None off Linux (looked up in the parent, so a forked child only calls it)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent(parent_pid: int | None = None, watchdog: bool = True, flow_pid: int | None = None) -> None:
    """In a child: be SIGKILLed when the parent dies; die at once if it already has.

    ``parent_pid`` is the pid the parent had when it started this child (default:
    ``$KINDA_LIFELINE_PARENT``, else the current parent): a different ``getppid()`` means the
    parent died before the death signal was armed, and this process was adopted. ``flow_pid``:
    a process further up that this one must not outlive either (a pool worker forked by a fork
    server, whose own parent is the server); the watchdog also ends this process when it is gone.
    """
    if parent_pid is None:
        parent_pid = int(os.environ.get(PARENT_ENV) or os.getppid())
    prctl = _prctl()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid or (flow_pid is not None and not _alive(flow_pid)):
        os.kill(os.getpid(), signal.SIGKILL)
    if watchdog:
        threading.Thread(target=_watch, args=(parent_pid, flow_pid), name="kinda-lifeline", daemon=True).start()


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (a SIGKILLed flow stays one until its shell reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _watch(parent_pid: int, flow_pid: int | None) -> None:
    while True:
        time.sleep(WATCH_INTERVAL_S)
        if os.getppid() != parent_pid or (flow_pid is not None and not _alive(flow_pid)):
            os.kill(os.getpid(), signal.SIGKILL)


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child that arms itself with :func:`die_with_parent` (names this process)."""
    return {**(os.environ if env is None else env), PARENT_ENV: str(os.getpid())}


def preexec() -> Callable[[], None]:
    """A ``preexec_fn`` for :class:`subprocess.Popen`: the child (any program) dies with this process.

    The death signal survives ``exec``, so it covers programs that cannot arm themselves (the
    Prefect server, an external tool). libc is looked up here, in the parent: between ``fork``
    and ``exec`` the child only makes two system calls.
    """
    prctl = _prctl()
    parent = os.getpid()

    def arm() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return arm


def reap(process: Any, timeout_s: float = 5.0) -> None:
    """Stop a ``subprocess.Popen`` child and wait for it, so no zombie is left behind."""
    with contextlib.suppress(OSError):
        process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except Exception:
        with contextlib.suppress(OSError):
            process.kill()
        process.wait()


def start_worker(flow_pid: int, writes: str | None) -> None:
    """A process-pool worker's initializer: die with the flow, and count as a writer of its ``--out``.

    The worker's parent is the flow process (spawned) or the pool's fork server (a child of the
    flow that exits with it); either way the death signal follows the parent, and the watchdog
    the flow itself.
    """
    die_with_parent(os.getppid(), flow_pid=flow_pid)
    if writes:
        from core.lock import join_writers

        join_writers(Path(writes))
