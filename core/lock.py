"""One run at a time per output root: an advisory lock that a killed run cannot leave behind.

Two runs writing into one ``--out`` at once lose data (one run's staging clean-up deletes the
other's files, and done markers end up naming shards that no longer exist). Every flow
therefore holds ``<out>/.kinda.lock`` for its whole run. The lock is ``flock(2)`` on an open
file: the kernel releases it when the holding process exits for any reason (``kill -9``
included), so it is never stale, and the file only carries who holds it, for the message.

Within one process the lock is re-entrant: the parent flow (``flows.llama``) holds it and runs
its stages as subflows in the same process.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOCK_NAME = ".kinda.lock"

_held: dict[Path, tuple[int, int]] = {}  # resolved lock path -> (fd, depth)
_guard = threading.Lock()


class OutputLockedError(RuntimeError):
    """Another live process is writing into this output root."""


@dataclass
class OutputLock:
    """Hold the output root's lock (see the module docstring); a context manager."""

    out: Path
    flow: str
    run_id: str

    @property
    def path(self) -> Path:
        """The lock file."""
        return Path(self.out).resolve() / LOCK_NAME

    def acquire(self) -> bool:
        """Take the lock; True when this call took it fresh (not re-entered within this process)."""
        path = self.path
        with _guard:
            if path in _held:
                fd, depth = _held[path]
                _held[path] = (fd, depth + 1)
                return False
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _describe(_read_holder(fd))
                os.close(fd)
                raise OutputLockedError(
                    f"{self.out} is in use by {holder}; wait for that run to finish or use another --out"
                ) from None
            _write_holder(fd, {"pid": os.getpid(), "host": socket.gethostname(), "flow": self.flow,
                               "run_id": self.run_id,
                               "since": dt.datetime.now().isoformat(timespec="seconds")})
            _held[path] = (fd, 1)
            return True

    def release(self) -> None:
        """Give the lock back (the last release of a re-entered lock unlocks it)."""
        path = self.path
        with _guard:
            if path not in _held:
                return
            fd, depth = _held[path]
            if depth > 1:
                _held[path] = (fd, depth - 1)
                return
            del _held[path]
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        raw = os.pread(fd, 4096, 0)
        holder = json.loads(raw.decode("utf-8")) if raw else {}
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _write_holder(fd: int, holder: dict[str, Any]) -> None:
    data = json.dumps(holder, sort_keys=True).encode("utf-8")
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "another run"
    return (f"run {holder.get('run_id', '?')} (flow {holder.get('flow', '?')}, pid {holder.get('pid', '?')} "
            f"on {holder.get('host', '?')}, since {holder.get('since', '?')})")
