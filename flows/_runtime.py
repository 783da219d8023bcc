"""Where flows run: an embedded Prefect API when none is configured, and the task runner.

Prefect without ``PREFECT_API_URL`` starts a temporary server per process, and with a process
pool every worker process would start its own (seconds each). We start one embedded server up
front and point every process at it through the environment; with ``PREFECT_API_URL`` set (a
real ``prefect server`` or Prefect Cloud) nothing is started and runs show in that UI.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

from core.config import PipelineConfig
from flows._logs import quiet_environment_errors

log = logging.getLogger(__name__)


@contextlib.contextmanager
def prefect_api() -> Iterator[str]:
    """Yield the API URL to use, starting an embedded server if none is configured."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    configured = os.environ.get("PREFECT_API_URL") or PREFECT_API_URL.value()
    if configured:
        yield configured
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start(timeout=180)  # a loaded machine can take minutes; the default gives up early
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        with temporary_settings({PREFECT_API_URL: server.api_url}):
            try:
                yield server.api_url
            finally:  # a failed run's logs too, or the log worker retries a stopped server for minutes
                _drain_workers()
    finally:
        os.environ.pop("PREFECT_API_URL", None)
        server.stop()


def _drain_workers() -> None:
    """Flush queued logs and events to the API before the embedded server stops."""
    with contextlib.suppress(Exception):
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=5)
    with contextlib.suppress(Exception):
        from prefect.events.worker import EventsWorker

        EventsWorker.drain_all()


def worker_count(config: PipelineConfig) -> int:
    """Configured workers, or one per core."""
    return config.workers or os.cpu_count() or 1


def make_task_runner(config: PipelineConfig) -> Any:
    """The task runner the config asks for.

    CPU-bound Python must not share a GIL, so the default is a process pool; Dask (a local
    cluster of processes or an existing scheduler) and Ray take the same flows past one machine.
    """
    from prefect.task_runners import ProcessPoolTaskRunner, ThreadPoolTaskRunner

    workers = worker_count(config)
    if config.runner == "process":
        return ProcessPoolTaskRunner(max_workers=workers, initializer=quiet_environment_errors)
    if config.runner == "thread":
        return ThreadPoolTaskRunner(max_workers=workers)
    if config.runner == "sequential":
        return ThreadPoolTaskRunner(max_workers=1)
    if config.runner == "dask":
        from prefect_dask import DaskTaskRunner

        if config.dask_address:
            return DaskTaskRunner(address=config.dask_address)
        return DaskTaskRunner(
            cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True}
        )
    if config.runner == "ray":
        return make_ray_runner(workers)
    raise ValueError(f"unknown runner {config.runner!r}")


def make_ray_runner(workers: int) -> Any:
    """Join the Ray cluster in ``RAY_ADDRESS``, or start a private local one of ``workers`` CPUs.

    Left alone, ``ray.init()`` falls back to whatever cluster ``ray start`` last left in
    ``/tmp/ray`` (someone else's, or a dead one); naming the address, or ``"local"`` for a fresh
    instance, makes where tasks run a decision of the command line, as with ``--dask-address``.
    """
    try:
        from prefect_ray import RayTaskRunner
    except ImportError as exc:
        raise SystemExit("runner 'ray' needs `pip install -e .[ray]` (ray and prefect-ray)") from exc
    address = os.environ.get("RAY_ADDRESS")
    if address:
        log.info("ray: joining the cluster at %s", address)
        return RayTaskRunner(address=address)
    return RayTaskRunner(address="local", init_kwargs={"num_cpus": workers})
