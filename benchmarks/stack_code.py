"""Benchmark the stack_code reader against a bare pyarrow row-group loop with the same licence filter.

Corpus: the Python standard library on this machine (real code), written in the-stack's layout
(zstd Parquet, ``list<string>`` licences, row groups of ``--row-group`` rows); 80% of the rows
are MIT, 10% GPL-3.0, 10% without licence. Every contender reads the same file on one core, so
rows/s is rows/s per core:

* ``bare-pyarrow``: ``ParquetFile.iter_batches`` per row group on the needed columns,
  ``to_pylist``, and :func:`sources.stack_code.list_license` (the same allow-list check);
* ``kinda-reader``: :class:`sources.stack_code.StackCodeRecipe` reader only (licence, names,
  language mapping, size/binary checks, blob id, Document);
* ``kinda-full``: reader plus the GitHub recipe's cleaning and filters (header removal, line
  length, alphanumeric fraction, alpha per token) through ``run_steps``.

Rounds are interleaved (each runs every contender, in a rotating order) and timed in CPU seconds
of the process and its children, so a loaded machine slows all contenders alike; the ratios are
per round. ``--profile`` adds one profiled ``kinda-full`` run: the filters' share of its time.

    python benchmarks/stack_code.py --rows 20000 --repeat 5 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from _cpu import timed

from core.document import InputSpec
from core.steps import StepStats, run_steps
from sources.formats.licenses import DEFAULT_ALLOWED
from sources.stack_code import STACK_COLUMNS, StackCodeRecipe, git_blob_sha1, list_license

LICENCES = [["MIT"]] * 8 + [["GPL-3.0-only"], []]


def build_corpus(target: Path, rows: int, row_group: int) -> tuple[int, int]:
    """Write ``rows`` stdlib modules (cycled) in the-stack layout; return (rows, content bytes)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    sources: list[tuple[str, str]] = []
    for path in sorted(stdlib.rglob("*.py")):
        try:
            sources.append((path.relative_to(stdlib).as_posix(), path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
        if len(sources) >= rows:
            break
    columns: dict[str, list[object]] = {"hexsha": [], "ext": [], "lang": [], "content": [],
                                        "max_stars_repo_path": [], "max_stars_repo_name": [],
                                        "max_stars_repo_licenses": []}
    size = 0
    for i in range(rows):
        rel, content = sources[i % len(sources)]
        columns["hexsha"].append(git_blob_sha1(content.encode()))
        columns["ext"].append("py")
        columns["lang"].append("Python")
        columns["content"].append(content)
        columns["max_stars_repo_path"].append(f"copy{i // len(sources)}/{rel}")
        columns["max_stars_repo_name"].append("python/cpython")
        columns["max_stars_repo_licenses"].append(LICENCES[i % len(LICENCES)])
        size += len(content.encode())
    schema = pa.schema([*(pa.field(n, pa.string()) for n in list(columns)[:-1]),
                        pa.field("max_stars_repo_licenses", pa.list_(pa.string()))])
    pq.write_table(pa.table(columns, schema=schema), target, compression="zstd", row_group_size=row_group)
    return rows, size


def run_bare(path: Path) -> int:
    """The baseline: stream row groups, decode rows, apply the licence allow-list."""
    parquet = pq.ParquetFile(path)
    kept = 0
    for group in range(parquet.metadata.num_row_groups):
        for batch in parquet.iter_batches(batch_size=1024, row_groups=[group], columns=list(STACK_COLUMNS)):
            for row in batch.to_pylist():
                if list_license(row["max_stars_repo_licenses"], DEFAULT_ALLOWED).allowed:
                    kept += 1
    return kept


def run_reader(path: Path) -> int:
    recipe = StackCodeRecipe()
    stats = StepStats()
    kept = sum(1 for _ in run_steps(recipe.read(InputSpec(str(path), path, path.name)), [], stats))
    assert stats.balanced()
    return kept


def run_full(path: Path) -> int:
    recipe = StackCodeRecipe()
    stats = StepStats()
    kept = sum(1 for _ in run_steps(recipe.read(InputSpec(str(path), path, path.name)), recipe.steps(), stats))
    assert stats.balanced()
    return kept


#: What the profile splits out: leaves of the step chain (a step's ``run`` is a generator whose
#: cumulative time holds the steps before it, so the steps are measured by what they call).
PROFILE_PARTS = {
    "reader (RowReader)": [("rows.py", "__call__")],
    "counts (alnum, alpha, pre-tokens, lines)": [("text_counts.py", "remember_counts"),
                                                 ("text_counts.py", "text_counts")],
    "copyright header": [("code_quality.py", "cuts")],
}


def filter_share(path: Path) -> tuple[float, list[tuple[str, float]]]:
    """One ``kinda-full`` run under cProfile: its CPU seconds and the shares of the reader and the filters."""
    profile = cProfile.Profile(time.process_time)  # this process's CPU (a bounded helper's would not be in it)
    profile.runcall(run_full, path)
    stats = pstats.Stats(profile)
    total = max(v[3] for v in stats.stats.values())  # type: ignore[attr-defined]
    shares = []
    for label, functions in PROFILE_PARTS.items():
        cumulative = sum(v[3] for (file, _, name), v in stats.stats.items()  # type: ignore[attr-defined]
                         if any(name == function and file.endswith(module) for module, function in functions))
        shares.append((label, cumulative / total))
    filters = sum(share for label, share in shares if not label.startswith("reader"))
    return total, [*shares, ("filters together", filters)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--row-group", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (each runs every contender)")
    parser.add_argument("--profile", action="store_true", help="also print the filters' share of kinda-full's CPU")
    args = parser.parse_args()
    contenders: dict[str, Callable[[Path], int]] = {"bare-pyarrow": run_bare, "kinda-reader": run_reader,
                                                    "kinda-full": run_full}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "the-stack-bench.parquet"
        rows, size = build_corpus(path, args.rows, args.row_group)
        print(f"corpus: {rows} rows, {size / 1e6:.1f} MB of code, {path.stat().st_size / 1e6:.1f} MB zstd Parquet, "
              f"{pq.ParquetFile(path).metadata.num_row_groups} row groups; {args.repeat} interleaved rounds, "
              f"CPU time of the process and its children")
        rates: dict[str, list[float]] = {name: [] for name in contenders}
        kept: dict[str, int] = {}
        for round_ in range(args.repeat):
            names = list(contenders)
            for name in names[round_ % len(names):] + names[:round_ % len(names)]:  # rotate the order
                seconds, kept[name] = timed(contenders[name], path)
                rates[name].append(rows / seconds)
        print(f"{'contender':14} {'kept':>6} {'rows/CPU-s min':>15} {'median':>9} {'max':>9}")
        for name, values in rates.items():
            ordered = sorted(values)
            print(f"{name:14} {kept[name]:6d} {ordered[0]:15.0f} {statistics.median(ordered):9.0f} {ordered[-1]:9.0f}")
        for name in ("kinda-reader", "kinda-full"):
            ratios = sorted(a / b for a, b in zip(rates[name], rates["bare-pyarrow"], strict=True))
            print("RESULT " + json.dumps({"metric": f"{name} vs bare-pyarrow", "values": ratios}))
            print(f"{name} / bare, per round: min {ratios[0]:.2f}x, median {statistics.median(ratios):.2f}x, "
                  f"max {ratios[-1]:.2f}x")
        if args.profile:
            total, shares = filter_share(path)
            print(f"kinda-full under cProfile ({total:.2f} s): "
                  + ", ".join(f"{label} {share:.0%}" for label, share in shares))


if __name__ == "__main__":
    main()
