"""Prefect's per-task settings round trip on the process runner, done once per settings, not once per task.

Prefect's process runner sends the flow's whole settings context with every task it submits: the
flow process serializes it on each submit (8-16 ms CPU: a model dump of every setting, secrets
rendered, then a walk over the result) and the worker validates it back into a new ``Settings``
on each task run (20-30 ms: every field, the environment, ``.env`` and the profiles file read
again), about 30% of a short task's CPU in the worker. Both are pure functions of inputs that do
not change during a run: a settings context is never changed once made (``temporary_settings``
makes a new one), and the worker's result depends only on the serialized form, its environment
and its working directory. Prefect 3.9 has no option to skip either (``ProcessPoolTaskRunner.submit``
calls ``serialize_context()`` unconditionally, the worker's ``_run_task_with_hydrated_context``
calls ``hydrated_context``), so this module replaces both, through the two reaches named in
:mod:`flows.runtime.prefect_internals` (``settings-serialize-once``, ``settings-hydrate-once``):

* flow process (:func:`reuse_serialized_settings`): ``SettingsContext.serialize`` remembers its
  result for the context instance it last served and hands out a deep copy (0.1 ms);
* pool or Dask worker (:func:`reuse_hydrated_settings`): ``prefect.context.hydrated_context`` builds
  the settings context once for an equal serialized form, environment and working directory, and
  enters a fresh copy of it for each task; everything else it hydrates (the flow run, tags,
  the task runner) is Prefect's own code, per task as before.

Prefect's Dask runner goes the same way by another road: its client serializes the same
``SettingsContext`` on each submit, and the worker hands the serialized context to
``run_task_sync``, whose engine hydrates it through the task engine's own import of
``hydrated_context`` (not ``_run_task_with_hydrated_context``), so both names are replaced. A Dask
worker runs tasks in threads: the one built settings context is shared under a lock and never
entered, each task enters its own copy (a context variable, so per thread).

A changed setting (a ``temporary_settings`` block around a submit, another profile) is a new
context or a different serialized form, so it is serialized and validated anew.
``tests/flows/test_runtime_context.py`` fails when either no longer takes effect or when a
changed setting no longer reaches the worker.
"""

from __future__ import annotations

import contextlib
import copy
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from flows.runtime import prefect_internals

_installed: set[str] = set()
_guard = threading.Lock()
#: How often each reuse served a task (read by the tests: a reuse that stopped applying shows as 0).
stats = {"serialized": 0, "serialized_reused": 0, "hydrated": 0, "hydrated_reused": 0}


def _first_install(name: str) -> bool:
    """True the first time ``name`` is asked for in this process (each reuse is installed once)."""
    with _guard:
        first = name not in _installed
        _installed.add(name)
        return first


def reuse_serialized_settings() -> None:
    """In the flow process: serialize each settings context once (idempotent)."""
    if _first_install("serialize"):
        prefect_internals.replace_settings_serialize(_serialize_once)


def _serialize_once(original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``SettingsContext.serialize`` remembering its result for the context instance it last served."""
    last: list[Any] = []  # [context, include_secrets, serialized]: the context held, so its id stays its own
    last_guard = threading.Lock()

    def serialize(self: Any, include_secrets: bool = True) -> dict[str, Any]:
        with last_guard:
            if last and last[0] is self and last[1] == include_secrets:
                stats["serialized_reused"] += 1
                return copy.deepcopy(last[2])
        serialized = original(self, include_secrets=include_secrets)
        with last_guard:
            last[:] = [self, include_secrets, serialized]
            stats["serialized"] += 1
        return copy.deepcopy(serialized)

    return serialize


def reuse_hydrated_settings() -> None:
    """In a pool or Dask worker: validate each serialized settings context once (idempotent)."""
    if _first_install("hydrate"):
        prefect_internals.replace_hydrated_context(_hydrate_once)


def _hydrate_once(original: Callable[..., Any]) -> Callable[..., Any]:
    """``hydrated_context`` that builds the settings context once per serialized form, environment and folder."""
    from prefect import context

    built: list[Any] = []  # [key, never-entered SettingsContext]
    built_guard = threading.Lock()

    def settings_context(serialized: dict[str, Any]) -> Any:
        key = (serialized, dict(os.environ), os.getcwd())
        with built_guard:
            if built and built[0] == key:
                stats["hydrated_reused"] += 1
            else:
                built[:] = [copy.deepcopy(key), context.SettingsContext(**serialized)]
                stats["hydrated"] += 1
            return built[1].model_copy()  # entered once per task: a context refuses a nested enter

    @contextlib.contextmanager
    def hydrated_context(serialized_context: dict[str, Any] | None = None, client: Any = None) -> Iterator[None]:
        settings = (serialized_context or {}).get("settings_context")
        if not settings:
            with original(serialized_context, client):
                yield
            return
        # entered first, as Prefect does, so the client the rest is hydrated with sees these settings
        with settings_context(settings), original(dict(serialized_context or {}, settings_context={}), client):
            yield

    return hydrated_context
