"""Real text pools and the document shapes the scale-input generators share.

Every generator builds its documents from real text: ``../shared/realdata`` when it is there
(real C4/Common Crawl pages, full Project Gutenberg books, real Wikipedia pages, a real
StackExchange site, real LaTeX), else the public-domain prose the package ships
(:mod:`sources.samples.prose`). A document is never one text tiled: its sentences are drawn at
random (one seeded :class:`random.Random` per generator) from a pool of tens of thousands of real
sentences, so two documents share a 5-word shingle about as rarely as two real web pages do, and
only the duplicates a generator plants on purpose (at the rates it states) are duplicates.

Lengths follow a log-normal law (:func:`lognormal_chars`): the parameters each generator passes
are stated beside it with their source.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from sources.samples.scibooks import wrap as wrap_lines

#: The real samples, beside the checkout (absent on a user's machine: the shipped prose is used);
#: ``KINDA_REALDATA`` points elsewhere, as for the tests.
REALDATA = Path(os.environ.get("KINDA_REALDATA", Path(__file__).resolve().parents[3] / "shared" / "realdata"))
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def realdata(*parts: str) -> Path | None:
    """``realdata/<parts>`` when it exists."""
    path = REALDATA.joinpath(*parts)
    return path if path.exists() else None


def lognormal_chars(rng: random.Random, median: float, sigma: float, low: int, high: int) -> int:
    """A length from a log-normal law of ``median`` and ``sigma`` (of the log), clipped to [low, high]."""
    return max(low, min(high, int(rng.lognormvariate(math.log(median), sigma))))


def _split_sentences(paragraph: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(paragraph) if len(s.split()) >= 3]


@cache
def web_sentences() -> tuple[str, ...]:
    """Sentences of real web pages that end a sentence (C4's line rule): the C4 and Pile pool."""
    found: list[str] = []
    path = realdata("c4", "c4-format-00000-of-00001.DERIVED.json.gz")
    if path is not None:
        with gzip.open(path, "rt", encoding="utf-8") as rows:
            for row in rows:
                for line in json.loads(row)["text"].split("\n"):
                    found += [s for s in _split_sentences(line) if s.endswith((".", "?", "!", '"'))]
    return tuple(found) or book_sentences()


@cache
def book_paragraphs() -> tuple[str, ...]:
    """English prose paragraphs (hard-wrapped as in the eBooks) of the real Gutenberg books (the Dutch one
    left out: one language per book, as PG-19 is English), else the shipped English prose."""
    texts: list[str] = []
    folder = realdata("books")
    if folder is not None:
        for path in sorted(folder.glob("*.txt")):
            if "latin1" in path.name:
                continue
            body = path.read_bytes().decode("utf-8").replace("\r\n", "\n")
            start, end = body.find("*** START"), body.find("*** END")
            texts.append(body[body.find("\n", start) + 1: end] if 0 <= start < end else body)
    if not texts:
        from sources.samples import prose

        texts = [prose.raw_text(t.key) for t in prose.TEXTS if t.lang == "en"]
    found = []
    for text in texts:
        found += [p.strip("\n") for p in re.split(r"\n[ \t]*\n", text) if len(p.split()) >= 8]
    return tuple(found)


@cache
def book_sentences() -> tuple[str, ...]:
    """Sentences of the real books' prose (unwrapped)."""
    return tuple(s for p in book_paragraphs() for s in _split_sentences(" ".join(p.split())))


def paragraph(rng: random.Random, pool: tuple[str, ...], sentences: int) -> str:
    """``sentences`` sentences drawn from ``pool``, joined into one paragraph."""
    return " ".join(rng.choice(pool) for _ in range(sentences))


def compose(rng: random.Random, pool: tuple[str, ...], chars: int, per_paragraph: tuple[int, int] = (1, 5),
            joiner: str = "\n") -> str:
    """A document of about ``chars`` characters: paragraphs of random real sentences from ``pool``."""
    parts: list[str] = []
    size = 0
    while size < chars:
        part = paragraph(rng, pool, rng.randint(*per_paragraph))
        parts.append(part)
        size += len(part) + len(joiner)
    return joiner.join(parts)


def near_copy(rng: random.Random, text: str, changes: int = 2) -> str:
    """``text`` with ``changes`` words replaced by their neighbours (a reprint, a revision): MinHash
    Jaccard stays far above 0.8 for any document of a few hundred words."""
    words = text.split(" ")
    for _ in range(changes):
        at = rng.randrange(len(words))
        words[at] = words[(at + 1) % len(words)]
    return " ".join(words)


def wrap(text: str, width: int = 70) -> str:
    """Hard-wrap one paragraph at ``width`` columns (as Gutenberg eBooks are): the sample's wrapper."""
    return "\n".join(wrap_lines(text, width))


class SizedFiles:
    """Numbered output files of about ``per_file`` bytes each until ``total`` bytes are written."""

    def __init__(self, total: int, per_file: int) -> None:
        self.total, self.per_file, self.written = total, per_file, 0

    def sizes(self) -> Iterator[int]:
        """The byte budget of each file in turn (the last one smaller)."""
        while self.written < self.total:
            budget = min(self.per_file, self.total - self.written)
            yield budget
            self.written += budget
