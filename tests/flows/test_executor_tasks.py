"""The Prefect executor's map from core functions to tasks (``tasks.executor.TASKS``).

The driver and the phases submit core functions; under Prefect each runs as the task named for
it by ``module.function``. A renamed or moved function would only fail inside a flow run, so
every name must resolve, and each task must take its function's parameters (Prefect binds the
submitted arguments to the task's signature, and run names such as ``extract {spec.key}`` name them).
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from tasks.executor import TASKS, PrefectExecutor


@pytest.mark.parametrize("name", sorted(TASKS))
def test_each_task_wraps_a_function_with_its_parameters(name: str) -> None:
    module, _, function = name.rpartition(".")
    fn = getattr(importlib.import_module(module), function)
    assert list(inspect.signature(TASKS[name].fn).parameters) == list(inspect.signature(fn).parameters)


def test_a_function_without_a_task_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no Prefect task wraps builtins\.len"):
        PrefectExecutor().submit(len, [])
