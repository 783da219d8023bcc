"""CPU time of a benchmark contender: this process and its reaped children, helpers included.

Shared by the benchmarks that time contenders in one process (imported as ``_cpu``: a script's
own folder is first on ``sys.path``). A bounded cleaner's helper process is a child; its CPU is
charged once it is reaped, so :func:`timed` collects garbage after the run (dropping the steps
closes and reaps their helpers) before the clock stops.
"""

from __future__ import annotations

import gc
import resource
from collections.abc import Callable
from pathlib import Path


def cpu_seconds() -> float:
    """CPU time of this process and its reaped children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn: Callable[[Path], int], path: Path) -> tuple[float, int]:
    """CPU seconds of ``fn(path)`` (its helpers closed and reaped before the clock stops) and its result."""
    gc.collect()
    started = cpu_seconds()
    result = fn(path)
    gc.collect()
    return cpu_seconds() - started, result
