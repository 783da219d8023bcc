"""Wikipedia at scale: ``<lang>wiki-20220701-pages-articles-multistream.xml.bz2`` with its index.

The layout of Wikimedia's multistream dumps (:func:`sources.samples.wikipedia.write_multistream`
writes the same): a bz2 stream holding ``<mediawiki>`` and ``<siteinfo>``, one stream per 100
pages, one holding ``</mediawiki>``, and ``-multistream-index.txt.bz2`` with ``offset:id:title``
per page. One dump per language (uk, ja, vi: the real dumps of ``realdata/mediawiki``; the
generated sample pages where that folder is absent), ``size`` bytes of bz2 split between them.

Pages: real pages (articles with their templates, tables and references, redirects, other
namespaces, in the proportions of the dumps' first 100k lines) under new ids and titles, each
with a random 15% of its paragraphs (after the first) left out, so no two pages are the same text.
Lengths are the real pages' (the start of a dump holds older, longer articles than its mean).

Duplicates: 0.39% of pages are a recent page with two words changed (Lee et al. 2022, table 2:
NearDup finds 0.39% of Wiki-40B's train examples with a near duplicate); no exact duplicates (a
dump holds each page once).
"""

from __future__ import annotations

import bz2
import html
import random
import re
from functools import cache
from pathlib import Path

from ._text import near_copy, realdata

LANGS = ("uk", "ja", "vi")
NEAR_RATE = 0.0039
DROP_PARAGRAPH = 0.15
PAGES_PER_STREAM = 100
_TEXT = re.compile(r'(<text bytes=")\d+(" xml:space="preserve">)(.*?)(</text>)', re.S)


@cache
def real_dump(lang: str) -> tuple[str, tuple[str, ...]]:
    """The dump's head (``<mediawiki>``, ``<siteinfo>``) and its pages' XML."""
    path = realdata("mediawiki", f"{lang}wiki-truncated-100k.REPAIRED.xml.bz2")
    if path is not None:
        xml = bz2.decompress(path.read_bytes()).decode("utf-8")
    else:
        from sources.samples.wikipedia import dump_xml, sample_pages

        xml = dump_xml("en", sample_pages("en", 300, 0))
    first = xml.index("  <page>")
    pages = tuple("  <page>" + part for part in xml[first:].split("  <page>")[1:])
    return xml[:first], (*pages[:-1], pages[-1].rsplit("</mediawiki>", 1)[0])


def _varied(rng: random.Random, page: str, page_id: int) -> str:
    page = re.sub(r"<title>(.*?)</title>", lambda m: f"<title>{m.group(1)} ({page_id})</title>", page, count=1)
    page = re.sub(r"(</ns>\s*<id>)\d+(</id>)", lambda m: f"{m.group(1)}{page_id}{m.group(2)}", page, count=1)

    def text(match: re.Match[str]) -> str:
        parts = match.group(3).split("\n\n")
        kept = parts[:1] + [p for p in parts[1:] if rng.random() >= DROP_PARAGRAPH]
        body = "\n\n".join(kept)
        return f"{match.group(1)}{len(html.unescape(body).encode())}{match.group(2)}{body}{match.group(4)}"

    return _TEXT.sub(text, page, count=1)


def _near(rng: random.Random, page: str, page_id: int) -> str:
    """A page written before, again under a new id and title, two words of its text changed."""
    page = re.sub(r"\((\d+)\)</title>", f"({page_id})</title>", page, count=1)
    page = re.sub(r"(</ns>\s*<id>)\d+(</id>)", lambda m: f"{m.group(1)}{page_id}{m.group(2)}", page, count=1)
    return _TEXT.sub(lambda m: f"{m.group(1)}0{m.group(2)}{near_copy(rng, m.group(3))}{m.group(4)}", page, count=1)


def write_dump(directory: Path, lang: str, size: int, seed: int = 0) -> tuple[Path, Path]:
    """One multistream dump of about ``size`` bytes of bz2 and its index."""
    rng = random.Random(f"wikipedia/{lang}/{seed}")
    head, pages = real_dump(lang)
    name = f"{lang}wiki-20220701-pages-articles-multistream"
    dump, index = directory / f"{name}.xml.bz2", directory / f"{name}-index.txt.bz2"
    directory.mkdir(parents=True, exist_ok=True)
    closing = bz2.compress(b"</mediawiki>\n", 9)
    page_id, recent = 10, [_varied(rng, pages[0], 10)]
    with open(dump, "wb") as out, bz2.open(index, "wt", encoding="utf-8") as lines:
        out.write(bz2.compress(head.encode("utf-8"), 9))
        while out.tell() + len(closing) < size:
            group, offset = [], out.tell()
            for _ in range(PAGES_PER_STREAM):
                page_id += 1 + rng.randrange(3)
                if rng.random() < NEAR_RATE:
                    page = _near(rng, rng.choice(recent), page_id)
                else:
                    page = _varied(rng, rng.choice(pages), page_id)
                    recent = ([*recent, page])[-200:]
                title = re.search(r"<title>(.*?)</title>", page, re.S)
                group.append((page_id, html.unescape(title.group(1) if title else ""), page))
            packed = bz2.compress("".join(p for _, _, p in group).encode("utf-8"), 9)
            room = size - out.tell() - len(closing)
            if len(packed) > room:  # the last stream: as many pages as fit (at least one)
                group = group[:max(1, len(group) * room // len(packed))]
                packed = bz2.compress("".join(p for _, _, p in group).encode("utf-8"), 9)
            lines.writelines(f"{offset}:{number}:{name}\n" for number, name, _ in group)
            out.write(packed)
        out.write(closing)
    return dump, index


def write(directory: Path, size: int, seed: int = 0) -> list[str]:
    """One dump per language, ``size`` bytes of bz2 in all; the dumps' paths (the index beside each)."""
    return [str(write_dump(directory, lang, size // len(LANGS), seed)[0]) for lang in LANGS]
