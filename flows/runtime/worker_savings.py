"""Per-process Prefect savings for any worker that runs our tasks: a pool worker or a Dask worker.

Its own module so that both :mod:`flows.runtime.runner` (pool workers) and :mod:`flows.runtime.dask_worker`
(the Dask worker plugin) import it without importing each other.
"""

from __future__ import annotations

import threading
from typing import Any

from flows.runtime import prefect_internals, prefect_reuse


def install_worker_savings() -> None:
    """Once per worker process (idempotent): share the client's SSL contexts and reuse validated settings.

    Run by a pool worker at its start and by every Dask worker before its first task
    (:mod:`flows.runtime.dask_worker`); both savings are safe for tasks running in threads side by side.
    """
    with _savings_guard:  # the client's ssl module replaced (prefect_internals: client-ssl-contexts)
        prefect_internals.replace_client_ssl_module(_SharedSslContexts, _SharedSslContexts)
    prefect_reuse.reuse_hydrated_settings()


_savings_guard = threading.Lock()


class _SharedSslContexts:
    """The ``ssl`` module as Prefect's API client sees it, building each kind of context once per process.

    Prefect's client builds a new SSL context, reading the whole CA bundle (~20 ms CPU), every
    time it is created, and a pool worker creates two clients for every task it runs (about 40%
    of a short task's CPU in the worker). The client makes its context the same way each time
    (the same CA file, or the same unverified settings), so one context per set of arguments
    serves every client of the worker; an ``http://`` API (the embedded server) never uses it.
    """

    def __init__(self, module: Any) -> None:
        self._module = module
        self._contexts: dict[tuple[Any, ...], Any] = {}
        self._guard = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def create_default_context(self, *args: Any, **kwargs: Any) -> Any:
        key = (*args, *sorted(kwargs.items()))
        with self._guard:
            if key not in self._contexts:
                self._contexts[key] = self._module.create_default_context(*args, **kwargs)
            return self._contexts[key]
