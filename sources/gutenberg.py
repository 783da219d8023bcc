"""Books: Project Gutenberg plain-text eBooks, without the PG header and licence footer.

A PG file is: a header (``The Project Gutenberg EBook of …``, ``Title:``, ``Author:``,
``Language:``, ``Character set encoding:``), a start marker line, the book, an end marker line,
then the licence. The markers changed over 30 years (marker lists learnt from c-w/gutenberg's
cleanup and PG's own files; every era has a hand-written case in tests/sources/test_gutenberg_eras.py):

* start: ``*** START OF THIS PROJECT GUTENBERG EBOOK X ***`` (2000s), ``***START OF THE PROJECT
  GUTENBERG EBOOK X***`` (no spaces), ``*** START OF THE PROJECT GUTENBERG EBOOK X ***`` (2020s),
  possibly wrapped onto a second line; the 1990s ``*END*THE SMALL PRINT! FOR PUBLIC DOMAIN
  ETEXTS*…*END*`` (and ``*END THE SMALL PRINT``) closing the licence that came *first* in those
  files, and pg100's ``["Small Print" V.12.08.93]``. When a file has several (a ``*** START``
  line, then PG's notes and small print, then the small print's own closing line), the last one
  that only PG matter separates from the first wins;
* end: the first ``*** END OF THIS/THE PROJECT GUTENBERG EBOOK`` line; before it, a prose end line
  (``End of (the) Project Gutenberg('s) EBook/Etext …``, ``End of this Etext of …``, ``Ende dieses
  Projekt Gutenberg``) ends the book when no book text follows it; one that book text follows
  closes a single work of a multi-work file, and only that line goes;
* inside the book: the ``<<THIS ELECTRONIC VERSION … IS COPYRIGHT …>>`` notice that early complete
  works files (Shakespeare, pg100) repeat before every work, and the ``**This is a COPYRIGHTED
  Project Gutenberg Etext, Details Above**`` line of copyrighted etexts, are removed.

Encodings: UTF-8 (with or without BOM); otherwise the header's ``Character set encoding:``
(ISO-8859-1, Windows-1252, …); otherwise Windows-1252, then Latin-1 (which never fails). Line
ends are normalized to ``\\n``; the credit paragraph right after the start marker
(``Produced by …``, ``E-text prepared by …``, ``Transcribed from …``) is removed as well.

Early releases (1991-1993) have no start marker: the file opens with free-form paragraphs about
the etext ("This is the February 1992 Project Gutenberg release of: …", notes on the edition,
the small print, addresses) and may close with more of them. For those, :func:`strip_early_matter`
removes the leading and trailing paragraphs that are PG matter and keeps the book from its first
real line: the leading matter ends at the last PG paragraph that is followed by a long stretch
(:data:`BOOK_RUN_CHARS`) of text that names none of PG's words, so a short note *between* two PG
paragraphs ("Introduction (one page)") goes with them. Only when no such stretch exists, i.e.
no book text can be told apart from PG matter, is the file dropped (``pg_start_marker_missing``).

A file without a PG header is dropped as ``no_pg_header`` by default: in a PG mirror such files
are indexes and readmes, not books. ``keep_without_header=True`` keeps them whole (use it to
read a Books3-like folder of plain books).

Bounds: a book is read up to ``max_book_bytes`` (past it: ``too_large``, the rest unread), and the
whole per-book cleaning (decoding, the marker and PG-matter regexes) runs in a
:class:`core.bounded.BoundedCleaner` helper under ``clean_timeout_s``: the regexes are linear on
real books, but not on every input (``_PG_MATTER``'s e-mail alternative rescans a long run of
word characters from each of its positions: quadratic, minutes on one 1 MB "paragraph"), so a
book past the bound is a ``cleaner_timeout`` drop and the next book goes on.
"""

from __future__ import annotations

import codecs
import dataclasses
import gzip
import json
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.bounded import BoundedCleaner
from core.document import Document, Drop, InputSpec, make_doc_id
from core.filters.basic import MinLength
from core.steps import Record, Step

SOURCE = "books"
BOOK_LIST_SUFFIX = ".books.json"
BOOK_LIST_FORMAT = "kinda-book-list/1"

#: How far into a file the header (metadata and start marker) may reach.
HEADER_SCAN_CHARS = 40_000

_START = re.compile(
    r"^[ \t]*\*{3}[ \t]*START OF (?:THIS|THE)[ \t]+PROJECT GUTENBERG[^\n]*$"
    r"|^[ \t]*\*{3}[ \t]*START OF THE COPYRIGHTED PROJECT GUTENBERG[^\n]*$"
    r"|^[ \t]*\*END\*?[ \t]*THE SMALL PRINT[^\n]*$"
    r"|^[ \t]*\[\"Small Print\" V\.[^\n]*$",
    re.IGNORECASE | re.MULTILINE,
)
#: The last line of a start marker wrapped onto a second line (``… COMPLETE WORKS OF\nWILLIAM SHAKESPEARE ***``).
_START_TAIL = re.compile(r"[^\n*]{1,120}\*{3}[ \t]*(?:\n|$)")
#: End markers that close the book wherever they stand: the ``*** END OF …`` line (2000s-today).
#: Searched from its literal ``***`` (a ``^`` in MULTILINE mode is tried at every character: 3x slower);
#: :func:`_line_start` checks that only blanks stand before it on its line.
_END_STRONG = re.compile(r"\*\*\*[ \t]*END OF (?:THIS|THE|THE COPYRIGHTED)[ \t]+PROJECT GUTENBERG[^\n]*",
                         re.IGNORECASE)
#: End lines written in prose (1990s-2010s), which multi-work files also carry between their works:
#: ``End of (the|this) Project Gutenberg('s) EBook/Etext of …``, ``End of this Etext of …``, German
#: and French forms. One closes the book only when no book text follows it (see :func:`_find_end`).
#: The match starts at the newline before the line (a literal, for speed as above).
_END_WEAK = re.compile(
    r"\n[ \t]*(?:End of (?:the |this )?(?:Project Gutenberg(?:'s)?\b|E-?(?:text|book)\b)"
    r"|Ende dieses (?:Projekts?|Project) Gutenberg|Ende dieses E-?textes\b|Fin (?:de|du) (?:Projet|Project) Gutenberg)"
    r"[^\n]*",
    re.IGNORECASE,
)
#: Notices that early multi-work files repeat *inside* the book: the World Library ``<<THIS
#: ELECTRONIC VERSION … IS COPYRIGHT … >>`` block before every play (one paragraph, no blank line,
#: at most 3,000 characters), and the copyrighted etexts' ``**This is a COPYRIGHTED Project
#: Gutenberg Etext, Details Above**`` line; each goes with the blank lines after it.
_NOTICE_BLOCK = re.compile(r"^[ \t]*<<(?:[^<>\n]|\n(?![ \t]*\n)){1,3000}>>[ \t]*(?:\n(?:[ \t]*\n)*|$)",
                           re.MULTILINE)
_NOTICE_WORDS = re.compile(r"copyright|gutenberg|e-?texts?\b|electronic (?:version|edition)", re.IGNORECASE)
_NOTICE_LINE = re.compile(r"^[ \t]*\*+[ \t]*This is a COPYRIGHTED Project Gutenberg E-?(?:text|book)[^\n]*"
                          r"(?:\n(?:[ \t]*\n)*|$)", re.IGNORECASE | re.MULTILINE)
_PG_MENTION = re.compile(r"project gutenberg", re.IGNORECASE)
#: Words that mark a paragraph of an early release as PG matter, not the book: the project, the
#: etext, the licence and disclaimers, and the ways to reach PG (mail, FTP, listserver, donations).
_PG_MATTER = re.compile(
    r"project\s+gutenberg|\bgutenberg\b|\be-?texts?\b|\be-?books?\b|small\s+print|\*END\*"
    r"|\bpublic\s+domain\b|\bcopyright|\blistserv|\bftp\b|\binternet\b|\bbitnet\b|\bcompuserve\b"
    r"|[\w.-]+@[\w.-]+\.\w+|\bdonations?\b|\btax[ -]deductible\b|illinois\s+benedictine|\bmichael\s+s\.?\s+hart\b"
    r"|\broyalt(?:y|ies)\b|\bdisclaimer\b|\bwarrant(?:y|ies)\b|\bliabilit(?:y|ies)\b",
    re.IGNORECASE,
)
#: "… Project Gutenberg release of: <Title> by <Author>" / "Project Gutenberg Etext of <Title>, by <Author>":
#: how early releases name their book, before header fields existed.
_EARLY_TITLE = re.compile(
    r"Project Gutenberg(?:'s)?[ \t]+(?:release|e-?text|edition)[ \t]+of:?[ \t]*(?:\n[ \t]*)*"
    r"([^\n*]+?)(?:,?[ \t]+by[ \t]+([^\n*]+?))?[ \t*]*$",
    re.IGNORECASE | re.MULTILINE,
)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
#: Characters of consecutive non-PG paragraphs that mark where the book itself begins (or ends).
BOOK_RUN_CHARS = 2_000
_FIELD = re.compile(r"^(Title|Author|Language|Character set encoding|Release Date|Posting Date|Translator|Editor)"
                    r"[ \t]*:[ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
_EBOOK_NUMBER = re.compile(r"\[E-?(?:Book|Text) #(\d+)\]", re.IGNORECASE)
_CREDIT = re.compile(r"^(?:Produced by|E-?text prepared by|Transcribed (?:from|by)|Scanned (?:and proofed )?by"
                     r"|This e-?(?:text|book) was (?:prepared|produced|created|scanned) by)", re.IGNORECASE)
_FILE_NUMBER = re.compile(r"^pg(\d+)|^(\d+)(?:-\d)?\.")

#: Language names PG writes in headers -> ISO 639-1 codes (the common ones; others kept lower-case).
LANGUAGE_CODES: dict[str, str] = {
    "english": "en", "french": "fr", "german": "de", "dutch": "nl", "italian": "it", "spanish": "es",
    "portuguese": "pt", "finnish": "fi", "swedish": "sv", "danish": "da", "norwegian": "no", "polish": "pl",
    "russian": "ru", "hungarian": "hu", "czech": "cs", "latin": "la", "greek": "el", "chinese": "zh",
    "japanese": "ja", "esperanto": "eo", "catalan": "ca", "tagalog": "tl", "welsh": "cy", "icelandic": "is",
    "romanian": "ro", "bulgarian": "bg", "croatian": "hr", "serbian": "sr", "slovenian": "sl", "ukrainian": "uk",
    "hebrew": "he", "arabic": "ar", "irish": "ga", "galician": "gl", "afrikaans": "af", "estonian": "et",
}


@dataclass(frozen=True)
class BookHeader:
    """What a PG header says about the book."""

    title: str | None = None
    author: str | None = None
    language: str | None = None
    language_name: str | None = None
    encoding: str | None = None
    release: str | None = None
    ebook_number: str | None = None


@dataclass(frozen=True)
class StrippedBook:
    """A book's text without the PG boilerplate, and how the boilerplate was found."""

    text: str
    header: BookHeader
    has_header: bool
    start_found: bool
    end_found: bool


def _field_value(text: str, start: int) -> str:
    """A header field's value with its indented continuation lines (multi-line titles)."""
    lines = text[start:].split("\n")
    value = [lines[0].strip()]
    for line in lines[1:4]:
        if line.startswith((" ", "\t")) and line.strip():
            value.append(line.strip())
        else:
            break
    return " ".join(v for v in value if v)


def parse_header(head: str) -> BookHeader:
    """Read title, author, language, encoding, release and eBook number from a header."""
    fields: dict[str, str] = {}
    for match in _FIELD.finditer(head):
        key = match.group(1).lower()
        if key not in fields:
            fields[key] = _field_value(head, match.start(2))
    language_name = fields.get("language")
    first_language = re.split(r"\s*(?:,|;|\band\b)\s*", language_name or "")[0].strip().lower()
    number = _EBOOK_NUMBER.search(head)
    return BookHeader(
        title=fields.get("title") or None,
        author=fields.get("author") or None,
        language=LANGUAGE_CODES.get(first_language, first_language or None) if first_language else None,
        language_name=language_name or None,
        encoding=fields.get("character set encoding") or None,
        release=_EBOOK_NUMBER.sub("", fields.get("release date") or fields.get("posting date") or "").strip() or None,
        ebook_number=number.group(1) if number else None,
    )


def decode_book(data: bytes) -> tuple[str, str]:
    """Decode a book's bytes; return (text, codec used). See the module docstring for the order."""
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        pass
    head = data[:HEADER_SCAN_CHARS].decode("latin-1")
    declared = re.search(r"Character set encoding:[ \t]*([\w.:-]+)", head, re.IGNORECASE)
    candidates = [declared.group(1)] if declared else []
    for name in [*candidates, "cp1252", "latin-1"]:
        try:
            codec = codecs.lookup(name.replace("ISO-646-US", "ascii")).name
            return data.decode(codec), codec
        except (LookupError, UnicodeDecodeError):
            continue
    return data.decode("latin-1"), "latin-1"  # unreachable: latin-1 decodes every byte


def _drop_credit_paragraph(body: str) -> str:
    """Remove a leading 'Produced by …' paragraph (a transcription credit, not the book)."""
    stripped = body.lstrip("\n")
    if not _CREDIT.match(stripped.lstrip()):
        return body
    end = stripped.find("\n\n")
    return stripped[end:] if end != -1 else ""


def _has_book_run(text: str, start: int, stop: int) -> bool:
    """Whether ``text[start:stop]`` holds :data:`BOOK_RUN_CHARS` of consecutive paragraphs naming nothing of PG's.

    Such a run is book text; PG matter (licences, notices, addresses) never has one. Paragraphs are
    read lazily, so a run found early ends the scan of a long stretch.
    """
    run = 0
    position = start
    for gap in _PARAGRAPH_BREAK.finditer(text, start, stop):
        run = 0 if _is_matter(text[position: gap.start()]) else run + len(text[position: gap.start()].strip())
        if run >= BOOK_RUN_CHARS:
            return True
        position = gap.end()
    tail = text[position:stop]
    return not _is_matter(tail) and run + len(tail.strip()) >= BOOK_RUN_CHARS


def _find_start(text: str, head: str) -> tuple[re.Match[str] | None, int]:
    """The first start marker, and where the book begins.

    Files of the 1990s-2000s carry more than one marker: pg100's ``*** START OF THIS PROJECT
    GUTENBERG EBOOK`` is followed by PG's notes and small print, closed by ``["Small Print"
    V.12.08.93]``. A later marker wins while only PG matter stands between the two (no book
    run); a start marker wrapped onto a second line (``… WORKS OF\nWILLIAM SHAKESPEARE ***``)
    ends after that line.
    """
    markers = list(_START.finditer(head))
    if not markers:
        return None, 0
    chosen = markers[0]
    for later in markers[1:]:
        if _has_book_run(text, chosen.end(), later.start()):
            break
        chosen = later
    body_start = chosen.end() + 1 if chosen.end() < len(text) else len(text)
    if chosen.group().lstrip().startswith("***") and not chosen.group().rstrip().endswith("*"):
        tail = _START_TAIL.match(text, body_start)
        if tail:
            body_start = tail.end()
    return markers[0], body_start


def _strong_end(text: str, start: int) -> int | None:
    """Where the line of the first ``*** END OF …`` marker at or after ``start`` begins (None: no marker)."""
    for match in _END_STRONG.finditer(text, start):
        line = text.rfind("\n", 0, match.start()) + 1
        if not text[line: match.start()].strip(" \t"):
            return line
    return None


def _find_end(text: str, body_start: int) -> tuple[int, list[tuple[int, int]], bool]:
    """Where the book ends, the spans of prose end lines inside it (removed), and whether an end was found.

    The first ``*** END OF …`` line ends the book. A prose end line (``End of this Etext of …``)
    before it ends the book only when no book run follows it up to that line (or the file's end);
    otherwise it closes one work of several and only the line goes. The last prose end line of a
    file without a ``***`` marker always ends the book.
    """
    strong = _strong_end(text, body_start)
    limit = len(text) if strong is None else strong
    weak = list(_END_WEAK.finditer(text, max(body_start - 1, 0), limit))
    inside: list[tuple[int, int]] = []
    for index, line in enumerate(weak):
        last = index == len(weak) - 1
        if (last and strong is None) or not _has_book_run(text, line.end(), limit):
            return line.start() + 1, inside, True
        inside.append((line.start() + 1, line.end() + 1))
    return limit, inside, strong is not None


def _notice_or_kept(match: re.Match[str]) -> str:
    return "" if _NOTICE_WORDS.search(match.group()) else match.group()


def remove_notices(body: str) -> str:
    """``body`` without the PG notices that multi-work and copyrighted files repeat inside it.

    See :data:`_NOTICE_BLOCK`: a ``<<…>>`` paragraph goes only when it names a copyright, PG, an
    etext or an electronic version, so a book's own ``<<…>>`` (guillemets typed as ASCII) stays.
    """
    if "<<" in body:
        body = _NOTICE_BLOCK.sub(_notice_or_kept, body)
    return _NOTICE_LINE.sub("", body) if "COPYRIGHTED" in body or "Copyrighted" in body else body


def _cut_spans(text: str, start: int, stop: int, spans: Sequence[tuple[int, int]]) -> str:
    """``text[start:stop]`` without the given spans (each with the blank lines after it)."""
    pieces = []
    position = start
    for a, b in spans:
        pieces.append(text[position:a])
        position = b
        while position < stop:
            newline = text.find("\n", position, stop)
            if newline == -1 or text[position:newline].strip():
                break
            position = newline + 1
    pieces.append(text[position:stop])
    return "".join(pieces)


def strip_gutenberg(text: str) -> StrippedBook:
    """Split PG boilerplate from the book; ``text`` must already have ``\\n`` line ends."""
    head = text[:HEADER_SCAN_CHARS]
    start, body_start = _find_start(text, head)
    has_header = start is not None or bool(_PG_MENTION.search(head[:3_000]))
    header = parse_header(head[: start.start()] if start else head[:3_000])
    end, inside, end_found = _find_end(text, body_start)
    body = remove_notices(_cut_spans(text, body_start, end, inside))
    if start:
        body = _drop_credit_paragraph(body)
    return StrippedBook(
        text=body.strip("\n").rstrip() + "\n" if body.strip() else "",
        header=header,
        has_header=has_header,
        start_found=start is not None,
        end_found=end_found,
    )


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the non-blank paragraphs (lines of only spaces count as blank)."""
    spans = []
    position = 0
    for gap in _PARAGRAPH_BREAK.finditer(text):
        if text[position: gap.start()].strip():
            spans.append((position, gap.start()))
        position = gap.end()
    if text[position:].strip():
        spans.append((position, len(text)))
    return spans


def _is_matter(paragraph: str) -> bool:
    """PG matter: names the project, its etexts or licence, or is a header field (``Title: …``)."""
    return bool(_PG_MATTER.search(paragraph) or _FIELD.match(paragraph.strip()))


def _matter_boundary(texts: Sequence[str], limit: int) -> int | None:
    """How many paragraphs (from the front of ``texts``) are PG matter; None if the book never starts.

    The matter ends at the last PG paragraph followed by :data:`BOOK_RUN_CHARS` of paragraphs
    that name nothing of PG's. Only the first ``limit`` characters are looked at.
    """
    last_matter = -1
    run = 0
    seen = 0
    for index, paragraph in enumerate(texts):
        if _is_matter(paragraph):
            last_matter, run = index, 0
        else:
            run += len(paragraph.strip())
            if run >= BOOK_RUN_CHARS:
                return last_matter + 1
        seen += len(paragraph)
        if seen > limit:
            break
    return None


def _trailing_matter(texts: Sequence[str]) -> int:
    """How many paragraphs at the end are PG matter (closing notes, small print, addresses)."""
    found = _matter_boundary(texts[::-1], HEADER_SCAN_CHARS)
    if found is not None:
        return found
    count = 0  # a short book: only the PG paragraphs right at the end
    while count < len(texts) and _is_matter(texts[-1 - count]):
        count += 1
    return count


def early_title(head: str) -> tuple[str | None, str | None]:
    """Title and author as an early release's first lines name them (None, None when they do not)."""
    match = _EARLY_TITLE.search(head[:3_000])
    if not match:
        return None, None
    return match.group(1).strip() or None, (match.group(2) or "").strip() or None


def strip_early_matter(text: str) -> str | None:
    """The book inside an early (start-marker-less) PG release, or None when none can be told apart.

    ``text`` has ``\\n`` line ends. Leading and trailing paragraphs of PG matter are removed
    (see the module docstring); the book keeps its own line breaks and indentation.
    """
    spans = _paragraphs(text)
    texts = [text[a:b] for a, b in spans]
    first = _matter_boundary(texts, HEADER_SCAN_CHARS)
    if first is None:
        return None
    last = len(spans) - _trailing_matter(texts[first:])
    if last <= first:
        return None
    body = text[spans[first][0]: spans[last - 1][1]]
    return body.rstrip() + "\n" if body.strip() else None


def normalize_newlines(text: str) -> str:
    """CRLF and lone CR -> LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def ebook_number(path: Path, header: BookHeader) -> str | None:
    """The PG eBook number: from the header, else the file name (``pg972.txt``, ``972-0.txt``)."""
    if header.ebook_number:
        return header.ebook_number
    match = _FILE_NUMBER.match(path.name)
    return (match.group(1) or match.group(2)) if match else None


@dataclass(frozen=True)
class BookSettings:
    """How books are read (see the module docstring)."""

    keep_without_header: bool = False
    max_book_bytes: int = 64 * 1024 * 1024
    min_chars: int = 1_000
    #: Wall-time bound of one book's cleaning (a real book cleans in well under a second).
    clean_timeout_s: float = 30.0


def _read_bytes(path: Path, limit: int) -> bytes:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as handle:
        return handle.read(limit + 1)


def _book_label(path: Path, where: str) -> str:
    return f"{where}: {path.name}" if where != str(path) else str(path)


def book_cleaner(settings: BookSettings) -> BoundedCleaner[Record]:
    """The helper that reads and cleans one book at a time under ``clean_timeout_s``.

    The helper reads the file itself (only the path crosses the pipe); the size bound is
    ``max_book_bytes``, applied while reading.
    """
    return BoundedCleaner(read_book, timeout_s=settings.clean_timeout_s, shared=True)


def read_book_bounded(cleaner: BoundedCleaner[Record], path: Path, settings: BookSettings, where: str) -> Record:
    """:func:`read_book` under the cleaner's time bound: its Document or Drop, or ``cleaner_timeout``."""
    return cleaner.run(_book_label(path, where), path, settings, where, size=0)


def read_book(path: Path, settings: BookSettings, where: str) -> Record:
    """One book file as a Document, or a Drop saying why not (unbounded: see :func:`read_book_bounded`)."""
    label = _book_label(path, where)
    try:
        data = _read_bytes(path, settings.max_book_bytes)
    except (OSError, EOFError, zlib.error) as exc:
        return Drop("truncated_input", label, f"{type(exc).__name__}: {exc}")
    if len(data) > settings.max_book_bytes:
        return Drop("too_large", label)
    if b"\x00" in data[:8000]:
        return Drop("binary", label)
    text, codec = decode_book(data)
    book = strip_gutenberg(normalize_newlines(text))
    header = book.header
    early = None
    if not book.start_found and book.has_header:
        early = strip_early_matter(book.text)
    if not book.start_found and early is None and not settings.keep_without_header:
        reason = "pg_start_marker_missing" if book.has_header else "no_pg_header"
        return Drop(reason, label, language=header.language)
    if book.start_found:
        body = book.text
    else:
        body = early if early is not None else normalize_newlines(text).strip() + "\n"
    if early is not None and header.title is None:
        title, author = early_title(book.text)
        header = dataclasses.replace(header, title=title, author=header.author or author)
    number = ebook_number(path, header)
    local_id = f"gutenberg/{number}" if number and book.has_header else f"file/{path.name}"
    meta: dict[str, Any] = {
        "title": header.title, "author": header.author, "language": header.language,
        "language_name": header.language_name, "release": header.release, "ebook_number": number,
        "encoding": codec, "declared_encoding": header.encoding, "file": path.name,
        "pg_header": book.start_found or early is not None, "pg_footer": book.end_found,
        "pg_early_release": early is not None,
        "url": f"https://www.gutenberg.org/ebooks/{number}" if number and book.has_header else None,
    }
    return Document(id=make_doc_id(SOURCE, local_id), text=body, source=SOURCE, meta=meta)


def book_list_payload(paths: Sequence[Path]) -> dict[str, Any]:
    """The JSON content of a book list: many small book files as one pipeline input.

    Sizes and mtimes are recorded so the list (and therefore the input's fingerprint) changes
    when any book file changes.
    """
    books = []
    for path in paths:
        stat = path.stat()
        books.append({"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    return {"format": BOOK_LIST_FORMAT, "books": books}


def read_book_list(spec: InputSpec, settings: BookSettings) -> Iterator[Record]:
    """Every book named in a book list."""
    try:
        books = json.loads(spec.path.read_text(encoding="utf-8"))["books"]
        paths = [Path(entry["path"]) for entry in books]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        yield Drop("truncated_input", f"{spec.location}: book list", f"{type(exc).__name__}: {exc}")
        return
    with book_cleaner(settings) as cleaner:
        for path in paths:
            yield read_book_bounded(cleaner, path, settings, spec.location)


class MinChars(MinLength):
    """Drops what is too short to be a book once the boilerplate is gone (the generic floor, under its own step name)."""

    name = "min_chars"


@dataclass
class GutenbergRecipe:
    """The Books source for :mod:`core.pipeline` (one book file, or a book list, per input)."""

    settings: BookSettings = BookSettings()
    name: str = SOURCE

    def input_language(self, spec: InputSpec) -> str | None:
        """Books carry their own language (from the header)."""
        return None

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """A book list (``*.books.json``) or a single book file."""
        if spec.path.name.endswith(BOOK_LIST_SUFFIX):
            return read_book_list(spec, self.settings)
        with book_cleaner(self.settings) as cleaner:
            return iter([read_book_bounded(cleaner, spec.path, self.settings, spec.location)])

    def steps(self) -> list[Step]:
        """A length floor; near-duplicate removal runs across the whole run, after staging."""
        return [MinChars(self.settings.min_chars)]

    def partition(self, doc: Document) -> str:
        """One directory per language."""
        return doc.language or "und"
