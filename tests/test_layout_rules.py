"""Rules of the layout that a refactor must not break: no stdlib shadowing, imports go downward."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["core", "sources", "dedupe", "loader", "tasks", "flows", "kinda", "benchmarks"]
# Modules that newer Pythons add to the standard library (3.14: compression, annotationlib).
FUTURE_STDLIB = {"compression", "annotationlib"}
#: What each layer may import from the project (downward only).
ALLOWED = {
    "core": {"core"},
    "dedupe": {"core", "dedupe"},
    "sources": {"core", "dedupe", "sources"},
    "loader": {"core", "loader"},
}


def test_no_module_shadows_the_standard_library() -> None:
    """A Prefect worker puts a flow's folder on sys.path: flows/tokenize.py once broke `import tokenize`."""
    stdlib = set(sys.stdlib_module_names) | FUTURE_STDLIB
    clashes = [str(path.relative_to(ROOT)) for package in PACKAGES for path in (ROOT / package).rglob("*")
               if (path.suffix == ".py" and path.stem in stdlib) or (path.is_dir() and path.name in stdlib)]
    assert clashes == []


def _project_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names & set(PACKAGES)


def test_layers_import_downward_only() -> None:
    wrong = []
    for layer, allowed in ALLOWED.items():
        for path in (ROOT / layer).rglob("*.py"):
            extra = _project_imports(path) - allowed
            if extra:
                wrong.append(f"{path.relative_to(ROOT)} imports {sorted(extra)}")
    assert wrong == []


def test_pure_layers_do_not_import_prefect() -> None:
    users = [str(p.relative_to(ROOT)) for layer in ALLOWED for p in (ROOT / layer).rglob("*.py")
             if "prefect" in {n.split(".")[0] for n in _imports_all(p)}]
    assert users == []


def _imports_all(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names
