"""No test gives a subprocess more time than pytest-timeout gives the test (issue 34).

``tests/ops/test_offline.py`` gave its subprocess 600 s under the 300 s default: on a loaded
machine pytest-timeout ended the test halfway, with no message of the test's own. This reads every
test function's ``timeout=`` arguments (integer literals and module constants) and its limit (its
``pytest.mark.timeout``/``timeout_for`` mark, the module's ``pytestmark``, else pyproject's
``timeout``) and fails on each wait that the test's own limit would cut short. Waits that take
what is left of a budget (``tests/time_limits.py``) agree by construction and are not literals.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tests.time_limits import MARGIN_S

TESTS = Path(__file__).resolve().parent
DEFAULT_S = int(tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["timeout"])


def _constants(tree: ast.Module) -> dict[str, int]:
    """The module's ``NAME = <int>`` constants."""
    found: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, int):
            found.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
        value = node.value.value if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Constant) else None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(value, int):
            found[node.target.id] = value
    return found


def _seconds(node: ast.expr | None, constants: dict[str, int]) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return int(node.value)
    return constants.get(node.id) if isinstance(node, ast.Name) else None


def _mark_limit(node: ast.expr, constants: dict[str, int]) -> int | None:
    """The limit a ``pytest.mark.timeout(N)`` or ``timeout_for(N)`` decorator sets, else None."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    name = ast.unparse(node.func)
    seconds = _seconds(node.args[0], constants)
    if seconds is None:
        return None
    if name.endswith("mark.timeout"):
        return seconds
    return seconds + MARGIN_S if name.endswith("timeout_for") else None


def _module_limit(tree: ast.Module, constants: dict[str, int]) -> int:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            for mark in marks:
                if (limit := _mark_limit(mark, constants)) is not None:
                    return limit
    return DEFAULT_S


def _name(path: Path) -> str:
    return path.relative_to(TESTS.parent).as_posix() if path.is_relative_to(TESTS.parent) else path.name


def too_long_waits(path: Path) -> Iterator[str]:
    """``path:line: timeout=N s > the test's limit L s`` for each such wait in a test function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = _constants(tree)
    module_limit = _module_limit(tree, constants)
    for test in ast.walk(tree):
        if not isinstance(test, ast.FunctionDef) or not test.name.startswith("test"):
            continue
        limits = [limit for d in test.decorator_list if (limit := _mark_limit(d, constants)) is not None]
        limit = limits[0] if limits else module_limit
        for call in ast.walk(test):
            if not isinstance(call, ast.Call):
                continue
            seconds = _seconds(next((k.value for k in call.keywords if k.arg == "timeout"), None), constants)
            if seconds is not None and seconds > limit:
                yield f"{_name(path)}:{call.lineno}: timeout={seconds} s > {limit} s"


def test_no_wait_outlives_its_test() -> None:
    found = [line for path in sorted(TESTS.rglob("*.py")) for line in too_long_waits(path)]
    assert not found, "subprocess limits the test's pytest-timeout cuts short:\n" + "\n".join(found)


#: The issue's case as it was written (test_offline.py's main job, before that job moved to the README's
#: build): a 600 s subprocess under the 300 s default, then the same test with its mark.
_CASE = """
import subprocess, sys
from tests.time_limits import timeout_for

MAIN_JOB_S = 600


@timeout_for(MAIN_JOB_S)
def test_main_job() -> None:
    subprocess.run([sys.executable, "-m", "flows.llama", "--sample"], timeout=MAIN_JOB_S)
"""


def test_the_check_sees_a_wait_longer_than_its_test(tmp_path: Path) -> None:
    """The case of the issue without its mark: 600 s under the 300 s default; with it, nothing."""
    broken = tmp_path / "case.py"
    broken.write_text(_CASE.replace("@timeout_for(MAIN_JOB_S)\n", ""), encoding="utf-8")
    assert [line.split(": ", 1)[1] for line in too_long_waits(broken)] == [f"timeout=600 s > {DEFAULT_S} s"]
    marked = tmp_path / "marked.py"
    marked.write_text(_CASE, encoding="utf-8")
    assert list(too_long_waits(marked)) == []
