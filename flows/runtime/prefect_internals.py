"""Every reach into private Prefect, prefect-dask or CPython internals, in one place.

The runtime (:mod:`flows.runtime.runner`, :mod:`flows.runtime.prefect_reuse`,
:mod:`flows.runtime.worker_savings`, :mod:`flows.runtime.dask_worker`) needs a few things that no
public API offers: one process pool kept for a whole parent run and forked from a fork server (Prefect's
process runner owns a spawn pool per flow run), the embedded API server dying with the flow
process, and two per-task costs of Prefect done once per process. Each reach is a small function
here, and each is listed in :data:`USES` with what it touches, the version it was checked on, the
public API or upstream thread that would replace it, what breaks if it changes, and a shape check.
``tests/flows/test_prefect_internals.py`` runs every check and fails naming the use, the version and
the replacement; it also fails when a private name of a use appears anywhere else in the product
code. ``make test-prefect-latest`` runs the Prefect-facing tests against the newest Prefect the
pin allows (docs/operations.md, "Prefect internals").

Nothing here imports Prefect at import time: ``--help`` must stay free of it.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

PREFECT_CHECKED = "prefect 3.9.1"
PREFECT_DASK_CHECKED = "prefect-dask 0.3.7"
CPYTHON_CHECKED = "CPython 3.11.7"


# -- Prefect's process runner: one pool per run, hosted by us ----------------------------------
def hosted_forwarder(workers: int, queue: Any) -> Any:
    """Prefect's forwarding of pool workers' logs and events to the API, running on ``queue`` for a pool we own.

    ``ProcessPoolTaskRunner.__enter__`` would make its own spawn pool; only its forwarding thread is wanted.
    """
    from prefect.task_runners import ProcessPoolTaskRunner

    forwarder = ProcessPoolTaskRunner(max_workers=workers)
    forwarder._subprocess_message_queue = queue
    forwarder._message_forwarding_thread = threading.Thread(
        target=forwarder._forward_subprocess_messages, name="kinda-pool-messages", daemon=True)
    forwarder._message_forwarding_thread.start()
    return forwarder


def forwarder_queue(forwarder: Any) -> Any:
    """The queue a :func:`hosted_forwarder` reads (the pool workers write their logs and events to it)."""
    return forwarder._subprocess_message_queue


def stop_forwarder(forwarder: Any) -> None:
    """Stop a :func:`hosted_forwarder`: its thread drained and joined, its queue closed."""
    forwarder._stop_message_forwarding()


def initialize_pool_worker(queue: Any) -> None:
    """In a pool worker: Prefect's own worker set-up (events and API logs sent to ``queue``)."""
    from prefect import task_runners

    task_runners._initialize_process_pool_worker(queue)


def pooled_runner_class(borrow: Callable[[int, Any], tuple[Any, bool]], give_back: Callable[[Any, bool], None]) -> type:
    """Prefect's process runner, minus owning the pool: it borrows the run's pool for one flow run.

    ``borrow(workers, out)`` gives ``(pool, shared)``, a pool having ``executor`` and ``queue``;
    ``give_back(pool, shared)`` returns it (:mod:`flows.runtime.runner`). The runner sets the
    attributes ``ProcessPoolTaskRunner.submit`` reads (the executor, the resolver thread pool) and
    skips ``ProcessPoolTaskRunner.__enter__``/``__exit__`` (they make and end a spawn pool).
    """
    from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner

    class PooledTaskRunner(ProcessPoolTaskRunner):
        """Prefect's process runner, minus owning the pool: it borrows the run's for one flow run."""

        def __init__(self, max_workers: int, out: Any) -> None:
            super().__init__(max_workers=max_workers)
            self._out = out
            self._pool: Any = None
            self._shared = False

        def duplicate(self) -> PooledTaskRunner:
            return PooledTaskRunner(self._max_workers, self._out)

        def __enter__(self) -> PooledTaskRunner:
            # No pool yet: Prefect also enters a copy of the flow's runner in a worker around every task
            # it runs there, and that copy must not start workers of its own unless it submits.
            TaskRunner.__enter__(self)
            self._resolver_executor = ThreadPoolExecutor(max_workers=self._max_workers)
            return self

        def submit(self, *args: Any, **kwargs: Any) -> Any:
            if self._pool is None:
                self._pool, self._shared = borrow(self._max_workers, self._out)
                self._executor = self._pool.executor
                self._subprocess_message_queue = self._pool.queue
            return super().submit(*args, **kwargs)

        def cancel_all(self) -> None:
            for event in list(self._cancel_events.values()):
                with contextlib.suppress(OSError, ValueError):
                    event.set()  # type: ignore[attr-defined]
            self._cancel_events.clear()

        def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
            self.cancel_all()
            try:
                if self._resolver_executor is not None:
                    self._resolver_executor.shutdown(wait=True, cancel_futures=True)
                    self._resolver_executor = None
            finally:
                self._executor = None
                self._subprocess_message_queue = None
                if self._pool is not None:
                    give_back(self._pool, self._shared)
                    self._pool = None
                TaskRunner.__exit__(self, exc_type, exc_value, traceback)

    return PooledTaskRunner


# -- Prefect's per-task settings round trip (flows.runtime.prefect_reuse) -----------------------
def replace_settings_serialize(make: Callable[[Callable[..., dict[str, Any]]], Callable[..., dict[str, Any]]]) -> None:
    """``SettingsContext.serialize`` replaced by ``make(original)`` (the process runner and Dask's client call it per submit)."""
    from prefect.context import SettingsContext

    SettingsContext.serialize = make(SettingsContext.serialize)  # type: ignore[method-assign]


def replace_hydrated_context(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """``prefect.context.hydrated_context`` replaced by ``make(original)``, under both names a worker calls it by.

    A pool worker's ``_run_task_with_hydrated_context`` imports it from ``prefect.context`` on each
    call; a Dask worker's task engine calls the name ``prefect.task_engine`` imported at start.
    """
    from prefect import context, task_engine

    original = context.hydrated_context
    replacement = make(original)
    context.hydrated_context = replacement
    if task_engine.hydrated_context is original:
        task_engine.hydrated_context = replacement


# -- Prefect's client: one SSL context per worker (flows.runtime.worker_savings) ----------------
def replace_client_ssl_module(wrap: Callable[[Any], Any], wrapped: type) -> None:
    """The ``ssl`` module as Prefect's API client module sees it replaced by ``wrap(ssl)`` (once: kept when a ``wrapped``)."""
    from prefect.client import orchestration

    if not isinstance(orchestration.ssl, wrapped):
        orchestration.ssl = wrap(orchestration.ssl)


# -- the run's own API server (flows.runtime.api_server, flows.runtime.runner.prefect_api) -------
@contextlib.contextmanager
def global_settings() -> Iterator[None]:
    """The current settings context made the process-global one for the block (the prior one back after).

    Prefect code running outside the run's context variables (threads it starts: the process pool's
    message forwarder, the events and log workers) reads the process-global settings context; with
    the run's API URL there it never asks for a temporary server of its own.
    """
    from prefect import context

    current = context.SettingsContext.get()
    if current is None:  # before Prefect finished importing: nothing to make global
        yield
        return
    with context._temporary_global_settings_context(current):
        yield


def ephemeral_server_switches() -> dict[str, str]:
    """The environment Prefect's own temporary server runs its application under (no UI, the
    ephemeral services, the final app), for :mod:`flows.runtime.api_server`'s server."""
    return {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}


def reload_global_settings() -> None:
    """The process-global settings context built again from the environment (a forked server's, just set)."""
    from prefect import context

    context.refresh_global_settings_context()


def drain_log_and_event_workers() -> None:
    """Flush queued logs and events to the API (before the embedded server stops); errors ignored."""
    with contextlib.suppress(Exception):
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=5)
    with contextlib.suppress(Exception):
        from prefect.events.worker import EventsWorker

        EventsWorker.drain_all()


# -- prefect-dask's runner (flows.runtime.dask_worker) ------------------------------------------
def dask_client_made(runner: Any) -> bool:
    """Whether a ``DaskTaskRunner`` has made its client yet (its ``client`` property makes it on first use)."""
    return runner._client is not None


def dask_joined_client(runner: Any) -> Any:
    """The client of a ``DaskTaskRunner`` on a cluster it joined (not started), else None."""
    return runner._client if runner._client is not None and runner._cluster is None else None


# -- CPython's ProcessPoolExecutor and fork server (flows.runtime.runner) -----------------------
def launch_pool_workers(executor: ProcessPoolExecutor) -> None:
    """Start every worker of ``executor`` now, from the calling thread (it starts them on demand otherwise)."""
    executor._launch_processes()  # type: ignore[attr-defined]


def pool_worker_processes(executor: ProcessPoolExecutor) -> list[Any]:
    """The ``multiprocessing.Process`` of each live worker of ``executor`` (none once it is shut down)."""
    return list((getattr(executor, "_processes", None) or {}).values())


def pool_call_queue(executor: ProcessPoolExecutor) -> Any:
    """The queue ``executor``'s workers read their calls from (a test holds it, as an uncollected cycle does)."""
    return executor._call_queue  # type: ignore[attr-defined]


def forkserver_pid() -> int | None:
    """This process's multiprocessing fork server's pid, None when none runs."""
    from multiprocessing import forkserver

    return getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)


def stop_forkserver() -> None:
    """Stop this process's multiprocessing fork server and reap it, if one runs; errors ignored."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    if server is not None and getattr(server, "_forkserver_pid", None) is not None:
        with contextlib.suppress(Exception):
            server._stop()


# -- the list, with each use's shape check ------------------------------------------------------
@dataclass(frozen=True)
class Use:
    """One reach into internals: what it touches, where it was checked, what would replace it, its check."""

    name: str
    functions: tuple[str, ...]  # this module's functions that make the reach
    touches: str
    private_names: tuple[str, ...]  # names no other product module may use (tests/flows/test_prefect_internals.py)
    checked_on: str
    replacement: str
    breaks: str
    check: Callable[[], None]  # raises AssertionError saying what differs


def _has_parameters(function: Any, names: Iterable[str], where: str) -> None:
    got = list(inspect.signature(function).parameters)
    assert list(names) == got[: len(list(names))], f"{where} takes {got}, expected to start with {list(names)}"


def _source_says(function: Any, text: str, where: str) -> None:
    assert text in inspect.getsource(function), f"{where} no longer contains {text!r}"


def _check_forwarding() -> None:
    from prefect.task_runners import ProcessPoolTaskRunner

    runner = ProcessPoolTaskRunner(max_workers=1)
    for name in ("_subprocess_message_queue", "_message_forwarding_thread"):
        assert hasattr(runner, name), f"ProcessPoolTaskRunner() has no attribute {name}"
    _has_parameters(ProcessPoolTaskRunner._forward_subprocess_messages, ["self"], "_forward_subprocess_messages")
    _source_says(ProcessPoolTaskRunner._forward_subprocess_messages, "self._subprocess_message_queue",
                 "_forward_subprocess_messages")
    _has_parameters(ProcessPoolTaskRunner._stop_message_forwarding, ["self"], "_stop_message_forwarding")
    _source_says(ProcessPoolTaskRunner._stop_message_forwarding, "self._message_forwarding_thread",
                 "_stop_message_forwarding")


def _check_worker_init() -> None:
    from prefect import task_runners

    _has_parameters(task_runners._initialize_process_pool_worker, ["message_queue"], "_initialize_process_pool_worker")


def _check_pooled_runner() -> None:
    from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner

    runner = ProcessPoolTaskRunner(max_workers=1)
    for name in ("_max_workers", "_executor", "_resolver_executor", "_subprocess_message_queue", "_cancel_events"):
        assert hasattr(runner, name), f"ProcessPoolTaskRunner() has no attribute {name}"
    assert isinstance(runner._cancel_events, dict), "ProcessPoolTaskRunner._cancel_events is no longer a dict"
    assert ProcessPoolTaskRunner.__mro__[1] is TaskRunner, "ProcessPoolTaskRunner no longer derives from TaskRunner directly"
    for text in ("self._executor is None", "self._resolver_executor.submit("):
        _source_says(ProcessPoolTaskRunner.submit, text, "ProcessPoolTaskRunner.submit")
    _source_says(ProcessPoolTaskRunner._resolve_futures_and_submit, "self._executor.submit(",
                 "ProcessPoolTaskRunner._resolve_futures_and_submit")


def _check_settings_serialize() -> None:
    from prefect import context
    from prefect.task_runners import ProcessPoolTaskRunner

    _has_parameters(context.SettingsContext.serialize, ["self", "include_secrets"], "SettingsContext.serialize")
    _source_says(context.serialize_context, "settings_context.serialize()", "serialize_context")
    _source_says(ProcessPoolTaskRunner.submit, "serialize_context()", "ProcessPoolTaskRunner.submit")


def _check_hydrated_context() -> None:
    from prefect import context, task_engine, task_runners

    _has_parameters(context.hydrated_context, ["serialized_context", "client"], "hydrated_context")
    _source_says(context.hydrated_context, 'serialized_context.get("settings_context")', "hydrated_context")
    _source_says(context.hydrated_context, "SettingsContext(**settings_context)", "hydrated_context")
    _source_says(task_runners._run_task_with_hydrated_context, "from prefect.context import hydrated_context",
                 "_run_task_with_hydrated_context")
    assert hasattr(task_engine, "hydrated_context"), "prefect.task_engine no longer imports hydrated_context"


def _check_client_ssl() -> None:
    import ssl

    from prefect.client import orchestration

    assert hasattr(orchestration, "ssl"), "prefect.client.orchestration no longer imports ssl"
    assert orchestration.ssl is ssl or hasattr(orchestration.ssl, "create_default_context"), \
        "prefect.client.orchestration.ssl is not the ssl module"
    for client in (orchestration.PrefectClient, orchestration.SyncPrefectClient):
        _source_says(client.__init__, "ssl.create_default_context(", f"{client.__name__}.__init__")


def _check_global_settings() -> None:
    from prefect import context

    _has_parameters(context._temporary_global_settings_context, ["settings_context"],
                    "prefect.context._temporary_global_settings_context")
    _source_says(context._temporary_global_settings_context, "GLOBAL_SETTINGS_CONTEXT = settings_context",
                 "prefect.context._temporary_global_settings_context")
    _source_says(context.SettingsContext.get, "GLOBAL_SETTINGS_CONTEXT", "SettingsContext.get")


def _check_ephemeral_server_app() -> None:
    from prefect import context
    from prefect.server.api import server as prefect_server

    _has_parameters(context.refresh_global_settings_context, [], "prefect.context.refresh_global_settings_context")
    _source_says(context.refresh_global_settings_context, "GLOBAL_SETTINGS_CONTEXT = root_settings_context()",
                 "prefect.context.refresh_global_settings_context")
    for switch in ephemeral_server_switches():
        _source_says(prefect_server.SubprocessASGIServer._run_uvicorn_command, f'"{switch}"',
                     "SubprocessASGIServer._run_uvicorn_command")
    _source_says(prefect_server.SubprocessASGIServer._run_uvicorn_command, '"prefect.server.api.server:create_app"',
                 "SubprocessASGIServer._run_uvicorn_command")
    for switch in ("PREFECT__SERVER_EPHEMERAL", "PREFECT__SERVER_FINAL"):
        _source_says(prefect_server.create_app, f'os.getenv("{switch}")', "prefect.server.api.server.create_app")


def _check_drain() -> None:
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    _has_parameters(APILogWorker.drain_all, ["timeout"], "APILogWorker.drain_all")
    assert callable(getattr(EventsWorker, "drain_all", None)), "EventsWorker.drain_all is gone"


def _check_dask_runner() -> None:
    from prefect_dask import DaskTaskRunner

    runner = DaskTaskRunner()
    assert runner._client is None, "DaskTaskRunner()._client is not None before the first use of .client"
    assert hasattr(runner, "_cluster"), "DaskTaskRunner() has no attribute _cluster"
    assert isinstance(inspect.getattr_static(DaskTaskRunner, "client"), property), "DaskTaskRunner.client is not a property"


def _check_pool_launch() -> None:
    _has_parameters(ProcessPoolExecutor._launch_processes, ["self"], "ProcessPoolExecutor._launch_processes")  # type: ignore[attr-defined]
    _source_says(ProcessPoolExecutor._spawn_process, "self._processes[", "ProcessPoolExecutor._spawn_process")  # type: ignore[attr-defined]
    _source_says(ProcessPoolExecutor.__init__, "self._call_queue", "ProcessPoolExecutor.__init__")


def _check_forkserver() -> None:
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    assert isinstance(server, forkserver.ForkServer), "multiprocessing.forkserver._forkserver is not a ForkServer"
    assert hasattr(server, "_forkserver_pid"), "ForkServer has no _forkserver_pid"
    _has_parameters(forkserver.ForkServer._stop, ["self"], "ForkServer._stop")  # type: ignore[attr-defined]


_NO_PUBLIC_POOL = ("none: ProcessPoolTaskRunner makes its own pool per flow run with a hard-coded 'spawn' context "
                   "(task_runners.py, __enter__), takes no executor and no start method; it was added in "
                   "PrefectHQ/prefect#18724. An option to pass an mp_context or an executor would replace this; no "
                   "upstream issue asks for it yet (to be filed)")

#: Every reach, in the order the runtime makes them.
USES: tuple[Use, ...] = (
    Use("process-runner-forwarding", ("hosted_forwarder", "forwarder_queue", "stop_forwarder"),
        "prefect.task_runners.ProcessPoolTaskRunner: _subprocess_message_queue, _message_forwarding_thread, "
        "_forward_subprocess_messages(), _stop_message_forwarding()",
        ("_subprocess_message_queue", "_message_forwarding_thread", "_forward_subprocess_messages",
         "_stop_message_forwarding"),
        PREFECT_CHECKED, _NO_PUBLIC_POOL,
        "AttributeError when the first pool opens, or (a renamed queue) pool workers' logs and events never reach "
        "the API: the UI shows task runs without logs", _check_forwarding),
    Use("process-worker-init", ("initialize_pool_worker",),
        "prefect.task_runners._initialize_process_pool_worker(message_queue)",
        ("_initialize_process_pool_worker",),
        PREFECT_CHECKED,
        "ProcessPoolTaskRunner(initializer=..., initargs=...) (PrefectHQ/prefect#22591, closing #22589; in 3.9) runs "
        "our worker start-up after Prefect's own, once the runner can be given our pool (see process-runner-forwarding)",
        "every pool worker fails its initializer: BrokenProcessPool on the first task of every run",
        _check_worker_init),
    Use("pooled-runner", ("pooled_runner_class",),
        "a ProcessPoolTaskRunner subclass that sets _executor, _resolver_executor, _subprocess_message_queue, "
        "reads _max_workers, _cancel_events, and skips ProcessPoolTaskRunner.__enter__/__exit__ for TaskRunner's",
        ("_resolver_executor", "_cancel_events", "_max_workers"),
        PREFECT_CHECKED, _NO_PUBLIC_POOL,
        "submit raises 'Task runner is not started' or runs on no pool: every --runner process run fails at its "
        "first task (tests/flows/test_runtime_context.py)", _check_pooled_runner),
    Use("settings-serialize-once", ("replace_settings_serialize",),
        "prefect.context.SettingsContext.serialize replaced (called by serialize_context() on every submit)",
        (),
        PREFECT_CHECKED,
        "PrefectHQ/prefect#20853 (closed) proposed caching the static serialized context in ProcessPoolTaskRunner; "
        "3.9.1 still serializes on every submit. A cached serialize_context upstream makes this unneeded",
        "silently: the flow process pays 8-16 ms CPU per submit again (the reuse counters in "
        "tests/flows/test_runtime_context.py stay at zero)", _check_settings_serialize),
    Use("settings-hydrate-once", ("replace_hydrated_context",),
        "prefect.context.hydrated_context and prefect.task_engine.hydrated_context replaced; relies on "
        "task_runners._run_task_with_hydrated_context importing it per call",
        ("_run_task_with_hydrated_context",),
        PREFECT_CHECKED,
        "PrefectHQ/prefect#20853 (closed) proposed caching the worker's SettingsContext keyed by the serialized "
        "settings; not in 3.9.1. Upstream caching makes this unneeded",
        "silently: every pool or Dask worker validates the settings anew per task (20-30 ms CPU); a changed "
        "signature breaks every task run in a worker", _check_hydrated_context),
    Use("client-ssl-contexts", ("replace_client_ssl_module",),
        "the module global prefect.client.orchestration.ssl (PrefectClient/SyncPrefectClient.__init__ call "
        "ssl.create_default_context per client)",
        (),
        PREFECT_CHECKED,
        "PrefectHQ/prefect#19106 (open): 'allow using custom SSL contexts', reusing one context across PrefectClient "
        "instances",
        "silently: each client reads the CA bundle again (~20 ms CPU, two clients per task run)", _check_client_ssl),
    Use("global-settings-context", ("global_settings",),
        "prefect.context._temporary_global_settings_context(settings_context) (replaces the module global "
        "GLOBAL_SETTINGS_CONTEXT that SettingsContext.get() falls back to)",
        ("_temporary_global_settings_context",),
        PREFECT_CHECKED,
        "none: Prefect offers no public way to set the API URL for threads it starts outside a settings context "
        "but the environment read at import; SubprocessASGIServer's per-port singleton (PrefectHQ/prefect#14722), "
        "which this replaces, is private too. A persistent `prefect server start` with PREFECT_API_URL needs none "
        "of it",
        "AttributeError at the start of every run without PREFECT_API_URL; or (the global no longer consulted) "
        "Prefect's own threads start a second temporary server and send the workers' events there "
        "(tests/flows/test_runtime_context.py)", _check_global_settings),
    Use("ephemeral-server-app", ("ephemeral_server_switches", "reload_global_settings"),
        "the environment switches SubprocessASGIServer._run_uvicorn_command gives Prefect's temporary server "
        "(PREFECT_UI_ENABLED, PREFECT__SERVER_EPHEMERAL, PREFECT__SERVER_FINAL, read by "
        "prefect.server.api.server:create_app) and prefect.context.refresh_global_settings_context()",
        (),
        PREFECT_CHECKED,
        "none: SubprocessASGIServer (PrefectHQ/prefect#14722) starts a new interpreter that imports Prefect and "
        "its server again and stops only from an atexit hook, which a kill -9 of the flow skips; an option to "
        "serve a given socket from a forked process, or to tie the server to its parent's life, would replace "
        "this (no upstream issue yet)",
        "the run's server serves the UI or runs every service of a full server (more CPU per run), or keeps the "
        "flow's settings instead of its own (tests/flows/test_runtime_server.py)", _check_ephemeral_server_app),
    Use("drain-log-and-event-workers", ("drain_log_and_event_workers",),
        "APILogWorker.drain_all(timeout=) and EventsWorker.drain_all(), defined in "
        "prefect._internal.concurrency.services.QueueService",
        (),
        PREFECT_CHECKED,
        "for logs, the public prefect.logging.handlers.APILogHandler.flush() (it calls drain_all with a 5 s "
        "timeout); for events none",
        "silently (errors are ignored): the last logs and events of a run are lost when the embedded server stops, "
        "or the log worker retries a stopped server for minutes", _check_drain),
    Use("dask-runner-client", ("dask_client_made", "dask_joined_client"),
        "prefect_dask.DaskTaskRunner: _client (None until the client property makes it) and _cluster",
        ("_client", "_cluster"),
        PREFECT_DASK_CHECKED,
        "the public lazy DaskTaskRunner.client property (PrefectHQ/prefect#17648, for PrefectHQ/prefect#17618) makes "
        "the client but says neither whether it is made nor whether the cluster was joined",
        "AttributeError on the first submit of a --runner dask run, or the savings plugin registered on every "
        "submit (tests/flows/test_dask_worker.py)", _check_dask_runner),
    Use("pool-workers-up-front", ("launch_pool_workers", "pool_worker_processes", "pool_call_queue"),
        "concurrent.futures.ProcessPoolExecutor: _launch_processes(), _processes, _call_queue",
        ("_launch_processes", "_processes", "_call_queue"),
        CPYTHON_CHECKED,
        "none: workers start on demand since python/cpython#19453 (bpo-39207), where starting them all up front "
        "was asked for and not added; no public list of a pool's workers",
        "AttributeError when a pool opens; or (_processes renamed) a pool that ran no task hangs at close "
        "(tests/flows/test_runtime_pool.py)", _check_pool_launch),
    Use("forkserver-stop", ("forkserver_pid", "stop_forkserver"),
        "multiprocessing.forkserver._forkserver: _forkserver_pid, _stop()",
        ("_forkserver", "_forkserver_pid", "_stop"),
        CPYTHON_CHECKED,
        "none: a public ForkServer.stop() was proposed and rejected (python/cpython#81688, bpo-37507)",
        "silently (errors are ignored): the fork server outlives the last pool until the flow process exits "
        "(tests/flows/test_runtime_pool.py)", _check_forkserver),
)
