"""Whether each source flow is linear, measured so that a 10% effect shows through a shared machine's noise.

``corpus_cost.py --linearity`` (and every full ``corpus_cost.py`` run after its two sizes) runs each
source flow on its 1/4 and its full input interleaved, each full run between two 1/4 runs
(``quarter, full, quarter`` for one round: a machine that grows slower or faster over them moves the
1/4 median as much as the full run), then on two tiny inputs, ``one`` (a few MB) and ``two`` (twice
its bytes, made the way the source's input grows: twice the files for a source whose 1/4 and full inputs
differ in file count, the same files twice as large for Wikipedia's three dumps), for the run's fixed
cost: Prefect's flow run, the worker pool's start, the model loads. For a cost ``fixed + per file x
files + per byte x bytes``, ``2 x one - two`` is the fixed part exactly; a single tiny run counted its
one file's cost as fixed, and arXiv's one 64 MB tar at 1/4 (four at full; 1.3 CPU-s per tar, two Prefect
tasks) made that error a 1.67 "net" ratio for a flow that is linear.

Why interleaved: the single pass measured the full sizes and the 1/4 sizes half an hour apart, and this 2-core VM's CPU time for identical work moves 10-20% between runs minutes
apart; a fixed cost of 7-10 CPU-seconds is a third of a 64 MB run and a rounding error of a 1 GB
one. Both made a full/quarter ratio of CPU per GB below 0.9 that said nothing about the code.

The verdict (:func:`benchmarks.corpus_projection.linearity_verdicts`) is on the medians: the raw
ratio of CPU per GB (the issue's figure), and the same ratio once that fixed cost is taken
from both sizes: a flow whose cost is a fixed part plus a part proportional to its input has a net
ratio of 1.00 whatever its fixed cost; one whose cost grows faster than its input does not (a cost
quadratic in the input has a net ratio of 4 between a 1/4 and a full size).

Rows go to ``<work>/linearity.jsonl`` as each run ends; a run cut short goes on where it stopped
(a row counts when its stage, size, round and input bytes match the plan).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from core.atomic import atomic_path

ROWS = "linearity.jsonl"


#: The fixed-cost runs' sizes: a tiny input and one of twice its bytes (module docstring).
FIXED_SIZES = ("one", "two")


def plan(sources: list[str], rounds: int) -> Iterator[tuple[str, str, int]]:
    """(source, size, round) in the order they run: per source, each full run between two 1/4 runs
    (quarter, full, quarter, full, ..., quarter), then a ``one`` and a ``two`` run per round."""
    for source in sources:
        for number in range(rounds):
            yield source, "quarter", number
            yield source, "full", number
        yield source, "quarter", rounds
        for number in range(rounds):
            for size in FIXED_SIZES:
                yield source, size, number


def recorded(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSON-lines file of measurements, less a line cut by a crash (that run is measured again).
    ``corpus_cost``'s stages.jsonl is read by this too."""
    try:
        return parse_rows(path.read_text(encoding="utf-8").splitlines())
    except OSError:
        return []


def parse_rows(lines: list[str]) -> list[dict[str, Any]]:
    """The JSON objects of ``lines``, skipping a line that is not one (cut by a crash)."""
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def append_row(path: Path, row: dict[str, Any]) -> None:
    """Append ``row`` to ``path`` and fsync it: a measurement kept as soon as it is made."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _key(row: dict[str, Any]) -> tuple[str, str, int, int]:
    return row["stage"], row["size"], int(row["round"]), int(row["input_bytes"])


def _keep_planned(path: Path, planned: set[tuple[str, str, int, int]]) -> dict[tuple[str, str, int, int], dict[str, Any]]:
    """The rows of ``path`` that this plan has, the file rewritten without the others: rows of other sizes or
    sources would stand beside this plan's in ``--render``'s table, and a line cut by a crash would swallow
    the next row appended to it."""
    kept = {_key(row): row for row in recorded(path) if _key(row) in planned}
    text = "".join(json.dumps(row) + "\n" for row in kept.values())
    if path.is_file() and path.read_text(encoding="utf-8") != text:
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
    return kept


RunOne = Callable[[str, str, int], dict[str, Any]]


def run_rounds(work: Path, sources: list[str], rounds: int, input_bytes: Callable[[str, str], int],
               run_one: RunOne, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every (source, size, round) of :func:`plan` not in ``work/linearity.jsonl`` yet, measured by
    ``run_one(source, size, round)`` (a row: stage, size, round, input_bytes, cpu_s, wall_s...) and
    appended as it ends; the rows of this plan, in its order."""
    path = work / ROWS
    planned = [(source, size, number, input_bytes(source, size)) for source, size, number in plan(sources, rounds)]
    done = _keep_planned(path, set(planned))
    if len(done) < len(planned) and sources:
        run_one(sources[0], FIXED_SIZES[0], -1)  # unmeasured: the process's first flow pays its imports (duckdb, pyarrow...)
    rows = []
    for key in planned:
        source, size, number, _ = key
        row = done.get(key)
        if row is None:
            row = run_one(source, size, number)
            append_row(path, row)
            log(f"linearity {source} {size} round {number}: {row['cpu_s']:.1f} CPU-s for "
                f"{row['input_bytes'] / 1e6:.1f} MB ({row['cpu_s'] / (row['input_bytes'] / 1e9):.0f} per GB), "
                f"wall {row['wall_s']:.1f} s")
        rows.append(row)
    return rows


def flow_run(work: Path, workers: int, inputs: Callable[[str, str], tuple[dict[str, Any], list[str]]],
             measure: Callable[[str, str, int, Callable[[], None], Path], dict[str, Any]]) -> RunOne:
    """A ``run_one`` that runs ``source``'s flow as users do (its own ``run``, ``workers`` workers) on the
    ``size`` input into a fresh output root, removed afterwards: each run starts from nothing, as in the pass."""
    from flows.llama import LlamaConfig

    def run_one(source: str, size: str, number: int) -> dict[str, Any]:
        section, _ = inputs(source, size)
        out = work / "out-linearity"
        shutil.rmtree(out, ignore_errors=True)
        config = LlamaConfig.model_validate({"out": str(out), "workers": workers, "progress": False,
                                             "sources": {source: section}})
        flow = config.stage_flow(source)
        try:
            return measure(source, size, number, lambda: flow.run(config.stage_config(source, section)), out)
        finally:
            shutil.rmtree(out, ignore_errors=True)

    return run_one
