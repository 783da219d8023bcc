"""Every reach into private Prefect, prefect-dask and CPython internals (:mod:`flows.runtime.prefect_internals`)
still finds what it was written against, and none is made outside that module.

A check that fails names the use, what it touches, the version it was checked on, the installed
versions, the public API or upstream thread that would replace it and what breaks: an upgrade
inside the pin (``make test-prefect-latest``) that moves one of these fails here, by name, before
a run fails somewhere deep in a worker. Each check is also shown to fail when its target goes.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
import platform
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.runtime import prefect_internals
from flows.runtime.prefect_internals import USES, Use

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("core", "dedupe", "sources", "loader", "tasks", "flows", "kinda")  # mypy's file list (pyproject.toml)
HOME = "flows/runtime/prefect_internals.py"
BY_NAME = {use.name: use for use in USES}


def _installed(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _verdict(use: Use) -> str | None:
    """None when ``use``'s check passes, else the loud message a developer upgrading Prefect reads."""
    try:
        use.check()
    except Exception as exc:  # an AttributeError or TypeError says as much as a failed assert
        return (f"Prefect internal '{use.name}' changed: {type(exc).__name__}: {exc}\n"
                f"  touches: {use.touches}\n"
                f"  checked on: {use.checked_on}; installed: prefect {_installed('prefect')}, prefect-dask "
                f"{_installed('prefect-dask')}, Python {platform.python_version()}\n"
                f"  replace with: {use.replacement}\n"
                f"  if ignored: {use.breaks}\n"
                f"  made by {HOME}: {', '.join(use.functions)}")
    return None


@pytest.mark.parametrize("name", list(BY_NAME))
def test_every_internal_still_has_the_shape_it_was_written_against(name: str) -> None:
    use = BY_NAME[name]
    if use.checked_on.startswith("prefect-dask"):
        pytest.importorskip("prefect_dask")
    verdict = _verdict(use)
    if verdict is not None:
        pytest.fail(verdict, pytrace=False)


#: For each use, one thing it stands on taken away: (module, attribute path, replacement or None to delete).
TAKEN_AWAY = {
    "process-runner-forwarding": ("prefect.task_runners", "ProcessPoolTaskRunner._stop_message_forwarding", None),
    "process-worker-init": ("prefect.task_runners", "_initialize_process_pool_worker", None),
    "pooled-runner": ("prefect.task_runners", "ProcessPoolTaskRunner._resolve_futures_and_submit", None),
    "settings-serialize-once": ("prefect.context", "serialize_context", None),
    "settings-hydrate-once": ("prefect.task_runners", "_run_task_with_hydrated_context", None),
    "client-ssl-contexts": ("prefect.client.orchestration", "ssl", None),
    "global-settings-context": ("prefect.context", "_temporary_global_settings_context", None),
    "ephemeral-server-app": ("prefect.context", "refresh_global_settings_context", None),
    "drain-log-and-event-workers": ("prefect.logging.handlers", "APILogWorker.drain_all", "gone"),
    "dask-runner-client": ("prefect_dask", "DaskTaskRunner.client", "gone"),
    "pool-workers-up-front": ("concurrent.futures", "ProcessPoolExecutor._launch_processes", None),
    "forkserver-stop": ("multiprocessing.forkserver", "ForkServer._stop", None),
}


def _take_away(monkeypatch: pytest.MonkeyPatch, module: str, path: str, stand_in: Any) -> None:
    owner: Any = importlib.import_module(module)
    *parents, attribute = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    if stand_in is None:
        monkeypatch.delattr(owner, attribute)
    else:  # inherited or a property: shadowed on the class itself
        monkeypatch.setattr(owner, attribute, stand_in, raising=False)


def test_every_use_is_shown_to_fail_when_what_it_stands_on_goes() -> None:
    assert set(TAKEN_AWAY) == set(BY_NAME), "a use without a taken-away case here (or a case for no use)"
    for name, (module, path, stand_in) in TAKEN_AWAY.items():
        use = BY_NAME[name]
        if module == "prefect_dask" and importlib.util.find_spec("prefect_dask") is None:
            continue
        with pytest.MonkeyPatch.context() as monkeypatch:
            _take_away(monkeypatch, module, path, stand_in)
            verdict = _verdict(use)
        assert verdict is not None, f"{name}: its check passed with {module}.{path} gone"
        for said in (f"'{name}'", use.checked_on, use.replacement, use.breaks):
            assert said in verdict, f"{name}: the message does not say {said!r}"


def test_every_use_names_the_version_checked_and_a_replacement_or_why_none() -> None:
    for use in USES:
        assert use.checked_on in (prefect_internals.PREFECT_CHECKED, prefect_internals.PREFECT_DASK_CHECKED,
                                  prefect_internals.CPYTHON_CHECKED), use.name
        upstream = "#" in use.replacement or "public" in use.replacement
        assert upstream or use.replacement.startswith("none:"), f"{use.name}: no replacement and no reason"
        assert use.touches and use.breaks and use.functions, use.name


def test_every_function_of_the_module_is_a_named_use() -> None:
    """Nothing in the module reaches in without a :class:`Use` (and every use names real functions)."""
    tree = ast.parse((REPO / HOME).read_text())
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}
    named = {function for use in USES for function in use.functions}
    assert named <= functions, f"uses name functions the module lacks: {sorted(named - functions)}"
    assert functions <= named, f"functions no use names (add a Use to USES): {sorted(functions - named)}"


def _private_reaches(path: Path, names: set[str], root: Path = REPO) -> Iterator[str]:
    """Each use of a listed private attribute name, or import of a private name from Prefect, Dask's
    runner, multiprocessing or concurrent.futures, in one product module."""
    text = path.read_text()
    outside = ("prefect", "prefect_dask", "prefect_ray", "multiprocessing", "concurrent")
    if not any(word in text for word in (*names, *outside)):  # most modules: nothing to parse (CPU on 2 cores)
        return
    tree = ast.parse(text, filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            yield f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in outside:
            for alias in node.names:
                if alias.name.startswith("_") or "._" in (node.module or ""):
                    yield f"{path.relative_to(root)}:{node.lineno}: from {node.module} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in outside and "._" in alias.name:
                    yield f"{path.relative_to(root)}:{node.lineno}: import {alias.name}"


def test_no_product_module_but_the_one_reaches_into_internals() -> None:
    names = {name for use in USES for name in use.private_names}
    found = [reach for folder in PRODUCT for path in sorted((REPO / folder).rglob("*.py"))
             if path.relative_to(REPO).as_posix() != HOME for reach in _private_reaches(path, names)]
    assert found == [], (f"private Prefect/CPython internals used outside {HOME} (move each into a named function "
                         f"there, with a Use; an attribute of our own that only shares the name: rename it): {found}")


def test_the_scan_sees_a_reach_it_should_refuse(tmp_path: Path) -> None:
    names = {name for use in USES for name in use.private_names}
    module = tmp_path / "probe.py"
    module.write_text("from prefect.task_runners import _initialize_process_pool_worker\n"
                      "import prefect._internal.concurrency\n"
                      "def f(executor, runner):\n    executor._launch_processes()\n"
                      "    return runner._subprocess_message_queue, runner._own_attribute\n")
    assert sorted(line.split(": ", 1)[1] for line in _private_reaches(module, names, tmp_path)) == [
        "executor._launch_processes", "from prefect.task_runners import _initialize_process_pool_worker",
        "import prefect._internal.concurrency", "runner._subprocess_message_queue"]
