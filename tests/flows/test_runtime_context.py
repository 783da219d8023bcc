"""The process runner's settings round trip is done once per settings (:mod:`flows.runtime.prefect_reuse`).

This is the test that fails when Prefect changes under the reuse: if ``ProcessPoolTaskRunner``
stops serializing through ``SettingsContext.serialize`` or its worker stops hydrating through
``prefect.context.hydrated_context``, the reuse counters stay at zero; if the reuse served stale
settings, a setting changed around a submit would not reach the task.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from core.config import PipelineConfig


@pytest.mark.usefixtures("prefect_api_url")
def test_settings_reach_workers_and_are_built_once_per_settings(tmp_path: Path) -> None:
    from prefect import flow, task
    from prefect.settings import PREFECT_TASKS_DEFAULT_RETRIES, get_current_settings, temporary_settings

    from flows.runtime import prefect_reuse
    from flows.runtime.runner import make_task_runner, worker_pool

    @task
    def seen(index: int) -> tuple[int, int, dict[str, int], list[str]]:
        """The retries setting this task ran under, its worker's reuse counters and Prefect server modules."""
        server_modules = [name for name in sys.modules if name.startswith("prefect.server")]
        return get_current_settings().tasks.default_retries, os.getpid(), dict(prefect_reuse.stats), server_modules

    @flow
    def settings_flow() -> list[Any]:
        results = [seen.submit(i).result() for i in range(4)]
        with temporary_settings({PREFECT_TASKS_DEFAULT_RETRIES: 2}):
            results += [seen.submit(i).result() for i in range(4, 6)]
        return results + [seen.submit(i).result() for i in range(6, 8)]

    config = PipelineConfig(out=str(tmp_path / "out"), workers=2)
    before = dict(prefect_reuse.stats)
    with worker_pool(config):
        results = settings_flow.with_options(task_runner=make_task_runner(config))()
    assert [retries for retries, *_ in results] == [0, 0, 0, 0, 2, 2, 0, 0]
    assert os.getpid() not in {pid for _, pid, *_ in results}  # ran in the pool's workers
    # the embedded server's code (~2 CPU-s to import) stays in the flow process: not preloaded, not pulled in
    assert [modules for *_, modules in results if modules] == []
    last_seen = {pid: counters for _, pid, counters, _ in results}  # each worker's counters after its last task
    # four tasks under one setting on two workers: some worker ran two in a row with the same settings
    assert sum(counters["hydrated_reused"] for counters in last_seen.values()) >= 1
    # each worker built the settings at least once per distinct setting it ran under, so never fewer than 2
    assert sum(counters["hydrated"] for counters in last_seen.values()) >= 2
    assert prefect_reuse.stats["serialized_reused"] - before["serialized_reused"] >= 5
    assert prefect_reuse.stats["serialized"] - before["serialized"] >= 2  # the temporary settings, and back


def test_prefects_own_threads_find_the_run_api(prefect_api_url: str) -> None:
    """Prefect code in a thread outside the run's settings context (the pool's message forwarder, the
    events and log workers) reads the process-global settings: it must find the run's API there and
    talk to it, not ask for a temporary server of its own (see :mod:`flows.runtime.api_server`)."""
    from prefect.client.orchestration import get_client

    seen: list[tuple[str, Any]] = []

    def look() -> None:
        with get_client(sync_client=True) as client:
            seen.append((str(client.api_url).rstrip("/"), client.api_healthcheck()))

    thread = threading.Thread(target=look)
    thread.start()
    thread.join()
    assert seen == [(prefect_api_url, None)]  # None: healthy
    server = sys.modules.get("prefect.server.api.server")
    assert server is None or not server.SubprocessASGIServer._instances  # no temporary server was started
