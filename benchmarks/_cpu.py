"""CPU time of a benchmark contender: this process and its reaped children, helpers included.

Shared by the benchmarks that time contenders in one process (imported as ``_cpu``: a script's
own folder is first on ``sys.path``). A bounded cleaner's helper process is a child; its CPU is
charged once it is reaped, so :func:`timed` ends them all before the clock stops: the steps'
own helpers are closed when garbage collection drops the steps, and the shared helpers a
thread keeps for its next reader (:func:`core.helper_process.thread_helper`, which outlive the
run) are closed by :func:`core.helper_process.close_thread_helpers`. Without that, a path that
hands work to the shared helper had that work left out of its figure.
"""

from __future__ import annotations

import gc
import resource
from collections.abc import Callable
from pathlib import Path

from core.helper_process import close_thread_helpers


def cpu_seconds() -> float:
    """CPU time of this process and its reaped children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn: Callable[[Path], int], path: Path) -> tuple[float, int]:
    """CPU seconds of ``fn(path)`` (its helpers, shared ones too, closed and reaped before the clock stops)
    and its result. Each timed run starts its helpers afresh, as a new worker would."""
    close_thread_helpers()
    gc.collect()
    started = cpu_seconds()
    result = fn(path)
    close_thread_helpers()
    gc.collect()
    return cpu_seconds() - started, result
