"""Peak memory of a command, for the per-record memory bound tests (the "bombs").

A bomb test runs the product the way a user does (``python -m flows.<source> ...``) in a child
process and asserts its peak resident set stays under the bound. The figure is
``RUSAGE_CHILDREN``'s ``ru_maxrss``, which covers the command and every descendant it waited for
(bounded helper processes, pool workers), so one figure bounds the whole run; no sampling thread
can miss a short spike.

It is read in a small launcher interpreter between the caller and the command, not by waiting
for the command directly: Linux copies the parent's memory high-water mark into a forked child
and keeps it across ``exec`` (``ru_maxrss`` of a child of pytest is at least pytest's own peak,
900 MiB after a test that built a 300 MB bomb in memory). The launcher is a fresh interpreter,
so the command it forks starts from the launcher's few MiB.
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


#: The launcher: run the command, then write its exit status and the children's peak RSS (KiB).
_LAUNCHER = (
    "import resource,subprocess,sys;"
    "rc=subprocess.call(sys.argv[2:]);"
    "open(sys.argv[1],'w').write(f'{rc} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}')"
)


def run_measured(argv: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None,
                 timeout: float = 600) -> Measured:
    """Run ``argv`` to completion and return its exit status, output and peak RSS in bytes.

    Output goes to files (not pipes), so a chatty child cannot block on a full pipe while we wait.
    """
    import sys
    import tempfile

    out_dir = Path(cwd or ".")
    with open(os.devnull, "rb") as stdin, _capture(out_dir, "stdout") as stdout, \
            _capture(out_dir, "stderr") as stderr, tempfile.TemporaryDirectory(prefix="rss-") as scratch:
        report = Path(scratch) / "usage"
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(report), *argv], cwd=cwd, env=env,
                                stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            raise TimeoutError(f"command {argv!r} still running after {timeout} s") from None
        returncode, maxrss_kib = (int(v) for v in report.read_text().split())
        stdout.seek(0)
        stderr.seek(0)
        return Measured(returncode, stdout.read().decode("utf-8", "replace"),
                        stderr.read().decode("utf-8", "replace"), maxrss_kib * 1024)


def _capture(directory: Path, name: str):  # type: ignore[no-untyped-def]
    import tempfile

    return tempfile.TemporaryFile(prefix=f"rss-{name}-", dir=directory if directory.is_dir() else None)
