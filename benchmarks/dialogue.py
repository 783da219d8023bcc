"""Reddit throughput and memory: our thread-rebuilding reader vs a plain zstandard + json.loads loop.

    python benchmarks/dialogue.py                                  # 200k comments, 3 repeats
    python benchmarks/dialogue.py --sizes 200000,2000000 --repeat 3
    python benchmarks/dialogue.py --input RC_2015-01.zst           # a real dump

Inputs: ``RC_`` files written in the Pushshift format by :func:`sources.samples.dialogue.write_reddit_comments`
(ndjson in one zstd frame, window log 31 with long-distance matching, no content size; the
comment shape of the real RC_2005-12: ~70 % top-level, scores around 1, 10 % deleted, escaped
markdown bodies), cached under ``--cache`` (generation is not timed), plus the real
``RC_2005-12.zst`` when ../shared/realdata exists.

Contenders, each in a fresh ``python -P`` process per repeat (peak RSS is its own ``VmHWM``), on one
core (CPU time is measured; pyarrow and DuckDB run single-threaded):

- ``plain``: ``ZstdDecompressor(max_window_size=2**31).stream_reader`` -> lines -> ``json.loads``,
  counting comments: the floor any Reddit reader pays, with no threads, filters or output;
- ``ours``: :class:`sources.reddit.RedditReader` with the default filters: blocks parsed by
  pyarrow's JSON reader -> Parquet rows -> DuckDB external sort by thread (``--memory-limit``) ->
  a chunk of whole threads rebuilt as columns -> conversations; every record (documents and
  drops) is consumed.

Reported per contender and size: comments/s per CPU-second and peak RSS, min/median/max over
``--repeat`` interleaved rounds (each round runs every contender), and the per-round ratio.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REALDATA = ROOT.parent / "shared" / "realdata" / "dialogue" / "reddit" / "RC_2005-12.zst"
CONTENDERS = ("plain", "ours")


def run_plain(path: Path) -> int:
    import io

    import zstandard

    count = 0
    with open(path, "rb") as handle:
        reader = zstandard.ZstdDecompressor(max_window_size=2**31).stream_reader(handle)
        for line in io.BufferedReader(reader, buffer_size=1 << 20):
            if line.strip():
                json.loads(line)
                count += 1
    return count


def run_ours(path: Path, memory_limit: str, scratch: Path) -> int:
    from core.document import Document, InputSpec
    from sources.reddit import RedditReader

    reader = RedditReader(InputSpec(str(path), path, path.name), scratch_dir=scratch, memory_limit=memory_limit)
    docs = 0
    for record in reader:
        docs += isinstance(record, Document)
    return docs


def child(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    if args.child == "plain":
        result = run_plain(args.path)
    else:
        result = run_ours(args.path, args.memory_limit, args.scratch)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"result": result, "cpu": usage.ru_utime + usage.ru_stime,
                      "wall": time.perf_counter() - started, "rss_mb": peak_rss_mb()}))


def peak_rss_mb() -> float:
    """This process's peak RSS (``VmHWM``): ``ru_maxrss`` would carry the parent's peak across exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(contender: str, path: Path, args: argparse.Namespace) -> dict[str, float]:
    env_threads = {"OMP_NUM_THREADS": "1", "ARROW_NUM_THREADS": "1"}
    import os

    command = [sys.executable, "-P", __file__, "--child", contender, "--path", str(path),
               "--memory-limit", args.memory_limit, "--scratch", str(args.cache / "scratch")]
    out = subprocess.run(command, check=True, capture_output=True, text=True, env={**os.environ, **env_threads})
    return json.loads(out.stdout.strip().splitlines()[-1])


def count_lines(path: Path) -> int:
    return run_plain(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="200000", help="comma-separated numbers of generated comments")
    parser.add_argument("--input", type=Path, action="append", default=[], help="an existing RC_ file (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--memory-limit", default="1GB", help="DuckDB's memory for the sort (the reader's default)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kinda-bench-dialogue")
    parser.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args)
        return 0
    args.cache.mkdir(parents=True, exist_ok=True)
    (args.cache / "scratch").mkdir(exist_ok=True)
    inputs = list(args.input)
    if REALDATA.exists() and not args.input:
        inputs.append(REALDATA)
    for size in (int(s) for s in args.sizes.split(",") if s):
        path = args.cache / f"RC_generated-{size}.zst"
        if not path.exists():
            from sources.samples.dialogue import write_reddit_comments

            started = time.perf_counter()
            write_reddit_comments(path, size, seed=size)
            print(f"generated {path} ({path.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - started:.0f}s",
                  flush=True)
        inputs.append(path)
    print(f"{'input':32} {'contender':8} {'comments':>10} {'comments/s/core min/med/max':>30} "
          f"{'peak RSS MB min/med/max':>26} {'docs':>8}")
    contenders = args.contenders.split(",")
    for path in inputs:
        comments = count_lines(path)
        runs: dict[str, list[dict[str, float]]] = {c: [] for c in contenders}
        for round_ in range(args.repeat):  # interleaved: each round runs every contender, order rotating
            for contender in contenders[round_ % len(contenders):] + contenders[:round_ % len(contenders)]:
                runs[contender].append(measure(contender, path, args))
        for contender in contenders:
            rates = sorted(comments / r["cpu"] for r in runs[contender])
            rss = sorted(r["rss_mb"] for r in runs[contender])
            docs = runs[contender][0]["result"] if contender == "ours" else ""
            print(f"{path.name:32} {contender:8} {comments:>10} "
                  f"{rates[0]:>10.0f}/{statistics.median(rates):.0f}/{rates[-1]:.0f} "
                  f"{rss[0]:>12.0f}/{statistics.median(rss):.0f}/{rss[-1]:.0f} {docs!s:>8}", flush=True)
        if set(CONTENDERS) <= set(contenders):
            ratios = sorted(p["cpu"] / o["cpu"] for p, o in zip(runs["plain"], runs["ours"], strict=True))
            print("RESULT " + json.dumps({"metric": f"ours vs plain [{path.name}]", "values": ratios}))
            print(f"{path.name:32} ours / plain per round: min {ratios[0]:.2f}x, median {statistics.median(ratios):.2f}x, "
                  f"max {ratios[-1]:.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
