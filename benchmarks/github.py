"""Benchmark the GitHub reader + code filters against a RedPajama-style loop, side by side.

Corpus: the Python standard library on this machine, written as BigQuery-export rows
(``.jsonl.gz``, MIT licence). Both contenders read the same file on one core:

* ``kinda``: :class:`sources.github.GithubRecipe` reader and steps through ``run_steps``;
* ``redpajama-loop``: gzip + json + RedPajama's header regexes + its line/alnum stats and the
  alpha-per-token ratio with the same regex tokenizer (what ``github_clean_dedup_local.py`` and
  ``github_run_filter.py`` do, minus their multiprocessing).

    python benchmarks/github.py --files 2000 --repeat 3
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path

from core.document import InputSpec
from core.filters.code_quality import (
    LineStats,
    RegexTokenizer,
    alpha_count,
    alphanumeric_fraction,
    remove_copyright_header_redpajama,
)
from core.steps import StepStats, run_steps
from sources.github import GithubRecipe


def build_corpus(target: Path, files: int) -> tuple[int, int]:
    """Write up to ``files`` stdlib modules as rows; return (rows, content bytes)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    rows = size = 0
    with gzip.open(target, "wt", encoding="utf-8") as handle:
        for path in sorted(stdlib.rglob("*.py")):
            if rows >= files:
                break
            try:
                content = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            handle.write(json.dumps({"repo_name": "python/cpython", "path": path.relative_to(stdlib).as_posix(),
                                     "license": "mit", "content": content}) + "\n")
            rows += 1
            size += len(content.encode())
    return rows, size


def run_kinda(path: Path) -> int:
    recipe = GithubRecipe()
    stats = StepStats()
    kept = sum(1 for _ in run_steps(recipe.read(InputSpec(str(path), path, path.name)), recipe.steps(), stats))
    return kept


def run_redpajama_loop(path: Path) -> int:
    tokenizer = RegexTokenizer()
    kept = 0
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            text = remove_copyright_header_redpajama(row["content"])
            stats = LineStats.of(text)
            if not text or stats.max_line_length > 1000 or stats.avg_line_length > 100:
                continue
            if alphanumeric_fraction(text) < 0.25:
                continue
            tokens = tokenizer.count(text)
            if tokens and alpha_count(text) / tokens >= 1.5:
                kept += 1
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000, help="stdlib modules in the corpus (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per contender; the median is reported")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "rows.jsonl.gz"
        rows, size = build_corpus(corpus, args.files)
        print(f"corpus: {rows} files, {size / 1e6:.1f} MB of source\n")
        print(f"{'contender':<16} {'kept':>6} {'files/s':>9} {'MB/s':>7} {'peak RSS MB':>12}")
        for name, fn in (("kinda", run_kinda), ("redpajama-loop", run_redpajama_loop)):
            times = []
            kept = 0
            for _ in range(args.repeat):
                start = time.perf_counter()
                kept = fn(corpus)
                times.append(time.perf_counter() - start)
            median = statistics.median(times)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{name:<16} {kept:>6} {rows / median:>9.0f} {size / 1e6 / median:>7.2f} {rss:>12.0f}")


if __name__ == "__main__":
    main()
