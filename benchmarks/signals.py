"""Quality signals against datatrove 0.10's Gopher and FineWeb filters, side by side on real text.

    python benchmarks/signals.py --peer-python /tmp/dedup-peers/bin/python [--docs 5000] [--rounds 3]

The documents are real web text from ``../shared/realdata`` (C4-format, dolma Common Crawl and
the mini Pile, in file order, each at most ``--max-chars``). For each of datatrove's three
filters (``GopherQualityFilter``, ``GopherRepetitionFilter``, ``FineWebQualityFilter``, default
thresholds) the script compares its keep/drop decision per document with the same rule applied
to our stored signals (:func:`decisions`), and lists the documents where they differ with both
sides' reasons. CPU: ours is :func:`core.filters.signals.signals_table` over the documents in
batches of 512 plus the threshold checks; datatrove's is its three filters' ``filter`` calls in a
child process on the peer venv (``benchmarks/requirements-dedup.txt``: spaCy's English tokenizer
for word splitting, as datatrove loads it). Each side is timed around its loop only (imports and
model loads excluded), the rounds interleaved, the medians compared.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

REALDATA = REPO.parent / "shared" / "realdata"
CORPORA = ("c4/c4-format-00000-of-00001.DERIVED.json.gz", "c4/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz",
           "c4/dolma_cc_en_head-0091.jsonl.gz", "c4/dolma_cc_en_head-0174.jsonl.gz",
           "pile/mini-pile-v1-format.DERIVED.jsonl.zst")
FILTERS = ("gopher_quality", "gopher_repetition", "fineweb_quality")

#: datatrove 0.10's defaults, as our signals name them.
GOPHER_REPETITION = (("dup_para_frac", 0.3), ("dup_para_char_frac", 0.2), ("dup_line_frac", 0.3),
                     ("dup_line_char_frac", 0.2), ("top_2gram_char_frac", 0.2), ("top_3gram_char_frac", 0.18),
                     ("top_4gram_char_frac", 0.16), ("dup_5gram_char_frac", 0.15), ("dup_6gram_char_frac", 0.14),
                     ("dup_7gram_char_frac", 0.13), ("dup_8gram_char_frac", 0.12), ("dup_9gram_char_frac", 0.11),
                     ("dup_10gram_char_frac", 0.10))


def _lines(path: Path) -> Iterator[bytes]:
    if path.suffix == ".zst":
        import zstandard

        with open(path, "rb") as raw:
            yield from io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw))
        return
    with gzip.open(path, "rb") as handle:
        yield from handle


def load_texts(limit: int, max_chars: int) -> list[str]:
    """Up to ``limit`` non-empty texts of the real corpora, in file order."""
    texts: list[str] = []
    for name in CORPORA:
        path = REALDATA / name
        if not path.exists():
            continue
        for line in _lines(path):
            text = json.loads(line).get("text") or ""
            if text.strip():
                texts.append(text[:max_chars])
            if len(texts) >= limit:
                return texts
    return texts


def _gopher_quality(s: dict[str, Any]) -> str | None:
    if s["symbol_free_words"] < 50:
        return "gopher_short_doc"
    if s["symbol_free_words"] > 100_000:
        return "gopher_long_doc"
    if s["mean_word_length"] < 3:
        return "gopher_below_avg_threshold"
    if s["mean_word_length"] > 10:
        return "gopher_above_avg_threshold"
    if s["hash_word_ratio"] > 0.1:
        return "gopher_too_many_hashes"
    if s["ellipsis_word_ratio"] > 0.1:
        return "gopher_too_many_ellipsis"
    if s["bullet_lines_frac"] > 0.9:
        return "gopher_too_many_bullets"
    if s["ellipsis_lines_frac"] > 0.3:
        return "gopher_too_many_end_ellipsis"
    if s["alpha_words_frac"] < 0.8:
        return "gopher_below_alpha_threshold"
    if s["stop_words"] < 2:
        return "gopher_enough_stop_words"
    return None


def _gopher_repetition(s: dict[str, Any]) -> str | None:
    return next((name for name, limit in GOPHER_REPETITION if s[name] > limit), None)


def _fineweb(s: dict[str, Any]) -> str | None:
    if s["line_punct_ratio"] < 0.12:
        return "line_punct_ratio"
    if s["short_line_ratio"] > 0.67:
        return "short_line_ratio"
    if s["char_dup_ratio"] > 0.01:
        return "char_dup_ratio"
    if s["newline_word_ratio"] > 0.3:
        return "list_ratio"
    return None


def decisions(rows: list[dict[str, Any]]) -> dict[str, list[str | None]]:
    """Per filter, each document's drop reason under datatrove's default thresholds (None: kept)."""
    return {"gopher_quality": [_gopher_quality(r) for r in rows],
            "gopher_repetition": [_gopher_repetition(r) for r in rows],
            "fineweb_quality": [_fineweb(r) for r in rows]}


def ours(texts: list[str]) -> tuple[float, dict[str, list[str | None]]]:
    """CPU seconds of our signals plus the threshold checks, and the decisions."""
    from core.filters.signals import signals_table

    signals_table(["warm"], ["warm up the compiled pass"])  # its load from numba's cache is not per document
    started = time.process_time()
    rows: list[dict[str, Any]] = []
    for start in range(0, len(texts), 512):
        batch = texts[start:start + 512]
        rows.extend(signals_table([str(i) for i in range(len(batch))], batch).to_pylist())
    result = decisions(rows)
    return time.process_time() - started, result


PEER = r'''
import json, sys, time
from datatrove.data import Document
from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter, FineWebQualityFilter
texts = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
filters = {"gopher_quality": GopherQualityFilter(), "gopher_repetition": GopherRepetitionFilter(),
           "fineweb_quality": FineWebQualityFilter()}
def reason(result):
    if result is True:
        return None
    return result[1] if isinstance(result, tuple) else "dropped"
docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
for f in filters.values():
    f.filter(Document(text="warm up the word tokenizer, please.", id="w"))
started = time.process_time()
out = {name: [reason(f.filter(d)) for d in docs] for name, f in filters.items()}
print(json.dumps({"cpu": time.process_time() - started, "decisions": out}))
'''


def peer(python: str, texts_file: Path) -> tuple[float, dict[str, list[str | None]]]:
    """CPU seconds of datatrove's three filters over the texts (a child on the peer venv), and its decisions."""
    done = subprocess.run([python, "-c", PEER, str(texts_file)], capture_output=True, text=True, check=True)
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    return float(payload["cpu"]), payload["decisions"]


def compare(texts: list[str], mine: dict[str, list[str | None]], theirs: dict[str, list[str | None]],
            show: int) -> dict[str, float]:
    """Per filter: the share of documents both keep or both drop; prints the differences."""
    agreement = {}
    for name in FILTERS:
        differ = [i for i, (a, b) in enumerate(zip(mine[name], theirs[name], strict=True)) if (a is None) != (b is None)]
        agreement[name] = 1 - len(differ) / len(texts)
        print(f"{name}: same decision on {len(texts) - len(differ)}/{len(texts)} ({agreement[name]:.2%}); "
              f"kept by us {sum(r is None for r in mine[name])}, by datatrove {sum(r is None for r in theirs[name])}")
        for i in differ[:show]:
            print(f"  doc {i}: ours {mine[name][i] or 'keep'} / datatrove {theirs[name][i] or 'keep'}: "
                  f"{texts[i][:90]!r}")
    return agreement


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-python", required=True, help="python of a venv with datatrove 0.10 and spaCy")
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--max-chars", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--show", type=int, default=5, help="differences printed per filter")
    args = parser.parse_args(argv)
    texts = load_texts(args.docs, args.max_chars)
    if not texts:
        print(f"no real data under {REALDATA}", file=sys.stderr)
        return 2
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    print(f"{len(texts)} documents, {megabytes:.1f} MB of real text")
    with tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.jsonl"
        texts_file.write_text("".join(json.dumps(t) + "\n" for t in texts), encoding="utf-8")
        our_cpu, peer_cpu = [], []
        for _ in range(args.rounds):  # interleaved: each round runs both
            seconds, mine = ours(texts)
            our_cpu.append(seconds)
            seconds, theirs = peer(args.peer_python, texts_file)
            peer_cpu.append(seconds)
    compare(texts, mine, theirs, args.show)
    ours_median, peer_median = statistics.median(our_cpu), statistics.median(peer_cpu)
    print(f"CPU per round: ours {[round(s, 2) for s in our_cpu]} s, datatrove {[round(s, 2) for s in peer_cpu]} s")
    print(f"median: ours {ours_median:.2f} s ({megabytes / ours_median:.1f} MB/CPU-s), datatrove {peer_median:.2f} s "
          f"({megabytes / peer_median:.2f} MB/CPU-s): {peer_median / ours_median:.1f}x less CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
