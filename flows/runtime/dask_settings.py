"""Dask settings for a local cluster that runs a few long, CPU-bound tasks per worker.

Every flow started from the command line with ``--runner dask`` (and no ``--dask-address``)
runs its local cluster with these settings (:class:`flows.runtime.cli.FlowCLI`).

Dask's defaults suit an interactive cluster watched on its dashboard: every server (the
scheduler and each nanny in the flow process, each worker process) wakes 50 times a second to
time its event loop, samples the host with psutil twice a second, a nanny checks its worker's
memory ten times a second, and each worker samples its task thread's stack 100 times a second
for the dashboard's profile page. Measured on an idle 2-worker cluster (this machine, 20 s):
the flow process 4.0% of a core, each worker 2.7%, ~9.5% in all; with :data:`QUIET_CLUSTER`
0.6% and 0.25% each, ~1.1%. On a 2-core machine every worker shares its core with that, so it
is taken from the parts (measured in a 2-worker Pile index build as the parts' task time growing
by 8.5%, 469 s to 509 s at 3M documents).

The scheduler also hands each single-threaded worker one task at a time (``worker-saturation``
1.0), so parts start in exactly the order the flow submits them (largest first) on whichever
worker is free. What the quiet settings give up: the dashboard's profile page stays empty, its system plots are
sampled every 5 s, a blocked event loop is noticed within 1 s (not 20 ms), and a worker going
over its memory limit is stopped within 1 s (not 100 ms). The tasks themselves, their results
and what Prefect records of them are unchanged.

Memory: a nanny starts its worker with ``MALLOC_TRIM_THRESHOLD_=65536`` (Dask's
``pre-spawn-environ``, so that freed memory goes back to the OS). Setting that variable at all
also freezes glibc's mmap threshold at 128 KiB, so every larger buffer (a batch's joined text, its
numpy arrays) is a fresh mmap whose pages fault in again on every batch: a 443 MB Pile shard took
~6.8 CPU-s in a worker instead of 5.1 (600,000 page faults instead of 3,000). The quiet settings
leave the variable unset (a nanny also writes it into the environment of the process running
it, the flow process, whose later children would inherit it), so glibc's defaults hold as in any other process; a worker's memory
after a task may then stay higher until it is reused, its peak does not change.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

#: Dask config keys (``dask.config.set``) for a quiet local cluster; see the module docstring.
QUIET_CLUSTER: dict[str, Any] = {
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.worker.profile.enabled": False,
    # one task per single-threaded worker at a time (the default 1.1 rounds up to 2: a worker
    # holds the next task while running one, so the parts' order is kept only one task ahead)
    "distributed.scheduler.worker-saturation": 1.0,
    # None unsets the variable for the worker process (see "Memory" above)
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
}
#: The memory setting as a Dask config file holds it, for nannies started outside a flow
#: (``dask worker`` in a ``kinda slurm`` job, which points ``DASK_CONFIG`` at a file of it).
#: A ``DASK_*`` variable cannot say it: Dask lowercases those keys, and this one is upper case.
NANNY_CONFIG: dict[str, Any] = {"distributed": {"nanny": {"pre-spawn-environ": {"MALLOC_TRIM_THRESHOLD_": None}}}}


@contextlib.contextmanager
def quiet_cluster(runner: str, address: str | None = None) -> Iterator[None]:
    """Apply :data:`QUIET_CLUSTER` while a ``runner`` run starts its local Dask cluster.

    Nothing for other runners, or when the run joins a cluster at ``address`` (its workers were
    started by someone else, with their own settings). A nanny hands its process's Dask config to
    the worker process it starts, so settings made here reach the workers of a local cluster. A
    key a user's own ``dask.config`` file or ``DASK_*`` variable moved off Dask's shipped value is
    left as the user set it.
    """
    if runner != "dask" or address:
        yield
        return
    import dask
    import distributed  # noqa: F401  (adds the distributed defaults to dask.config.defaults)

    shipped = dask.config.merge(*dask.config.defaults)
    unset = {key: value for key, value in QUIET_CLUSTER.items()
             if dask.config.get(key, None) == dask.config.get(key, None, config=shipped)}
    with dask.config.set(unset):
        yield
