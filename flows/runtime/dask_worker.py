"""Dask workers get the pool workers' per-process Prefect savings (:func:`flows.runtime.worker_savings.install_worker_savings`).

Prefect's API client builds a new SSL context (the whole CA bundle read, ~20 ms CPU) for every
client, two per task run, and every task run validates the flow's settings into a new
``Settings``; a pool worker is spared both from its start. A Dask worker is another process,
started by a nanny (a local cluster) or by someone else (a joined one), so the savings reach it
as a worker plugin that the run's client registers with the scheduler before its first submit:
the scheduler runs the plugin's ``setup`` on every worker it has (and waits for them) and on
every worker that joins later (an adaptive cluster, a worker restarted by its nanny). That is one
mechanism for a local and a joined cluster alike, where a ``preload`` would reach only the
workers we start. It is safe on a shared cluster: both savings give every task what Prefect's own
code would (see :mod:`flows.runtime.prefect_reuse`), and installing them again is a no-op. A joined
cluster's workers need this package importable, as they do to run the pipeline's tasks; its
scheduler forgets the plugin when the run ends (workers joining later owe nothing to this
package), while the workers that have it keep the savings (there is nothing to undo).

The flow process's half (each settings context serialized once, not once per submit) is installed
with the client too.
"""

from __future__ import annotations

import contextlib
from typing import Any

from distributed import WorkerPlugin
from prefect_dask import DaskTaskRunner

from flows.runtime import prefect_internals, prefect_reuse


class PrefectSavings(WorkerPlugin):
    """Installs the per-process savings in a Dask worker, before it runs a task."""

    name = "kinda-prefect-savings"  # one registration per cluster: registering again replaces it

    def setup(self, worker: Any) -> None:
        from flows.runtime.worker_savings import install_worker_savings

        install_worker_savings()


class SavingDaskTaskRunner(DaskTaskRunner):
    """Prefect's Dask runner whose client installs :class:`PrefectSavings` on the cluster when it is made.

    The client is made on the first submit, not on entering: Prefect enters a copy of the flow's
    runner in the worker around every task it runs there, and that copy must not start a cluster.
    """

    @property
    def client(self) -> Any:
        made = prefect_internals.dask_client_made(self)
        client = super().client
        if not made:
            prefect_reuse.reuse_serialized_settings()
            client.register_plugin(PrefectSavings())
        return client

    def __exit__(self, *args: Any) -> None:
        joined = prefect_internals.dask_joined_client(self)
        if joined is not None:  # a joined cluster: its scheduler as found
            with contextlib.suppress(Exception):  # a scheduler gone already has nothing to forget
                joined.unregister_worker_plugin(PrefectSavings.name)
        super().__exit__(*args)
