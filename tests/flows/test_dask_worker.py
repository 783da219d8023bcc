"""A Dask worker of a ``--runner dask`` run gets the pool workers' Prefect savings (:mod:`flows.runtime.dask_worker`).

Fails when the savings stop reaching a worker (its client's SSL module is Prefect's own, its reuse
counters stay at zero: Prefect's Dask path no longer hydrates through the names replaced) or when
they serve stale settings (a ``temporary_settings`` block in the flow no longer reaches the task).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from core.config import PipelineConfig

pytest.importorskip("prefect_dask")
distributed = pytest.importorskip("distributed")


def _probe_flow() -> Any:
    from prefect import flow, task
    from prefect.settings import PREFECT_TASKS_DEFAULT_RETRIES, get_current_settings, temporary_settings

    @task
    def seen(index: int) -> tuple[int, int, dict[str, int], str]:
        """The retries setting this task ran under, its worker's pid, reuse counters and SSL module."""
        from prefect.client import orchestration

        from flows.runtime import prefect_reuse
        return (get_current_settings().tasks.default_retries, os.getpid(), dict(prefect_reuse.stats),
                type(orchestration.ssl).__name__)

    @flow
    def probe(changed: bool) -> list[Any]:
        results = [seen.submit(0).result(), seen.submit(1).result()]
        if changed:
            with temporary_settings({PREFECT_TASKS_DEFAULT_RETRIES: 2}):
                results.append(seen.submit(2).result())
            results.append(seen.submit(3).result())
        return results

    return probe


@pytest.mark.usefixtures("prefect_api_url")
def test_a_local_clusters_worker_has_the_savings_and_sees_changed_settings(tmp_path: Path) -> None:
    from flows.runtime import prefect_reuse
    from flows.runtime.dask_settings import quiet_cluster
    from flows.runtime.runner import make_task_runner

    config = PipelineConfig(out=str(tmp_path / "out"), workers=1, runner="dask")
    before = dict(prefect_reuse.stats)
    # as flows.runtime.cli starts it; a nanny writes into this process's environment what it gives its worker: undone
    with mock.patch.dict(os.environ), quiet_cluster(config.runner, config.dask_address):
        results = _probe_flow().with_options(task_runner=make_task_runner(config))(True)
    assert [retries for retries, *_ in results] == [0, 0, 2, 0]
    assert len({pid for _, pid, *_ in results}) == 1 and results[0][1] != os.getpid()  # one worker process
    assert {ssl for *_, ssl in results} == {"_SharedSslContexts"}
    last = results[-1][2]  # the worker's counters after its last task
    assert last["hydrated_reused"] >= 1  # the second task under the first settings
    assert last["hydrated"] >= 3  # the first settings, the changed ones, and the first again: each one built
    assert prefect_reuse.stats["serialized_reused"] - before["serialized_reused"] >= 1  # the flow process's half


@pytest.mark.usefixtures("prefect_api_url")
def test_a_joined_clusters_worker_has_the_savings(tmp_path: Path) -> None:
    """A cluster started by someone else (``--dask-address``): the client installs the savings on its worker."""
    from flows.runtime.runner import make_task_runner

    with mock.patch.dict(os.environ), distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                                               dashboard_address=None) as cluster:
        config = PipelineConfig(out=str(tmp_path / "out"), runner="dask", dask_address=cluster.scheduler_address)
        results = _probe_flow().with_options(task_runner=make_task_runner(config))(False)
        with distributed.Client(cluster, set_as_default=False) as client:  # the run over: the plugin forgotten
            plugins = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.worker_plugins))
    assert "kinda-prefect-savings" not in plugins and "shuffle" in plugins  # Dask's own stays
    assert [retries for retries, *_ in results] == [0, 0]
    assert {ssl for *_, ssl in results} == {"_SharedSslContexts"}
    assert results[-1][2]["hydrated_reused"] >= 1
