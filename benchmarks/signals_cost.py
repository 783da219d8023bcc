"""What the quality signals add to a source flow's CPU: the Wikipedia full path with and without them.

    python benchmarks/signals_cost.py [--rounds 3]

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
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
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
