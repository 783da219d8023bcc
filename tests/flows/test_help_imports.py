"""``--help`` of every flow and of ``kinda`` stays off the heavy imports (issue 23: under 0.5 CPU-s).

Importing Prefect costs ~2 CPU-s, pyarrow, DuckDB and numpy ~0.3 together (numba ~0.3 more): a flow's ``--help``
(and the source registry, which imports every source's flow module) must pay for none of them.
One subprocess runs each command's ``--help`` in turn (runpy, as ``python -m`` does) and reports
the heavy modules that are loaded after each; a module that pulls one in at import time (a
``import pyarrow`` at the top of a flow module, or of a recipe module a flow module imports at
its top) fails here, named. No timing: what is imported, which the CPU cost follows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from flows.registry import SOURCES
from tests.time_limits import timeout_for

REPO_ROOT = Path(__file__).resolve().parents[2]
#: What no ``--help`` may import (``kinda`` reads the manifest with DuckDB: allowed there).
HEAVY = ("prefect", "pyarrow", "pandas", "torch", "datasets", "transformers", "numpy", "duckdb", "numba")
KINDA_ALLOWED = {"duckdb"}

#: Runs ``python -m <module> --help`` for each argument (``kinda``: the console script's main) in
#: one interpreter and prints, per command, its exit code and the heavy modules loaded after it.
RUNNER = r"""
import contextlib, io, json, runpy, sys, warnings
warnings.simplefilter("ignore")  # runpy: a module the registry imported already, run again as __main__
heavy = json.loads(sys.argv[1])
for name in sys.argv[2:]:
    sys.argv = [name, "--help"]
    text = io.StringIO()
    code = None
    with contextlib.redirect_stdout(text):
        try:
            if name == "kinda":
                from kinda.cli import main
                code = main(["--help"])
            else:
                runpy.run_module(name, run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = exc.code
    loaded = [h for h in heavy if h in sys.modules]
    print(json.dumps({"name": name, "code": code, "usage": "usage:" in text.getvalue(), "heavy": loaded}))
"""


def flow_modules() -> list[str]:
    """Every source's flow module (from the registry), then every other runnable module under flows/."""
    from_registry = [spec.flow.fn.__module__ if spec.flow is not None else "flows.source" for spec in SOURCES.specs()]
    on_disk = [f"flows.{p.stem}" for p in sorted((REPO_ROOT / "flows").glob("*.py"))
               if not p.stem.startswith("_") and p.stem != "registry"]
    return list(dict.fromkeys([*from_registry, *on_disk]))


@timeout_for(600)  # its subprocess's limit (tests/time_limits.py)
def test_every_help_stays_off_heavy_imports() -> None:
    modules = flow_modules()
    assert {"flows.dialogue", "flows.stackexchange", "flows.source", "flows.llama", "flows.dedup", "flows.label",
            "flows.pile_index", "flows.tokenization"} <= set(modules)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    # kinda last: what it may load (DuckDB) is then not loaded already when a flow's --help is checked
    proc = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(HEAVY), *modules, "kinda"], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [r["name"] for r in results] == [*modules, "kinda"], proc.stderr[-3000:]
    seen: set[str] = set()
    for result in results:
        name = result["name"]
        assert result["code"] in (0, None) and result["usage"], f"{name} --help did not print its usage: {result}"
        new = set(result["heavy"]) - seen
        allowed = KINDA_ALLOWED if name == "kinda" else set()
        assert not new - allowed, (f"`python -m {name} --help` imported {sorted(new - allowed)}: keep them off "
                                   f"module level (see `python -X importtime -m {name} --help`)")
        seen |= new
