"""Load a script of ``benchmarks/`` as a module by its file, for tests of its pure parts.

By file, not by putting ``benchmarks/`` on ``sys.path``: that folder holds ``loader.py`` and
``dedup.py``, named like the product's packages, and a path entry outlives the test in the xdist
worker and is handed to every process it spawns. A DataLoader worker spawned by a later test then
imported ``benchmarks/loader.py`` as ``loader`` and died (a circular import), failing two loader tests.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as the module ``name`` (registered first: its dataclasses need it)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
