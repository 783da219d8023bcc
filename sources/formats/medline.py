"""PubMed/MEDLINE abstracts: baseline and update files (``*.xml.gz``), old and new roots.

Two root generations occur: ``MedlineCitationSet`` (up to 2016: ``MedlineCitation`` records
directly under the root, ``DateCreated``) and ``PubmedArticleSet`` (``PubmedArticle`` holding a
``MedlineCitation`` and ``PubmedData``; ``PubmedBookArticle`` for books). Both may end with
``DeleteCitation`` lists of PMIDs.

A document is the title, a blank line, then the abstract; a structured abstract keeps its labels
(``METHODS: …``; NLM's ``UNLABELLED`` label is not a label). ``OtherAbstract`` (other
languages, plain-language summaries) is left out. Author lists, affiliations, MeSH terms,
grants and reference lists are metadata, not text. A non-English article's translated title
comes in brackets (``[Title].``): the brackets are removed.

Versions: within a file a later record of a PMID replaces an earlier one (``superseded_version``
drop), a higher ``PMID/@Version`` wins over a lower one, and a ``DeleteCitation`` removes
records of that PMID read before it (``deleted_citation``); each deletion instruction is itself
counted (``delete_instruction``), so records_in == kept + dropped. Deciding "last wins" needs the
whole file, so kept documents are held until the file ends: memory is bounded by one update file
(NLM caps them at 30,000 citations), not by the run. Across files, a run keeps every file's
survivors; ``flows.pubmed`` applies the newest-wins rule across the run's files.

Parsing is streamed (``iterparse``, each record cleared after use) with DTD loading, network
access and entity resolution off; a prolog that declares entities (XXE, billion laughs) refuses
the file before any record is read (``xml_entity_declared``, as docs/reliability.md says). A
citation whose XML is broken (a bad byte, a mismatched tag) is one ``xml_error`` drop: the
parse error's line and column locate it, the bytes up to the citation's end tag are skipped and
a fresh parser reads on (a citation whose start is in the skipped bytes is counted too). A file
that cannot be read to its end (a truncated ``.gz``, XML cut mid-citation inside a valid one,
corrupt compression, a broken start tag) keeps every record read before the stop and adds one
``truncated_input`` drop naming the record number and byte where it stopped, so the input is
``partial``, never ``done`` with citations uncounted.

Bounds per citation (:class:`CitationBounds`): a record's size is the bytes the parser consumed
between its start and end tags (to lxml's 32 KiB read granularity). A record over
``max_record_bytes`` is one ``record_too_large`` drop naming its number and PMID: the parser is
stopped at the bound (libxml2 runs with ``huge_tree``, so a text node over 10 MB is no error,
and the bound, not libxml2's, decides), the rest of the record is skipped as raw bytes up to its
end tag and a fresh parser goes on with the next record, so it never sits in memory whole and
the citations after it are kept. A record over ``inline_bytes`` (real citations are
2-10 KB; a few hundred KB is already abnormal) is cleaned in a :class:`core.bounded.BoundedCleaner`
helper under ``timeout_s`` (``cleaner_timeout`` past it). Below that the cleaning runs in this
process: it is ``itertext`` and one whitespace regex, linear in the record, so a 64 KB record
cannot take long, and a round trip per citation would cost more than the parse itself.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

from core.bounded import BoundedCleaner
from core.compressed import CODEC_ERRORS, TruncatedInputError, open_binary
from core.document import Document, Drop, make_doc_id
from core.steps import Record

SOURCE = "pubmed_abstracts"
RECORD_TAGS = ("PubmedArticle", "PubmedBookArticle", "MedlineCitation", "DeleteCitation", "BookDocument")
_WS = re.compile(r"\s+")
#: How much the parser asks for at a time when it gives no size; how much of the last reads is
#: kept to find an end tag cut between two reads.
READ_SIZE = 32 << 10
TAG_WINDOW = 64
#: How much of what the parser read is kept to find where a parse error is (two reads).
WINDOW_BYTES = 64 << 10
#: The prolog (XML declaration, DOCTYPE) is searched for entity declarations in this many bytes.
PROLOG_BYTES = 64 << 10
_ELEMENT_START = re.compile(rb"<[A-Za-z_]")
_ENTITY_DECLARATION = re.compile(rb"<!ENTITY", re.I)
#: MEDLINE's ISO 639-2 article languages -> ISO 639-1 (the common ones).
LANGUAGES = {"eng": "en", "ger": "de", "fre": "fr", "spa": "es", "ita": "it", "rus": "ru", "jpn": "ja", "chi": "zh",
             "por": "pt", "pol": "pl", "dut": "nl", "swe": "sv", "dan": "da", "nor": "no", "fin": "fi", "cze": "cs",
             "hun": "hu", "tur": "tr", "kor": "ko", "heb": "he", "gre": "el", "ukr": "uk", "rum": "ro"}


@dataclass(frozen=True)
class Citation:
    """One citation as read: PMID, version, title, abstract parts and metadata."""

    pmid: str
    version: int
    title: str
    abstract: list[tuple[str | None, str]]
    journal: str | None
    year: str | None
    article_language: str | None
    copyright: str | None
    kind: str

    def text(self) -> str:
        """Title, blank line, abstract parts (``LABEL: text`` for labelled ones)."""
        parts = [f"{label}: {text}" if label else text for label, text in self.abstract]
        return "\n\n".join(p for p in [self.title, "\n".join(parts)] if p)


def _text(node: Any) -> str:
    return _WS.sub(" ", "".join(node.itertext())).strip() if node is not None else ""


def _title(raw: str) -> str:
    """Remove the brackets NLM puts around a translated title (``[Title].``)."""
    if raw.startswith("[") and (raw.endswith("].") or raw.endswith("]")):
        inner = raw[1:raw.rindex("]")]
        return inner + ("." if raw.endswith(".") and not inner.endswith((".", "?", "!")) else "")
    return raw


def _abstract(container: Any) -> tuple[list[tuple[str | None, str]], str | None]:
    abstract = container.find("Abstract") if container is not None else None
    if abstract is None:
        return [], None
    parts: list[tuple[str | None, str]] = []
    for node in abstract.findall("AbstractText"):
        text = _text(node)
        if not text:
            continue
        label = (node.get("Label") or "").strip()
        parts.append((None if not label or label.upper() == "UNLABELLED" else label, text))
    return parts, _text(abstract.find("CopyrightInformation")) or None


def parse_citation(record: Any) -> Citation:
    """A ``PubmedArticle``, ``PubmedBookArticle`` (or bare ``BookDocument``, as a ``BookDocumentSet``
    holds them) or bare ``MedlineCitation`` element as a Citation."""
    tag = record.tag
    if tag in ("PubmedBookArticle", "BookDocument"):
        book = record if tag == "BookDocument" else record.find("BookDocument")
        pmid_node = book.find("PMID")
        title = _text(book.find("ArticleTitle")) or _text(book.find("Book/BookTitle"))
        parts, copyright_ = _abstract(book)
        year = _text(book.find("Book/PubDate/Year")) or None
        return Citation(pmid_node.text.strip(), int(pmid_node.get("Version") or 1), _title(title), parts,
                        _text(book.find("Book/BookTitle")) or None, year,
                        _text(book.find("Language")) or None, copyright_, "book")
    citation = record.find("MedlineCitation") if tag == "PubmedArticle" else record
    pmid_node = citation.find("PMID")
    if pmid_node is None or not (pmid_node.text or "").strip():
        raise ValueError("record without PMID")
    article = citation.find("Article")
    if article is None:
        raise ValueError(f"PMID {pmid_node.text.strip()}: no Article element")
    parts, copyright_ = _abstract(article)
    year = (_text(article.find("Journal/JournalIssue/PubDate/Year"))
            or _text(article.find("Journal/JournalIssue/PubDate/MedlineDate"))[:4] or None)
    return Citation(
        pmid=pmid_node.text.strip(), version=int(pmid_node.get("Version") or 1),
        title=_title(_text(article.find("ArticleTitle")) or _text(article.find("VernacularTitle"))),
        abstract=parts, journal=_text(article.find("Journal/Title")) or None, year=year,
        article_language=_text(article.find("Language")) or None, copyright=copyright_, kind="article",
    )


#: The parser for one serialized record in the helper: no DTD, no entities, no network.
_RECORD_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True,
                                 remove_comments=True)


def citation_from_xml(data: bytes) -> Citation:
    """:func:`parse_citation` of one serialized record (what the bounded helper runs)."""
    return parse_citation(etree.fromstring(data, _RECORD_PARSER))


@dataclass(frozen=True)
class CitationBounds:
    """Size and time bounds of one citation (see the module docstring)."""

    inline_bytes: int = 64 << 10
    max_record_bytes: int = 16 << 20
    timeout_s: float = 30.0


class _CitationParser:
    """Parses records inline when small, in a bounded helper (started on first need) when large."""

    def __init__(self, bounds: CitationBounds) -> None:
        self.bounds = bounds
        self.cleaner: BoundedCleaner[Citation] | None = None

    def __call__(self, elem: Any, size: int, where: str) -> Citation | Drop:
        if size <= self.bounds.inline_bytes:
            return parse_citation(elem)
        if self.cleaner is None:
            self.cleaner = BoundedCleaner(citation_from_xml, timeout_s=self.bounds.timeout_s,
                                          max_input=self.bounds.max_record_bytes, shared=True)
        return self.cleaner.run(where, etree.tostring(elem))

    def sized(self, size: int, elem: Any, where: str) -> Citation | Drop:
        """:meth:`__call__` with the size first (for ``functools.partial``)."""
        return self(elem, size, where)

    def close(self) -> None:
        if self.cleaner is not None:
            self.cleaner.close()


class _RecordTooLarge(Exception):
    """Raised from the parser's read when the open record passes its byte bound (see :class:`_Stream`)."""


class _Stream:
    """The decompressed file as the parser reads it: counts bytes, bounds the open record, resyncs.

    ``count`` is the offset in the decompressed file up to which the parser has read (records'
    sizes, positions in drops). While a record is open (``record_start`` set by the walk at its
    start tag), a read past ``cap`` bytes into it raises :class:`_RecordTooLarge` instead of
    handing the parser more of it, so no record (not even one text node: libxml2 runs with
    ``huge_tree``) grows much past the bound in memory. :meth:`skip_past` then discards the raw
    bytes up to the record's end tag and :meth:`restart` puts the root's start tag in front of
    the rest, for a fresh parser. The last :data:`WINDOW_BYTES` served (and the newlines before
    them) locate a parse error's line and column, where the search for the end tag starts.
    """

    def __init__(self, stream: Any, cap: int) -> None:
        self.stream = stream
        self.cap = cap
        self.count = 0
        self.eof = False
        self.record_start: int | None = None
        self._pending = b""
        self._window = b""
        self._window_lines = 0

    def _raw(self, size: int) -> bytes:
        if self._pending:
            data, self._pending = self._pending[:size], self._pending[size:]
            return data
        read: bytes = self.stream.read(size)
        return read

    def read(self, size: int = -1) -> bytes:
        """What the parser reads (at most ``READ_SIZE`` bytes at a time)."""
        if self.record_start is not None and self.count - self.record_start > self.cap:
            raise _RecordTooLarge()
        data = self._raw(size if 0 < size <= READ_SIZE else READ_SIZE)
        self.eof = not data
        self.count += len(data)
        window = self._window + data
        if len(window) > WINDOW_BYTES:
            cut = len(window) - WINDOW_BYTES
            self._window_lines += window.count(b"\n", 0, cut)
            window = window[cut:]
        self._window = window
        return data

    def head(self, size: int) -> bytes:
        """The first ``size`` bytes (the whole file if shorter), left in place to be read again."""
        parts, total = [], 0
        while total < size:
            data = self.stream.read(size - total)
            if not data:
                break
            parts.append(data)
            total += len(data)
        self._pending = b"".join(parts) + self._pending
        return self._pending[:size]

    def error_offset(self, line: int, column: int) -> int | None:
        """The file offset of a parse error at ``line``/``column`` of this parser, or None when it
        lies before the window (columns count characters, so this is at or before the error)."""
        newlines = line - 1 - self._window_lines
        if newlines < 0:
            return None
        at = 0
        for _ in range(newlines):
            found = self._window.find(b"\n", at)
            if found < 0:
                return None
            at = found + 1
        return self.count - len(self._window) + min(at + max(column - 1, 0), len(self._window))

    def skip_past(self, tag: str, offset: int | None = None) -> int | None:
        """Discard bytes up to and including the first ``</tag>`` at or after file ``offset``
        (default: the end of what the parser read, less a tag cut between reads).

        Returns how many ``<tag`` start tags the skipped bytes held (records lost with the open
        one, each to be counted), or None when the file ends first.
        """
        end_tag, start_tag = f"</{tag}>".encode(), re.compile(b"<" + re.escape(tag.encode()) + rb"[\s/>]")
        window_start = self.count - len(self._window)
        start = len(self._window) - TAG_WINDOW if offset is None else offset - window_start
        window = self._window[max(0, start):]
        self._window, self._window_lines = b"", 0
        starts = 0
        while True:
            found = window.find(end_tag)
            if found >= 0:
                starts += sum(1 for m in start_tag.finditer(window) if m.start() < found)
                rest = window[found + len(end_tag):]
                self._pending = rest + self._pending
                self.count -= len(rest)  # counted when read here, counted again when the parser reads it
                self.record_start = None
                return starts
            keep = max(0, len(window) - len(end_tag))
            starts += sum(1 for m in start_tag.finditer(window) if m.start() < keep)
            data = self._raw(READ_SIZE)
            if not data:
                self.eof = True
                return None
            self.count += len(data)
            window = window[keep:] + data

    def restart(self, root_start: bytes) -> None:
        """Serve ``root_start`` before the rest, so a new parser sees a document again (not counted:
        ``count`` stays an offset in the file)."""
        self._pending = root_start + self._pending
        self.count -= len(root_start)
        self._window, self._window_lines = b"", 0


def citation_document(cit: Citation, file: str, root: str) -> Document:
    """A Citation as a pipeline Document (English: MEDLINE titles and abstracts are in English)."""
    language = cit.article_language or ""
    return Document(
        id=make_doc_id(SOURCE, f"{cit.pmid}.{cit.version}"), text=cit.text(), source=SOURCE,
        meta={"pmid": cit.pmid, "pmid_version": cit.version, "title": cit.title, "journal": cit.journal,
              "year": cit.year, "article_language": LANGUAGES.get(language, language or None),
              "abstract_labels": [label for label, _ in cit.abstract if label], "copyright": cit.copyright,
              "kind": cit.kind, "root": root, "file": file, "language": "en"},
    )


class _FileState:
    """Survivors of one file, by PMID, in first-seen order (see the module docstring)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.kept: dict[str, Document] = {}

    def add(self, doc: Document) -> Drop | None:
        pmid = str(doc.meta["pmid"])
        old = self.kept.get(pmid)
        if old is None:
            self.kept[pmid] = doc
            return None
        if int(old.meta["pmid_version"]) > int(doc.meta["pmid_version"]):
            return Drop("superseded_version", f"{self.file}:PMID {pmid} v{doc.meta['pmid_version']}")
        self.kept[pmid] = doc
        return Drop("superseded_version", f"{self.file}:PMID {pmid} v{old.meta['pmid_version']}")

    def delete(self, pmid: str) -> Drop | None:
        old = self.kept.pop(pmid, None)
        return Drop("deleted_citation", f"{self.file}:PMID {pmid}") if old is not None else None


def _clear(elem: Any) -> None:
    """Free a finished record and the siblings before it (constant memory on big files)."""
    elem.clear(keep_tail=False)
    parent = elem.getparent()
    if parent is not None:
        while elem.getprevious() is not None:
            del parent[0]


def iter_medline(path: Path, require_abstract: bool = True, max_record_chars: int = 1_000_000,
                 bounds: CitationBounds | None = None) -> Iterator[Record]:
    """Yield the file's surviving Documents (at its end) and a Drop for every record not kept."""
    file = path.name
    state = _FileState(file)
    bounds = bounds or CitationBounds()
    parse = _CitationParser(bounds)
    try:
        for item in _records(path, bounds):
            if isinstance(item, Drop):
                yield item
                continue
            elem, number, size, root = item
            yield from _record(elem, state, file, root, number, require_abstract, max_record_chars,
                               functools.partial(parse.sized, size))
    finally:
        parse.close()
    yield from state.kept.values()


def _records(path: Path, bounds: CitationBounds) -> Iterator[tuple[Any, int, int, str] | Drop]:
    """Each record element (number, size in bytes, root tag) in file order, and the reading's drops.

    An element is valid until the next item (it is cleared then). A record over
    ``max_record_bytes`` is one ``record_too_large`` drop naming its number and PMID, skipped in
    bounded memory (:class:`_Stream`), and reading goes on after it; so is a record whose XML is
    broken (a bad byte, a mismatched tag: ``xml_error``). A prolog declaring entities refuses
    the file (``xml_entity_declared``); a file that cannot be read to its end (cut, corrupt
    compression, XML broken between records or twice at one place) ends with one
    ``truncated_input`` naming the position.
    """
    file = path.name
    walk = _Walk(file, bounds.max_record_bytes)
    try:
        with open_binary(path) as raw:
            stream = walk.stream = _Stream(raw, bounds.max_record_bytes)
            head = stream.head(PROLOG_BYTES)
            root = _ELEMENT_START.search(head)
            if _ENTITY_DECLARATION.search(head[: root.start()] if root else head):
                yield Drop("xml_entity_declared", f"{file}: prolog",
                           f"{file}: the XML declares entities (<!ENTITY ...>); a MEDLINE file never does")
                return
            while True:
                try:
                    yield from walk.events(stream)
                    return
                except _RecordTooLarge:
                    reason, why, offset = "record_too_large", f"runs past {stream.cap:,} bytes (max_record_bytes)", None
                except etree.XMLSyntaxError as exc:
                    offset = stream.error_offset(*exc.position)
                    if not walk.record_tag or offset is None or offset <= walk.last_error:
                        raise  # before any record, or the same error again: reading cannot go on
                    walk.last_error = offset
                    reason, why = "xml_error", f"{type(exc).__name__}: {exc}"
                opened = stream.record_start is not None  # else the parse failed in a record's start tag
                lost = stream.skip_past(walk.record_tag, offset)
                if lost is None:
                    raise TruncatedInputError(f"the file ends inside <{walk.record_tag}> ({why})")
                yield walk.skipped(reason, why, opened)
                for _ in range(lost):
                    yield walk.skipped(reason, f"skipped while reading on after record {walk.number - 1}")
                stream.restart(f"<{walk.root_tag}>".encode())
    except (*CODEC_ERRORS, TruncatedInputError, zlib.error, etree.XMLSyntaxError) as exc:  # type: ignore[misc]  # mypy: no star in except
        yield walk.truncated(exc)


class _Walk:
    """One file's record walk, kept across parser restarts (see :func:`_records`)."""

    def __init__(self, file: str, cap: int) -> None:
        self.file = file
        self.cap = cap
        self.number = 0
        self.root_tag = "unknown"
        self.record_tag = ""
        self.pmid: str | None = None
        self.position = 0
        self.last_error = -1
        self.stream: _Stream | None = None

    def events(self, stream: _Stream) -> Iterator[tuple[Any, int, int, str] | Drop]:
        """Records of one parser's run over ``stream`` (a new parser after each skipped record)."""
        events = etree.iterparse(stream, events=("start", "end"), resolve_entities=False, no_network=True,
                                 load_dtd=False, huge_tree=True, remove_comments=True)
        depth = 0
        for event, elem in events:
            if event == "start":
                depth += 1
                if depth == 1:
                    self.root_tag = str(elem.tag)
                elif depth == 2:
                    stream.record_start = self.position = stream.count
                    self.record_tag, self.pmid = str(elem.tag), None
                continue
            depth -= 1
            if depth == 1:
                yield from self._record(elem, stream)
                stream.record_start = None
            elif depth > 1 and elem.tag == "PMID" and self.pmid is None:
                self.pmid = (elem.text or "").strip()

    def _record(self, elem: Any, stream: _Stream) -> Iterator[tuple[Any, int, int, str] | Drop]:
        self.number += 1
        size = stream.count - self.position
        if size > self.cap:  # ended within the read that crossed the bound
            where = f"{self.file}:record {self.number}"
            yield Drop("record_too_large", where, f"{where}: more than {size:,} bytes > {self.cap:,}; not parsed")
        else:
            yield elem, self.number, size, self.root_tag
        _clear(elem)

    def skipped(self, reason: str, why: str, opened: bool = True) -> Drop:
        """The drop for a record skipped to its end tag (with its PMID when it was read).

        ``opened`` is False when the parse failed in the record's start tag (no start event): it
        is the next record, not the last one started.
        """
        self.number += 1
        where = f"{self.file}:record {self.number}"
        pmid = f" (PMID {self.pmid})" if self.pmid and opened else ""
        self.pmid = None
        return Drop(reason, where, f"{where}{pmid}: <{self.record_tag}> {why}; skipped")

    def truncated(self, exc: BaseException) -> Drop:
        """The one drop of a file that cannot be read to its end, naming where it stopped."""
        count = self.stream.count if self.stream is not None else 0
        cut = "the file ends" if self.stream is not None and self.stream.eof else "unreadable"
        return Drop("truncated_input", f"{self.file}:record {self.number + 1}",
                    f"{self.file}: {cut} after record {self.number} (byte {count:,}): {type(exc).__name__}: {exc}")


def _record(elem: Any, state: _FileState, file: str, root: str, number: int, require_abstract: bool,
            max_chars: int, parse: Callable[[Any, str], Citation | Drop] | None = None) -> Iterator[Drop]:
    tag = elem.tag
    where = f"{file}:record {number}"
    if tag == "DeleteCitation":
        for pmid_node in elem.findall("PMID"):
            pmid = (pmid_node.text or "").strip()
            yield Drop("delete_instruction", f"{file}:delete PMID {pmid}")
            removed = state.delete(pmid)
            if removed is not None:
                yield removed
        return
    if tag not in RECORD_TAGS:
        yield Drop("unknown_record", where, f"{where}: unexpected <{tag}>")
        return
    try:
        cit = parse(elem, where) if parse is not None else parse_citation(elem)
    except (ValueError, AttributeError, etree.LxmlError) as exc:
        yield Drop("bad_record", where, f"{where}: {exc}")
        return
    if isinstance(cit, Drop):  # bounded: cleaner_timeout, record_too_large, cleaner_crashed
        yield cit
        return
    where = f"{file}:PMID {cit.pmid}"
    if require_abstract and not cit.abstract:
        yield Drop("no_abstract", where)
        return
    if not cit.title and not cit.abstract:
        yield Drop("empty_text", where)
        return
    doc = citation_document(cit, file, root)
    if len(doc.text) > max_chars:
        yield Drop("too_large", where, f"{where}: {len(doc.text)} characters > {max_chars}")
        return
    replaced = state.add(doc)
    if replaced is not None:
        yield replaced


# -- across files: newest version wins, deletions reach back ---------------------------------
#: Columns of the per-input PMID index the cross-file rule reads.
PMID_INDEX = "pmids.parquet"
DELETE_INDEX = "deletes.parquet"


def deleted_pmids(path: Path, bounds: CitationBounds | None = None) -> list[str]:
    """The PMIDs a file's ``DeleteCitation`` lists name (streamed as the reader does; a cut-off file
    gives what was read, the reader already counted the cut)."""
    pmids: list[str] = []
    for item in _records(path, bounds or CitationBounds()):
        if not isinstance(item, Drop) and item[0].tag == "DeleteCitation":
            pmids.extend((n.text or "").strip() for n in item[0].findall("PMID"))
    return [p for p in pmids if p]


def write_pmid_index(out: Path, source: str, key: str, input_path: Path) -> int:
    """Index one staged input: (ordinal, id, pmid, version) of its documents and its deletions.

    Written beside the staging shards so the run-wide rule (:func:`cross_file_drops`) runs in
    DuckDB, out of core, whatever the number of citations.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from core.arrow_columns import arrow_table
    from core.atomic import atomic_path
    from core.layout import staging_dir
    from core.shards import read_documents

    stage = staging_dir(out, source, key)
    rows: dict[str, list[Any]] = {"input_key": [], "ordinal": [], "id": [], "pmid": [], "version": []}
    ordinal = 0
    for part in sorted(stage.glob("part-*.parquet")):
        for doc in read_documents(part):
            rows["input_key"].append(key)
            rows["ordinal"].append(ordinal)
            rows["id"].append(doc.id)
            rows["pmid"].append(str(doc.meta.get("pmid")))
            rows["version"].append(int(doc.meta.get("pmid_version") or 1))
            ordinal += 1
    schema = pa.schema([("input_key", pa.string()), ("ordinal", pa.int64()), ("id", pa.string()),
                        ("pmid", pa.string()), ("version", pa.int64())])
    stage.mkdir(parents=True, exist_ok=True)
    with atomic_path(stage / PMID_INDEX) as tmp:
        pq.write_table(arrow_table(rows, schema), tmp)  # not pa.table: it imports pandas
    deletes = deleted_pmids(input_path)
    with atomic_path(stage / DELETE_INDEX) as tmp:
        pq.write_table(arrow_table({"input_key": [key] * len(deletes), "pmid": deletes},
                                   pa.schema([("input_key", pa.string()), ("pmid", pa.string())])), tmp)
    return ordinal


def cross_file_drops(out: Path, source: str, keys: list[str]) -> list[dict[str, Any]]:
    """Drop-list rows for citations a later file replaced or deleted (inputs ranked by key).

    NLM numbers baseline and update files in release order (``pubmed24n0001`` … ``n1219`` then
    updates ``n1220`` …), so a later key is a newer file. For each PMID the record with the
    highest (version, file rank, position) wins; the others are ``superseded_version``. A
    ``DeleteCitation`` in file *k* removes that PMID's records in files before *k*
    (``deleted_citation``); a record re-added after the deletion survives.
    """
    import duckdb

    from core.layout import duplicates_path, staging_dir

    ranked = [(rank, key, staging_dir(out, source, key)) for rank, key in enumerate(sorted(keys))]
    present = [(rank, key, stage) for rank, key, stage in ranked if (stage / PMID_INDEX).exists()]
    if not present:
        return []
    con = duckdb.connect()
    try:
        con.execute("CREATE TEMP TABLE ranks (input_key VARCHAR, rank INTEGER)")
        con.executemany("INSERT INTO ranks VALUES (?, ?)", [[key, rank] for rank, key, _ in present])
        pmid_files = [str(stage / PMID_INDEX) for _, _, stage in present]
        delete_files = [str(stage / DELETE_INDEX) for _, _, stage in present if (stage / DELETE_INDEX).exists()]
        deletes_sql = ("SELECT d.pmid, max(r.rank) AS del_rank, arg_max(d.input_key, r.rank) AS del_key "
                       "FROM read_parquet(?) d JOIN ranks r USING (input_key) GROUP BY d.pmid"
                       if delete_files else
                       "SELECT ''::VARCHAR AS pmid, 0 AS del_rank, ''::VARCHAR AS del_key WHERE false")
        dropped = duplicates_path(out, source)
        con.execute("CREATE TEMP TABLE dropped AS " + (
            "SELECT input_key, ordinal FROM read_parquet(?)" if dropped.exists() else
            "SELECT ''::VARCHAR AS input_key, 0::BIGINT AS ordinal WHERE false"), [str(dropped)] if dropped.exists() else [])
        params: list[Any] = [pmid_files] + ([delete_files] if delete_files else [])
        # documents already on the drop list (exact duplicates) neither win nor get a second reason
        result = con.execute(
            "WITH e AS (SELECT p.*, r.rank FROM read_parquet(?) p JOIN ranks r USING (input_key) "
            "           ANTI JOIN dropped x ON p.input_key = x.input_key AND p.ordinal = x.ordinal), "
            f"d AS ({deletes_sql}), "
            "w AS (SELECT e.*, row_number() OVER win AS n, first_value(id) OVER win AS winner FROM e "
            "      WINDOW win AS (PARTITION BY pmid ORDER BY version DESC, rank DESC, ordinal DESC)) "
            "SELECT w.input_key, w.ordinal, w.id, w.pmid, w.winner, d.del_rank > w.rank AS deleted, d.del_key "
            "FROM w LEFT JOIN d USING (pmid) WHERE n > 1 OR d.del_rank > w.rank ORDER BY w.input_key, w.ordinal",
            params,
        ).fetchall()
    finally:
        con.close()
    rows = []
    for input_key, ordinal, doc_id, pmid, winner, deleted, del_key in result:
        if deleted:
            rows.append({"input_key": input_key, "ordinal": ordinal, "id": doc_id, "step": "pubmed_versions",
                         "reason": "deleted_citation", "matched_id": None,
                         "detail": f"PMID {pmid} deleted by {del_key}"})
        else:
            rows.append({"input_key": input_key, "ordinal": ordinal, "id": doc_id, "step": "pubmed_versions",
                         "reason": "superseded_version", "matched_id": winner,
                         "detail": f"PMID {pmid}: a newer record replaces this one"})
    return rows
