"""Decontamination speed and recall: MB of documents per CPU-second against 10k evaluation items.

    .venv/bin/python benchmarks/decontamination.py [--mb 100] [--items 10000]

Documents: the sample books' prose (``sources/samples/data``, seven books in six languages) cut
into 5 KB documents, each made distinct by a numbered first line, up to ``--mb`` MB. Evaluation
set: ``--items`` items of 20-40 words; 100 of them are sentences of documents as written
(planted, exact), 100 are sentences with their case and punctuation changed (planted, changed),
the rest are shuffled words of the same books (not in any document as 13 consecutive words). The
goal (issue 32): >= 100 MB per CPU-second, recall 1.0 on both planted kinds, and no unplanted
item found. Index building is timed apart (once per run, not per document).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._cpu import cpu_seconds
from core.document import Document
from dedupe.decontaminate import EvalIndex, EvalPiece, find_matches

BOOKS = Path(__file__).resolve().parent.parent / "sources" / "samples" / "data"
DOC_BYTES = 5_000


def _book_text() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted(BOOKS.glob("*.txt"))]


def documents(megabytes: float) -> list[Document]:
    """``megabytes`` of 5 KB documents cut from the sample books, made distinct by a numbered word
    every 8 words (so no 13 words in a row repeat across documents, as in a deduplicated corpus)."""
    chunks = [t[i:i + DOC_BYTES] for t in _book_text() for i in range(0, len(t) - DOC_BYTES, DOC_BYTES)]
    docs: list[Document] = []
    total, n = 0, 0
    while total < megabytes * 1e6:
        words = chunks[n % len(chunks)].split(" ")
        text = " ".join(w if i % 8 else f"{w} w{n}" for i, w in enumerate(words))
        docs.append(Document(id=f"d{n}", text=text, source="bench", meta={}))
        total += len(text.encode("utf-8"))
        n += 1
    return docs


def _sentences(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct sentences of 20-40 words from the books."""
    every = sorted({" ".join(s.split()) for t in _book_text() for s in re.split(r"(?<=[.!?])\s+", t)
                    if 20 <= len(s.split()) <= 40})
    return rng.sample(every, count)


def _changed(sentence: str) -> str:
    """Case swapped, punctuation replaced by other punctuation, apostrophes curled."""
    return re.sub(r"[,;:]", " -- ", sentence.swapcase()).replace(".", "!").replace("'", "\u2019")


def eval_set(docs: list[Document], items: int, seed: int = 32) -> tuple[list[EvalPiece], dict[str, str]]:
    """The items, with 200 planted: each planted sentence is appended to one document (1 in 100 or
    fewer is contaminated, as in a real corpus); returns which document holds each planted item."""
    rng = random.Random(seed)
    planted = _sentences(rng, 200)
    hosts = rng.sample(range(len(docs)), 200)
    where: dict[str, str] = {}
    pieces: list[EvalPiece] = []
    for i, (sentence, host) in enumerate(zip(planted, hosts, strict=True)):
        doc = docs[host]
        docs[host] = Document(id=doc.id, text=doc.text + "\n" + sentence, source=doc.source, meta={})
        item = f"exact-{i}" if i < 100 else f"changed-{i}"
        pieces.append(EvalPiece("bench", item, sentence if i < 100 else _changed(sentence)))
        where[item] = doc.id
    words = " ".join(_book_text()).split()
    for i in range(items - len(pieces)):
        pieces.append(EvalPiece("bench", f"noise-{i}", " ".join(rng.choice(words) for _ in range(rng.randint(20, 40)))))
    return pieces, where


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args(argv)
    docs = documents(args.mb)
    text_bytes = sum(len(d.text.encode("utf-8")) for d in docs)
    pieces, where = eval_set(docs, args.items)
    started = cpu_seconds()
    index = EvalIndex.build(pieces)
    build = cpu_seconds() - started
    find_matches(docs[:64], index)  # compile the kernel outside the clock
    started, wall = cpu_seconds(), time.perf_counter()
    matches, read, _ = find_matches(docs, index)
    cpu, wall = cpu_seconds() - started, time.perf_counter() - wall
    found = {(m.item, m.id) for m in matches}
    exact = sum((k, d) in found for k, d in where.items() if k.startswith("exact"))
    changed = sum((k, d) in found for k, d in where.items() if k.startswith("changed"))
    noise = sorted({m.item for m in matches if m.item.startswith("noise")})
    print(f"index: {len(pieces)} items, {len(index.keys)} 13-gram hashes, built in {build:.2f} CPU-s")
    print(f"documents: {read} ({text_bytes / 1e6:.1f} MB) in {cpu:.2f} CPU-s ({wall:.2f} s wall): "
          f"{text_bytes / 1e6 / cpu:.1f} MB per CPU-second")
    print(f"recall: exact {exact}/{sum(k.startswith('exact') for k in where)}, changed case and punctuation "
          f"{changed}/{sum(k.startswith('changed') for k in where)}; unplanted items found: {len(noise)} {noise[:5]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
