"""Peak memory of a command, for the per-record memory bound tests (the "bombs").

A bomb test runs the product the way a user does (``python -m flows.<source> ...``) in a child
process and asserts its peak resident set stays under the bound. ``os.wait4`` returns the child's
own resource usage, whose ``ru_maxrss`` also covers the grandchildren it waited for (bounded
helper processes, pool workers), so one figure bounds the whole run; no sampling thread can miss
a short spike.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: The issue's bound: no input of any format drives a process past 2 GB RSS at default settings.
MAX_RSS_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class Measured:
    """Exit status, output and peak RSS (bytes) of one finished command."""

    returncode: int
    stdout: str
    stderr: str
    peak_rss_bytes: int


def run_measured(argv: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None,
                 timeout: float = 600) -> Measured:
    """Run ``argv`` to completion and return its exit status, output and peak RSS in bytes.

    Output goes to files (not pipes), so a chatty child cannot block on a full pipe while we wait.
    """
    out_dir = Path(cwd or ".")
    with open(os.devnull, "rb") as stdin, _capture(out_dir, "stdout") as stdout, \
            _capture(out_dir, "stderr") as stderr:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr)
        try:
            _, status, usage = _wait4(proc.pid, timeout)
        except TimeoutError:
            proc.kill()
            os.waitpid(proc.pid, 0)
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        return Measured(proc.returncode, stdout.read().decode("utf-8", "replace"),
                        stderr.read().decode("utf-8", "replace"), usage.ru_maxrss * 1024)


def _capture(directory: Path, name: str):  # type: ignore[no-untyped-def]
    import tempfile

    return tempfile.TemporaryFile(prefix=f"rss-{name}-", dir=directory if directory.is_dir() else None)


def _wait4(pid: int, timeout: float):  # type: ignore[no-untyped-def]
    import time

    deadline = time.monotonic() + timeout
    while True:
        waited, status, usage = os.wait4(pid, os.WNOHANG)
        if waited == pid:
            return waited, status, usage
        if time.monotonic() > deadline:
            raise TimeoutError(f"command {pid} still running after {timeout} s")
        time.sleep(0.05)
