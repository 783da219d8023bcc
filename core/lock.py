"""One run at a time per output root: an advisory lock that a killed run cannot leave behind.

Two runs writing into one ``--out`` at once lose data (one run's staging clean-up deletes the
other's files, and done markers end up naming shards that no longer exist). Every flow
therefore holds ``<out>/.kinda.lock`` for its whole run. The lock is ``flock(2)`` on an open
file: the kernel releases it when the holding process exits for any reason (``kill -9``
included), so it is never stale, and the file only carries who holds it, for the message.

Within one process the lock is re-entrant: the parent flow (``flows.llama``) holds it and runs
its stages as subflows in the same process.

The lock alone does not cover a run's other processes: process-pool workers write ``_staging/``
and ``_state/`` too, and a worker that outlived its killed flow (issue 24 item 6) would write
beside the next run. So every writer of a run also holds ``<out>/.kinda.writers`` *shared*: the
flow process (taken with the lock) and each pool worker (:func:`join_writers`, at its start). A
new run, once it holds the lock, tries that file *exclusively*; while any writer of an earlier
run lives it cannot, and the run is refused naming the live pids. Workers are made to die with
their flow (:mod:`core.lifeline`), so this refusal lasts at most the moment they take to die.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOCK_NAME = ".kinda.lock"
#: Held shared by every live writer process of the run that holds the lock (see the module docstring).
WRITERS_NAME = ".kinda.writers"
#: The run id of a lock taken before the run has one (the command line's pre-Prefect check): the
#: first run that re-enters the lock in this process writes itself in as the holder.
PENDING_RUN = "starting"

_held: dict[Path, tuple[int, int, str, int]] = {}  # lock path -> (fd, depth, holder's run id, writers fd)
_guard = threading.Lock()
_joined: dict[Path, int] = {}  # writers files this worker process holds shared -> fd


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
                fd, depth, holder_run, writers = _held[path]
                if holder_run == PENDING_RUN and self.run_id != PENDING_RUN:
                    _write_holder(fd, self._holder())
                    holder_run = self.run_id
                _held[path] = (fd, depth + 1, holder_run, writers)
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
            try:
                writers = _claim_writers(path.parent)
            except OutputLockedError:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                raise
            _write_holder(fd, self._holder())
            _held[path] = (fd, 1, self.run_id, writers)
            return True

    def _holder(self) -> dict[str, Any]:
        """Who holds the lock, for the message a refused run prints."""
        return {"pid": os.getpid(), "host": socket.gethostname(), "flow": self.flow, "run_id": self.run_id,
                "since": dt.datetime.now().isoformat(timespec="seconds")}

    def release(self) -> None:
        """Give the lock back (the last release of a re-entered lock unlocks it)."""
        path = self.path
        with _guard:
            if path not in _held:
                return
            fd, depth, holder_run, writers = _held[path]
            if depth > 1:
                _held[path] = (fd, depth - 1, holder_run, writers)
                return
            del _held[path]
            os.close(writers)
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


def _claim_writers(out: Path) -> int:
    """With the lock held: refuse while a writer of an earlier run lives, then join as this run's first writer."""
    path = out / WRITERS_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pids = holder_pids(path)
        os.close(fd)
        named = ", ".join(str(p) for p in pids) or "unknown"
        raise OutputLockedError(
            f"{out} is still being written by process(es) {named} of an earlier run that was killed; "
            "they stop by themselves within seconds (or kill them), then run again") from None
    fcntl.flock(fd, fcntl.LOCK_SH)  # only the lock holder converts, so no other run can slip in between
    return fd


def join_writers(out: Path) -> None:
    """In a worker process of the run writing ``out``: hold its writers file shared until this process exits."""
    path = (Path(out).resolve() / WRITERS_NAME)
    if path in _joined:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)  # an exclusive hold lasts only the instant a new run checks
    _joined[path] = fd


def holder_pids(path: Path) -> list[int]:
    """Pids holding a ``flock`` on ``path``, from ``/proc/locks`` (empty where that is not available)."""
    try:
        inode = os.stat(path).st_ino
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    pids = set()
    for line in lines:
        fields = line.split()
        if "FLOCK" in fields and len(fields) >= 6 and fields[-3].rsplit(":", 1)[-1] == str(inode):
            with contextlib.suppress(ValueError):
                pids.add(int(fields[-4]))
    return sorted(pids)


#: The holder record is written as one fixed-size block (JSON padded with spaces), so a refused
#: run reading it while the holder rewrites it sees the old or the new record, never an empty file.
_HOLDER_BYTES = 1024


def _read_holder(fd: int, attempts: int = 5) -> dict[str, Any]:
    """The holder record; an empty one is read again briefly (the holder may have just locked)."""
    for attempt in range(attempts):
        try:
            raw = os.pread(fd, _HOLDER_BYTES, 0)
            holder = json.loads(raw.decode("utf-8")) if raw.strip() else None
        except (OSError, ValueError):
            holder = None
        if isinstance(holder, dict):
            return holder
        if attempt + 1 < attempts:
            time.sleep(0.05)
    return {}


def _write_holder(fd: int, holder: dict[str, Any]) -> None:
    data = json.dumps(holder, sort_keys=True).encode("utf-8")[: _HOLDER_BYTES]
    os.pwrite(fd, data.ljust(_HOLDER_BYTES), 0)


def _describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "another run"
    return (f"run {holder.get('run_id', '?')} (flow {holder.get('flow', '?')}, pid {holder.get('pid', '?')} "
            f"on {holder.get('host', '?')}, since {holder.get('since', '?')})")
