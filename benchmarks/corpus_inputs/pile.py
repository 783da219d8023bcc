"""A Pile-format reference at scale: ``train/NN.jsonl.zst`` as the Pile (v1) ships it.

One JSON object per line, ``{"text", "meta": {"pile_set_name"}}``, zstd (level 10, as
:mod:`sources.samples.pile`). Lines: the real documents of ``realdata/pile`` (453, every Pile
subset's shape), then new documents of random real sentences (Pile-CC, books, StackExchange
shapes; :mod:`corpus_inputs._text`), and copies of the C4 scale input's texts: 5% of the C4 rows
read are copied, half exactly, half with two words changed, so the reference match finds what
it should (the Pile's Pile-CC and C4 come from the same crawls; the overlap of real releases is
not published per document, 5% is our assumption).
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import zstandard

from ._text import book_sentences, compose, lognormal_chars, near_copy, realdata, web_sentences

PER_FILE = 64_000_000
COPY_RATE = 0.05
SETS = (("Pile-CC", 1100, web_sentences), ("OpenWebText2", 2500, web_sentences), ("Books3", 200_000, book_sentences),
        ("StackExchange", 1500, web_sentences))


def _line(text: str, pile_set: str) -> bytes:
    return (json.dumps({"text": text, "meta": {"pile_set_name": pile_set}}, ensure_ascii=False) + "\n").encode("utf-8")


def _real_lines() -> list[bytes]:
    path = realdata("pile", "mini-pile-v1-format.DERIVED.jsonl.zst")
    if path is None:
        return []
    data = zstandard.ZstdDecompressor().stream_reader(path.open("rb")).read()
    return [line + b"\n" for line in data.splitlines() if line.strip()]


def _c4_copies(c4_files: list[str], rng: random.Random) -> list[str]:
    """The C4 texts to copy: one draw per row, in file and row order, a row kept with ``COPY_RATE``.

    Rows are streamed and only a kept one is parsed: reading every text first held the whole C4
    input in memory (3.7 GB of the benchmark process at 1 GB of C4, counted as the next flow's peak).
    """
    copies = []
    for name in c4_files:
        with gzip.open(name, "rb") as rows:
            for row in rows:
                if rng.random() < COPY_RATE:
                    copies.append(json.loads(row)["text"])
    return copies


def write(directory: Path, size: int, c4_files: list[str], seed: int = 0, per_file: int = PER_FILE) -> list[str]:
    """Pile shards of about ``size`` bytes of zstd in all under ``directory/train``; their paths."""
    rng = random.Random(f"pile/{seed}")
    train = directory / "train"
    train.mkdir(parents=True, exist_ok=True)
    copies = _c4_copies(c4_files, rng)
    pending, written, total, number = _real_lines(), [], 0, 0
    compressor = zstandard.ZstdCompressor(level=10)
    while total < size:
        target = train / f"{number:02d}.jsonl.zst"
        with open(target, "wb") as raw, compressor.stream_writer(raw, closefd=False) as out:
            while raw.tell() < min(per_file, size - total):
                if copies and rng.random() < 0.2:
                    text = copies.pop()
                    out.write(_line(text if rng.random() < 0.5 else near_copy(rng, text), "Pile-CC"))
                elif pending:
                    out.write(pending.pop())
                else:
                    name, median, pool = rng.choice(SETS)
                    out.write(_line(compose(rng, pool(), lognormal_chars(rng, median, 1.0, 200, 2_000_000)), name))
        total += target.stat().st_size
        written.append(str(target))
        number += 1
    return written
