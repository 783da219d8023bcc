"""Science and engineering books and papers: a folder of PDFs and EPUBs -> one Document per file.

The extension source A.2 of G.2 (LLaMA's authors note they may lose to Minerva for lack of
technical books and papers). Each input is one file:

* ``.pdf``: :mod:`sources.formats.pdf_text` (pdfium text layer in reading order, OCR for scanned pages,
  headers/footers and page numbers removed, hyphenation joined, ligatures spelt out). Every page
  that yields no text is a counted drop naming the file and page (``ocr_unavailable``,
  ``page_timeout``, ``blank_page``, ...), followed by the book's Document.
* ``.epub``: :mod:`sources.formats.epub` (spine order from the OPF found through ``container.xml``,
  navigation and boilerplate left out, MathML kept as linear text). A chapter that cannot be read
  (``cleaner_timeout``, ``cleaner_crashed``, ``broken_chapter``) is a counted drop naming the file
  and chapter, followed by the book's Document.

A file that cannot be read at all is one drop (``encrypted_pdf``, ``broken_pdf``, ``not_a_zip``,
``no_container``, ``zip_bomb``, ``too_large``, ``unsupported_format``, ``no_text``). After
reading, a quality floor (:class:`QualityFloor`: too little text per page, unmapped glyphs, too
few words) and language ID (:class:`core.filters.langid.LanguageID`) run as steps.

The document id is a hash of the file's bytes, so the same book found in two folders gets one id
(and the run-wide exact dedup sees the same text twice). Book-level near-dedup runs after
staging, like the Books source (see ``flows/science_books.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.atomic import sha256_file
from core.document import Document, Drop, InputSpec, make_doc_id
from core.filters.langid import LanguageID
from core.steps import Filter, Record, Step
from sources.formats.epub import EpubError, EpubSettings, read_epub
from sources.formats.pdf_text import PageText, PdfInfo, PdfSettings, assemble, pages_in_process, shared_worker

SOURCE = "science_books"
SUFFIXES = (".pdf", ".epub")
_WORD = re.compile(r"\S+")
_ALPHA_WORD = re.compile(r"\S*[^\W\d_]\S*")
_BAD_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd\ue000-\uf8ff]")


@dataclass(frozen=True)
class QualitySettings:
    """The quality floor (see :class:`QualityFloor`)."""

    min_chars: int = 500
    min_chars_per_page: int = 200
    max_bad_char_share: float = 0.01
    min_word_share: float = 0.5


@dataclass(frozen=True)
class SciBookSettings:
    """Everything the recipe needs (defaults in ``configs/science_books.yaml``)."""

    pdf: PdfSettings = field(default_factory=PdfSettings)
    epub: EpubSettings = field(default_factory=EpubSettings)
    quality: QualitySettings = field(default_factory=QualitySettings)
    max_file_bytes: int = 1024 * 1024 * 1024
    language_id: bool = True
    languages: tuple[str, ...] = ()  # empty: keep every language (the score floor still applies)
    min_language_score: float = 0.5
    lid_model: str | None = None
    lid_max_chars: int = 100_000


def _label(spec: InputSpec) -> str:
    return spec.location


def read_pdf(spec: InputSpec, settings: SciBookSettings, local_id: str) -> Iterator[Record]:
    """Page drops, then the PDF's Document (or a drop for the whole file)."""
    source = shared_worker().pages(spec.path, settings.pdf) if settings.pdf.isolate else \
        pages_in_process(spec.path, settings.pdf)
    info = PdfInfo()
    pages: list[PageText] = []
    chars = 0
    for item in source:
        if isinstance(item, PdfInfo):
            info = item
            if info.error:
                yield Drop(info.error, _label(spec), info.detail or info.error)
                return
            continue
        if item.drop:
            yield Drop(item.drop, f"{_label(spec)} page {item.index + 1}", item.detail or item.drop)
        chars += sum(len(line.text) for line in item.lines)
        if chars > settings.pdf.max_document_chars:
            getattr(source, "close", lambda: None)()  # stops the worker mid-file (see PdfWorker.pages)
            yield Drop("text_too_large", f"{_label(spec)} page {item.index + 1}",
                       f"more than {settings.pdf.max_document_chars:,} characters of text by page {item.index + 1}; "
                       "the file is not read further")
            return
        pages.append(item)
    if info.pages > settings.pdf.max_pages:
        yield Drop("too_many_pages", _label(spec), f"{info.pages} pages; only the first {settings.pdf.max_pages} read")
    result = assemble(pages)
    if not result.text.strip():
        yield Drop("no_text", _label(spec), f"{info.pages} pages, none with text")
        return
    metadata = info.metadata
    meta: dict[str, Any] = {
        "format": "pdf", "file": spec.path.name, "title": metadata.get("title") or spec.path.stem,
        "author": metadata.get("author"), "pages": info.pages, "text_pages": result.text_pages,
        "ocr_pages": result.ocr_pages, "two_column_pages": result.two_column_pages,
        "furniture_lines": result.furniture_lines, "dropped_pages": info.pages - result.text_pages - result.ocr_pages,
        "producer": metadata.get("producer"), "sha256": local_id,
    }
    yield Document(make_doc_id(SOURCE, f"sha256/{local_id}"), result.text, SOURCE, meta)


def read_epub_file(spec: InputSpec, settings: SciBookSettings, local_id: str) -> Iterator[Record]:
    """The EPUB's Document, or a drop saying why not."""
    try:
        book = read_epub(spec.path, settings.epub)
    except EpubError as exc:
        yield Drop(exc.reason, _label(spec), exc.detail)
        return
    except RecursionError:
        yield Drop("broken_epub", _label(spec), "markup nested too deeply")
        return
    for dropped in book.dropped:
        yield Drop(dropped.reason, f"{_label(spec)} chapter {dropped.name}", dropped.detail)
    if not book.text.strip():
        yield Drop("no_text", _label(spec), f"{book.chapters} chapters, none with text")
        return
    meta: dict[str, Any] = {
        "format": "epub", "file": spec.path.name, "title": book.title or spec.path.stem, "author": book.creator,
        "declared_language": book.language, "epub_version": book.version, "chapters": book.chapters,
        "formulas": book.math, "skipped_items": dict(sorted(book.skipped.items())), "sha256": local_id,
        "dropped_chapters": len(book.dropped),
        # an EPUB has no pages: count 2,000 characters as one, so the per-page floor applies to both
        "pages": max(1, len(book.text) // 2000),
    }
    yield Document(make_doc_id(SOURCE, f"sha256/{local_id}"), book.text, SOURCE, meta)


def read_file(spec: InputSpec, settings: SciBookSettings) -> Iterator[Record]:
    """One PDF or EPUB (see the module docstring)."""
    suffix = spec.path.suffix.lower()
    if suffix not in SUFFIXES:
        yield Drop("unsupported_format", _label(spec), f"not one of {', '.join(SUFFIXES)}")
        return
    try:
        size = spec.path.stat().st_size
        local_id = sha256_file(spec.path)
    except OSError as exc:
        yield Drop("unreadable", _label(spec), f"{type(exc).__name__}: {exc}")
        return
    if size > settings.max_file_bytes:
        yield Drop("too_large", _label(spec), f"{size} bytes (limit {settings.max_file_bytes})")
        return
    reader = read_pdf if suffix == ".pdf" else read_epub_file
    yield from reader(spec, settings, local_id)


def text_quality(text: str, pages: int, settings: QualitySettings) -> str | None:
    """The quality floor's decision: None to keep, else the reason."""
    if len(text) < settings.min_chars:
        return "too_short"
    if len(text) / max(pages, 1) < settings.min_chars_per_page:
        return "too_little_text_per_page"
    if len(_BAD_CHAR.findall(text)) > settings.max_bad_char_share * len(text):
        return "garbage_chars"
    words = len(_WORD.findall(text))
    if words and len(_ALPHA_WORD.findall(text)) < settings.min_word_share * words:
        return "too_few_words"
    return None


class QualityFloor(Filter):
    """Drops books with too little text per page (mostly figures, or a failed OCR) or garbage text."""

    name = "quality_floor"

    def __init__(self, settings: QualitySettings) -> None:
        self.settings = settings

    def decide(self, doc: Document) -> str | None:
        return text_quality(doc.text, int(doc.meta.get("text_pages") or doc.meta.get("pages") or 1), self.settings)


@dataclass
class SciBooksRecipe:
    """The science-books source for :mod:`core.pipeline` (one PDF or EPUB per input)."""

    settings: SciBookSettings = field(default_factory=SciBookSettings)
    name: str = SOURCE

    def input_language(self, spec: InputSpec) -> str | None:
        """Language comes from language ID, per book."""
        return None

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Page drops and the file's Document (see :func:`read_file`)."""
        return read_file(spec, self.settings)

    def steps(self) -> Sequence[Step]:
        """Quality floor, then language ID (which sets ``meta.language``)."""
        steps: list[Step] = [QualityFloor(self.settings.quality)]
        if self.settings.language_id:
            steps.append(LanguageID(self.settings.languages, self.settings.min_language_score,
                                    self.settings.lid_model, batch_size=16, max_chars=self.settings.lid_max_chars))
        return steps

    def partition(self, doc: Document) -> str:
        """One directory per language."""
        return doc.language or "und"
