"""What the per-step accounting (core.steps: documents, characters and thread CPU per step) costs a source run.

A released-C4-style file (``--docs`` lines of real shipped prose, 1-6 KB each, one bad line in
a hundred) is staged through :func:`core.pipeline.stage_input` with the C4 recipe: read, steps,
staging shards, dedup keys and the quality-signals attribute, as a source task does. Contenders:

* ``accounted``: the runner as shipped (two ``time.thread_time`` reads per kept document per step);
* ``bare``: the runner without the accounting (the drop counting only, as before it).

Whole-stage rounds on a loaded 2-core machine scatter by 10-20%, more than the accounting can
cost, so the script also times the step chain alone (the file's records, already read, through
the recipe's steps, ``--chain-repeat`` times, each contender's fastest pass): the accounting's
cost per document, set against the whole stage's CPU per document, is the figure to read
(``overhead_of_stage``).

Rounds are interleaved (each runs both, order alternating) and timed in CPU seconds of the
process and its children (``_cpu``), so a loaded machine slows both alike; the figure is the
median of the per-round ratios. The signals kernel's first call (numba load) is paid before;
the warning logged per bad line is switched off for both.

    python benchmarks/step_accounting.py --docs 5000 --repeat 6
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from _cpu import timed

from core import pipeline, steps
from core.document import Document, Drop, InputSpec
from core.shards import ShardLimits
from core.steps import Record, StepCounts, StepStats
from sources.c4 import C4Recipe


def write_input(path: Path, docs: int, seed: int = 7) -> None:
    """C4-style lines from the repository's own prose (its Markdown files), deterministic."""
    root = Path(__file__).resolve().parents[1]
    words = " ".join(p.read_text(encoding="utf-8") for p in sorted((root / "docs").glob("*.md"))).split()
    rng = random.Random(seed)
    lines = []
    for n in range(docs):
        if n % 100 == 50:
            lines.append("{not json")
            continue
        start = rng.randrange(len(words) - 1000)
        text = " ".join(words[start:start + rng.randint(150, 1000)])
        lines.append(json.dumps({"text": text, "url": f"https://x.example/{n}", "timestamp": "2019-04-25T12:57:54Z"}))
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))


def _bare(records: Iterable[Record], counts: StepCounts, stats: StepStats,
          language: str | None) -> Iterator[Document]:
    """The runner's stage before the accounting: drops counted, documents passed on."""
    for record in records:
        if isinstance(record, Drop):
            stats.count_drop(counts.step, record, language)
        else:
            yield record


def stage(path: Path) -> int:
    """One staging of ``path`` into a fresh output folder; the documents kept."""
    out = Path(tempfile.mkdtemp(prefix="acct-"))
    try:
        ctx = pipeline.RunContext(out, "c4", "cfg", ShardLimits(), "c4")
        record = pipeline.stage_input(C4Recipe(), InputSpec(str(path), path, path.name), ctx)
        assert record.status == "done", record.error
        return record.docs_kept
    finally:
        shutil.rmtree(out, ignore_errors=True)


def chain_seconds(records: list[Record], passes: int) -> float:
    """The fastest of ``passes`` runs of the recipe's step chain over ``records`` (process CPU seconds)."""
    best = float("inf")
    for _ in range(passes):
        started = time.process_time()
        for _ in steps.run_steps(iter(records), C4Recipe().steps(), StepStats(), "c4_reader", "en"):
            pass
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--chain-repeat", type=int, default=30)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    shipped = steps._documents_only
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c4-train.00000-of-01024.json.gz"
        write_input(path, args.docs)
        stage(path)  # numba and the language tables loaded once, outside the timings
        ratios, figures = [], {"accounted": [], "bare": []}
        for round_ in range(args.repeat):
            order = ["accounted", "bare"] if round_ % 2 == 0 else ["bare", "accounted"]
            times = {}
            for name in order:
                steps._documents_only = shipped if name == "accounted" else _bare  # type: ignore[assignment]
                times[name], kept = timed(stage, path)
                figures[name].append(times[name])
            steps._documents_only = shipped  # type: ignore[assignment]
            ratios.append(times["accounted"] / times["bare"])
            print(f"round {round_ + 1}: accounted {times['accounted']:.3f} CPU-s, bare {times['bare']:.3f} CPU-s, "
                  f"ratio {ratios[-1]:.4f} ({kept} documents kept)")
        records = list(C4Recipe().read(InputSpec(str(path), path, path.name)))
        chain = {}
        for name in ("bare", "accounted", "bare", "accounted"):
            steps._documents_only = shipped if name == "accounted" else _bare  # type: ignore[assignment]
            chain[name] = min(chain.get(name, float("inf")), chain_seconds(records, args.chain_repeat // 2))
        steps._documents_only = shipped  # type: ignore[assignment]
    per_doc = (chain["accounted"] - chain["bare"]) / len(records)
    stage_per_doc = statistics.median(figures["bare"]) / len(records)
    print(json.dumps({"docs": args.docs, "accounted_median_s": round(statistics.median(figures["accounted"]), 3),
                      "bare_median_s": round(statistics.median(figures["bare"]), 3),
                      "ratio_median": round(statistics.median(ratios), 4),
                      "ratio_range": [round(min(ratios), 4), round(max(ratios), 4)],
                      "chain_bare_s": round(chain["bare"], 4), "chain_accounted_s": round(chain["accounted"], 4),
                      "accounting_us_per_doc": round(per_doc * 1e6, 2),
                      "stage_us_per_doc": round(stage_per_doc * 1e6, 1),
                      "overhead_of_stage": round(per_doc / stage_per_doc, 5)}))


if __name__ == "__main__":
    main()
