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
access and entity resolution off. A truncated ``.gz`` keeps every record read before the cut
and adds one ``truncated_input`` drop.

Bounds per citation (:class:`CitationBounds`): a record's size is the bytes the parser consumed
between its start and end tags (to lxml's 32 KiB read granularity). A record over
``max_record_bytes`` is a ``record_too_large`` drop, and its elements are freed as they are
parsed, so it never sits in memory whole. A record over ``inline_bytes`` (real citations are
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
    """A ``PubmedArticle``, ``PubmedBookArticle`` or bare ``MedlineCitation`` element as a Citation."""
    tag = record.tag
    if tag == "PubmedBookArticle":
        book = record.find("BookDocument")
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
_RECORD_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
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


class _CountingReader:
    """A binary stream that counts the bytes the parser has consumed (records' sizes)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data: bytes = self.stream.read(size)
        self.count += len(data)
        return data


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
    root_tag = "unknown"
    number = 0
    bounds = bounds or CitationBounds()
    parse = _CitationParser(bounds)
    try:
        with open_binary(path) as stream:
            reader = _CountingReader(stream)
            events = etree.iterparse(reader, events=("start", "end"), resolve_entities=False, no_network=True,
                                     load_dtd=False, huge_tree=False, remove_comments=True)
            depth = 0
            record_start = 0
            for event, elem in events:
                if event == "start":
                    depth += 1
                    if depth == 1:
                        root_tag = elem.tag
                    elif depth == 2:
                        record_start = reader.count
                    continue
                depth -= 1
                size = reader.count - record_start
                if depth != 1 and not (depth == 2 and elem.tag == "BookDocument"):
                    if depth > 1 and size > bounds.max_record_bytes:
                        _clear(elem)  # an oversized record is freed as it is parsed, never held whole
                    continue
                number += 1
                if depth == 1 and size > bounds.max_record_bytes:
                    where = f"{file}:record {number}"
                    yield Drop("record_too_large", where, f"{where}: more than {size:,} bytes > "
                                                          f"{bounds.max_record_bytes:,}; not parsed")
                else:
                    yield from _record(elem, state, file, root_tag, number, require_abstract, max_record_chars,
                                       functools.partial(parse.sized, size))
                _clear(elem)
    except (*CODEC_ERRORS, TruncatedInputError, zlib.error, etree.XMLSyntaxError) as exc:  # type: ignore[misc]  # mypy: no star in except
        reason = "truncated_input" if _is_truncation(exc) else "xml_error"
        yield from state.kept.values()
        yield Drop(reason, f"{file}:record {number + 1}",
                   f"{file}: unreadable after record {number}: {type(exc).__name__}: {exc}")
        return
    finally:
        parse.close()
    yield from state.kept.values()


def _is_truncation(exc: BaseException) -> bool:
    if not isinstance(exc, etree.XMLSyntaxError):
        return True
    message = str(exc).lower()
    return any(s in message for s in ("premature end", "end of data", "not properly terminated", "eof"))


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
    if tag not in RECORD_TAGS or tag == "BookDocument":
        yield Drop("unknown_record", where, f"{where}: unexpected <{tag}>")
        return
    try:
        cit = parse(elem, where) if parse is not None else parse_citation(elem)
    except (ValueError, AttributeError) as exc:
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


def deleted_pmids(path: Path) -> list[str]:
    """The PMIDs a file's ``DeleteCitation`` lists name (streamed; a cut-off file gives what was read)."""
    pmids: list[str] = []
    try:
        with open_binary(path) as stream:
            for _, elem in etree.iterparse(stream, events=("end",), tag="DeleteCitation", resolve_entities=False,
                                           no_network=True, load_dtd=False, huge_tree=False):
                pmids.extend((n.text or "").strip() for n in elem.findall("PMID"))
                _clear(elem)
    except (*CODEC_ERRORS, TruncatedInputError, zlib.error, etree.XMLSyntaxError):  # type: ignore[misc]
        pass  # the reader already recorded the truncation as a drop
    return [p for p in pmids if p]


def write_pmid_index(out: Path, source: str, key: str, input_path: Path) -> int:
    """Index one staged input: (ordinal, id, pmid, version) of its documents and its deletions.

    Written beside the staging shards so the run-wide rule (:func:`cross_file_drops`) runs in
    DuckDB, out of core, whatever the number of citations.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

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
        pq.write_table(pa.table(rows, schema=schema), tmp)
    deletes = deleted_pmids(input_path)
    with atomic_path(stage / DELETE_INDEX) as tmp:
        pq.write_table(pa.table({"input_key": [key] * len(deletes), "pmid": deletes},
                                schema=pa.schema([("input_key", pa.string()), ("pmid", pa.string())])), tmp)
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
