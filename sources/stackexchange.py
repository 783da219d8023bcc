"""StackExchange: per-site ``Posts.xml`` dumps -> one document per question with its answers.

Inputs, by file name: ``coffee.stackexchange.com.7z`` (a whole site dump), ``stackoverflow.com-Posts.7z``
(the big sites are split per table), or an extracted ``coffee.stackexchange.com-Posts.xml`` /
``coffee.stackexchange.com/Posts.xml`` (optionally ``.gz``/``.bz2``/``.zst``).

Reading is streamed in constant memory whatever the site's size (stackoverflow's ``Posts.xml``
is about 100 GB): ``Posts.xml`` bytes come out of py7zr (or the file) in bounded chunks, an
incremental lxml parser turns them into rows, and rows go in batches to Parquet files in a
scratch directory. DuckDB then sorts them out of core by (question, questions first, answer score
descending, answer id) and the reader walks that order, so it holds one question's thread at a
time. Score is sorted as a number (RedPajama sorted it as a string: "9" above "10").

The XML parser never resolves external entities or loads a DTD, and a dump that declares
entities at all (a real one never does) is refused with a reasoned drop before any row is read.

Records: each question (kept, or dropped by a filter), each answer whose question is not in the
dump (``orphan_answer``), each other row type such as tag wikis (``other_post_type``) and each
unreadable row is one record, so ``records_in == kept + dropped`` holds per site.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import operator
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import py7zr
import pyarrow as pa
import pyarrow.parquet as pq
from lxml import etree
from py7zr.io import Py7zIO, WriterFactory

from core.arrow_columns import arrow_table
from core.atomic import write_json_atomic
from core.bounded import DEFAULT_TIMEOUT_S, BoundedCleaner
from core.compressed import CODEC_ERRORS, open_binary, read_blocks
from core.document import Document, Drop, InputSpec, make_doc_id
from core.driver import PhaseRun, SourcePhases
from core.filters.basic import FieldPredicate
from core.layout import state_path
from core.manifest import InputRecord
from core.pipeline import RunContext
from core.steps import Record, Step
from sources.formats.html_text import html_to_text

log = logging.getLogger(__name__)

SOURCE = "stackexchange"
QUESTION, ANSWER = 1, 2
FEED_BYTES = 1 << 20
PROLOG_BYTES = 64 * 1024
#: Non-English sites of the network, by host prefix (``ru.stackoverflow.com``).
SITE_LANGUAGES = {"ru": "ru", "es": "es", "pt": "pt", "ja": "ja"}

ROW_SCHEMA = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("post_type", pa.int32()),
    pa.field("thread", pa.int64()),
    pa.field("score", pa.int64()),
    pa.field("accepted_answer_id", pa.int64()),
    pa.field("title", pa.string()),
    pa.field("body", pa.string()),
    pa.field("tags", pa.string()),
    pa.field("created", pa.string()),
])


# -- names -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SiteFile:
    """What an input file is: which site, and which table (None for a whole-site archive)."""

    site: str
    table: str | None

    @property
    def has_posts(self) -> bool:
        """Whole-site archives and ``Posts`` files hold the posts; ``-Users.7z`` and the like do not."""
        return self.table is None or self.table.lower() == "posts"


def site_file(path: Path) -> SiteFile:
    """``stackoverflow.com-Posts.7z`` -> (stackoverflow.com, Posts); ``x.stackexchange.com.7z`` -> (x..., None)."""
    if path.is_dir():  # an extracted site dump: the folder names the site
        return SiteFile(path.name, None)
    name = path.name
    for suffix in (".gz", ".bz2", ".zst", ".xz"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    stem = name[:-3] if name.lower().endswith(".7z") else name
    if stem.lower().endswith(".xml"):
        stem = stem[:-4]
        if "-" not in stem:  # <site>/Posts.xml: the folder names the site
            return SiteFile(path.parent.name or stem, stem)
    site, sep, table = stem.rpartition("-")
    if sep and "." in site and table and "." not in table:
        return SiteFile(site, table)
    return SiteFile(stem, None)


def site_language(site: str) -> str:
    """``ru.stackoverflow.com`` -> ``ru``; every other site is English."""
    return SITE_LANGUAGES.get(site.split(".", 1)[0], "en")


def is_meta_site(site: str) -> bool:
    """``meta.stackoverflow.com``, ``coffee.meta.stackexchange.com``: sites about the sites."""
    return site.startswith("meta.") or ".meta." in site


# Post bodies go through the shared :func:`sources.formats.html_text.html_to_text`, which keeps the text
# after an HTML comment (the reader's own converter dropped the rest of the enclosing element
# after ``<!-- ... -->``); that output change is recipe version 0.2.0 (core.version), so finished
# StackExchange work from 0.1.0 is redone rather than trusted.


# -- streaming Posts.xml into Parquet batches -------------------------------------------------
class RefusedInput(Exception):
    """The dump must not be parsed (it declares entities)."""


_ENTITY_DECLARATION = re.compile(rb"<!ENTITY", re.I)
_ROOT_START = re.compile(rb"<(?:posts|row)\b")
#: Where one row ends: the next row's start tag, or the root's end tag. A raw ``<`` cannot occur
#: inside a well-formed attribute value, so neither can appear inside a row.
_ROW_BOUNDARY = re.compile(rb"<row[\s/>]|</posts\s*>")
_ROW_ID = re.compile(rb"\bId=\"(\d{1,20})\"")
#: A row (one post with its attributes) larger than this is dropped unparsed as ``record_too_large``.
#: The largest real posts are a few hundred KB (bodies are capped at 30,000 characters); the bound
#: stays under libxml2's 10 MB attribute limit so the parser never meets a value it would refuse.
MAX_ROW_BYTES = 8 << 20


@dataclass
class RowProblem:
    """An unreadable row: where, why (``reason`` is the Drop reason), and what went wrong."""

    row: int
    detail: str
    reason: str = "malformed_row"


def _int_or_none(value: str | None) -> int | None:
    if value is None or value == "":
        return None
    return int(value)


def parse_tags(value: str | None) -> list[str]:
    """``<coffee><espresso>`` (old dumps) or ``|coffee|espresso|`` (new) -> ``[coffee, espresso]``."""
    return re.findall(r"[^<>|]+", value or "")


def _row_label(data: bytes | bytearray) -> str:
    """``Id=123`` from a row's first bytes, so a bad row can be found in the dump."""
    match = _ROW_ID.search(data, 0, 4096)
    return f"Id={match.group(1).decode()}" if match else "Id unknown"


class PostsSink:
    """Receives ``Posts.xml`` bytes in chunks, writes rows to Parquet batches under ``directory``.

    Rows are recovered one by one: the byte stream is split at row start tags and each row is
    parsed as its own small XML element, so one bad row (invalid UTF-8, a broken attribute, a
    post past :data:`MAX_ROW_BYTES`) is one :class:`RowProblem` and the next row parses as usual.
    One streaming XML parser over the whole file, as before, stops at the first error and loses
    every later row of the site. Parsing rows separately also means no entity declared in the
    prolog can ever be expanded inside a row (and declaring one is refused outright).
    Memory: at most one row plus one fed chunk is buffered.
    """

    def __init__(self, directory: Path, batch_rows: int = 20_000, max_problems: int = 1_000,
                 max_row_bytes: int = MAX_ROW_BYTES) -> None:
        self.directory = directory
        self.batch_rows = batch_rows
        self.max_problems = max_problems
        self.max_row_bytes = max_row_bytes
        self.row_parser = etree.XMLParser(
            resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False,
            remove_comments=True, remove_pis=True,
        )
        self.buffer = bytearray()
        self.prolog_checked = False
        self.skipping = False  # inside a row past the size bound: discard until the next row
        self.skip_label = ""
        self.ended = False  # saw </posts>
        self.rows = 0
        self.problems: list[RowProblem] = []
        self.problem_count = 0
        self.problem_reasons: dict[str, int] = {}
        self.columns: dict[str, list[Any]] = {name: [] for name in ROW_SCHEMA.names}
        self.writer: pq.ParquetWriter | None = None
        self.files = 0
        self.max_buffered = 0  # most bytes held between chunks (about one row: constant memory)

    # bytes in
    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Split ``data`` (any chunk size) into rows and store them; raises only on refused input."""
        view = memoryview(data)
        for start in range(0, len(view), FEED_BYTES):
            self.buffer += view[start:start + FEED_BYTES]
            if not self.prolog_checked:
                self._check_prolog()
            if self.prolog_checked:
                self._split()
            self.max_buffered = max(self.max_buffered, len(self.buffer))

    def finish(self, error: str | None = None) -> None:
        """Parse the last row, account for an early end, and flush the last batch.

        ``error`` says why the input stopped early (a codec or archive error). A dump that ends
        before ``</posts>`` keeps every complete row; the cut row (or, when the cut fell between
        rows, the end of the readable data) is one ``truncated_input`` problem, never two.
        """
        try:
            if not self.prolog_checked:
                self.ended = error is None and re.search(rb"<posts\s*/>", self.buffer) is not None
                self.prolog_checked = True
            elif self.skipping:
                self._skip_problem()
            elif not self.ended and self.buffer.strip():
                self._last_piece(bytes(self.buffer), error or "the input ended inside this row")
            if not self.ended:
                self._problem("truncated_input", f"end of readable data after row {self.rows}: "
                              f"{error or 'no </posts>'}")
            self.buffer = bytearray()
        finally:
            self.close_writer()

    def _last_piece(self, piece: bytes, why: str) -> None:
        """Account for what follows the last complete boundary of a cut input, exactly once.

        The piece is a row, possibly cut; or a whole row plus the first bytes of the next start
        tag (``<r``), which is where the cut fell. Either the cut row or, when every row in the
        piece is whole, the end of the readable data is the one ``truncated_input`` problem.
        """
        following = piece.find(b"<", 1)  # a raw "<" after the row start can only open the next tag
        head, tail = (piece[:following], piece[following:]) if following > 0 else (piece, b"")
        whole = self._row(head, cut=None if tail else why)
        if tail and not tail.startswith(b"</"):  # "</pos": the root's end tag was cut, not a row
            self.rows += 1
            self._problem("truncated_input", f"row cut in its start tag: {why}")
        elif whole or tail:
            self._problem("truncated_input", f"end of readable data after row {self.rows}: {why}")
        self.ended = True

    def _check_prolog(self) -> None:
        """Refuse entity declarations; the check ends where the first row begins."""
        head = bytes(self.buffer[:PROLOG_BYTES])
        first = _ROW_BOUNDARY.search(head)
        root = _ROOT_START.search(head)
        if _ENTITY_DECLARATION.search(head[: root.start()] if root else head):
            raise RefusedInput("the XML declares entities (<!ENTITY ...>); a real dump never does")
        if first is not None:
            del self.buffer[: first.start()]
            self.prolog_checked = True
            self.ended = self.buffer.startswith(b"</")
        elif len(self.buffer) >= PROLOG_BYTES:
            raise RefusedInput(f"no <row> in the first {PROLOG_BYTES:,} bytes: not a Posts.xml")

    def _split(self) -> None:
        """Parse every complete row in the buffer; keep the unfinished one (or skip a huge one)."""
        buffer = self.buffer
        position = 0
        while not self.ended:
            boundary = _ROW_BOUNDARY.search(buffer, position + 1)
            if boundary is None:
                break
            if self.skipping:
                self._skip_problem()
            elif boundary.start() - position > self.max_row_bytes:
                self.skip_label = _row_label(buffer[position:position + 4096])
                self._skip_problem()
            else:
                self._row(bytes(buffer[position:boundary.start()]))
            position = boundary.start()
            self.ended = buffer.startswith(b"</", position)
        if self.ended:
            position = len(buffer)
        del buffer[:position]
        if not self.skipping and len(buffer) > self.max_row_bytes:
            self.skipping = True
            self.skip_label = _row_label(buffer[:4096])
        if self.skipping and len(buffer) > 24:
            # keep the row's "<row" (the boundary search starts after it) and a tail that may hold
            # the first bytes of the next row's start tag; discard the rest of the oversized row
            del buffer[4:-16]

    def _skip_problem(self) -> None:
        self.rows += 1
        self.skipping = False
        self._problem("record_too_large", f"{self.skip_label}: row over {self.max_row_bytes:,} bytes")

    def _problem(self, reason: str, detail: str) -> None:
        self.problem_count += 1
        self.problem_reasons[reason] = self.problem_reasons.get(reason, 0) + 1
        if len(self.problems) < self.max_problems:
            self.problems.append(RowProblem(self.rows, detail, reason))

    def _row(self, data: bytes, cut: str | None = None) -> bool:
        """Parse one ``<row .../>`` element on its own; a bad one becomes a problem.

        ``cut`` (why the input ended) marks the last piece of a truncated input: if it does not
        parse, it is the cut row (``truncated_input``). Returns True when the row parsed.
        """
        self.rows += 1
        try:
            element = etree.fromstring(data, self.row_parser)
        except etree.XMLSyntaxError as exc:
            if cut is not None:
                self._problem("truncated_input", f"{_row_label(data)}: cut: {cut}")
                return False
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as bad:
                self._problem("invalid_utf8", f"{_row_label(data)}: {bad}")
                return False
            self._problem("malformed_row", f"{_row_label(data)}: XMLSyntaxError: {exc}")
            return False
        if element.tag != "row":
            self._problem("malformed_row", f"{_row_label(data)}: <{element.tag}> is not a row")
            return False
        self._add({str(key): str(value) for key, value in element.attrib.items()})
        if len(self.columns["id"]) >= self.batch_rows:
            self._flush()
        return True

    def _add(self, row: Mapping[str, str]) -> None:
        try:
            post_id = int(row["Id"])
            post_type = int(row["PostTypeId"])
            parent = _int_or_none(row.get("ParentId"))
            score = _int_or_none(row.get("Score")) or 0
            accepted = _int_or_none(row.get("AcceptedAnswerId"))
        except (KeyError, ValueError) as exc:
            self._problem("malformed_row", f"{type(exc).__name__}: {exc}; Id={row.get('Id')!r}")
            return
        qa = post_type in (QUESTION, ANSWER)
        values = (post_id, post_type, post_id if post_type == QUESTION else parent if post_type == ANSWER else None,
                  score, accepted, row.get("Title") if qa else None, row.get("Body") if qa else None,
                  row.get("Tags"), row.get("CreationDate"))
        for name, value in zip(ROW_SCHEMA.names, values, strict=True):
            self.columns[name].append(value)

    def _flush(self) -> None:
        if not self.columns["id"]:
            return
        table = arrow_table(self.columns, ROW_SCHEMA)  # pa.table would import pandas
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.directory / "rows.parquet", ROW_SCHEMA, compression="lz4")
            self.files += 1
        self.writer.write_table(table)
        self.columns = {name: [] for name in ROW_SCHEMA.names}

    def close_writer(self) -> None:
        """Write the rows still buffered and close the Parquet file (safe to call twice)."""
        self._flush()
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class _SinkWriter(Py7zIO):
    """py7zr pushes the decompressed member here; we forward it to the sink (nothing kept)."""

    def __init__(self, sink: PostsSink) -> None:
        self.sink = sink
        self.written = 0

    def write(self, s: bytes | bytearray) -> int:
        self.sink.feed(s)
        self.written += len(s)
        return len(s)

    def read(self, size: int | None = None) -> bytes:
        return b""

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.written

    def flush(self) -> None:
        return None

    def size(self) -> int:
        return self.written


class _SinkFactory(WriterFactory):
    def __init__(self, sink: PostsSink) -> None:
        self.sink = sink

    def create(self, filename: str) -> Py7zIO:
        return _SinkWriter(self.sink)


#: Errors py7zr raises for damaged archives (truncated, bad CRC, bad headers).
ARCHIVE_ERRORS: tuple[type[BaseException], ...] = (py7zr.exceptions.ArchiveError, *CODEC_ERRORS, KeyError,
                                                    ValueError, IndexError, TypeError)


def posts_member(archive: py7zr.SevenZipFile) -> str | None:
    """The name of ``Posts.xml`` inside a site archive (at any depth), if it has one."""
    names = [n for n in archive.getnames() if n.rsplit("/", 1)[-1].lower() == "posts.xml"]
    return min(names, key=len) if names else None


_POSTS_NAMES = tuple(f"posts.xml{suffix}" for suffix in ("", ".gz", ".bz2", ".zst", ".xz"))


def posts_path(path: Path) -> Path:
    """The file to read for an input: ``path`` itself, or a site folder's ``Posts.xml``.

    ``7z x coffee.stackexchange.com.7z`` leaves ``Posts.xml`` (with ``Users.xml`` and the other
    tables) in a folder; that folder is a natural input for the site. Raises
    ``FileNotFoundError`` naming the folder when it holds no ``Posts.xml`` (any case, optionally
    compressed).
    """
    if not path.is_dir():
        return path
    found = sorted(p for p in path.iterdir() if p.name.lower() in _POSTS_NAMES and p.is_file())
    if not found:
        raise FileNotFoundError(f"site folder {path} has no Posts.xml (expected the extracted site dump)")
    return min(found, key=lambda p: (_POSTS_NAMES.index(p.name.lower()), p.name))


class _Feedable:
    """What :func:`feed_posts` pushes bytes into (a :class:`PostsSink` or a row counter)."""

    def feed(self, data: bytes | bytearray | memoryview) -> None: ...

    def finish(self, error: str | None = None) -> None: ...


def feed_posts(path: Path, sink: PostsSink | _Feedable) -> None:
    """Push the ``Posts.xml`` bytes of ``path`` (a ``.7z``, an XML file or a site folder) into ``sink``.

    A truncated or damaged input is not an exception here: every byte the codec or archive could
    produce reaches the sink, then ``sink.finish(error)`` records why it stopped. Raises only
    ``RefusedInput`` and ``FileNotFoundError`` (an archive or folder without ``Posts.xml``).
    """
    path = posts_path(path)
    try:
        if path.name.lower().endswith(".7z"):
            with py7zr.SevenZipFile(path, mode="r") as archive:
                member = posts_member(archive)
                if member is None:
                    raise FileNotFoundError(f"{path.name} has no Posts.xml")
                archive.extract(targets=[member], factory=_SinkFactory(sink))  # type: ignore[arg-type]
        else:
            with open_binary(path) as stream:
                for block in read_blocks(stream, FEED_BYTES):
                    sink.feed(block)
    except (RefusedInput, FileNotFoundError):
        raise  # not a truncation (FileNotFoundError is an OSError, like the codec errors)
    except ARCHIVE_ERRORS as exc:
        sink.finish(f"{type(exc).__name__}: {exc}")
        return
    sink.finish()


# -- counting posts (for choosing the N largest sites) ----------------------------------------
class _RowCounter(_Feedable):
    """Counts ``<row`` tags in a byte stream, chunk boundaries included."""

    def __init__(self) -> None:
        self.count = 0
        self.tail = b""
        self.error: str | None = None

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        for start in range(0, len(view), FEED_BYTES):
            joined = self.tail + bytes(view[start:start + FEED_BYTES])
            self.count += joined.count(b"<row ")
            self.tail = joined[-4:]  # "<row " is 5 bytes: a split one has at most 4 before the cut

    def finish(self, error: str | None = None) -> None:
        self.error = error


def count_posts(path: Path) -> int:
    """Number of readable posts (rows) in a site's ``Posts.xml``; one streaming pass, nothing parsed.

    A truncated input counts the rows before the cut: they will be kept, so the site ranks by
    them instead of being skipped.
    """
    counter = _RowCounter()
    feed_posts(path, counter)
    if counter.error is not None:
        log.warning("%s: counted %d posts before the input ended (%s)", path, counter.count, counter.error)
    return counter.count


def posts_bytes(path: Path) -> int:
    """Size of ``Posts.xml`` (uncompressed, from the 7z header; the file size otherwise): no pass."""
    path = posts_path(path)
    if path.name.lower().endswith(".7z"):
        with py7zr.SevenZipFile(path, mode="r") as archive:
            member = posts_member(archive)
            sizes = {info.filename: info.uncompressed for info in archive.list()}
            return int(sizes.get(member, 0)) if member else 0
    return path.stat().st_size


@dataclass(frozen=True)
class SiteSize:
    """A site input and its size for ranking."""

    key: str
    site: str
    has_posts: bool
    size: int
    error: str | None = None


def select_sites(
    sizes: Sequence[SiteSize], top: int | None, include_meta: bool = False
) -> tuple[list[str], dict[str, str]]:
    """The input keys of the ``top`` largest sites, and a skip reason for every other input.

    Ties break by site name so the choice is deterministic; ``top`` None or 0 keeps all. A site
    given twice (its ``.7z`` and its extracted ``Posts.xml``) is kept once, by its first key.
    """
    skipped: dict[str, str] = {}
    candidates: list[SiteSize] = []
    seen: dict[str, str] = {}
    for entry in sorted(sizes, key=lambda s: s.key):
        if not entry.has_posts:
            skipped[entry.key] = "not_posts_table: this file holds another table, not Posts"
        elif entry.error is not None:
            skipped[entry.key] = f"unreadable: {entry.error}"
        elif not include_meta and is_meta_site(entry.site):
            skipped[entry.key] = "meta_site: a site about a site (set include_meta to keep)"
        elif entry.site in seen:
            skipped[entry.key] = f"duplicate_site: {entry.site} already read from {seen[entry.site]}"
        else:
            seen[entry.site] = entry.key
            candidates.append(entry)
    ranked = sorted(candidates, key=lambda s: (-s.size, s.site))
    keep = ranked if not top else ranked[:top]
    for rank, entry in enumerate(ranked[len(keep):], start=len(keep) + 1):
        skipped[entry.key] = f"not_in_top_sites: rank {rank} of {len(ranked)} with size {entry.size} (top {top})"
    return sorted(e.key for e in keep), skipped


#: What makes a site unmeasurable (it is then skipped, with the error as the reason).
_SIZE_ERRORS: tuple[type[BaseException], ...] = (RefusedInput, FileNotFoundError, *ARCHIVE_ERRORS)


def measure_site(spec: InputSpec, rank_by: str, cache: Path | None = None) -> SiteSize:
    """The size of one site input for ranking, read from ``cache`` when the file is unchanged.

    Counting posts is a full decompression pass, so the result is kept (a JSON file keyed by the
    input's size and mtime) and a re-run does not pay it again. A truncated input ranks by the
    rows before the cut (they are readable and will be kept); an input that cannot be read at all
    gets size 0 and the error, so it is reported as skipped rather than failing the ranking.
    """
    try:  # a site folder is identified by its Posts.xml, which can change while the folder does not
        stat = posts_path(spec.path).stat()
        fingerprint = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    except OSError:
        fingerprint = spec.fingerprint()
    identity = {"fingerprint": fingerprint, "rank_by": rank_by}
    if cache is not None and cache.exists():
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            stored = json.loads(cache.read_text(encoding="utf-8"))
            if {k: stored.get(k) for k in identity} == identity:
                return SiteSize(**stored["size"])
    named = site_file(spec.path)
    size, error = 0, None
    if named.has_posts:
        try:
            size = count_posts(spec.path) if rank_by == "posts" else posts_bytes(spec.path)
        except _SIZE_ERRORS as exc:
            error = f"{type(exc).__name__}: {exc}"
    result = SiteSize(spec.key, named.site, named.has_posts, size, error)
    if cache is not None and error is None:
        write_json_atomic(cache, {**identity, "size": dataclasses.asdict(result)})
    return result


# -- grouping and documents --------------------------------------------------------------------
GROUP_SQL = """
SELECT post_type, id, thread, score, accepted_answer_id, title, body, tags, created
FROM read_parquet(?)
ORDER BY thread NULLS LAST, post_type, score DESC, id
"""


@dataclass
class Thread:
    """A question and its answers, answers already in score order."""

    question: dict[str, Any]
    answers: list[dict[str, Any]] = field(default_factory=list)


def iter_threads(rows_file: Path, work_dir: Path, memory_limit: str, batch_rows: int = 2_000
                 ) -> Iterator[Thread | tuple[str, dict[str, Any]]]:
    """Yield each Thread in question-id order, and ``(reason, row)`` for rows that join none.

    The sort is DuckDB's, spilling to ``work_dir`` beyond ``memory_limit``: only one batch of
    rows and one thread are in Python memory at a time.
    """
    con = duckdb.connect(str(work_dir / "group.duckdb"))
    try:
        con.execute(f"SET memory_limit='{memory_limit}'")
        con.execute(f"SET temp_directory='{(work_dir / 'spill').as_posix()}'")
        con.execute("SET threads=1")
        con.execute("SET preserve_insertion_order=false")
        reader = con.sql(GROUP_SQL, params=[str(rows_file)]).to_arrow_reader(batch_rows)
        current: Thread | None = None
        for batch in reader:
            for row in batch.to_pylist():
                kind = row["post_type"]
                if kind == QUESTION:
                    if current is not None:
                        yield current
                    current = Thread(row)
                elif kind == ANSWER and current is not None and row["thread"] == current.question["id"]:
                    current.answers.append(row)
                elif kind == ANSWER:
                    yield "orphan_answer", row
                else:
                    yield "other_post_type", row
        if current is not None:
            yield current
    finally:
        con.close()


#: A thread whose post bodies add up to more than this is dropped (``record_too_large``): a real
#: question with all its answers is rarely past 1 MB; beyond this it is a dump error or an attack.
MAX_THREAD_CHARS = 16 << 20
#: Threads below this size are cleaned in-process (the HTML parser and the walk are linear, so a
#: thread this small cleans in milliseconds); larger ones go through the killable helper.
INLINE_THREAD_CHARS = 16 * 1024


def thread_text(thread: Thread) -> str:
    """``Q: title`` and the question, then ``A:`` and each answer, best score first."""
    question = thread.question
    parts = [f"Q: {' '.join((question['title'] or '').split())}\n{html_to_text(question['body'] or '')}".rstrip()]
    parts.extend(f"A: {html_to_text(answer['body'] or '')}".rstrip() for answer in thread.answers)
    return "\n\n".join(parts)


@dataclass
class StackExchangeReader:
    """Reads one site input into Documents (one per question) and Drops."""

    spec: InputSpec
    scratch_dir: Path | None = None
    memory_limit: str = "1GB"
    batch_rows: int = 20_000
    cleaner_timeout_s: float = DEFAULT_TIMEOUT_S
    max_thread_chars: int = MAX_THREAD_CHARS

    @property
    def site(self) -> str:
        """The site host name, from the file name."""
        return site_file(self.spec.path).site

    def __iter__(self) -> Iterator[Record]:
        if self.scratch_dir is not None:
            self.scratch_dir.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="stackexchange-", dir=self.scratch_dir))
        try:
            sink = PostsSink(work, batch_rows=self.batch_rows)
            stopped = self._load(sink)
            yield from self._problems(sink)
            if stopped is not None:
                yield stopped
            rows_file = work / "rows.parquet"
            if rows_file.exists():
                with BoundedCleaner(thread_text, timeout_s=self.cleaner_timeout_s,
                                    max_input=self.max_thread_chars, inline_below=INLINE_THREAD_CHARS,
                                    shared=True) as cleaner:
                    yield from self._documents(rows_file, work, cleaner)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _problems(self, sink: PostsSink) -> Iterator[Drop]:
        """One Drop per unreadable row: the first ``max_problems`` with details, the rest counted."""
        where = self.spec.location
        listed: dict[str, int] = {}
        for problem in sink.problems:
            listed[problem.reason] = listed.get(problem.reason, 0) + 1
            yield Drop(problem.reason, f"{where}: row {problem.row}", problem.detail, self.language)
        for reason, count in sink.problem_reasons.items():
            for _ in range(count - listed.get(reason, 0)):
                yield Drop(reason, f"{where}: row (details beyond the first {len(sink.problems)})",
                           "details not kept", self.language)

    @property
    def language(self) -> str:
        """The site's language."""
        return site_language(self.site)

    def _load(self, sink: PostsSink) -> Drop | None:
        """Stream the posts into ``sink``; a Drop describing why it stopped early, if it did."""
        try:
            feed_posts(self.spec.path, sink)
        except RefusedInput as exc:
            return Drop("xml_entity_declared", f"{self.spec.location}: prolog", str(exc), self.language)
        except FileNotFoundError as exc:
            return Drop("no_posts_xml", self.spec.location, str(exc), self.language)
        finally:
            sink.close_writer()
        return None

    def _documents(self, rows_file: Path, work: Path, cleaner: BoundedCleaner[str]) -> Iterator[Record]:
        where = self.spec.location
        for item in iter_threads(rows_file, work, self.memory_limit):
            if isinstance(item, tuple):
                reason, row = item
                yield Drop(reason, f"{where}: post {row['id']} (type {row['post_type']})", language=self.language)
                continue
            size = sum(len(post["body"] or "") for post in (item.question, *item.answers))
            text = cleaner.run(f"{where}: question {item.question['id']}", item, size=size)
            if isinstance(text, Drop):
                yield dataclasses.replace(text, language=self.language)
                continue
            yield self._document(item, text)

    def _document(self, thread: Thread, text: str) -> Document:
        question = thread.question
        site = self.site
        return Document(
            id=make_doc_id(SOURCE, f"{site}/{question['id']}"),
            text=text,
            source=SOURCE,
            meta={
                "site": site,
                "question_id": question["id"],
                "url": f"https://{site}/questions/{question['id']}",
                "title": question["title"],
                "score": question["score"],
                "answer_count": len(thread.answers),
                "answer_scores": [a["score"] for a in thread.answers],
                "accepted_answer_id": question["accepted_answer_id"],
                "tags": parse_tags(question["tags"]),
                "timestamp": question["created"],
                "language": self.language,
            },
        )


class MinAnswers(FieldPredicate):
    """Drops questions with fewer than ``min_answers`` answers (``too_few_answers``; 0 keeps unanswered questions).

    The generic field predicate on ``meta.answer_count`` (a question without the field has none),
    with ``operator.le`` so the filter pickles to process-pool workers.
    """

    def __init__(self, min_answers: int) -> None:
        super().__init__("meta.answer_count", partial(operator.le, min_answers), "too_few_answers",
                         name="min_answers", default=0)
        self.min_answers = min_answers


@dataclass
class StackExchangeRecipe:
    """The StackExchange source for :mod:`core.pipeline` (one input = one site)."""

    min_answers: int = 0
    scratch_dir: Path | None = None
    memory_limit: str = "1GB"
    name: str = SOURCE

    def input_language(self, spec: InputSpec) -> str | None:
        """A site's language, from its host name."""
        return site_language(site_file(spec.path).site)

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Yield one record per question (and per row that joins no question)."""
        return iter(StackExchangeReader(spec, self.scratch_dir, self.memory_limit))

    def steps(self) -> list[Step]:
        """The optional answer-count floor."""
        return [MinAnswers(self.min_answers)] if self.min_answers > 0 else []

    def partition(self, doc: Document) -> str:
        """One directory per language (nearly all English)."""
        return doc.language or "und"


# -- ranking as a phase of the source run -------------------------------------------------------
def _skipped_record(spec: InputSpec, reason: str, ctx: RunContext) -> InputRecord:
    return InputRecord(input_key=spec.key, source=SOURCE, location=spec.location, language=None,
                       config_hash=ctx.config_hash, size=posts_path(spec.path).stat().st_size, status="skipped",
                       error=reason)


def ranking_phases(top_sites: int, rank_by: str, include_meta: bool = False) -> SourcePhases:
    """Rank the sites before staging: the ``top_sites`` largest go on, the others end as ``skipped``.

    One ``measure_site`` call per input through the driver's executor (the ``site-size`` task
    under Prefect), its size cached next to the run's state; the ranking is a table of the run.
    """
    table: list[dict[str, Any]] = []

    def before_stage(ctx: RunContext, specs: list[InputSpec], run: PhaseRun) -> dict[str, InputRecord]:
        futures = [run.executor.submit(measure_site, s, rank_by, state_path(ctx.out, SOURCE, s.key, f"size-{rank_by}"))
                   for s in specs]
        sizes = [f.result() for f in futures]
        keep, skipped = select_sites(sizes, top_sites, include_meta)
        run.log.info("%d site inputs; keeping %d (top %s by %s)", len(specs), len(keep), top_sites or "all", rank_by)
        table.extend({"input": s.key, "site": s.site, f"size ({rank_by})": s.size,
                      "kept": s.key not in skipped, "reason": skipped.get(s.key, "")}
                     for s in sorted(sizes, key=lambda s: (-s.size, s.key)))
        return {s.key: _skipped_record(s, skipped[s.key], ctx) for s in specs if s.key in skipped}

    def tables() -> list[tuple[str, list[dict[str, Any]], str]]:
        if not table:  # a re-run with nothing to do ranks nothing: the last ranking stands
            return []
        return [("stackexchange-sites", table, "Sites ranked by size: kept or skipped, with the reason")]

    return SourcePhases(before_stage=before_stage, tables=tables)
