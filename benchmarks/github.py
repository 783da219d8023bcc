"""Benchmark the GitHub reader + code filters against a RedPajama-style loop, side by side.

Corpus: the Python standard library on this machine, written as BigQuery-export rows
(``.jsonl.gz``, MIT licence). Both contenders read the same file on one core:

* ``kinda``: :class:`sources.github.GithubRecipe` reader and steps through ``run_steps``;
* ``redpajama-loop``: gzip + json + RedPajama's header regexes + its line/alnum stats and the
  alpha-per-token ratio with the same regex tokenizer, counted as RedPajama's code counts (a
  Python step per character and per token: what ``github_clean_dedup_local.py`` and
  ``github_run_filter.py`` do, minus their multiprocessing).

Rounds are interleaved (each runs both contenders, in a rotating order) and timed in CPU seconds
of the process and its children (the bounded header-removal helper); ratios are per round.

    python benchmarks/github.py --files 2000 --repeat 5
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path

from _cpu import timed

from core.document import InputSpec
from core.filters.code_quality import _PRETOKEN, LineStats, remove_copyright_header_redpajama
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
    kept = 0
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            text = remove_copyright_header_redpajama(row["content"])
            stats = LineStats.of(text)
            if not text or stats.max_line_length > 1000 or stats.avg_line_length > 100:
                continue
            if sum(ch.isalnum() for ch in text) / len(text) < 0.25:
                continue
            tokens = sum(1 for _ in _PRETOKEN.finditer(text))
            if tokens and sum(ch.isalpha() for ch in text) / tokens >= 1.5:
                kept += 1
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000, help="stdlib modules in the corpus (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (each runs both contenders)")
    args = parser.parse_args()
    contenders: dict[str, Callable[[Path], int]] = {"kinda": run_kinda, "redpajama-loop": run_redpajama_loop}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "rows.jsonl.gz"
        rows, size = build_corpus(corpus, args.files)
        print(f"corpus: {rows} files, {size / 1e6:.1f} MB of source; {args.repeat} interleaved rounds, "
              f"CPU time of the process and its children\n")
        rates: dict[str, list[float]] = {name: [] for name in contenders}
        kept: dict[str, int] = {}
        for round_ in range(args.repeat):
            names = list(contenders)[round_ % 2:] + list(contenders)[:round_ % 2]
            for name in names:
                seconds, kept[name] = timed(contenders[name], corpus)
                rates[name].append(rows / seconds)
        print(f"{'contender':<16} {'kept':>6} {'files/CPU-s min':>16} {'median':>8} {'max':>8} {'MB/CPU-s':>9}")
        for name, values in rates.items():
            ordered = sorted(values)
            median = statistics.median(ordered)
            print(f"{name:<16} {kept[name]:>6} {ordered[0]:>16.0f} {median:>8.0f} {ordered[-1]:>8.0f} "
                  f"{median * size / rows / 1e6:>9.2f}")
        ratios = sorted(a / b for a, b in zip(rates["kinda"], rates["redpajama-loop"], strict=True))
        print("RESULT " + json.dumps({"metric": "kinda vs redpajama-loop", "values": ratios}))
        print(f"\nkinda / redpajama-loop, per round: min {ratios[0]:.2f}x, median {statistics.median(ratios):.2f}x, "
              f"max {ratios[-1]:.2f}x")


if __name__ == "__main__":
    main()
