"""C4, two ways: the released ``c4/en`` files (RedPajama's route), or C4's rules applied to CC text.

Released C4: ``c4-train.*-of-01024.json.gz``, one ``{"text", "timestamp", "url"}`` per line.
The reader streams the gzip; a line that is not a JSON object with a string ``text`` is one
``invalid_json`` drop naming file and line; a truncated gzip ends the file with one
``truncated_input`` drop. The document id is derived from file name and line number: C4 has no
ids of its own and the released files never change.

From Common Crawl: :class:`C4FromCommonCrawlRecipe` runs the grouped-dedup pipeline of
:mod:`sources.commoncrawl` with C4's rules (:mod:`core.filters.c4_rules`) before the dedup and
three-sentence spans as the dedup unit, then C4's order: min sentences again, bad words,
language ID.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from core.compressed import CODEC_ERRORS
from core.document import Document, Drop, InputSpec, make_doc_id
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
from core.json_line import parse_json_line
from core.steps import Filter, Record, Step
from sources.commoncrawl import GroupedDedupRecipe, Units, warc_records
from sources.formats.html_text import ExtractOptions
from sources.formats.rows import bounded_lines
from sources.formats.warc import WarcLimits

SOURCE = "c4"


#: A line longer than this is one ``record_too_large`` drop, skipped without being held in memory
#: (released C4 documents are at most a few hundred KB).
MAX_LINE_BYTES = 16 << 20


def read_c4_json(path: Path, location: str, source: str = SOURCE, language: str = "en",
                 max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Record]:
    """Stream one released C4 file as Documents and Drops (see the module docstring)."""
    name = Path(location).name
    line_number = 0
    try:
        with gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb") as handle:
            for line_number, raw in enumerate(bounded_lines(handle, max_line_bytes), start=1):
                where = f"{location}: line {line_number}"
                if raw is None:
                    yield Drop("record_too_large", where, f"line over {max_line_bytes:,} bytes", language)
                    continue
                if not raw.strip():
                    continue
                try:
                    row = parse_json_line(raw)
                except ValueError as exc:  # not JSON, not UTF-8, or nested too deeply: this line only
                    yield Drop("invalid_json", where, f"{type(exc).__name__}: {exc}", language)
                    continue
                if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                    yield Drop("invalid_json", where, "not an object with a string 'text'", language)
                    continue
                yield Document(
                    id=make_doc_id(source, f"{name}:{line_number}"), text=row["text"], source=source,
                    meta={"url": row.get("url"), "timestamp": row.get("timestamp"), "language": language,
                          "input": name, "line": line_number},
                )
    except CODEC_ERRORS as exc:
        yield Drop("truncated_input", f"{location}: after line {line_number}", f"{type(exc).__name__}: {exc}",
                   language)


class NonEmpty(Filter):
    """Drops documents whose text is only whitespace."""

    name = "non_empty"

    def decide(self, doc: Document) -> str | None:
        return "empty" if not doc.text.strip() else None


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
