"""How fast this machine runs the pipeline's kind of work right now, to tell a change of code from a change of machine.

This 2-core VM shares its host: the same C4 flow on the same 250 MB cost 84.5 and 103.7 CPU-s
minutes apart, and a whole --check pass ran 11-30% dearer than the doc it compared against, on
the same commit, 2 hours later. A figure recorded in docs/cost.md is only comparable with a re-run
when both carry how fast the machine was while they ran. The speed moves within seconds (the same
1 s workload took 0.63 CPU-s in one process and 1.05 in the next), so one measurement before a
stage says little about the minutes it runs: :func:`probe` is a ~10 ms sample of a fixed piece of
the work the flows do (a JSON-lines record parsed, its text normalized, split into words by a regex,
counted, hashed), taken every 2 s while a stage runs; the median of a stage's probes is its speed.
:func:`cpu_seconds` is the same work at length, for a one-off reading.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
import time
import unicodedata
from collections import Counter
from functools import cache

WORD = re.compile(r"\w+|[^\w\s]")
VOCABULARY = ("the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by",
              "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had",
              "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there", "been", "if",
              "Müller", "café", "naïve", "1,024", "(see", "p.", "42)", "—", "\"quoted\"", "state-of-the-art")


@cache
def _records() -> bytes:
    """Fixed input: 400 gzipped JSON lines of ~5 KB of text each (seeded, so every machine reads the same bytes)."""
    rng = random.Random(20261130)
    lines = []
    for number in range(400):
        text = " ".join(rng.choice(VOCABULARY) for _ in range(900))
        lines.append(json.dumps({"id": number, "text": text, "url": f"https://example.org/{number}"}))
    return gzip.compress("\n".join(lines).encode("utf-8"), mtime=0)


def workload() -> int:
    """One pass over the fixed input; returns the number of words (so nothing is optimized away)."""
    words = 0
    for line in gzip.decompress(_records()).decode("utf-8").splitlines():
        text = unicodedata.normalize("NFC", json.loads(line)["text"])
        tokens = WORD.findall(text.lower())
        words += sum(Counter(tokens).values())
        hashlib.sha256(text.encode("utf-8")).digest()
    return words


@cache
def _lines() -> tuple[str, ...]:
    return tuple(gzip.decompress(_records()).decode("utf-8").splitlines())


def probe(records: int = 20) -> float:
    """CPU milliseconds this thread spends on ``records`` of the fixed input (~10 ms): a sample of how fast
    the machine is at this moment, cheap enough to take every few seconds while a stage runs."""
    lines = _lines()
    started = time.thread_time()
    for line in lines[:records]:
        text = unicodedata.normalize("NFC", json.loads(line)["text"])
        Counter(WORD.findall(text.lower()))
        hashlib.sha256(text.encode("utf-8")).digest()
    return (time.thread_time() - started) * 1000


def cpu_seconds(repeats: int = 3, passes: int = 4) -> float:
    """The least CPU time of ``repeats`` runs of ``passes`` workload passes (~1 s each on a 2026 VM core)."""
    _records()
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        for _ in range(passes):
            workload()
        best = min(best, time.process_time() - started)
    return best


if __name__ == "__main__":
    print(f"{cpu_seconds():.3f} CPU-s")
