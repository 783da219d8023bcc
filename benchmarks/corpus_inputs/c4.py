"""C4 at scale: ``c4-train.NNNNN-of-01024.json.gz`` files as ``allenai/c4`` ``en`` releases them.

Layout: gzip (header mtime 0), one JSON object per line, keys in C4's order
``{"text", "timestamp", "url"}``; each line of a text is a real sentence run that ends in
terminal punctuation with 3+ words (C4's line rules had already run). Rows are written until the
file reaches ``per_file`` bytes of gzip (a released file is ~320 MB: 305 GB over 1,024 files,
the ``allenai/c4`` dataset card); the whole set stops at ``size`` bytes.

Length: log-normal, median 1,100 characters, sigma 1.0 (mean ~1,800): C4.en is 365M documents
and 156B T5 tokens (Dodge et al. 2021, "Documenting Large Webtext Corpora", table 1), ~430
tokens or ~1,900 characters a document, and its lengths are heavy-tailed; the real CC-2019
pages in ``realdata/c4`` have a median of 1,357 characters.

Duplicates: 3% of rows repeat an earlier row (Lee et al. 2022, "Deduplicating Training Data
Makes Language Models Better", table 2: NearDup finds 3.04% of C4's train examples with a near
duplicate in train): 1% exact copies under another URL (a syndicated page: ``flows.c4`` drops
them as ``duplicate_exact``), 2% near copies with two words changed (kept by the source flow,
clustered by ``flows.dedup``).
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from ._text import SizedFiles, compose, lognormal_chars, near_copy, web_sentences

PER_FILE = 64_000_000
EXACT_RATE, NEAR_RATE = 0.01, 0.02
SITES = ("news", "blog", "shop", "forum", "recipes", "travel", "health", "tech", "sports", "music")


def _row(rng: random.Random, index: int, text: str) -> bytes:
    day, second = 1 + index % 28, index % 86400
    row = {"text": text, "timestamp": f"2019-04-{day:02d}T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z",
           "url": f"https://{rng.choice(SITES)}-{rng.randrange(100_000)}.example.com/p/{index}"}
    return (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def write(directory: Path, size: int, seed: int = 0, per_file: int = PER_FILE) -> list[str]:
    """C4 files of ``size`` bytes of gzip in all under ``directory``; their paths."""
    rng = random.Random(f"c4/{seed}")
    pool = web_sentences()
    directory.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    recent: list[str] = []
    index = 0
    for number, budget in enumerate(SizedFiles(size, per_file).sizes()):
        target = directory / f"c4-train.{number:05d}-of-01024.json.gz"
        with open(target, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
            while raw.tell() < budget:
                draw = rng.random()
                if recent and draw < EXACT_RATE:
                    text = rng.choice(recent)
                elif recent and draw < EXACT_RATE + NEAR_RATE:
                    text = near_copy(rng, rng.choice(recent))
                else:
                    text = compose(rng, pool, lognormal_chars(rng, 1100, 1.0, 200, 60_000), (1, 4))
                    recent = ([*recent, text])[-1000:]
                out.write(_row(rng, index, text))
                index += 1
        written.append(str(target))
    return written
