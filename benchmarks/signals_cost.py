"""What the quality signals add to a source flow's CPU: the Wikipedia full path with and without them.

    python benchmarks/signals_cost.py [--rounds 3]

For each real dump in ``../shared/realdata/mediawiki`` (``*.REPAIRED.xml.bz2``), ``benchmarks/wikipedia.py``'s
``ours-full`` path (stage, exact dedup, final shards) runs in a fresh child process, as a worker
is one, with the signals sink as it is (``on``) and with its flush made a no-op (``off``: the
signals attribute stays empty, all else the same). CPU is the child's user+sys, its own children
included, so importing numba and loading the kernels from numba's cache count, as they do for a
worker. Rounds interleave the two and alternate which goes first; medians are compared.
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
print(run_ours_full(Path(sys.argv[1])))
'''


def once(dump: Path, mode: str) -> float:
    """CPU seconds of one fresh child running the full path over ``dump``, signals ``on`` or ``off``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", CHILD, str(dump), mode, str(REPO)], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not DUMPS:
        print("no dumps under ../shared/realdata/mediawiki", file=sys.stderr)
        return 2
    cpu: dict[tuple[str, str], list[float]] = {(d.name, m): [] for d in DUMPS for m in ("on", "off")}
    for round_ in range(args.rounds):
        for dump in DUMPS:
            for mode in ("on", "off") if round_ % 2 == 0 else ("off", "on"):
                cpu[(dump.name, mode)].append(once(dump, mode))
    for dump in DUMPS:
        on, off = statistics.median(cpu[(dump.name, "on")]), statistics.median(cpu[(dump.name, "off")])
        print(f"{dump.name}: with signals {on:.2f} CPU-s {[round(x, 2) for x in cpu[(dump.name, 'on')]]}, "
              f"without {off:.2f} {[round(x, 2) for x in cpu[(dump.name, 'off')]]}: {on / off - 1:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
