"""Two small files of released C4 (``allenai/c4``, ``en``), in their real layout, of real prose.

``c4-train.0000N-of-01024.json.gz``: gzip (header mtime 0), one JSON object per line with the
keys in C4's order, ``{"text", "timestamp", "url"}``; a document's lines are joined by ``\\n``
and each ends in terminal punctuation, as C4's line rules left them. ``flows.c4 --inputs`` reads
them the way RedPajama did (reformat, exact dedup); C4's own line and page rules already ran
when C4 was made, so what the flow can drop here are duplicates. Planted:

* an exact duplicate: the third document of ``00000`` appears again in ``00001`` under another
  URL (a syndicated copy): ``flows.c4`` drops it as ``duplicate_exact``;
* a near-duplicate pair: a long article in ``00000`` (:data:`NEAR_URLS` [0]) and its reprint
  in ``00001`` with two words changed: both pass the C4 flow,
  MinHash near-dedup (``flows.dedup``) keeps one;
* a cross-source copy: C4 is made from Common Crawl, so the article that the Common Crawl sample
  serves at :data:`sources.samples.commoncrawl.C4_COPY_URL` is here too, as C4's line rules leave
  it: its headline and any line not ending a sentence removed (:func:`c4_lines`);
* a listed page: the last row of ``00001`` is on a host the sample blocklist lists
  (:data:`sources.samples.blocklist.C4_PHISHING_URL`), dropped as ``url_blocklist:phishing``
  when the run is given that list (the offline sample is) and kept otherwise.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from core.atomic import atomic_path
from sources.samples import blocklist, commoncrawl, prose

FILES = ("c4-train.00000-of-01024.json.gz", "c4-train.00001-of-01024.json.gz")
SITES = ("riverside-notes.example.com", "old-books-daily.example.net", "the-cynics-corner.example.org")
NEAR_URLS = ("https://riverside-notes.example.com/essays/a-day-on-the-river",
             "https://old-books-daily.example.net/reprint/a-day-on-the-river.html")
#: Passages drawn (one draw): the first 18 are one document each, the last 4 the long article.
SINGLE_DOCS = 18
LONG_PASSAGES = 4
FIRST_FILE_DOCS = 10
DUPLICATED = 2  # index in the first file of the document the second file repeats
#: C4 kept a line only when it ended in one of these (TFDS ``c4_utils._END_MARKS``) and had 3+ words.
END_MARKS = (".", "?", "!", '"')


def c4_lines(paragraphs: list[str]) -> str:
    """A document as C4's line rules leave it: the lines that end a sentence, joined by ``\n``."""
    return "\n".join(p for p in paragraphs if p.rstrip().endswith(END_MARKS) and len(p.split()) >= 3)


def _timestamp(index: int) -> str:
    day, minute = 1 + index % 28, (index * 37) % 60
    return f"2019-04-{day:02d}T{index % 24:02d}:{minute:02d}:{(index * 13) % 60:02d}Z"


def _slug(text: str) -> str:
    words = [w.lower() for w in text.split()[:5] if w.isalpha()]
    return "-".join(words) or "post"


def _row(text: str, index: int, url: str | None = None) -> dict[str, str]:
    site = SITES[index % len(SITES)]
    return {"text": text, "timestamp": _timestamp(index), "url": url or f"https://{site}/{_slug(text)}-{index}"}


def reprint(paragraphs: list[str]) -> list[str]:
    """Another site's copy: the same paragraphs with two words changed."""
    kept = list(paragraphs)
    kept[0] = kept[0].replace(" the ", " this ", 1)
    kept[-1] = kept[-1].replace(" and ", " as well as ", 1)
    return kept


def documents() -> list[list[dict[str, str]]]:
    """The rows of each file, in file order (see the module docstring)."""
    # one draw; its last passage is the listed page (a longer draw keeps the first ones)
    drawn = prose.draw("en", SINGLE_DOCS + LONG_PASSAGES + 1, seed=0, share="c4")
    singles = [c4_lines(list(p.paragraphs)) for p in drawn[:SINGLE_DOCS]]
    long_article = [p for passage in drawn[SINGLE_DOCS:SINGLE_DOCS + LONG_PASSAGES] for p in passage.paragraphs]
    cross_source = c4_lines([*commoncrawl.c4_copy_paragraphs(), commoncrawl.NEWSLETTER])
    first = [_row(text, i) for i, text in enumerate(singles[:FIRST_FILE_DOCS])]
    first.insert(5, _row(c4_lines(long_article), 100, NEAR_URLS[0]))
    first.append(_row(cross_source, 101, commoncrawl.C4_COPY_URL))
    second = [_row(text, FIRST_FILE_DOCS + i) for i, text in enumerate(singles[FIRST_FILE_DOCS:])]
    second.insert(3, _row(singles[DUPLICATED], 102, f"https://{SITES[2]}/syndicated/{_slug(singles[DUPLICATED])}"))
    second.append(_row(c4_lines(reprint(long_article)), 103, NEAR_URLS[1]))
    second.append(_row(c4_lines(list(drawn[-1].paragraphs)), 104, blocklist.C4_PHISHING_URL))  # last: ids kept
    return [first, second]


def write_sample_inputs(directory: Path) -> list[str]:
    """Write the two C4 files (see the module docstring) into ``directory``; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, rows in zip(FILES, documents(), strict=True):
        target = directory / name
        data = "".join(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows)
        with atomic_path(target) as tmp, open(tmp, "wb") as raw, \
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as handle:
            handle.write(data.encode("utf-8"))
        written.append(str(target))
    return written
