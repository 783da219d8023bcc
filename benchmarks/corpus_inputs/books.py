"""Books at scale: a Project Gutenberg mirror of ``.txt`` eBooks, in the mirror's folder tree.

Each book is ``1/2/3/4/12345/12345.txt`` (the classic mirror layout: the number's leading digits
as folders) with the Project Gutenberg header and footer of one of the four eras
:mod:`sources.samples.gutenberg` writes (2020s with a BOM, 2000s, the 1990s small print, 1992),
CRLF line ends, the era's encoding. The prose between them is real: paragraphs of random
sentences from the real English eBooks of ``realdata/books`` (the shipped prose without it),
hard-wrapped at 70 columns.

Length: log-normal, median 300,000 characters, sigma 0.7, 20 KB to 3 MB: PG-19 (Rae et al. 2019,
"Compressive Transformers", table 1) is 28,752 books and 11.7 GB of text (69K words, ~400 KB a
book on average).

Duplicates: 3% of books are another edition of a book written before (every 40th paragraph left
out, a few spellings modernised: :func:`sources.samples.gutenberg.edition_text`), which the
books flow's near-dedup drops (LLaMA removed books with more than 90% content overlap; no
published rate for Gutenberg, 3% is our assumption: PG holds several editions of the classics).
"""

from __future__ import annotations

import random
from pathlib import Path

from sources.samples.gutenberg import ENCODING_NAMES, HEADS, edition_text

from ._text import book_sentences, lognormal_chars, paragraph, wrap

EDITION_RATE = 0.03
AUTHORS = ("Mary Ashcombe", "Thomas Wren", "Eliza Harcourt", "John Pellow", "Ann Redfern", "George Lisle")


def _body(rng: random.Random, chars: int) -> str:
    pool, parts, size = book_sentences(), [], 0
    while size < chars:
        part = wrap(paragraph(rng, pool, rng.randint(2, 8)))
        parts.append(part)
        size += len(part) + 2
    return "\n\n".join(parts) + "\n"


def _path(directory: Path, number: int) -> Path:
    digits = str(number)
    return directory.joinpath(*digits[:-1], digits, f"{digits}.txt")


def book_bytes(rng: random.Random, number: int, body: str) -> bytes:
    """The eBook file: a random era's header and footer around ``body``, CRLF, the era's encoding."""
    era = rng.choice(sorted(HEADS))
    encoding = "utf-8" if era == "modern" else "ascii"
    title = f"Collected Pieces, Volume {number}"
    fields = {"title": title, "author": rng.choice(AUTHORS), "date": f"June {1 + number % 28}, 2005",
              "number": number, "language": "English", "upper": title.upper(), "encoding": ENCODING_NAMES[encoding]}
    head, foot = HEADS[era]
    data = (head.format(**fields) + body + foot.format(**fields)).replace("\n", "\r\n").encode(encoding, "replace")
    return (b"\xef\xbb\xbf" + data) if era == "modern" else data


def write(directory: Path, size: int, seed: int = 0) -> list[str]:
    """eBooks of ``size`` bytes in all under ``directory``; their paths."""
    rng = random.Random(f"books/{seed}")
    written, recent, total, number = [], [], 0, 10_000
    while total < size:
        number += 1 + rng.randrange(5)
        if recent and rng.random() < EDITION_RATE:
            body = edition_text(rng.choice(recent))
        else:
            body = _body(rng, lognormal_chars(rng, 300_000, 0.7, 20_000, 3_000_000))
            recent = ([*recent, body])[-20:]
        target = _path(directory, number)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = book_bytes(rng, number, body)
        target.write_bytes(data)
        total += len(data)
        written.append(str(target))
    return written
