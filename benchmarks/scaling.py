"""1 vs 2 Dask workers on the same Wikipedia job: speed-up, Prefect + engine overhead, per-task cost, projection.

    nice -n 5 python benchmarks/scaling.py                          # real pages x 10, 42 tasks, ~70 CPU-s
    nice -n 5 python benchmarks/scaling.py --copies 4 --repeat 1    # quick look

The job: multistream dumps (real format, with their index) built from the real ukwiki, viwiki
and jawiki pages of ``../shared/realdata/mediawiki`` (each page repeated ``--copies`` times
under new page ids; the sample generator's pages where the folder is absent), split into
page-range tasks of ``--split-bytes``. Built once into ``--inputs`` and reused.

Runs, each into a fresh output root, all under one embedded Prefect server started beforehand:

- ``direct``: the same phases (range staging, join, exact dedup, finalize) called in one
  process without Prefect or Dask: the work itself, its CPU time, and the share of it that is
  serial (dedup, finalize per dump);
- ``dask-N``: the Wikipedia flow with prefect-dask's ``DaskTaskRunner`` on a ``LocalCluster``
  of N single-threaded worker processes (started before the timing; its start-up is reported
  apart), ``--repeat`` times, alternating the order of N;
- ``noop-K``: a flow of K no-op tasks on the 1-worker cluster, for the per-task cost.

CPU is read from every process of the tree (psutil), split into the Dask workers (and their
helper processes), the flow process (Prefect client, Dask scheduler, the join) and the rest
(the Prefect server, the nannies). Overhead CPU = run CPU - direct CPU. On a shared machine the
wall figures include waiting for a core: the report prints the load and the CPU share the
workers actually got, so contention can be told apart from overhead.
"""

from __future__ import annotations

import argparse
import bz2
import functools
import hashlib
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import flows  # noqa: F401  (offline Prefect defaults before Prefect is imported)

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata" / "mediawiki"
LANGUAGES = ("uk", "vi", "ja")
_PAGE_ID = re.compile(r"(<page>\s*<title>.*?</title>\s*<ns>-?\d+</ns>\s*<id>)(\d+)(</id>)", re.S)


# -- inputs ---------------------------------------------------------------------------------
def _real_xml(lang: str) -> str | None:
    path = REALDATA / f"{lang}wiki-truncated-100k.REPAIRED.xml.bz2"
    if not path.is_file():
        return None
    with bz2.open(path, "rt", encoding="utf-8") as f:
        return f.read()


def _sample_xml(lang: str) -> str:
    from sources.samples.wikipedia import dump_xml, sample_pages

    sample_lang = "en" if lang != "de" else "de"
    return dump_xml(sample_lang, sample_pages(sample_lang, 2000, seed=LANGUAGES.index(lang)))


def _repeated(xml: str, copies: int, first_copy: int) -> str:
    """The dump's pages ``copies`` times, each copy's page ids shifted so every id is distinct."""
    start = xml.index("  <page>")
    end = xml.rindex("</page>") + len("</page>\n")
    head, pages, tail = xml[:start], xml[start:end], xml[end:]
    def shifted(copy: int) -> str:
        return _PAGE_ID.sub(lambda m: f"{m[1]}{int(m[2]) + copy * 10_000_000}{m[3]}", pages)

    body = [shifted(c) for c in range(first_copy, first_copy + copies)]
    return head + "".join(body) + tail


def build_inputs(directory: Path, copies: int, dumps_per_language: int) -> tuple[list[Path], str]:
    """Multistream dumps + indexes (100 pages per stream, as Wikimedia writes them); reused when present."""
    from sources.samples.wikipedia import write_multistream

    kind = "real" if all(_real_xml(lang) is not None for lang in LANGUAGES[:1]) else "sample"
    stamp = directory / "inputs.json"
    wanted = {"copies": copies, "dumps_per_language": dumps_per_language, "kind": kind, "version": 2}
    if stamp.is_file() and json.loads(stamp.read_text()) == wanted:
        return sorted(directory.glob("*-multistream.xml.bz2")), kind
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    per_dump = max(1, copies // dumps_per_language)
    for lang in LANGUAGES:
        xml = (_real_xml(lang) if kind == "real" else None) or _sample_xml(lang)
        for part in range(dumps_per_language):
            write_multistream(_repeated(xml, per_dump, part * per_dump), directory, f"{lang}wiki-2023010{part + 1}")
    stamp.write_text(json.dumps(wanted))
    return sorted(directory.glob("*-multistream.xml.bz2")), kind


# -- CPU accounting -------------------------------------------------------------------------
def _tree() -> dict[int, tuple[float, float, list[int]]]:
    """CPU seconds of this process and every descendant: pid -> (create time, cpu, ancestor pids)."""
    import psutil

    me = psutil.Process()
    found: dict[int, tuple[float, float, list[int]]] = {}
    for proc in [me, *me.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            found[proc.pid] = (proc.create_time(), times.user + times.system, [p.pid for p in proc.parents()])
        except psutil.Error:
            continue
    return found


@dataclass
class CpuSplit:
    """CPU seconds of one run by process kind."""

    workers: float = 0.0
    flow: float = 0.0
    other: float = 0.0

    @property
    def total(self) -> float:
        return self.workers + self.flow + self.other


def cpu_delta(before: dict[int, tuple[float, float, list[int]]], after: dict[int, tuple[float, float, list[int]]],
              workers: set[int]) -> CpuSplit:
    """What each process used between two snapshots (a process born in between counts whole)."""
    split = CpuSplit()
    for pid, (created, cpu, ancestors) in after.items():
        old = before.get(pid)
        used = cpu - old[1] if old and old[0] == created else cpu
        if pid in workers or workers.intersection(ancestors):
            split.workers += used
        elif pid == os.getpid():
            split.flow += used
        else:
            split.other += used
    return split


# -- runs -----------------------------------------------------------------------------------
def output_digest(out: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((out / "docs").rglob("*.parquet")):
        digest.update(path.relative_to(out).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass
class Run:
    """One timed run."""

    label: str
    workers: int
    wall: float
    cpu: CpuSplit
    digest: str = ""
    phases: dict[str, float] = field(default_factory=dict)
    tasks: int = 0


def run_direct(dumps: list[Path], out: Path, split_bytes: int) -> Run:
    """The phases without Prefect or Dask, in this process; CPU per phase."""
    from core import pipeline, splits
    from core.document import InputSpec
    from flows.wikipedia import WikipediaConfig
    from sources.formats.wikipedia_multistream import plan_split, range_key

    config = WikipediaConfig(dumps=[str(d) for d in dumps], out=out)
    recipe = config.recipe()
    before, started = _tree(), time.perf_counter()
    specs = [InputSpec(location=str(d), path=d, key=d.name) for d in dumps]
    ctx = pipeline.RunContext(out.resolve(), recipe.name, config.config_hash(), config.shards.limits(), recipe.name)
    keys = [s.key for s in specs]
    scope = pipeline.scope_hash(keys, ctx.config_hash)
    phases: dict[str, float] = {}
    tasks = 0

    def timed(name: str, work: Callable[[], Any]) -> Any:
        cpu = sum(v[1] for v in _tree().values())
        result = work()
        phases[name] = phases.get(name, 0.0) + sum(v[1] for v in _tree().values()) - cpu
        return result

    staged = {}
    for spec in specs:
        size = spec.path.stat().st_size
        parts = [splits.range_spec(spec, range_key(spec.key, s, e, size)) for s, e in plan_split(spec.path, split_bytes) or []]
        tasks += len(parts)
        if not parts:
            tasks += 1
            staged[spec.key] = timed("stage", functools.partial(pipeline.stage_input, recipe, spec, ctx))
            continue
        records = [timed("stage", functools.partial(pipeline.stage_input, recipe, p, ctx, n == 0))
                   for n, p in enumerate(parts)]
        ranges = [splits.RangeInput(p, r) for p, r in zip(parts, records, strict=True)]
        staged[spec.key] = timed("join", functools.partial(splits.join_ranges, ctx, spec, ranges))
    timed("dedup", functools.partial(pipeline.find_exact_duplicates, ctx, keys))
    for spec in specs:
        timed("finalize", functools.partial(pipeline.finalize_input, recipe, spec, ctx, scope, staged[spec.key]))
    wall = time.perf_counter() - started
    flow_tasks = tasks + len(specs) + 1  # range (or whole-dump) stages, finalizes, dedup
    return Run("direct", 1, wall, cpu_delta(before, _tree(), set()), output_digest(out), phases, flow_tasks)


def start_cluster(workers: int) -> tuple[Any, Any, float]:
    from dask.distributed import Client, LocalCluster

    started = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    return cluster, client, time.perf_counter() - started


def run_dask(dumps: list[Path], out: Path, workers: int, split_bytes: int) -> tuple[Run, float]:
    """The Wikipedia flow on a fresh LocalCluster of ``workers`` single-threaded processes."""
    from flows.wikipedia import WikipediaConfig, run

    cluster, client, startup = start_cluster(workers)
    try:
        worker_pids = set(client.run(os.getpid).values())
        config = WikipediaConfig(dumps=[str(d) for d in dumps], out=out, runner="dask", workers=workers,
                                 dask_address=cluster.scheduler_address, progress=False, split_bytes=split_bytes)
        before, started = _tree(), time.perf_counter()
        summary = run(config)
        wall = time.perf_counter() - started
        cpu = cpu_delta(before, _tree(), worker_pids)
    finally:
        client.close()
        cluster.close()
    if summary.failed:
        raise SystemExit(f"failed inputs: {[r.error for r in summary.failed]}")
    return Run(f"dask-{workers}", workers, wall, cpu, output_digest(out)), startup


def run_noops(counts: list[int]) -> list[Run]:
    """Flows of K no-op tasks on one Dask worker: what a task costs with no work in it."""
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE
    from prefect_dask import DaskTaskRunner

    @task(name="noop", cache_policy=NO_CACHE)
    def noop(i: int) -> int:
        return i

    cluster, client, _ = start_cluster(1)
    runs = []
    try:
        worker_pids = set(client.run(os.getpid).values())
        for k in counts:
            @flow(name=f"noop-{k}", task_runner=DaskTaskRunner(address=cluster.scheduler_address))  # type: ignore[arg-type]
            def noops(k: int = k) -> int:
                return sum(f.result() for f in [noop.submit(i) for i in range(k)])

            before, started = _tree(), time.perf_counter()
            assert noops() == k * (k - 1) // 2
            runs.append(Run(f"noop-{k}", 1, time.perf_counter() - started, cpu_delta(before, _tree(), worker_pids),
                            tasks=k))
    finally:
        client.close()
        cluster.close()
    return runs


# -- report ---------------------------------------------------------------------------------
def _fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares ``a + b * k``."""
    n = len(points)
    mean_k, mean_y = sum(k for k, _ in points) / n, sum(y for _, y in points) / n
    var = sum((k - mean_k) ** 2 for k, _ in points)
    b = sum((k - mean_k) * (y - mean_y) for k, y in points) / var if var else 0.0
    return mean_y - b * mean_k, b


def _stats(values: list[float]) -> str:
    return f"{min(values):7.1f} {statistics.median(values):7.1f} {max(values):7.1f}"


def report(direct: Run, runs: list[Run], noops: list[Run], startups: dict[int, list[float]], loads: list[str],
           job: dict[str, int], describe: str) -> bool:
    work = direct.cpu.total
    ranges, dumps, bz2_bytes, tasks = job["ranges"], job["dumps"], job["bytes"], direct.tasks
    print(f"\n{describe}")
    print(f"{os.cpu_count()} cores; load (uptime) before/between/after runs:")
    for line in loads:
        print(f"  {line}")
    print(f"\ndirect (no Prefect, no Dask, 1 process): wall {direct.wall:.1f} s, CPU {work:.1f} s, "
          f"cores got {work / direct.wall:.2f} "
          f"({', '.join(f'{k} {v:.1f}' for k, v in direct.phases.items())}); {direct.tasks} tasks in the flow")
    print(f"\n{'run':<8} {'wall s (min med max)':>24} {'worker CPU s':>13} {'flow CPU s':>11} {'other CPU s':>12} "
          f"{'cores got':>10} {'overhead CPU':>13}")
    walls: dict[int, list[float]] = {}
    for n in sorted({r.workers for r in runs}):
        mine = [r for r in runs if r.workers == n]
        walls[n] = [r.wall for r in mine]
        med = statistics.median

        got = med([r.cpu.workers / r.wall for r in mine])
        overhead = med([(r.cpu.total - work) / r.cpu.total for r in mine])
        print(f"dask-{n:<3} {_stats(walls[n]):>24} {med([r.cpu.workers for r in mine]):>13.1f} "
              f"{med([r.cpu.flow for r in mine]):>11.1f} {med([r.cpu.other for r in mine]):>12.1f} "
              f"{got:>10.2f} {overhead:>13.1%}")
    if 1 in walls and 2 in walls:
        ups = sorted(a / b for a in walls[1] for b in walls[2])
        print(f"\nspeed-up 2 vs 1 workers: median {statistics.median(walls[1]) / statistics.median(walls[2]):.2f}x "
              f"(every pair: min {ups[0]:.2f}x, max {ups[-1]:.2f}x)")
    for n, values in walls.items():
        share = [(w - work / n) / w for w in values]
        print(f"wall beyond the work on {n} worker(s), (wall - direct CPU / {n}) / wall: "
              f"min {min(share):.1%} median {statistics.median(share):.1%} max {max(share):.1%}")
    print(f"cluster start-up (not in the walls): {', '.join(f'{n} worker(s) {statistics.median(v):.1f} s' for n, v in startups.items())}")

    print("\nper-task cost, no-op tasks on 1 Dask worker:")
    print(f"{'tasks':>6} {'wall s':>8} {'wall ms/task':>13} {'CPU s':>7} {'CPU ms/task':>12} {'flow+server ms/task':>20}")
    for r in noops:
        print(f"{r.tasks:>6} {r.wall:>8.2f} {1000 * r.wall / r.tasks:>13.1f} {r.cpu.total:>7.2f} "
              f"{1000 * r.cpu.total / r.tasks:>12.1f} {1000 * (r.cpu.flow + r.cpu.other) / r.tasks:>20.1f}")
    wall_a, wall_b = _fit([(r.tasks, r.wall) for r in noops])
    cpu_a, cpu_b = _fit([(r.tasks, r.cpu.total) for r in noops])
    _, serial_b = _fit([(r.tasks, r.cpu.flow + r.cpu.other) for r in noops])
    worker_b = _fit([(r.tasks, r.cpu.workers) for r in noops])[1]
    print(f"fit: wall = {wall_a:.2f} s + {1000 * wall_b:.1f} ms x tasks; CPU = {cpu_a:.2f} s + {1000 * cpu_b:.1f} ms x tasks "
          f"(flow process + server {1000 * serial_b:.1f} ms, worker {1000 * worker_b:.1f} ms)")
    print(f"this job's {tasks} tasks: {tasks * cpu_b:.1f} CPU s of per-task cost "
          f"({tasks * cpu_b / work:.1%} of the work's CPU)")

    stage = direct.phases.get("stage", 0.0)
    serial = work - stage  # join and dedup in series; finalize: one task per dump
    per_range = stage / max(1, ranges)
    cpu_per_byte = stage / max(1, bz2_bytes)
    enwiki_tasks = -(-22_000_000_000 // (256 << 20))
    print("\nprojection (model: range tasks spread over W workers, each paying the worker-side per-task cost; "
          "the flow-process + server per-task cost in series; join + dedup + finalize scaled with the work, "
          "finalize spread over at most one worker per dump; task costs as measured here on uk/vi/ja pages):")
    for label, job_ranges, task_s, job_dumps in (
            ("this job", ranges, per_range, dumps),
            ("this job x100", ranges * 100, per_range, dumps * 100),
            (f"22 GB dump in {enwiki_tasks} ranges of 256 MiB", enwiki_tasks, cpu_per_byte * (256 << 20), 1)):
        ser = serial * job_ranges * task_s / max(stage, 1e-9)
        flow_tasks = job_ranges + 2 * job_dumps + 1

        def wall_at(w: int, job_ranges: int = job_ranges, task_s: float = task_s, ser: float = ser,
                    job_dumps: int = job_dumps, flow_tasks: int = flow_tasks) -> float:
            rounds = -(-job_ranges // w)
            return max(rounds * (task_s + worker_b), flow_tasks * serial_b) + ser / min(w, job_dumps) + wall_a

        print(f"  {label:<36} 1 worker {wall_at(1):>9.0f} s, 100 workers {wall_at(100):>8.0f} s: "
              f"speed-up {wall_at(1) / wall_at(100):.1f}x")
    digests = {r.digest for r in [direct, *runs]}
    print(f"\noutputs identical across every run: {len(digests) == 1} ({', '.join(sorted(digests))})")
    return len(digests) == 1


def _uptime() -> str:
    load = os.getloadavg()
    return f"{time.strftime('%H:%M:%S')} load average: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=10, help="times each real page is repeated (default: %(default)s)")
    parser.add_argument("--dumps-per-language", type=int, default=2, help="dumps per language (default: %(default)s)")
    parser.add_argument("--split-bytes", type=int, default=2_000_000,
                        help="compressed bytes per page-range task (default: %(default)s)")
    parser.add_argument("--workers", default="1,2", help="Dask worker process counts (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=2, help="runs per worker count (default: %(default)s)")
    parser.add_argument("--noop-tasks", default="25,100,400", help="no-op task counts (default: %(default)s)")
    parser.add_argument("--inputs", type=Path, default=Path(tempfile.gettempdir()) / "kinda-scaling-inputs",
                        help="where the dumps are built and kept (default: %(default)s)")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.workers.split(",")]

    from flows.runtime.runner import prefect_api
    from sources.formats.wikipedia_multistream import plan_split

    dumps, kind = build_inputs(args.inputs, args.copies, args.dumps_per_language)
    ranges = sum(len(plan_split(d, args.split_bytes) or [None]) for d in dumps)
    size = sum(d.stat().st_size for d in dumps)
    job = {"ranges": ranges, "dumps": len(dumps), "bytes": size}
    describe = (f"{len(dumps)} multistream dumps ({kind} pages x {args.copies}), {size / 1e6:.1f} MB bz2, "
                f"split into {ranges} page-range tasks of ~{args.split_bytes / 1e6:.1f} MB")
    loads = [_uptime()]
    with tempfile.TemporaryDirectory(prefix="kinda-scaling-") as tmp:
        root = Path(tmp)
        direct = run_direct(dumps, root / "direct", args.split_bytes)
        loads.append(_uptime())
        runs: list[Run] = []
        startups: dict[int, list[float]] = {}
        with prefect_api():
            noops = run_noops([int(k) for k in args.noop_tasks.split(",")])
            for rep in range(args.repeat):
                for n in counts if rep % 2 == 0 else counts[::-1]:
                    out = root / f"dask{n}-{rep}"
                    result, startup = run_dask(dumps, out, n, args.split_bytes)
                    runs.append(result)
                    startups.setdefault(n, []).append(startup)
                    loads.append(f"{_uptime()}  after dask-{n} #{rep + 1}: wall {result.wall:.1f} s")
                    print(loads[-1], flush=True)
                    shutil.rmtree(out, ignore_errors=True)
    same = report(direct, runs, noops, startups, loads, job, describe)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
