"""CPU a worker process saves by not importing pandas: staging the readers' samples with and without it.

    python benchmarks/worker_pandas.py --rounds 8

pyarrow imports pandas the first time ``pa.array``/``pa.table``/``pa.scalar``/``to_numpy`` or
``pyarrow.dataset`` is used. The shard writer and content-hash writer (every source's staging),
StackExchange's row spill and Reddit's line-by-line path used to do so; they now build their
Arrow columns from buffers (:mod:`core.arrow_columns`). Contenders, each a fresh process that
stages the sample inputs of the readers in ``tests/sources/test_no_pandas.py`` with
``benchmarks/_stage_samples.py`` (one worker's work on small inputs, imports included):

- ``now``: as the code runs now (that test checks it imports no pandas);
- ``pandas``: the same, with pandas brought in the way pyarrow did (``pa.array`` once, first).

Interleaved rounds, the order alternating; CPU time of each child process (``RUSAGE_CHILDREN``:
the child and the helpers it reaped). The difference of the medians is the CPU each worker
process saves; the ratio is against the whole staging of these small samples.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# Run as a script, this folder is sys.path[0]: import from the repository root instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flows.registry import SOURCES  # noqa: E402

STAGE_SAMPLES = Path(__file__).resolve().parent / "_stage_samples.py"
#: The readers of ``tests/sources/test_no_pandas.py``.
READERS = ["c4", "github", "stackexchange", "dialogue", "stack_code", "reasoning", "dm_math", "books"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def staged_cpu(inputs: dict[str, list[str]], out: Path, pandas_first: bool) -> float:
    """CPU seconds of one fresh process staging ``inputs`` into ``out``."""
    started = _children_cpu()
    subprocess.run([sys.executable, str(STAGE_SAMPLES), json.dumps(inputs), str(out),
                    *(["--pandas-first"] if pandas_first else [])], check=True, capture_output=True)
    return _children_cpu() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        inputs = {name: SOURCES[name].sample(Path(tmp) / name) for name in READERS}  # type: ignore[misc]
        times: dict[str, list[float]] = {"now": [], "pandas": []}
        for number in range(args.rounds):
            order = ["now", "pandas"] if number % 2 == 0 else ["pandas", "now"]
            for name in order:
                times[name].append(staged_cpu(inputs, Path(tmp) / f"out-{number}-{name}", name == "pandas"))
    now, old = statistics.median(times["now"]), statistics.median(times["pandas"])
    for name, values in times.items():
        print(f"{name:7s} median {statistics.median(values):.3f} CPU-s  ({', '.join(f'{v:.2f}' for v in values)})")
    print(f"saved per worker process: {old - now:.3f} CPU-s ({old / now:.3f}x the staging CPU of these samples)")


if __name__ == "__main__":
    main()
