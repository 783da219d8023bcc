"""Real public-domain prose shipped inside the package, for the offline sample writers.

The sample inputs must hold real text, not lorem ipsum, so that language ID, the quality
filters and near-dedup keep and drop documents for the reasons they would on real data. The
excerpts in ``sources/samples/data/`` are cut from Project Gutenberg eBooks (public domain in the
US); the Project Gutenberg header, licence footer and producer credits are removed, so what is
shipped is the bare public-domain text (UTF-8, ``\\n`` line ends, lines hard-wrapped as in the
eBook, paragraphs separated by a blank line).

=============================  ====  =================================  =====================
key                            lang  work                               cut from
=============================  ====  =================================  =====================
en-news-from-nowhere           en    William Morris, News from Nowhere  PG #3261, chapters I-
en-complete-angler             en    Izaak Walton, The Complete Angler  PG #9198, chapter II-
en-devils-dictionary           en    Ambrose Bierce, Devil's Dictionary PG #972, ABASEMENT-
nl-ontboezemingen              nl    Gabriël, Ontboezemingen (1869)     PG #24675, first essay
de-die-verwandlung             de    Franz Kafka, Die Verwandlung       PG #22367, part I
fr-candide                     fr    Voltaire, Candide                  Candide, chapitre I-
es-don-quijote                 es    Cervantes, Don Quijote             PG #2000, capítulo 1-
=============================  ====  =================================  =====================

API (all deterministic: the same arguments give the same result on every machine)

- :data:`TEXTS`: the shipped works (:class:`Text`: key, lang, author, title).
- :func:`raw_text(key) <raw_text>`: an excerpt as shipped (hard-wrapped, for book-like files).
- :func:`paragraphs(key) <paragraphs>`: its paragraphs, each unwrapped to one line.
- :func:`passages(lang) <passages>`: the language's prose cut into disjoint passages of
  consecutive paragraphs (:class:`Passage`, at least ``min_chars`` each; headings and verse
  lines left out), in text order.
- :func:`draw(lang, count, seed, share) <draw>`: ``count`` distinct passages chosen by ``seed``
  from one *share*. The passages are split round-robin into the shares named in :data:`SHARES`
  (one per sample writer), so writers never draw the same passage by chance: every duplicate
  across the samples is one a writer planted on purpose (by reusing a passage it drew).
  Raises :class:`ValueError` when the share has fewer than ``count`` passages.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

#: Writers that draw passages, one share each; passage ``i`` of a language belongs to share
#: ``SHARES[i % len(SHARES)]``. Append new names at the end (earlier draws stay unchanged).
SHARES = ("commoncrawl", "c4", "arxiv", "stackexchange", "pile", "spare")

#: A paragraph shorter than this is a heading or a stage direction: not drawn into passages.
MIN_PARAGRAPH_CHARS = 60


@dataclass(frozen=True)
class Text:
    """One shipped work: its key (data file name without ``.txt``), language, author and title."""

    key: str
    lang: str
    author: str
    title: str


TEXTS: tuple[Text, ...] = (
    Text("en-news-from-nowhere", "en", "William Morris", "News from Nowhere"),
    Text("en-complete-angler", "en", "Izaak Walton", "The Complete Angler"),
    Text("en-devils-dictionary", "en", "Ambrose Bierce", "The Devil's Dictionary"),
    Text("nl-ontboezemingen", "nl", "Gabriël (Carel van Nievelt)", "Ontboezemingen"),
    Text("de-die-verwandlung", "de", "Franz Kafka", "Die Verwandlung"),
    Text("fr-candide", "fr", "Voltaire", "Candide, ou l'Optimisme"),
    Text("es-don-quijote", "es", "Miguel de Cervantes Saavedra", "Don Quijote"),
)
LANGUAGES = tuple(sorted({t.lang for t in TEXTS}))


@dataclass(frozen=True)
class Passage:
    """Consecutive paragraphs of one work: ``key``, the index of its first paragraph, the paragraphs."""

    key: str
    lang: str
    first: int
    paragraphs: tuple[str, ...]

    @property
    def text(self) -> str:
        """The paragraphs joined by blank lines."""
        return "\n\n".join(self.paragraphs)


def text_info(key: str) -> Text:
    """The :class:`Text` for ``key``; ``KeyError`` names the known keys."""
    for text in TEXTS:
        if text.key == key:
            return text
    raise KeyError(f"no sample text {key!r}; known: {', '.join(t.key for t in TEXTS)}")


@cache
def raw_text(key: str) -> str:
    """The excerpt ``key`` as shipped: hard-wrapped lines, paragraphs separated by a blank line."""
    text_info(key)
    return resources.files("sources.samples").joinpath("data", f"{key}.txt").read_text(encoding="utf-8")


def _blocks(key: str) -> list[str]:
    return [block for block in re.split(r"\n[ \t]*\n", raw_text(key).strip("\n")) if block.strip()]


@cache
def paragraphs(key: str) -> tuple[str, ...]:
    """The paragraphs of ``key``, each unwrapped to one line with single spaces."""
    return tuple(" ".join(block.split()) for block in _blocks(key))


def _is_prose(block: str) -> bool:
    """Not a heading, verse or a quoted letter: long enough, and its lines not indented (verse is)."""
    lines = block.splitlines()
    indented = sum(1 for line in lines if line[:1] in (" ", "\t"))
    return len(" ".join(block.split())) >= MIN_PARAGRAPH_CHARS and indented * 2 < len(lines)


@cache
def passages(lang: str, min_chars: int = 400) -> tuple[Passage, ...]:
    """All passages of ``lang``'s works, in text order: runs of prose paragraphs of ``min_chars`` or more."""
    keys = [t.key for t in TEXTS if t.lang == lang]
    if not keys:
        raise KeyError(f"no sample text in language {lang!r}; known: {', '.join(LANGUAGES)}")
    out: list[Passage] = []
    for key in keys:
        run: list[str] = []
        first = 0
        for index, block in enumerate(_blocks(key)):
            if not _is_prose(block):
                run, first = [], index + 1  # a heading or verse breaks the run
                continue
            run.append(" ".join(block.split()))
            if sum(len(p) for p in run) >= min_chars:
                out.append(Passage(key, lang, first, tuple(run)))
                run, first = [], index + 1
    return tuple(out)


def draw(lang: str, count: int, seed: int | str, share: str, min_chars: int = 400) -> list[Passage]:
    """``count`` distinct passages of ``lang`` from ``share``, chosen by ``seed`` (same arguments, same list)."""
    if share not in SHARES:
        raise KeyError(f"unknown share {share!r}; known: {', '.join(SHARES)}")
    offset = SHARES.index(share)
    pool = [p for i, p in enumerate(passages(lang, min_chars)) if i % len(SHARES) == offset]
    if count > len(pool):
        raise ValueError(f"share {share!r} of {lang!r} has {len(pool)} passages of >= {min_chars} chars, "
                         f"{count} asked")
    return random.Random(f"{lang}/{share}/{seed}").sample(pool, count)
