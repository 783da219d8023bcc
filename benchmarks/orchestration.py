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

``--dask-rounds N`` (with ``--tasks K``) measures the same per-task cost on Dask, with and without
the worker savings (:mod:`flows.runtime.dask_worker`): a local cluster of 2 single-threaded worker
processes started as flows start theirs (:func:`flows.runtime.dask_settings.quiet_cluster`), joined by
``make_task_runner`` (``--runner dask``, the savings installed) or by prefect-dask's own
``DaskTaskRunner`` (none). Each contender runs in its own child process (the savings are per
process, the flow process's half included), the two alternating, N rounds; CPU per extra task of
the whole tree and of the workers alone:

    nice -n 5 python benchmarks/orchestration.py --no-sample --help-rounds 0 --tasks 40 --dask-rounds 4

``--help-rounds N`` (default 5; 0 skips) measures what a user pays before any run: CPU of
``python -m flows.<name> --help`` for every runnable flow module and of ``kinda --help`` (the
goal: under 0.5 CPU-s each), N interleaved rounds, beside ``python -c pass`` (the interpreter's
own start, the floor no command goes under).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _pids_cpu(pids: list[int]) -> float:
    """CPU seconds of these live processes (the Dask workers), from ``/proc``."""
    tick = os.sysconf("SC_CLK_TCK")
    fields = [Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split() for pid in pids]
    return sum(int(f[11]) + int(f[12]) for f in fields) / tick


@contextlib.contextmanager
def _runner_factory(runner: str, config: Any) -> Iterator[tuple[Callable[[], Any], list[int]]]:
    """Make the runner of each measured flow, and the worker pids to read (none for the process pool).

    ``dask`` and ``dask-prefect`` join one local cluster started here as a flow starts its own.
    """
    from flows.runtime.runner import make_task_runner

    if runner == "process":
        try:  # one pool for every measured flow, as in a parent run (older checkouts: a pool per flow)
            from flows.runtime.runner import worker_pool
        except ImportError:
            worker_pool = None  # type: ignore[assignment]
        with worker_pool(config) if worker_pool is not None else contextlib.nullcontext():
            yield (lambda: make_task_runner(config)), []
        return
    import distributed
    from prefect_dask import DaskTaskRunner

    from flows.runtime.dask_settings import quiet_cluster

    with quiet_cluster("dask"), distributed.LocalCluster(
            n_workers=config.workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster, set_as_default=False) as client:
            pids = list(client.run(os.getpid).values())
        address = cluster.scheduler_address
        joined = config.model_copy(update={"runner": "dask", "dask_address": address})
        if runner == "dask":
            yield (lambda: make_task_runner(joined)), pids
        else:
            yield (lambda: DaskTaskRunner(address=address)), pids


def per_task_cost(tasks: int, rounds: int, work: Path, runner: str = "process") -> list[tuple[float, float]]:
    """CPU per extra no-op task, whole tree and workers alone (flow of ``tasks`` minus flow of none).

    ``runner``: the pooled process runner, or Dask with (``dask``) or without (``dask-prefect``) the
    worker savings; the workers-alone figure is read for Dask only (0 for the pool).
    """
    from prefect import flow, task

    from core.config import PipelineConfig
    from flows.runtime.runner import prefect_api

    @task(name="noop")
    def noop(index: int) -> int:
        return index

    @flow(name="noop-tasks")
    def noop_flow(count: int) -> int:
        return sum(f.result() for f in [noop.submit(i) for i in range(count)])

    config = PipelineConfig(out=str(work / "noop"), workers=2)
    costs = []
    with prefect_api(), _runner_factory(runner, config) as (make_runner, worker_pids):
        noop_flow.with_options(task_runner=make_runner())(2)  # warm: imports, first flow run, first task per worker

        def measure(count: int) -> tuple[float, float]:
            before, workers_before = _tree_cpu(), _pids_cpu(worker_pids)
            noop_flow.with_options(task_runner=make_runner())(count)
            time.sleep(2)  # the server records task runs asynchronously: let it drain
            return _tree_cpu() - before, _pids_cpu(worker_pids) - workers_before

        for index in range(rounds):
            order = (tasks, 0) if index % 2 == 0 else (0, tasks)
            spent = {count: measure(count) for count in order}
            costs.append(((spent[tasks][0] - spent[0][0]) / tasks, (spent[tasks][1] - spent[0][1]) / tasks))
            print(f"per-task round {index} ({runner}): {tasks} tasks {spent[tasks][0]:.2f} CPU-s, "
                  f"none {spent[0][0]:.2f} CPU-s, {1000 * costs[-1][0]:.0f} ms CPU per task "
                  f"(workers {1000 * costs[-1][1]:.0f} ms)", flush=True)
    return costs


def dask_savings(tasks: int, rounds: int, work: Path) -> dict[str, list[tuple[float, float]]]:
    """Per-task CPU on Dask with and without the worker savings, each a child process, alternating."""
    costs: dict[str, list[tuple[float, float]]] = {"dask": [], "dask-prefect": []}
    for index in range(rounds):
        for runner in (("dask", "dask-prefect") if index % 2 == 0 else ("dask-prefect", "dask")):
            result = work / f"{runner}-{index}.json"
            env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
            subprocess.run([sys.executable, __file__, "--no-sample", "--help-rounds", "0", "--rounds", "1",
                            "--tasks", str(tasks), "--per-task-runner", runner, "--result-json", str(result),
                            "--work", str(work / runner)], cwd=REPO, env=env, check=True)
            costs[runner] += [tuple(cost) for cost in json.loads(result.read_text())]
    for runner, values in costs.items():
        print(f"per-task cost on {runner:12s} CPU ms, whole tree: {_spread([1000 * t for t, _ in values])}; "
              f"workers: {_spread([1000 * w for _, w in values])}")
    ratios = [d[1] / p[1] for d, p in zip(costs["dask"], costs["dask-prefect"], strict=True)]
    print(f"workers' CPU per task, with the savings / without: {_spread(ratios)}x")
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
    parser.add_argument("--per-task-runner", choices=("process", "dask", "dask-prefect"), default="process",
                        help="runner of the per-task leg (dask-prefect: prefect-dask's own runner, no savings)")
    parser.add_argument("--dask-rounds", type=int, default=0,
                        help="rounds of the per-task cost on Dask with and without the worker savings (0: skip)")
    parser.add_argument("--result-json", type=Path, default=None, help="write the per-task costs here")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="kinda-orchestration-"))
    work.mkdir(parents=True, exist_ok=True)
    if not args.no_sample:
        pairs = sample_rounds(args.rounds, work)
        ratios = [p.cpu_s / s.cpu_s for p, s in pairs]
        print(f"\nflows.llama --sample, default runner / sequential, CPU of process + children: {_spread(ratios)}x")
        print(f"  default    CPU-s: {_spread([p.cpu_s for p, _ in pairs])}")
        print(f"  sequential CPU-s: {_spread([s.cpu_s for _, s in pairs])}")
    if args.tasks and args.dask_rounds:
        dask_savings(args.tasks, args.dask_rounds, work)
    elif args.tasks:
        costs = per_task_cost(args.tasks, args.rounds, work, args.per_task_runner)
        print(f"per-task cost on {args.per_task_runner}, CPU ms: {_spread([1000 * c for c, _ in costs])}")
        if args.result_json:
            args.result_json.write_text(json.dumps(costs))
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
