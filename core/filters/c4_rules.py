"""C4's cleaning rules (Raffel et al. 2020, TFDS ``c4_utils``) as steps over Common Crawl text.

Per line (after stripping; inline citation markers like ``[1]``, ``[edit]`` removed): drop lines
that do not end in terminal punctuation (``.``, ``!``, ``?``, ``"``) or end in an ellipsis, lines
with fewer than 3 words, lines with a word over 1000 characters, lines mentioning "javascript",
and cookie/terms-of-use/privacy-policy lines. Per page: drop pages with "lorem ipsum" or a ``{``
(code) in a surviving line, pages with fewer than 5 sentences after cleaning, and pages with a
word of the bad-words list (LDNOOBW English, shipped as ``data/ldnoobw_en.txt``, CC BY 4.0).

Then C4's dedup: "we discarded all but one of any three-sentence span occurring more than once
in the data set". :class:`SentenceSpanUnits` turns a page into overlapping three-sentence
windows for :mod:`dedupe.lines` (hashed, marked across a group of inputs in bounded memory) and
removes the sentences covered by a duplicate window; pages left with fewer than 5 sentences
are dropped by :class:`MinSentences`.

Sentences are split by a regular expression (terminal punctuation then space), not spaCy or
NLTK: datatrove's C4 filter spends 15-20 ms per page on spaCy; this costs microseconds and
agrees on ordinary prose, which is what survives the line rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from core.document import Document, Drop
from core.filters.record_bound import BoundedFilter, TextBound
from core.filters.word_lists import BAD_WORDS_EN
from core.steps import Record, Step

END_MARKS = (".", "?", "!", '"')
ELLIPSIS = ("...", "…")
POLICY_SUBSTRINGS = (
    "terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies",
)
_CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]", re.I)
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+")
_SPACES = re.compile(r"\s+")


def split_sentences(line: str) -> list[str]:
    """Sentences of one line: split after ``.``, ``!`` or ``?`` (and closing quotes) followed by space."""
    return [s for s in (part.strip() for part in _SENTENCE_END.split(line)) if s]


def count_sentences(text: str) -> int:
    """Sentences over all lines."""
    return sum(len(split_sentences(line)) for line in text.split("\n") if line.strip())


@dataclass(frozen=True)
class C4Rules:
    """Thresholds and switches (TFDS / datatrove ``C4QualityFilter`` defaults)."""

    min_words_per_line: int = 3
    max_word_length: int = 1000
    min_sentences: int = 5
    remove_citations: bool = True
    terminal_punctuation: bool = True
    javascript: bool = True
    policy: bool = True
    lorem_ipsum: bool = True
    curly_bracket: bool = True


def clean_page(text: str, rules: C4Rules) -> tuple[str | None, str | None]:
    """Apply the line rules; return ``(cleaned text, None)`` or ``(None, page drop reason)``."""
    kept: list[str] = []
    sentences = 0
    for raw in text.split("\n"):
        line = raw.strip()
        if rules.remove_citations:
            line = _CITATION.sub("", line).strip()
        if not line:
            continue
        if rules.terminal_punctuation and (not line.endswith(END_MARKS) or line.endswith(ELLIPSIS)):
            continue
        words = line.split()
        if len(words) < rules.min_words_per_line or max(len(w) for w in words) > rules.max_word_length:
            continue
        lower = line.lower()
        if rules.lorem_ipsum and "lorem ipsum" in lower:
            return None, "lorem_ipsum"
        if rules.javascript and "javascript" in lower:
            continue
        if rules.curly_bracket and "{" in line:
            return None, "curly_bracket"
        if rules.policy and any(p in lower for p in POLICY_SUBSTRINGS):
            continue
        sentences += len(split_sentences(line))
        kept.append(line)
    if sentences < rules.min_sentences:
        return None, "too_few_sentences"
    return "\n".join(kept), None


class C4CleanPage(Step):
    """C4's line rules and page rules (see :func:`clean_page`), each page under a time and size bound."""

    name = "c4_rules"

    def __init__(self, rules: C4Rules | None = None, bound: TextBound[tuple[str | None, str | None]] | None = None
                 ) -> None:
        self.rules = rules or C4Rules()
        self.bound = bound or TextBound(clean_page)

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        for doc in docs:
            cleaned = self.bound.run(doc, doc.text, self.rules)
            if isinstance(cleaned, Drop):
                yield cleaned
                continue
            text, reason = cleaned
            if text is None:
                yield Drop(reason or "c4_rules", doc.id, language=doc.language)
            else:
                yield doc if text == doc.text else replace(doc, text=text)


def _too_few_sentences(text: str, min_sentences: int) -> str | None:
    return "too_few_sentences" if count_sentences(text) < min_sentences else None


class MinSentences(BoundedFilter):
    """Drops pages with fewer than ``min_sentences`` sentences (re-checked after span dedup)."""

    name = "c4_min_sentences"

    def __init__(self, min_sentences: int = 5, bound: TextBound[str | None] | None = None) -> None:
        self.min_sentences = min_sentences
        self.bound = bound or TextBound(_too_few_sentences)

    def bound_args(self, doc: Document) -> tuple[Any, ...]:
        return (self.min_sentences,)


@cache
def _bad_words_pattern(path: str) -> re.Pattern[str]:
    words = [w.strip().lower() for w in Path(path).read_text(encoding="utf-8").splitlines() if w.strip()]
    words.sort(key=len, reverse=True)
    return re.compile(r"(?:\W|^)(" + "|".join(re.escape(w) for w in words) + r")(?:\W|$)")


def find_bad_word(text: str, path: str | Path = BAD_WORDS_EN) -> str | None:
    """The first bad word or phrase of the list found (whole words, case-insensitive), or None."""
    match = _bad_words_pattern(str(path)).search(text.lower())
    return match.group(1) if match else None


def _bad_words_reason(text: str, path: str) -> str | None:
    return "bad_words" if find_bad_word(text, path) else None


class BadWords(BoundedFilter):
    """C4's bad-words filter: drop a page containing any listed word or phrase."""

    name = "c4_bad_words"

    def __init__(self, path: str | Path = BAD_WORDS_EN, bound: TextBound[str | None] | None = None) -> None:
        if not Path(path).is_file():
            raise FileNotFoundError(f"bad-words list not found: {path}")
        self.path = str(path)
        self.bound = bound or TextBound(_bad_words_reason)

    def bound_args(self, doc: Document) -> tuple[Any, ...]:
        return (self.path,)


# -- three-sentence span dedup ---------------------------------------------------------------
@dataclass(frozen=True)
class SentenceSpanUnits:
    """Units for :mod:`dedupe.lines`: overlapping windows of ``span`` sentences (C4: 3).

    A page with fewer sentences than ``span`` is one window. Windows are normalized (lowercase,
    whitespace collapsed) before hashing. Removing a duplicate window removes its sentences; a
    line loses the removed sentences and disappears when none is left.
    """

    span: int = 3
    name: str = "sentence_spans"

    def _sentences(self, text: str) -> list[tuple[int, str]]:
        return [(number, s) for number, line in enumerate(text.split("\n")) for s in split_sentences(line)]

    def _windows(self, count: int) -> list[tuple[int, int]]:
        if count == 0:
            return []
        if count <= self.span:
            return [(0, count)]
        return [(start, start + self.span) for start in range(count - self.span + 1)]

    def units(self, text: str) -> list[str]:
        """Normalized windows, in order."""
        sentences = [_SPACES.sub(" ", s.lower()) for _, s in self._sentences(text)]
        return [" ".join(sentences[a:b]) for a, b in self._windows(len(sentences))]

    def apply(self, text: str, duplicate: np.ndarray) -> str:
        """The text without the sentences covered by a window marked duplicate."""
        sentences = self._sentences(text)
        windows = self._windows(len(sentences))
        if len(windows) != len(duplicate):
            raise ValueError(f"{len(windows)} windows but a mask of {len(duplicate)}: text changed after hashing")
        removed = np.zeros(len(sentences), dtype=bool)
        for (start, end), is_duplicate in zip(windows, duplicate.tolist(), strict=True):
            if is_duplicate:
                removed[start:end] = True
        lines: dict[int, list[str]] = {}
        for (number, sentence), gone in zip(sentences, removed.tolist(), strict=True):
            if not gone:
                lines.setdefault(number, []).append(sentence)
        return "\n".join(" ".join(parts) for _, parts in sorted(lines.items()))


def c4_steps(rules: C4Rules, bad_words: str | Path | None) -> Sequence[Step]:
    """Page cleaning then (optionally) the bad-words filter, the order TFDS applies them."""
    steps: list[Step] = [C4CleanPage(rules)]
    if bad_words:
        steps.append(BadWords(bad_words))
    return steps
