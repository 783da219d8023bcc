"""Common Crawl inputs: WARC ``response`` records (HTML), WET ``conversion`` records (text), paths lists.

Which records count: every ``response``, ``revisit`` and ``conversion`` record is an input record
(kept as a page or dropped with a reason); ``warcinfo``, ``request``, ``metadata`` and ``resource``
records (crawler logs) describe the crawl, not pages, and are not counted.

Robustness: warcio is asked not to parse HTTP headers itself (``no_record_parse``), so a record
with broken HTTP headers costs that record (``bad_http_headers``), not the rest of the file; bodies
are read through warcio's de-chunking/decompression with a size bound (``too_large``); a truncated
or corrupt gzip member ends the file with one ``truncated_input`` drop naming the byte offset.

Cheap decisions come before expensive ones: status, content type and size are checked from headers
before the body is decoded, and the optional language pre-filter looks at the tag-stripped page
before trafilatura runs (extraction is the slowest step by far, about 10 pages/s per core).
"""

from __future__ import annotations

import contextlib
import gzip
import html as html_lib
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeadersParser, StatusAndHeadersParserException

from core.bounded import BoundedCleaner
from core.compressed import CODEC_ERRORS, TruncatedInputError
from core.document import Document, Drop, make_doc_id
from core.steps import Record
from sources.formats.html_text import Extraction, ExtractOptions, bounded_extractor, decode_html

log = logging.getLogger(__name__)

#: Default location of Common Crawl's public data (``crawl-data/...`` paths are relative to it).
HTML_TYPES = ("text/html", "application/xhtml+xml", "application/xml+xhtml")
COUNTED_TYPES = frozenset({"response", "revisit", "conversion"})

_HTTP_PARSER = StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/2.0", "HTTP/0.9"], verify=False)
_SCRIPT_STYLE = re.compile(r"<(script|style|noscript|template)\b.*?</\1\s*>", re.S | re.I)
_TAG = re.compile(r"<[^>]*>")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class WarcPage:
    """One usable record: the body and the capture facts a Document keeps."""

    kind: str  # "html" (WARC response) or "text" (WET conversion)
    url: str
    record_id: str
    body: bytes
    date: str | None = None
    digest: str | None = None
    refers_to: str | None = None
    content_type: str | None = None
    http_status: int | None = None
    number: int = 0  # 1-based position of the record in its file

    def label(self, location: str) -> str:
        """A pointer a user can follow: file, record id, url."""
        return f"{location}: {self.record_id} {self.url}"


@dataclass(frozen=True)
class WarcLimits:
    """Bounds that keep one record from costing a worker's memory or time."""

    max_body_bytes: int = 2 * 1024 * 1024
    min_body_bytes: int = 1


_BODY_ERRORS: tuple[type[BaseException], ...] = (*CODEC_ERRORS, ValueError)


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _header(record: ArcWarcRecord, name: str) -> str | None:
    value = record.rec_headers.get_header(name)
    return value.strip() if value else None


def _read_bounded(stream: BinaryIO, limit: int) -> bytes | None:
    """Read at most ``limit`` bytes; None when the stream has more (the rest is skipped by warcio)."""
    data = stream.read(limit + 1)
    return None if len(data) > limit else data


class WarcCut(RuntimeError):
    """The WARC file ends (or is corrupt) here; deliberately not an ``EOFError``, see below."""


class _StrictStream:
    """A decompressed stream whose codec errors are not ``EOFError``, and stay raised.

    warcio reads ``.gz`` itself with a zlib object that ends quietly at a cut, and it treats
    ``EOFError`` as a normal end of file (a cut inside a record's headers ended the file with no
    trace); both would hide a truncated input. We decompress with :mod:`gzip` (which notices a
    missing end-of-stream marker) and re-raise its errors as :class:`WarcCut`, which warcio lets
    through. Once cut, every later read raises again, so whoever reads next learns it too.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.cut: WarcCut | None = None

    def _fail(self, exc: BaseException) -> WarcCut:
        self.cut = self.cut or WarcCut(f"{type(exc).__name__}: {exc}")
        return self.cut

    def read(self, size: int = -1) -> bytes:
        if self.cut is not None:
            raise self.cut
        # read1: one decompression step, so the data before a cut is returned before the error
        try:
            return self.raw.read1(size) if size > 0 and hasattr(self.raw, "read1") else self.raw.read(size)
        except CODEC_ERRORS as exc:
            raise self._fail(exc) from exc

    def readline(self, size: int = -1) -> bytes:
        if self.cut is not None:
            raise self.cut
        try:
            return self.raw.readline(size)
        except CODEC_ERRORS as exc:
            raise self._fail(exc) from exc

    def tell(self) -> int:
        return self.raw.tell()

    def close(self) -> None:
        self.raw.close()


def _check_whole(record: ArcWarcRecord) -> None:
    """Raise :class:`WarcCut` when an uncompressed file ended inside ``record``.

    Without a codec there is no error to see: warcio returns a header block cut short, or a body
    shorter than its Content-Length, as if they were whole. Every WARC record has a
    Content-Length, and a whole one has all of its bytes.
    """
    if record.rec_headers.get_header("Content-Length") is None:
        raise WarcCut("the record's header block is cut (it has no Content-Length)")
    missing = getattr(record.raw_stream, "limit", 0)
    if missing > 0:
        raise WarcCut(f"the record is {missing} bytes short of its Content-Length")


def open_warc(path: Path) -> _StrictStream:
    """Open a ``.warc.gz`` / ``.warc`` file as an uncompressed stream that reports truncation."""
    raw = gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")  # noqa: SIM115
    return _StrictStream(raw)  # type: ignore[arg-type]


class WarcRecords:
    """Iterate one WARC/WET file as :class:`WarcPage` or :class:`Drop` (see the module docstring)."""

    def __init__(self, path: Path, location: str | None = None, limits: WarcLimits | None = None) -> None:
        self.path = path
        self.location = location or str(path)
        self.limits = limits or WarcLimits()

    def __iter__(self) -> Iterator[WarcPage | Drop]:
        """Every counted record once; a cut input is exactly one ``truncated_input`` drop.

        The drop is the cut record when the cut falls inside a counted record (its outcome is
        then ``truncated_input``, not also another reason), else "after WARC record #n" (the
        next record's header was cut, or the readable data ended between records).
        """
        number = 0
        try:
            with contextlib.closing(open_warc(self.path)) as handle:
                for number, record in enumerate(ArchiveIterator(handle, no_record_parse=True), start=1):
                    counted = record.rec_type in COUNTED_TYPES
                    try:
                        outcome = self._page_or_drop(record, number) if counted else None
                        # read the rest of the record (warcio would, to skip it): a cut inside a
                        # record already decided (too_large, not_html, a page) must be found here,
                        # not at the next record's header as a second drop for the same record
                        while record.raw_stream.read(1 << 16):
                            pass
                        _check_whole(record)
                    except WarcCut as exc:
                        url = _header(record, "WARC-Target-URI") or ""
                        record_id = _header(record, "WARC-Record-ID") or f"record#{number}"
                        label = f"{record_id} {url}" if counted else f"after WARC record #{number - 1}"
                        yield Drop("truncated_input", f"{self.location}: {label}",
                                   f"cut inside WARC record #{number}: {exc}")
                        return
                    if outcome is not None:
                        yield outcome
        except (ArchiveLoadFailed, WarcCut, TruncatedInputError, *CODEC_ERRORS) as exc:
            yield Drop("truncated_input", f"{self.location}: after WARC record #{number}",
                       f"{type(exc).__name__}: {exc}")

    def _page_or_drop(self, record: ArcWarcRecord, number: int) -> WarcPage | Drop:
        url = _header(record, "WARC-Target-URI") or ""
        record_id = _header(record, "WARC-Record-ID") or f"record#{number}"
        where = f"{self.location}: {record_id} {url}"
        common = {
            "url": url, "record_id": record_id, "date": _header(record, "WARC-Date"), "number": number,
            "digest": _header(record, "WARC-Payload-Digest") or _header(record, "WARC-Block-Digest"),
        }
        if record.rec_type == "revisit":
            return Drop("revisit", where)
        if record.rec_type == "conversion":
            return self._text_page(record, where, common)
        return self._html_page(record, where, common)

    def _text_page(self, record: ArcWarcRecord, where: str, common: dict) -> WarcPage | Drop:
        content_type = _header(record, "Content-Type")
        try:
            body = _read_bounded(record.raw_stream, self.limits.max_body_bytes)
        except _BODY_ERRORS as exc:
            return Drop("bad_record_body", where, f"{type(exc).__name__}: {exc}")
        if body is None:
            return Drop("too_large", where)
        if len(body.strip()) < self.limits.min_body_bytes:
            return Drop("empty", where)
        return WarcPage(kind="text", body=body, content_type=content_type,
                        refers_to=_header(record, "WARC-Refers-To"), **common)

    def _html_page(self, record: ArcWarcRecord, where: str, common: dict) -> WarcPage | Drop:
        try:
            record.http_headers = _HTTP_PARSER.parse(record.raw_stream)
        except (StatusAndHeadersParserException, EOFError, ValueError, UnicodeDecodeError) as exc:
            return Drop("bad_http_headers", where, f"{type(exc).__name__}: {exc}")
        if not (record.http_headers.protocol or "").upper().startswith("HTTP/"):
            return Drop("bad_http_headers", where, f"not an HTTP status line: {record.http_headers.statusline[:80]!r}")
        status_text = (record.http_headers.get_statuscode() or "").strip()
        status = int(status_text) if status_text.isdigit() else None
        if status is None or not 200 <= status < 300:
            return Drop("http_status", where)
        content_type = record.http_headers.get_header("Content-Type")
        identified = _header(record, "WARC-Identified-Payload-Type")
        media = _media_type(content_type) or _media_type(identified)
        if media not in HTML_TYPES and _media_type(identified) not in HTML_TYPES:
            return Drop("not_html", where)
        try:
            body = _read_bounded(record.content_stream(), self.limits.max_body_bytes)
        except WarcCut:
            raise  # the file is cut, not the HTTP body broken
        except Exception as exc:  # broken chunking / gzip / brotli inside the HTTP body
            return Drop("bad_http_body", where, f"{type(exc).__name__}: {exc}")
        if body is None:
            return Drop("too_large", where)
        if len(body.strip()) < self.limits.min_body_bytes:
            return Drop("empty", where)
        return WarcPage(kind="html", body=body, content_type=content_type, http_status=status, **common)


def visible_text(html: str, max_chars: int = 4000) -> str:
    """A crude tag-stripped view of a page (no parsing), good enough for a language guess."""
    text = _TAG.sub(" ", _SCRIPT_STYLE.sub(" ", html[: max_chars * 8]))
    return _SPACES.sub(" ", html_lib.unescape(text)).strip()[:max_chars]


#: ``text -> None`` to go on, or a drop reason; e.g. a language pre-filter before extraction.
PreFilter = Callable[[str], str | None]


@dataclass
class WarcReader:
    """Turns WARC/WET records into Documents: decode once, pre-filter, extract once.

    The document id is derived from the id of the *response* record (WET's ``WARC-Refers-To``), so
    the same capture read from its WARC or its WET file gets the same id.
    """

    path: Path
    location: str
    source: str
    input_key: str
    limits: WarcLimits = field(default_factory=WarcLimits)
    extract: ExtractOptions = field(default_factory=ExtractOptions)
    prefilter: PreFilter | None = None
    min_text_chars: int = 1

    def __iter__(self) -> Iterator[Record]:
        # each page is extracted in a killable helper (html_text.bounded_extractor): an overrun page
        # is one cleaner_timeout drop
        with bounded_extractor(self.extract, self.limits.max_body_bytes) as extractor:
            for item in WarcRecords(self.path, self.location, self.limits):
                yield item if isinstance(item, Drop) else self._document(item, extractor)

    def _document(self, page: WarcPage, extractor: BoundedCleaner[Extraction]) -> Record:
        where = page.label(self.location)
        meta = {
            "url": page.url, "warc_record_id": page.refers_to or page.record_id, "digest": page.digest,
            "date": page.date, "input": self.input_key,
        }
        if page.kind == "text":
            text = decode_html(page.body, "text/plain; charset=utf-8").text
        else:
            decoded = decode_html(page.body, page.content_type)
            if self.prefilter is not None and (reason := self.prefilter(visible_text(decoded.text))):
                return Drop(reason, where)
            try:
                extracted = extractor.run(where, decoded.text)
            except Exception as exc:  # trafilatura / lxml failure on one page
                return Drop("extract_error", where, f"{type(exc).__name__}: {exc}")
            if isinstance(extracted, Drop):
                return extracted
            if extracted.lost:  # table cells that showed text in the page and none in the output
                return Drop("extract_lost_text", where, f"{len(extracted.lost)} table-cell words lost, e.g. "
                            + " ".join(extracted.lost[:8]))
            text = extracted.text
            meta.update({"charset": decoded.encoding, "charset_method": decoded.method})
            if extracted.fallback:
                meta["extract_fallback"] = extracted.fallback
        text = text.strip()
        if len(text) < self.min_text_chars:
            return Drop("no_text", where)
        return Document(id=make_doc_id(self.source, str(meta["warc_record_id"])), text=text, source=self.source,
                        meta=meta)
