"""Orchestration tax: ``flows.llama --sample`` on the default process runner vs ``--runner sequential``.

    nice -n 5 python benchmarks/orchestration.py                  # 3 interleaved rounds + per-task cost
    nice -n 5 python benchmarks/orchestration.py --rounds 1 --tasks 0   # quick look, no per-task leg

Each round runs the same command twice, each into a fresh output root, in alternating order:
``python -m flows.llama --sample --out <root>`` (the default runner: a pool of worker processes)
and the same with ``--runner sequential`` (one thread in the flow process). Both start their own
temporary Prefect server, as a user's command does. CPU is the child's user + system time from
``os.wait4``, which includes every descendant it waited for (pool workers, bounded helpers, the
Prefect server once reaped); a descendant left unreaped would be missing from it, so the script
also checks that no process of a run outlives it. The machine may be shared: CPU time, not
wall, is what is compared. Outputs must match: sha256 of every file under ``docs/``,
``labeled/``, ``attributes/`` and ``tensors/`` (not the run records, which name paths and
times) is compared between the two runners in every round. Every run writes to the same
``--out`` (emptied before it): GitHub documents record their input's absolute path, and the
sample inputs are written under the output root.

``--tasks K`` adds the per-task cost on the process runner: a flow of K no-op tasks and one of
none, each run ``--rounds`` times under one embedded server and one worker pool started
beforehand, CPU of this process, its workers and the server (read from ``/proc``) per extra
task. Workers are reaped only when the pool closes, so their CPU is read from ``/proc`` too.

``--help-rounds N`` (default 5; 0 skips) measures what a user pays before any run: CPU of
``python -m flows.<name> --help`` for every runnable flow module and of ``kinda --help`` (the
goal: under 0.5 CPU-s each), N interleaved rounds, beside ``python -c pass`` (the interpreter's
own start, the floor no command goes under).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
MARK = "KINDA_BENCH_RUN"


@dataclass
class Run:
    """One flow command: CPU seconds (process and reaped descendants), wall seconds, output digests."""

    runner: str
    cpu_s: float
    wall_s: float
    digests: dict[str, str]


def _marked(token: str) -> list[int]:
    """Live processes whose environment carries this run's marker (none may outlive the run)."""
    needle = f"{MARK}={token}".encode()
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ours = needle in (entry / "environ").read_bytes().split(b"\0")
                if ours and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(int(entry.name))
            except OSError:
                continue
    return alive


#: What a run produces, by folder; run records (``_state/``, ``metadata.json``) name paths and times.
OUTPUT_DIRS = ("docs", "labeled", "attributes", "tensors")


def digests(out: Path) -> dict[str, str]:
    """sha256 of every shard, attribute and tensor file of a run (what must not depend on the runner)."""
    files = [p for sub in OUTPUT_DIRS for p in sorted((out / sub).rglob("*"))
             if p.is_file() and "_state" not in p.parts and p.name != "metadata.json"]
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def run_sample(runner: str, out: Path, log_name: str) -> Run:
    """``python -m flows.llama --sample`` with ``runner`` into an emptied ``out``; CPU from wait4."""
    shutil.rmtree(out, ignore_errors=True)
    token = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {MARK: token}
    args = [sys.executable, "-m", "flows.llama", "--sample", "--out", str(out)]
    if runner != "process":
        args += ["--runner", runner]
    started = time.perf_counter()
    log_path = out.parent / f"{log_name}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(args, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{runner} run failed (rc {code}); see {log_path}")
    time.sleep(1)
    left = _marked(token)
    if left:
        raise SystemExit(f"{runner} run left processes behind: {left}")
    found = digests(out)
    shutil.rmtree(out, ignore_errors=True)
    return Run(runner, usage.ru_utime + usage.ru_stime, wall, found)


def sample_rounds(rounds: int, work: Path) -> list[tuple[Run, Run]]:
    """Interleaved rounds of (default, sequential); the order alternates so load drifts cancel."""
    pairs = []
    for index in range(rounds):
        order = ("process", "sequential") if index % 2 == 0 else ("sequential", "process")
        results = {runner: run_sample(runner, work / "run", f"{runner}-{index}") for runner in order}
        process, sequential = results["process"], results["sequential"]
        if process.digests != sequential.digests or not process.digests:
            differ = sorted(k for k in {*process.digests, *sequential.digests}
                            if process.digests.get(k) != sequential.digests.get(k))
            raise SystemExit(f"round {index}: outputs differ between runners: {differ[:5]} ({len(differ)} files)")
        print(f"round {index}: default {process.cpu_s:6.1f} CPU-s ({process.wall_s:5.1f} s wall), "
              f"sequential {sequential.cpu_s:6.1f} CPU-s ({sequential.wall_s:5.1f} s wall), "
              f"ratio {process.cpu_s / sequential.cpu_s:.2f}x; outputs identical ({len(process.digests)} files)",
              flush=True)
        pairs.append((process, sequential))
    return pairs


def _tree_cpu() -> float:
    """CPU seconds of this process, its reaped children and its live descendants (from /proc)."""
    import resource

    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stats[int(entry.name)] = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
    tree, grew = {os.getpid()}, True
    while grew:
        grew = False
        for pid, fields in stats.items():
            if pid not in tree and int(fields[1]) in tree:
                tree.add(pid)
                grew = True
    tick = os.sysconf("SC_CLK_TCK")
    return total + sum((int(stats[p][11]) + int(stats[p][12])) / tick for p in tree if p != os.getpid())


def per_task_cost(tasks: int, rounds: int, work: Path) -> list[float]:
    """CPU per extra no-op task on the pooled process runner (flow of ``tasks`` minus flow of none)."""
    from prefect import flow, task

    from core.config import PipelineConfig
    from flows._runtime import make_task_runner, prefect_api

    @task(name="noop")
    def noop(index: int) -> int:
        return index

    @flow(name="noop-tasks")
    def noop_flow(count: int) -> int:
        return sum(f.result() for f in [noop.submit(i) for i in range(count)])

    config = PipelineConfig(out=str(work / "noop"), workers=2)
    costs = []
    try:  # one pool for every measured flow, as in a parent run (older checkouts: a pool per flow)
        from flows._runtime import worker_pool
    except ImportError:
        worker_pool = None  # type: ignore[assignment]
    with prefect_api(), (worker_pool(config) if worker_pool is not None else contextlib.nullcontext()):
        noop_flow.with_options(task_runner=make_task_runner(config))(1)  # warm: imports, first flow run

        def measure(count: int) -> float:
            before = _tree_cpu()
            noop_flow.with_options(task_runner=make_task_runner(config))(count)
            time.sleep(2)  # the server records task runs asynchronously: let it drain
            return _tree_cpu() - before

        for index in range(rounds):
            order = (tasks, 0) if index % 2 == 0 else (0, tasks)
            spent = {count: measure(count) for count in order}
            costs.append((spent[tasks] - spent[0]) / tasks)
            print(f"per-task round {index}: {tasks} tasks {spent[tasks]:.2f} CPU-s, none {spent[0]:.2f} CPU-s, "
                  f"{1000 * costs[-1]:.0f} ms CPU per task", flush=True)
    return costs


def help_commands() -> dict[str, list[str]]:
    """``--help`` of every runnable flow module (``flows/<name>.py``, not the private ``_*.py``) and of kinda."""
    modules = [p.stem for p in sorted((REPO / "flows").glob("*.py")) if not p.stem.startswith("_") and p.stem != "registry"]
    commands = {f"flows.{m}": [sys.executable, "-m", f"flows.{m}", "--help"] for m in modules}
    commands["kinda"] = [sys.executable, "-c", "import sys; from kinda.cli import main; sys.exit(main(['--help']))"]
    commands["python -c pass"] = [sys.executable, "-c", "pass"]
    return commands


def _child_cpu(args: list[str]) -> float:
    """CPU seconds (user + system, descendants included) of one command run to its end."""
    process = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    assert process.stderr is not None
    error = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed: {error[-500:]}")
    return usage.ru_utime + usage.ru_stime


def help_cost(rounds: int) -> dict[str, list[float]]:
    """CPU of each ``--help``, ``rounds`` times, the commands interleaved (round after round)."""
    commands = help_commands()
    spent: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, args in commands.items():
            spent[name].append(_child_cpu(args))
    for name, values in spent.items():
        print(f"{name + ' --help' if name != 'python -c pass' else name:34s} CPU-s: {_spread(values)}")
    return spent


def _spread(values: list[float]) -> str:
    return f"min {min(values):.2f}, median {statistics.median(values):.2f}, max {max(values):.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--tasks", type=int, default=40, help="no-op tasks for the per-task cost (0: skip)")
    parser.add_argument("--help-rounds", type=int, default=5, help="rounds of every flow's --help CPU (0: skip)")
    parser.add_argument("--no-sample", action="store_true", help="no sample run (the per-task and --help legs only)")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="kinda-orchestration-"))
    work.mkdir(parents=True, exist_ok=True)
    if not args.no_sample:
        pairs = sample_rounds(args.rounds, work)
        ratios = [p.cpu_s / s.cpu_s for p, s in pairs]
        print(f"\nflows.llama --sample, default runner / sequential, CPU of process + children: {_spread(ratios)}x")
        print(f"  default    CPU-s: {_spread([p.cpu_s for p, _ in pairs])}")
        print(f"  sequential CPU-s: {_spread([s.cpu_s for _, s in pairs])}")
    if args.tasks:
        costs = per_task_cost(args.tasks, args.rounds, work)
        print(f"per-task cost on the process runner, CPU ms: {_spread([1000 * c for c in costs])}")
    if args.help_rounds:
        spent = help_cost(args.help_rounds)
        medians = {name: statistics.median(v) for name, v in spent.items() if name != "python -c pass"}
        worst = max(medians, key=medians.__getitem__)
        print(f"--help of {len(medians)} commands, CPU-s: medians {min(medians.values()):.2f}-{medians[worst]:.2f} "
              f"(highest: {worst}); max of any run {max(max(v) for n, v in spent.items() if n in medians):.2f}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
