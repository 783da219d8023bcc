"""What the quality signals add to a source flow's CPU: the Wikipedia full path with and without them.

    python benchmarks/signals_cost.py [--rounds 3]
    python benchmarks/signals_cost.py --flow 4,20 [--rounds 3] [--work DIR]

For each real dump in ``../shared/realdata/mediawiki`` (``*.REPAIRED.xml.bz2``), ``benchmarks/wikipedia.py``'s
``ours-full`` path (stage, exact dedup, final shards) runs in a fresh child process, as a worker
is one, with the signals sink as it is (``on``) and with its flush made a no-op (``off``: the
signals attribute stays empty, all else the same). CPU is the child's user+sys, its own children
included, so importing numba and loading the kernels from numba's cache count, as they do for a
worker. Rounds interleave the two and alternate which goes first; medians are compared.

A pool worker is not one process per input: it is forked once and handles input after input
(flows/runtime/runner.py), so numba's import, its CPU target and the kernels' load (~0.45 CPU-s)
and the interpreter's teardown of them at exit (~0.25 CPU-s) are paid once per worker. The
``worker`` line runs every dump in turn in one fresh child, as one worker handling a source's
inputs, on and off, in the same interleaved rounds; the per-dump lines charge those costs to
each dump (an upper bound that only a one-input source reaches).

``--flow A,B`` measures it as a user runs it, at sizes a user runs: the Wikipedia source flow
(its own flow's ``run``, the default process-pool runner, 2 workers, the embedded Prefect API
started once) on generated multistream dumps of A and B MB of bz2 (``benchmarks/corpus_inputs/
wikipedia.py``, written once under ``--work`` and reused), signals on and off, interleaved rounds
alternating which goes first. CPU is this process's and every descendant's (workers, fork server,
Prefect's API server) while the flow runs (``benchmarks/corpus_cost.py``'s ``measured``). Off is
the same no-op flush, switched by an environment variable that the pool's fork server inherits
(it imports this file as ``__main__``, see ``flows/runtime/runner.py``'s ``PRELOAD``), and a fork
server that does not preload the signals kernels (``core.filters.signals_preload`` left out of
``PRELOAD`` for that run: a product without signals would not load numba); each run's signals
rows are counted to show the switch took. The two sizes split the on-off difference into a fixed
part (per run: numba and the kernels, loaded once in the fork server) and a part per MB of bz2.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# Run as a script, this folder is sys.path[0], where loader.py and dedup.py would shadow the
# product's packages (here and in the fork server that imports this file): the root instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"]
sys.path.insert(0, str(REPO))
OFF = "KINDA_BENCH_SIGNALS_OFF"
OWN_CPU = "KINDA_BENCH_SIGNALS_CPU"  # a file each worker's flushes append their CPU seconds to
SIGNALS_PRELOAD = "core.filters.signals_preload"


def _switchable_signals() -> None:
    """Make the signals sink's flush a no-op while ``$KINDA_BENCH_SIGNALS_OFF`` is set (read at each flush)."""
    import core.pipeline

    flush = core.pipeline.SignalSink._flush
    if getattr(flush, "switchable", False):
        return

    def maybe(self: Any) -> None:
        if os.environ.get(OFF):
            self._ids.clear()
            self._texts.clear()
            return
        began = time.thread_time()
        flush(self)
        if os.environ.get(OWN_CPU):  # the flush's own CPU, appended per flush (short appends: one write each)
            with open(os.environ[OWN_CPU], "a") as handle:
                handle.write(f"{time.thread_time() - began}\n")

    maybe.switchable = True  # type: ignore[attr-defined]
    core.pipeline.SignalSink._flush = maybe  # type: ignore[method-assign]


if os.environ.get(OFF) is not None:  # the --flow mode's parent and the fork server it starts
    _switchable_signals()
DUMPS = sorted((REPO.parent / "shared" / "realdata" / "mediawiki").glob("*.REPAIRED.xml.bz2"))
CHILD = r'''
import sys
sys.path[:0] = [sys.argv[3], sys.argv[3] + "/benchmarks"]
from pathlib import Path
import core.pipeline
if sys.argv[2] == "off":
    core.pipeline.SignalSink._flush = lambda self: (self._ids.clear(), self._texts.clear())
from wikipedia import run_ours_full
for dump in sys.argv[1].split("\n"):
    print(run_ours_full(Path(dump)))
'''
WORKER = "worker"


def once(dumps: list[Path], mode: str) -> float:
    """CPU seconds of one fresh child running the full path over each of ``dumps`` in turn, signals ``on`` or ``off``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", CHILD, "\n".join(map(str, dumps)), mode, str(REPO)], check=True,
                   capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def flow_once(section: dict[str, Any], out: Path, mode: str) -> tuple[float, float, int, float]:
    """CPU and wall seconds of one Wikipedia source flow run (2 workers) into a fresh ``out``; its signals
    rows; the CPU seconds its workers spent in the signals sink's flushes (computing and writing them)."""
    import pyarrow.parquet as pq

    from benchmarks.corpus_cost import Stage, measured
    from flows.llama import LlamaConfig
    from flows.runtime import runner

    shutil.rmtree(out, ignore_errors=True)
    own = out.parent / "signals-flush-cpu.txt"
    own.unlink(missing_ok=True)
    os.environ[OWN_CPU] = str(own)
    os.environ[OFF] = "1" if mode == "off" else ""
    # off: without signals, so the pool's fork server (a fresh one per run) does not load their kernels either
    runner.PRELOAD = tuple(m for m in runner.PRELOAD if m != SIGNALS_PRELOAD) + ((SIGNALS_PRELOAD,) if mode == "on" else ())
    config = LlamaConfig.model_validate({"out": str(out), "workers": 2, "progress": False,
                                         "sources": {"wikipedia": section}})
    stage = Stage("wikipedia", mode, 0)
    with measured(stage, [out]):
        config.stage_flow("wikipedia").run(config.stage_config("wikipedia", section))
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in (out / "attributes" / "wikipedia").glob("*.signals.parquet"))
    shutil.rmtree(out, ignore_errors=True)
    flushes = sum(map(float, own.read_text().split())) if own.is_file() else 0.0
    return stage.cpu_s, stage.wall_s, rows, flushes


def _preload_cpu() -> float:
    """CPU seconds of importing the fork server's signals preload in a fresh interpreter (numba, its target, the kernels)."""
    code = ("import time; began = time.process_time(); import core.filters.signals_preload; "
            "print(time.process_time() - began)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True, text=True)
    return float(done.stdout.split()[-1])


def flow_main(sizes_mb: list[int], rounds: int, work: Path) -> int:
    """``--flow``: the source flow on generated dumps of each size, signals on and off, interleaved rounds."""
    from benchmarks.corpus_cost import MB, _bytes_of, _with_prefect, generate

    sections = {}
    for size in sizes_mb:
        sections[size], files = generate("wikipedia", work / "inputs" / f"wikipedia-{size}mb", size * MB)
        print(f"input {size} MB: {_bytes_of(files) / MB:.1f} MB of bz2 in {len(files)} dumps", flush=True)
    cpu: dict[tuple[int, str], list[float]] = {(size, m): [] for size in sizes_mb for m in ("on", "off")}
    own: dict[int, list[float]] = {size: [] for size in sizes_mb}
    preload = statistics.median(_preload_cpu() for _ in range(3))
    print(f"preloading the signals kernels (the fork server's import of {SIGNALS_PRELOAD}): {preload:.2f} CPU-s")

    def rounds_() -> None:
        for round_ in range(rounds):
            for size in sizes_mb:
                for mode in ("on", "off") if round_ % 2 == 0 else ("off", "on"):
                    used, wall, rows, flushes = flow_once(sections[size], work / "out", mode)
                    cpu[(size, mode)].append(used)
                    if mode == "on":
                        own[size].append(flushes)
                    print(f"round {round_ + 1} {size} MB signals {mode}: {used:.2f} CPU-s, wall {wall:.1f} s, "
                          f"{rows} signals rows, {flushes:.2f} CPU-s in the signals flushes, "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)

    _with_prefect(rounds_)
    delta = {}
    for size in sizes_mb:
        on, off = cpu[(size, "on")], cpu[(size, "off")]
        ratios = [a / b for a, b in zip(on, off, strict=True)]
        delta[size] = statistics.median(on) - statistics.median(off)
        direct = statistics.median(own[size]) + preload
        print(f"{size} MB: the signals' own CPU (flushes in the workers, median, + the preload) {direct:.2f} CPU-s, "
              f"{direct / statistics.median(off):+.1%} of the median run without them")
        print(f"{size} MB: with signals {statistics.median(on):.2f} CPU-s {[round(x, 2) for x in on]}, without "
              f"{statistics.median(off):.2f} {[round(x, 2) for x in off]}; on/off per round "
              f"{[f'{r - 1:+.1%}' for r in ratios]}, medians {statistics.median(on) / statistics.median(off) - 1:+.1%}")
    if len(sizes_mb) >= 2:
        small, large = min(sizes_mb), max(sizes_mb)
        per_mb = (delta[large] - delta[small]) / (large - small)
        print(f"signals' extra CPU: {per_mb:.3f} CPU-s per MB of bz2 + {delta[small] - per_mb * small:.2f} CPU-s per run")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--flow", help="comma-separated sizes in MB of bz2: the source flow on generated dumps")
    parser.add_argument("--work", type=Path, default=Path("/tmp/signals-cost"), help="inputs (kept) and outputs")
    args = parser.parse_args(argv)
    if args.flow:
        os.environ[OFF] = ""
        _switchable_signals()
        return flow_main([int(x) for x in args.flow.split(",")], args.rounds, args.work)
    if not DUMPS:
        print("no dumps under ../shared/realdata/mediawiki", file=sys.stderr)
        return 2
    runs = {dump.name: [dump] for dump in DUMPS} | {WORKER: DUMPS}
    cpu: dict[tuple[str, str], list[float]] = {(name, m): [] for name in runs for m in ("on", "off")}
    for round_ in range(args.rounds):
        for name, dumps in runs.items():
            for mode in ("on", "off") if round_ % 2 == 0 else ("off", "on"):
                cpu[(name, mode)].append(once(dumps, mode))
    for name in runs:
        on, off = statistics.median(cpu[(name, "on")]), statistics.median(cpu[(name, "off")])
        label = f"{WORKER} (all {len(DUMPS)} dumps in one process)" if name == WORKER else name
        print(f"{label}: with signals {on:.2f} CPU-s {[round(x, 2) for x in cpu[(name, 'on')]]}, "
              f"without {off:.2f} {[round(x, 2) for x in cpu[(name, 'off')]]}: {on / off - 1:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
