"""The Prefect executor of the source-run driver (:mod:`core.driver`).

The driver and the sources' phases submit core functions; this executor submits the Prefect
task that wraps each one (:mod:`tasks.pipeline`: ``stage-input``, ``exact-dedup``,
``finalize-input``; :mod:`tasks.phases`: ``extract``, ``line-dedup``, ``near-signatures``,
``near-dedup``, ``site-size``, ``pmid-index``, ``pmid-versions``, with their names, run names and
cache policies), so a flow run shows one task run per input and phase, on whatever task runner
the flow was given. Call it inside a running flow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

from prefect.futures import PrefectFuture, as_completed

from core import pipeline
from core.driver import Future
from tasks import phases
from tasks.pipeline import dedup_task, finalize_task, stage_task

T = TypeVar("T")


def qualified_name(fn: Callable[..., Any]) -> str:
    """``module.function``: how :data:`TASKS` names the function a task wraps."""
    return f"{fn.__module__}.{fn.__qualname__}"


#: The task that runs each core function the driver or a phase submits, by its qualified name.
TASKS: dict[str, Any] = {
    qualified_name(pipeline.stage_input): stage_task,
    qualified_name(pipeline.find_exact_duplicates): dedup_task,
    qualified_name(pipeline.finalize_input): finalize_task,
    **phases.WRAPS,
}


class PrefectExecutor:
    """Runs the driver's work as Prefect tasks of the current flow run."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> PrefectFuture[T]:
        """Submit the task that wraps ``fn``; a function without a task is a programming error."""
        task = TASKS.get(qualified_name(fn))
        if task is None:
            raise ValueError(f"no Prefect task wraps {qualified_name(fn)}; add one to tasks.executor.TASKS")
        future: PrefectFuture[T] = task.submit(*args, **kwargs)
        return future

    def as_completed(self, futures: Sequence[Future[T]]) -> Iterator[Future[T]]:
        """Prefect's ``as_completed``: each future as its task run finishes (they are this executor's)."""
        return as_completed(cast(list[PrefectFuture[T]], list(futures)))
