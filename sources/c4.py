"""C4, two ways: the released ``c4/en`` files (RedPajama's route), or C4's rules applied to CC text.

Released C4: ``c4-train.*-of-01024.json.gz``, one ``{"text", "timestamp", "url"}`` per line,
read by the shared row reader (:class:`sources.formats.rows.RowReader`) with :func:`c4_row` as
its adapter: a line that is not a JSON object is one ``malformed_json`` drop naming file and line,
an object without a string ``text`` one ``malformed_row``, a line over ``MAX_LINE_BYTES`` one
``too_large``; a truncated gzip ends the file with one ``truncated_input`` drop. (Before the
shared reader these were ``invalid_json``, ``invalid_json`` and ``record_too_large``.) The
document id is derived from file name and line number: C4 has no ids of its own and the
released files never change.

From Common Crawl: :class:`C4FromCommonCrawlRecipe` runs the grouped-dedup pipeline of
:mod:`sources.commoncrawl` with C4's rules (:mod:`core.filters.c4_rules`) before the dedup and
three-sentence spans as the dedup unit, then C4's order: min sentences again, bad words,
language ID.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from core.document import Document, Drop, InputSpec, make_doc_id
from core.filters.basic import NonEmpty
from core.filters.c4_rules import (
    BAD_WORDS_EN,
    BadWords,
    C4CleanPage,
    C4Rules,
    MinSentences,
    SentenceSpanUnits,
)
from core.filters.ccnet import TidyLines
from core.filters.langid import LanguageID
from core.steps import Record, Step
from sources.commoncrawl import GroupedDedupRecipe, Units, warc_records
from sources.formats.html_text import ExtractOptions
from sources.formats.rows import RowAt, RowReader
from sources.formats.warc import WarcLimits

SOURCE = "c4"


#: A line longer than this is one ``too_large`` drop, skipped without being held in memory
#: (released C4 documents are at most a few hundred KB).
MAX_LINE_BYTES = 16 << 20


def c4_row(row: dict[str, Any], at: RowAt, source: str = SOURCE, language: str = "en") -> Record:
    """One released C4 line's object -> its Document (``malformed_row`` without a string ``text``)."""
    text = row.get("text")
    if not isinstance(text, str):
        return Drop("malformed_row", at.where, "not an object with a string 'text'", language)
    return Document(
        id=make_doc_id(source, f"{at.file_name}:{at.number}"), text=text, source=source,
        meta={"url": row.get("url"), "timestamp": row.get("timestamp"), "language": language,
              "input": at.file_name, "line": at.number},
    )


def read_c4_json(path: Path, location: str, source: str = SOURCE, language: str = "en",
                 max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Record]:
    """Stream one released C4 file as Documents and Drops (see the module docstring)."""
    reader = RowReader(partial(c4_row, source=source, language=language), max_bytes=max_line_bytes,
                       language=language, fmt="jsonl")
    return reader(InputSpec(location, path, location))


@dataclass
class C4Recipe:
    """Released C4 (``en``): reformat to our schema, as RedPajama did."""

    language: str = "en"
    name: str = SOURCE
    #: URL blocklists (core.filters.url_blocklist), before anything else.
    url_filters: tuple[Step, ...] = ()

    def input_language(self, spec: InputSpec) -> str | None:
        return self.language

    def read(self, spec: InputSpec) -> Iterator[Record]:
        return read_c4_json(spec.path, spec.location, self.name, self.language)

    def steps(self) -> list[Step]:
        return [*self.url_filters, NonEmpty()]

    def partition(self, doc: Document) -> str:
        return doc.language or self.language


@dataclass
class C4FromCommonCrawlRecipe(GroupedDedupRecipe):
    """C4's rules on WARC/WET text, with three-sentence-span dedup across each group of inputs."""

    rules: C4Rules = field(default_factory=C4Rules)
    bad_words: str | None = str(BAD_WORDS_EN)
    languages: tuple[str, ...] = ("en",)
    lid_min_score: float = 0.5
    lid_model: str | None = None
    prefilter: bool = True
    prefilter_min_score: float = 0.9
    extract: ExtractOptions = field(default_factory=ExtractOptions)
    limits: WarcLimits = field(default_factory=WarcLimits)
    name: str = SOURCE
    units: Units = field(default_factory=SentenceSpanUnits)
    out: Path | None = None
    url_filters: tuple[Step, ...] = ()

    def read_raw(self, spec: InputSpec) -> Iterator[Record]:
        return warc_records(self, spec)

    def pre_steps(self) -> list[Step]:
        """Tidy lines, then C4's line and page rules (before dedup, as in TFDS)."""
        return [*self.url_filters, TidyLines(), C4CleanPage(self.rules)]

    def steps(self) -> list[Step]:
        """After span dedup: the sentence floor again, bad words, language ID."""
        steps: list[Step] = [MinSentences(self.rules.min_sentences)]
        if self.bad_words:
            steps.append(BadWords(self.bad_words))
        steps.append(LanguageID(self.languages, self.lid_min_score, self.lid_model))
        return steps
