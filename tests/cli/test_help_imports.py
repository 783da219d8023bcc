"""``python -m flows.<x> --help`` imports neither Prefect nor pandas (issue 23 item 2: help was 2+ CPU-s).

Behavioural, not timed: one process runs each flow module as ``__main__`` with ``--help``, as
``python -m`` does, and reports which of the heavy modules each one pulled in. Also: a flow
module imported before Prefect still hands Prefect a real flow where prefect.yaml points.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("prefect", "pandas", "pyarrow.dataset")
#: Flows whose top level still imports Prefect (their modules build Prefect objects eagerly).
EAGER: set[str] = set()
#: Flows whose help must also stay clear of the run's other heavy imports (issue 23: <= 0.5 CPU-s;
#: DuckDB, pyarrow and warcio are ~0.1-0.3 CPU-s each): tokenization was 1.5 CPU-s, c4 0.53, llama 1.3.
LIGHT = {name: ("duckdb", "pyarrow", "warcio", "numpy") for name in ("tokenization", "c4", "llama")}
FLOWS = sorted(p.stem for p in (REPO / "flows").glob("*.py")
               if not p.stem.startswith("_") and "FlowCLI(" in p.read_text(encoding="utf-8"))

PROBE = """
import contextlib, io, json, runpy, sys
heavy = {heavy!r}
seen = {{}}
for name in {flows!r}:
    sys.argv = [name, "--help"]
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            runpy.run_module("flows." + name, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        assert exc.code == 0 and "usage:" in out.getvalue(), (name, exc.code)
    seen[name] = [m for m in heavy if m in sys.modules]
    if seen[name]:
        break  # later modules would inherit these; the failing one is named
print(json.dumps(seen))
"""


def test_help_of_every_flow_imports_neither_prefect_nor_pandas() -> None:
    lazy = [name for name in FLOWS if name not in EAGER]
    assert {"wikipedia", "pubmed", "commoncrawl", "reasoning", "llama", "source"} <= set(lazy)
    done = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY, flows=lazy)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert {name: mods for name, mods in seen.items() if mods} == {}
    assert list(seen) == lazy


@pytest.mark.parametrize("name", sorted(LIGHT))
def test_help_of_the_light_flows_imports_no_reader_either(name: str) -> None:
    """Each in a fresh process: a module another flow's help imported must not hide one of its own."""
    heavy = (*HEAVY, *LIGHT[name])
    done = subprocess.run([sys.executable, "-c", PROBE.format(heavy=heavy, flows=[name])], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {name: []}


@pytest.mark.parametrize("entrypoint", ["flows/reasoning.py:reasoning_flow", "flows/pubmed.py:pubmed_flow"])
def test_prefect_loads_a_real_flow_from_the_entrypoint(entrypoint: str) -> None:
    """As ``prefect deploy`` and a worker do, and from a module imported before Prefect (a lazy one)."""
    path, name = entrypoint.split(":")
    module = path.removesuffix(".py").replace("/", ".")
    code = (f"import {module} as m\n"
            "import prefect, sys\n"
            "from prefect.flows import load_flow_from_entrypoint\n"
            f"lazy = m.{name}\n"
            "assert type(lazy).__name__ == 'LazyPrefect', type(lazy)\n"
            "assert isinstance(lazy, prefect.Flow) and lazy.name == lazy.real().name\n"
            f"loaded = load_flow_from_entrypoint({entrypoint!r})\n"
            "assert type(loaded) is prefect.Flow, type(loaded)\n"
            "print(loaded.name)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == module.split(".")[-1]
