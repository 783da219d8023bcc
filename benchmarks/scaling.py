"""The same Wikipedia workload on 1 vs 2 Dask worker processes: speed-up, and Prefect's share of wall time.

    python benchmarks/scaling.py                    # 4 generated dumps x 1,500 pages (small default)
    python benchmarks/scaling.py --dumps 8 --pages 4000 --workers 1,2,4

Three measurements on the same inputs, each into a fresh output root:
- ``direct``: the pipeline's own phase functions called in one process, no Prefect (the work itself);
- ``dask-N``: the Wikipedia flow with ``runner: dask`` on a LocalCluster of N one-thread worker
  processes, timed from the flow call to its return (cluster start-up included, as a user sees it).
Prefect's overhead share = (dask-1 wall - direct wall) / dask-1 wall: what orchestration (task
runs, API calls, serialization, the cluster) costs on top of the work on one worker. The embedded
Prefect server is started once, before any timing. Outputs are checked to be byte-identical.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import flows  # noqa: F401  (offline Prefect defaults before Prefect is imported)


def make_dumps(root: Path, dumps: int, pages: int) -> list[Path]:
    """``dumps`` sample dumps (English and German, different seeds), distinct file names."""
    from sources.wikipedia_sample import write_sample_dumps

    found: list[Path] = []
    for seed in range((dumps + 1) // 2):
        for dump in write_sample_dumps(root / f"s{seed}", pages=pages, seed=seed):
            target = root / dump.name.replace("sample", f"sample{seed}")
            dump.rename(target)
            found.append(target)
    return sorted(found)[:dumps]


def tree(out: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((out / "docs").rglob("*.parquet")):
        digest.update(path.relative_to(out).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def run_direct(dumps: list[Path], out: Path) -> float:
    """The phases without Prefect, one process: stage each input, dedup, finalize each input."""
    from core import pipeline
    from core.document import InputSpec
    from flows.wikipedia import WikipediaConfig

    config = WikipediaConfig(dumps=[str(d) for d in dumps], out=out)
    recipe = config.recipe()
    started = time.perf_counter()
    specs = [InputSpec(location=str(d), path=d, key=d.name) for d in dumps]
    ctx = pipeline.RunContext(out.resolve(), recipe.name, config.config_hash(), config.shards.limits(), recipe.name)
    keys = [s.key for s in specs]
    scope = pipeline.scope_hash(keys, ctx.config_hash)
    staged = {s.key: pipeline.stage_input(recipe, s, ctx) for s in specs}
    pipeline.find_exact_duplicates(ctx, keys)
    for spec in specs:
        pipeline.finalize_input(recipe, spec, ctx, scope, staged[spec.key])
    return time.perf_counter() - started


def run_dask(dumps: list[Path], out: Path, workers: int) -> float:
    from flows.wikipedia import WikipediaConfig, run

    config = WikipediaConfig(dumps=[str(d) for d in dumps], out=out, runner="dask", workers=workers, progress=False)
    started = time.perf_counter()
    summary = run(config)
    elapsed = time.perf_counter() - started
    if summary.failed:
        raise SystemExit(f"failed inputs: {summary.failed}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dumps", type=int, default=4, help="input files (default: %(default)s)")
    parser.add_argument("--pages", type=int, default=1500, help="pages per dump (default: %(default)s)")
    parser.add_argument("--workers", default="1,2", help="Dask worker process counts (default: %(default)s)")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.workers.split(",")]

    from flows._runtime import prefect_api

    with tempfile.TemporaryDirectory(prefix="kinda-scaling-") as tmp:
        root = Path(tmp)
        dumps = make_dumps(root / "dumps", args.dumps, args.pages)
        mb = sum(d.stat().st_size for d in dumps) / 1e6
        rows = []
        direct = run_direct(dumps, root / "direct")
        rows.append(("direct (no Prefect, 1 process)", direct, tree(root / "direct")))
        with prefect_api():
            for n in counts:
                seconds = run_dask(dumps, root / f"dask{n}", n)
                rows.append((f"dask LocalCluster, {n} worker process{'es' if n > 1 else ''}", seconds, tree(root / f"dask{n}")))
                shutil.rmtree(root / f"dask{n}" / "_staging", ignore_errors=True)
    one = dict((label.split(",")[1].strip(), s) for label, s, _ in rows[1:]).get("1 worker process")
    print(f"\n{len(dumps)} dumps x {args.pages} pages ({mb:.1f} MB bz2), {os.cpu_count()} cores\n")
    print(f"{'run':<40} {'wall s':>8} {'speed-up vs 1':>14} {'output':>18}")
    for label, seconds, digest in rows:
        speedup = f"{one / seconds:.2f}x" if one and "dask" in label else "-"
        print(f"{label:<40} {seconds:>8.2f} {speedup:>14} {digest:>18}")
    if one:
        print(f"\nPrefect + Dask overhead on 1 worker: {(one - direct) / one:.1%} of wall time "
              f"({one - direct:.2f} s over {direct:.2f} s of work)")
    same = len({digest for _, _, digest in rows}) == 1
    print(f"outputs identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
