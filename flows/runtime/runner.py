"""Where flows run: an embedded Prefect API when none is configured, and the task runner.

Prefect without ``PREFECT_API_URL`` starts a temporary server per process, and with a process
pool every worker process would start its own (seconds each). We start one embedded server up
front and point every process at it through the environment; with ``PREFECT_API_URL`` set (a
real ``prefect server`` or Prefect Cloud) nothing is started and runs show in that UI. The
embedded server (:mod:`flows.runtime.api_server`) dies with the flow process and is reaped when it stops.

The process runner is one pool of worker processes per run, not per flow: a parent run
(``flows.llama``) keeps it for all its stages (:func:`worker_pool`), so each worker imports the
libraries once, not once per stage, and on Linux the workers are forked from a fork server that
imported Prefect's task engine once for all of them. Every worker is started up front by a
thread that lives as long as the pool, dies with the flow process and holds the output root's
writers lock (:func:`core.lock.join_writers`), so a ``kill -9`` of the flow leaves nothing
writing ``--out``. The fork server is stopped and reaped with the last pool.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from core import lifeline
from core.config import PipelineConfig
from flows.runtime import prefect_internals, prefect_reuse
from flows.runtime.logs import quiet_environment_errors, say
from flows.runtime.worker_savings import install_worker_savings

log = logging.getLogger(__name__)


@contextlib.contextmanager
def prefect_api() -> Iterator[str]:
    """Yield the API URL to use, starting the run's own server if none is configured.

    It says what it does before each slow step (importing Prefect, starting the server: minutes
    on a loaded machine, with no other output). The run's server (:mod:`flows.runtime.api_server`)
    serves no UI and stops with the run, so Prefect's ``View at http://127.0.0.1:<port>/runs/...``
    links would point at nothing: they are left out (an empty ``PREFECT_UI_URL``) unless the user
    set ``PREFECT_UI_URL``. With a configured API (a real server, Prefect Cloud) the links stay:
    that UI outlives the run. The URL is set for the run in the environment (worker processes),
    the settings context and the process-global settings context (Prefect's own threads).
    """
    say("loading Prefect (seconds; a minute or more on a busy machine)...")
    from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL, temporary_settings

    from flows.runtime.api_server import EmbeddedServer

    configured = os.environ.get("PREFECT_API_URL") or PREFECT_API_URL.value()
    if configured:
        say(f"using the Prefect API at {configured}")
        yield configured
        return
    say("starting a temporary Prefect API server for this run (PREFECT_API_URL is not set)...")
    started = time.perf_counter()
    server = EmbeddedServer()
    ui_given = "PREFECT_UI_URL" in os.environ
    try:
        server.start(timeout_s=180)  # a loaded machine can take minutes
        say(f"Prefect API ready in {time.perf_counter() - started:.1f} s at {server.api_url} (it stops with "
            "this run, so no UI links; set PREFECT_API_URL to a `prefect server` for a UI: docs/operations.md)")
        os.environ["PREFECT_API_URL"] = server.api_url
        links = {} if ui_given else {PREFECT_UI_URL: ""}
        if not ui_given:
            os.environ["PREFECT_UI_URL"] = ""
        with temporary_settings({PREFECT_API_URL: server.api_url, **links}), prefect_internals.global_settings():
            try:
                yield server.api_url
            finally:  # a failed run's logs too, or the log worker retries a stopped server for minutes
                _drain_workers()
    finally:
        os.environ.pop("PREFECT_API_URL", None)
        if not ui_given:
            os.environ.pop("PREFECT_UI_URL", None)
        server.stop()


def _drain_workers() -> None:
    """Flush queued logs and events to the API before the embedded server stops."""
    prefect_internals.drain_log_and_event_workers()


def worker_count(config: PipelineConfig) -> int:
    """Configured workers, or one per core."""
    return config.workers or os.cpu_count() or 1


def make_task_runner(config: PipelineConfig) -> Any:
    """The task runner the config asks for.

    CPU-bound Python must not share a GIL, so the default is a process pool; Dask (a local
    cluster of processes or an existing scheduler) and Ray take the same flows past one machine.
    """
    from prefect.task_runners import ThreadPoolTaskRunner

    workers = worker_count(config)
    if config.runner == "process":
        return pooled_runner(workers, Path(config.out))
    if config.runner == "thread":
        return ThreadPoolTaskRunner(max_workers=workers)
    if config.runner == "sequential":
        return ThreadPoolTaskRunner(max_workers=1)
    if config.runner == "dask":
        from flows.runtime.dask_worker import SavingDaskTaskRunner

        if config.dask_address:
            return SavingDaskTaskRunner(address=config.dask_address)
        return SavingDaskTaskRunner(
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
    # no dashboard: a run's own instance is watched in Prefect's UI, and the dashboard is a dozen
    # processes more to start on every run
    return _linked_ray_runner_class()(address="local", init_kwargs={"num_cpus": workers, "include_dashboard": False})


_reapers: list[Any] = []  # this process's watchdog of its local Ray instance (its pipe held open)
_reapers_guard = threading.Lock()


@functools.cache
def _linked_ray_runner_class() -> type:
    """Prefect's Ray runner whose private local instance dies with the flow process (``kill -9`` included).

    The raylet and gcs_server die with the driver, but the agents the raylet starts outlive it
    (:mod:`core.reaper`), so a watchdog of this process is started before the instance is.
    """
    import ray
    from prefect_ray import RayTaskRunner

    class LinkedRayTaskRunner(RayTaskRunner):
        def __enter__(self) -> Any:
            if self.address == "local" and not ray.is_initialized():
                _watch_this_process()
            return super().__enter__()

    return LinkedRayTaskRunner


def _watch_this_process() -> None:
    """Start this process's watchdog once (a module function: the runner class above is pickled
    by value into Ray's workers, and must not carry the watchdog's pipe)."""
    with _reapers_guard:
        if not _reapers:
            from core import reaper

            _reapers.append(reaper.start())


# -- one linked worker pool per run -----------------------------------------------------------
class _Pool:
    """Worker processes, their message queue to Prefect's log/event forwarding, and the thread that started them.

    What it takes from Prefect's and CPython's internals is in :mod:`flows.runtime.prefect_internals`
    (``process-runner-forwarding``, ``pool-workers-up-front``, ``forkserver-stop``).
    """

    def __init__(self, workers: int, out: Path) -> None:
        prefect_reuse.reuse_serialized_settings()
        self.workers, self.out, self.users = workers, out, 0
        context = _worker_context()
        # Prefect's own forwarding of worker logs and events to the API, hosted here for the pool's life
        self.forwarder = prefect_internals.hosted_forwarder(workers, context.Queue())
        self.executor = ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=_start_pool_worker,
            initargs=(self.queue, os.getpid(), str(out.resolve())))
        self._closing = threading.Event()
        started = threading.Event()
        self._keeper = threading.Thread(target=self._keep, args=(started,), name="kinda-pool", daemon=True)
        _pool_opened()
        self._keeper.start()
        started.wait()

    def _keep(self, started: threading.Event) -> None:
        """Start every worker from this thread, then outlive them (their death signal follows it)."""
        try:
            prefect_internals.launch_pool_workers(self.executor)
        finally:
            started.set()
        self._closing.wait()

    @property
    def queue(self) -> Any:
        return prefect_internals.forwarder_queue(self.forwarder)

    def close(self) -> None:
        """Stop the workers (waiting for them, so their writes and locks are gone), then the forwarding.

        Workers are started up front, but ``shutdown`` only stops them through the executor's
        manager thread, which starts with the first task. In a pool that never ran a task (a
        parent run whose every stage resumed) the idle workers wait on the call queue until the
        garbage collector closes it, and meanwhile hold the fork server's pipe, so stopping the
        server waited for ever (seen once in three resumed sample runs). Such workers are ended
        here: they never ran anything, so there is nothing of theirs to wait for.
        """
        workers = prefect_internals.pool_worker_processes(self.executor)
        try:
            self.executor.shutdown(wait=True, cancel_futures=True)
            for worker in workers:
                if worker.is_alive():
                    worker.terminate()
                worker.join(timeout=10)
            prefect_internals.stop_forwarder(self.forwarder)
        finally:
            self._closing.set()
            self._keeper.join(timeout=5)
            _pool_closed()


_live = [0]  # pools open in this process (the fork server serves them all)
_live_guard = threading.Lock()


def _pool_opened() -> None:
    with _live_guard:
        _live[0] += 1


def _pool_closed() -> None:
    """The last pool gone: stop the fork server and reap it (no zombie; its CPU counted as this process's child)."""
    with _live_guard:
        _live[0] -= 1
        if _live[0] > 0:
            return
    prefect_internals.stop_forkserver()


#: What a pool's fork server imports once, so that each worker forked from it does not
#: (Prefect's task engine and the pipeline's tasks: about 1.6 CPU-s per worker otherwise;
#: ``prefect_dask``: Prefect imports every installed collection, Dask's distributed included,
#: the first time a worker builds a block, ~0.5 CPU-s; a module that is not installed is skipped;
#: ``core.filters.signals_preload``: numba and the signals kernels every staging worker runs,
#: ~0.7 CPU-s per worker, and compiled once, not per worker, where numba's cache is empty).
PRELOAD = ("__main__", "prefect.task_engine", "prefect.task_runners", "tasks.pipeline", "flows.runtime.runner",
           "prefect_dask", "core.filters.signals_preload")


def _worker_context() -> Any:
    """Fork-server workers on Linux (imports paid once, in the server), spawned ones elsewhere.

    The server is a child of the flow process started with the first pool; it imports
    :data:`PRELOAD` and forks each worker from that state. It exits when the flow process dies
    (its pipe from the flow closes), and its workers with it (:func:`core.lifeline.start_worker`).
    Fork is never used from the flow process itself: it runs threads (Prefect's, the pool's).
    """
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    return context


def _start_pool_worker(queue: Any, parent_pid: int, out: str) -> None:
    """A worker's first act: die with the flow and join its writers; then Prefect's log/event forwarding."""
    lifeline.start_worker(parent_pid, out)
    quiet_environment_errors()
    install_worker_savings()
    prefect_internals.initialize_pool_worker(queue)


_pools: list[_Pool] = []  # the pool of the run in progress (at most one; a list so it can be swapped)
_pools_guard = threading.Lock()


def _borrow(workers: int, out: Path) -> tuple[_Pool, bool]:
    """The run's pool when it fits (same size), else a private one; True when shared."""
    with _pools_guard:
        if _pools and _pools[0].workers == workers:
            _pools[0].users += 1
            return _pools[0], True
        if not _pools:
            pool = _Pool(workers, out)
            pool.users = 1
            _pools.append(pool)
            return pool, True
    return _Pool(workers, out), False  # a stage that asked for another worker count: its own pool


def _give_back(pool: _Pool, shared: bool) -> None:
    if shared:
        with _pools_guard:
            pool.users -= 1
            if pool.users > 0:
                return
            _pools.remove(pool)
    pool.close()


@contextlib.contextmanager
def worker_pool(config: PipelineConfig) -> Iterator[None]:
    """Keep one worker pool for every flow run inside (a parent run's stages), when the runner is a process pool."""
    if config.runner != "process":
        yield
        return
    pool, shared = _borrow(worker_count(config), Path(config.out))
    try:
        yield
    finally:
        _give_back(pool, shared)


def pooled_runner(workers: int, out: Path) -> Any:
    """A Prefect process-pool task runner on the run's linked worker pool (see the module docstring)."""
    return _pooled_runner_class()(max_workers=workers, out=out)


@functools.cache
def _pooled_runner_class() -> type:
    """The runner class, built on first use (importing Prefect's runners costs ``--help`` time).

    A subclass of Prefect's process runner that borrows the run's pool (:mod:`flows.runtime.prefect_internals`,
    ``pooled-runner``).
    """
    return prefect_internals.pooled_runner_class(_borrow, _give_back)
