"""Rules of the layout that a refactor must not break: no stdlib shadowing, floors that point down.

The eight packages are floors, bottom to top: ``core``; ``dedupe`` and ``loader`` on it; ``sources``
(which may use dedup primitives); ``tasks`` (the Prefect tasks over all of those); ``flows``; then
``kinda`` (the command, the top floor: it may use any floor, nothing imports it) and ``benchmarks``
beside it (nothing imports a benchmark either). :data:`FLOORS` names what each may import.

Inside ``flows/`` there are three floors too. The runtime (``flows/runtime/``: the process pool,
Prefect reuse, Dask settings, CLI plumbing, recorder, logs, the parent flow's stage helpers) is not
flows: it holds what several flows share and imports no flow module, so ``ls flows/`` lists only
what a user runs. A flow module (``flows/<name>.py``)
imports helpers and the packages below, never another flow's module. Only the composers in
:data:`COMPOSERS`, which run other flows whole, may import flow modules.

What counts as an import, at module granularity (``from core import pipeline`` is an edge to
``core.pipeline``): every ``import``/``from`` anywhere in a module (inside functions too: a lazy
import is still a dependency), imports under ``if TYPE_CHECKING:`` (they count: a type named from
an upper floor or around a circle couples the modules for every reader and for mypy, as the old
``flows.llama`` <-> ``flows.runtime.llama_stages`` circle did), and the string targets of
``LazyImport("pkg.mod", ...)`` and ``importlib.import_module("pkg.mod")``, so naming a module by a
string does not hide an edge. No two project modules may reach each other (no import cycle).
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["core", "sources", "dedupe", "loader", "tasks", "flows", "kinda", "benchmarks"]
# Modules that newer Pythons add to the standard library (3.14: compression, annotationlib).
FUTURE_STDLIB = {"compression", "annotationlib"}
_BELOW_TASKS = {"core", "dedupe", "loader", "sources"}
#: What each floor may import from the project (its own package and the floors below).
FLOORS: dict[str, set[str]] = {
    "core": {"core"},
    "dedupe": {"core", "dedupe"},
    "loader": {"core", "loader"},
    "sources": {"core", "dedupe", "sources"},
    "tasks": _BELOW_TASKS | {"tasks"},
    "flows": _BELOW_TASKS | {"tasks", "flows"},
    "kinda": _BELOW_TASKS | {"tasks", "flows", "kinda"},
    "benchmarks": _BELOW_TASKS | {"tasks", "flows", "benchmarks"},
}
#: The floors that must not import Prefect (pure logic, testable without it).
PURE = ("core", "dedupe", "sources", "loader")
#: Modules that gather or run other flows whole, and why; every other module imports no flow module.
COMPOSERS = {
    "flows.llama": "the parent flow: its stages are the source and stage flows",
    "flows.demo": "the Wikipedia flow's command on generated sample dumps (no flow of its own)",
    "flows.registry": "the list of sources: each source's SourceSpec is declared in its own flow module",
    "flows.source": "the generic source flow: runs a registered source that has no flow module of its own",
    "flows.label": "reads which document sources are LLaMA's and which extensions from the registry",
}


def test_no_module_shadows_the_standard_library() -> None:
    """A Prefect worker puts a flow's folder on sys.path: flows/tokenize.py once broke `import tokenize`."""
    stdlib = set(sys.stdlib_module_names) | FUTURE_STDLIB
    clashes = [str(path.relative_to(ROOT)) for package in PACKAGES for path in (ROOT / package).rglob("*")
               if (path.suffix == ".py" and path.stem in stdlib) or (path.is_dir() and path.name in stdlib)]
    assert clashes == []


# -- the import graph ---------------------------------------------------------------------------
def module_names(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every project module (``pkg.sub.mod``; a package is its ``__init__``) and its file."""
    names = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names[".".join(parts)] = path
    return names


@functools.cache
def _parsed(path: Path) -> list[ast.AST]:
    """Every node of one file (parsed once for all the checks: the tree is ~300 files)."""
    return list(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def _target(name: str, modules: dict[str, Path]) -> str | None:
    """The project module ``name`` lands in (``core.manifest.Manifest`` -> ``core.manifest``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _string_import(node: ast.Call) -> str | None:
    """``LazyImport("pkg.mod", ...)`` or ``importlib.import_module("pkg.mod")``: the module named."""
    func = node.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if called in ("LazyImport", "import_module") and node.args and isinstance(node.args[0], ast.Constant):
        value = node.args[0].value
        return value if isinstance(value, str) else None
    return None


def _imported_names(node: ast.AST, package: str) -> Iterator[str]:
    """The dotted names one AST node imports (``from a import b`` gives ``a.b``, then ``a``)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parent = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parent, base] if base else parent)
        yield from (f"{base}.{alias.name}" for alias in node.names)
    elif isinstance(node, ast.Call) and (named := _string_import(node)):
        yield named


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, dict[str, int]]:
    """module -> {imported project module: first line}, everything :func:`_imported_names` sees."""
    modules = module_names(root, packages)
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: dict[str, int] = {}
        for node in _parsed(path):
            for imported in _imported_names(node, package):
                target = _target(imported, modules)
                if target and target != name:
                    edges.setdefault(target, getattr(node, "lineno", 0))
        graph[name] = edges
    return graph


def upward_imports(graph: dict[str, dict[str, int]], floors: dict[str, set[str]]) -> list[str]:
    """Edges from a floor to one it may not import."""
    return [f"{module}:{line} imports {target}" for module, edges in sorted(graph.items())
            for target, line in sorted(edges.items()) if target.split(".")[0] not in floors[module.split(".")[0]]]


#: The one subpackage of ``flows/``: the machinery flows share, none of it a flow.
RUNTIME = "runtime"


def is_flow_module(name: str) -> bool:
    """``flows.<name>``: not the runtime (``flows.runtime...``) nor the package itself."""
    parts = name.split(".")
    return len(parts) == 2 and parts[0] == "flows" and parts[1] != RUNTIME and not parts[1].startswith("_")


def flow_cross_imports(graph: dict[str, dict[str, int]], composers: Iterable[str]) -> list[str]:
    """A flow module or a private helper importing a flow module (composers excepted)."""
    allowed = set(composers)
    return [f"{module}:{line} imports {target}" for module, edges in sorted(graph.items())
            if module.startswith("flows") and module not in allowed
            for target, line in sorted(edges.items()) if is_flow_module(target)]


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Each set of modules that reach each other (strongly connected, more than one), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:  # iterative Tarjan: the graph is deep enough to hit the recursion limit
            node, children = work[-1]
            child = next((c for c in children if c in graph), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    cycles.append(sorted(members))
    return sorted(cycles)


# -- the rules on this repository --------------------------------------------------------------
@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, int]]:
    return import_graph(ROOT, PACKAGES)


def test_every_package_is_a_floor() -> None:
    """A new top-level package must be given a floor, or none of these rules would see it."""
    assert set(FLOORS) == set(PACKAGES)
    top = {p.parent.name for p in ROOT.glob("*/*.py") if not p.parent.name.startswith(".")}
    assert top - set(PACKAGES) <= {"tests", "scripts"}


def test_floors_import_downward_only(graph: dict[str, dict[str, int]]) -> None:
    assert upward_imports(graph, FLOORS) == []


def test_no_flow_imports_another_flows_module(graph: dict[str, dict[str, int]]) -> None:
    """What flows share lives below ``flows/`` or in ``flows/runtime/``."""
    assert flow_cross_imports(graph, COMPOSERS) == []
    assert all(is_flow_module(name) and name in graph for name in COMPOSERS)


def test_no_import_cycle(graph: dict[str, dict[str, int]]) -> None:
    assert import_cycles(graph) == []


def test_pure_layers_do_not_import_prefect() -> None:
    users = [str(p.relative_to(ROOT)) for layer in PURE for p in (ROOT / layer).rglob("*.py")
             if "prefect" in {n.split(".")[0] for node in _parsed(p) for n in _imported_names(node, layer)}]
    assert users == []


# -- the checks themselves fail on what they forbid ---------------------------------------------
def test_the_checks_find_upward_imports_cross_flow_imports_and_cycles(tmp_path: Path) -> None:
    """A small tree holding one of each violation, each kind of import the checks must see."""
    files = {
        "core/__init__.py": "",
        "core/low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kinda import cli\n",
        "core/lazy.py": "def f():\n    from . import low\n    return LazyImport('flows.runtime.helper', 'x')\n",
        "flows/__init__.py": "",
        "flows/runtime/__init__.py": "",
        "flows/runtime/helper.py": "import flows.b\n",
        "flows/a.py": "from flows.b import thing\n",
        "flows/b.py": "import importlib\nthing = importlib.import_module('flows.a')\n",
        "flows/llama.py": "from flows import a, b\n",
        "kinda/__init__.py": "",
        "kinda/cli.py": "from flows.runtime.helper import x\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    tree = import_graph(tmp_path, ["core", "flows", "kinda"])
    assert upward_imports(tree, FLOORS) == ["core.lazy:3 imports flows.runtime.helper", "core.low:3 imports kinda.cli"]
    assert flow_cross_imports(tree, ["flows.llama"]) == [
        "flows.a:1 imports flows.b", "flows.b:2 imports flows.a", "flows.runtime.helper:1 imports flows.b"]
    assert not is_flow_module("flows.runtime") and is_flow_module("flows.llama")
    assert import_cycles(tree) == [["flows.a", "flows.b"]]


def test_flows_folder_lists_only_flows_and_the_runtime() -> None:
    """``ls flows/`` is what a user runs: flow modules, and one subpackage holding the machinery."""
    entries = sorted(p.name for p in (ROOT / "flows").iterdir() if p.name not in {"__init__.py", "__pycache__"})
    assert [name for name in entries if not name.endswith(".py")] == [RUNTIME]
    assert [name for name in entries if name.startswith("_")] == []
