"""Wikipedia: stream MediaWiki ``pages-articles`` XML dumps and clean wikitext to plain text.

Reading: the dump is decompressed in 1 MiB blocks (bz2/xz/gz or plain; multistream bz2 too, or
only a byte range of its streams: :mod:`sources.formats.wikipedia_multistream`) and cut into
``<page>…</page>`` chunks with ``bytes.find``, each parsed on its own. Dumps write those tags on
their own lines and escape ``<`` inside text, so the cut is exact; parsing page by page keeps
memory constant (a page past ``MAX_PAGE_BYTES`` is skipped unread), makes one malformed page
cost one page (not the rest of the file), and ignores the XML namespace, so export schemas 0.10
and 0.11 read alike. The page's text is cut out and unescaped directly when it is plain
character data; ElementTree parses the rest (and the whole page otherwise). Entities are never
resolved beyond XML's five.

Cleaning: :class:`sources.formats.wikitext.FastWikitextCleaner`, linear regex stages that keep prose,
link text and headings as plain lines, the content of ``<nowiki>``, ``<pre>``, ``<syntaxhighlight>``
and ``<source>`` as written (code keeps its indentation), and drop templates, refs, comments, tables, ``<math>``,
file/image/category links and language interwiki links (local names from siteinfo plus
:mod:`sources.formats.wikipedia_names`), under a size and time bound per page (:mod:`core.bounded`); then
the tidy-up (:func:`sources.formats.wikitext.tidy`) removes what markup removal left behind, only
at the sites it marked (never text the article has), and collapses whitespace. The mwparserfromhell tree walk used before is kept as
``WikitextCleaner(engine="tree")``, the reference the benchmark compares against.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mwparserfromhell
from mwparserfromhell.nodes import (
    Argument,
    ExternalLink,
    Heading,
    HTMLEntity,
    Tag,
    Template,
    Text,
    Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

from core.bounded import BoundedCleaner
from core.compressed import CODEC_ERRORS, open_binary, read_blocks
from core.document import Document, Drop, InputSpec, make_doc_id
from core.filters.basic import MinLength
from core.steps import Record, Step
from sources.formats.wikipedia_multistream import first_stream_end, parse_range_key, read_streams
from sources.formats.wikipedia_names import drop_prefixes
from sources.formats.wikitext import (
    DROPPED_TAGS,
    LINE_BREAK_TAGS,
    REMOVED,
    Bounds,
    CleanerTimeout,
    FastWikitextCleaner,
    RecordTooLarge,
    drop_noncharacters,
    protect_literals,
    remove_balanced,
    tidy,
)

log = logging.getLogger(__name__)

SOURCE = "wikipedia"


_BRACE_TOKENS = re.compile(r"\{\{|\}\}")
_TABLE_TOKENS = re.compile(r"\{\||\|\}")
_DBNAME = re.compile(r"^([a-z][a-z_]*?)wiki$")
_FILE_LANG = re.compile(r"^([a-z][a-z_]*?)wiki-")
_RESIDUE_MARKS = ("{{", "}}", "[[", "]]", "<ref", "<!--", "{|")
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
_REF = re.compile(r"<ref[^>]{0,2000}/>|<ref[^>]{0,2000}>.*?(?:</ref\s*>|$)|</?references[^>]{0,2000}>", re.S | re.I)
_LINK = re.compile(r"\[\[([^\[\]|]*)(?:\|([^\[\]]*))?\]\]")
_COMMENT_CLOSED = re.compile(r"<!--.*?-->", re.S)
_REF_CLOSED = re.compile(r"<ref\b[^>]*/>|<ref\b[^>/]*>.*?</ref\s*>", re.S | re.I)
_ARGUMENT = re.compile(r"\{\{\{[^{}]*\}\}\}")
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_MAX_TEMPLATE_DEPTH = 20
_TITLE_BYTES = re.compile(rb"<title>(.*?)</title>", re.S)
_TEXT_OPEN = re.compile(r"<text\b[^<>]*?(/?)>")
_BAD_AMPERSAND = re.compile(r"&(?!lt;|gt;|amp;|quot;|apos;)")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class SiteInfo:
    """What a dump says about its wiki."""

    dbname: str | None = None
    base_url: str | None = None
    language: str | None = None
    drop_namespace_names: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RawPage:
    """One ``<page>`` as found in the dump, before cleaning."""

    title: str
    namespace: int
    page_id: str
    revision_id: str | None
    timestamp: str | None
    redirect: bool
    text: str


def language_from_dbname(dbname: str | None) -> str | None:
    """``enwiki`` -> ``en``, ``zh_yuewiki`` -> ``zh-yue``; None for other wikis."""
    match = _DBNAME.match(dbname or "")
    return match.group(1).replace("_", "-") if match else None


def language_from_filename(name: str) -> str | None:
    """``dewiki-20220701-pages-articles.xml.bz2`` -> ``de``."""
    match = _FILE_LANG.match(Path(name).name)
    return match.group(1).replace("_", "-") if match else None


def parse_siteinfo(chunk: bytes) -> SiteInfo:
    """Parse a ``<siteinfo>`` element (any export schema)."""
    root = ET.fromstring(_strip_namespaces(chunk))
    dbname = root.findtext("dbname")
    names: set[str] = set()
    for ns in root.iter("namespace"):
        if ns.get("key") in {"6", "14", "-2"} and ns.text:
            names.add(ns.text.casefold())
    return SiteInfo(
        dbname=dbname,
        base_url=root.findtext("base"),
        language=language_from_dbname(dbname),
        drop_namespace_names=frozenset(names),
    )


def _strip_namespaces(chunk: bytes) -> bytes:
    return re.sub(rb'\sxmlns(:\w+)?="[^"]*"', b"", chunk)


def parse_page(chunk: bytes) -> RawPage:
    """Parse one ``<page>…</page>`` chunk; raises ``ET.ParseError`` or ``UnicodeDecodeError``.

    The page's text (nearly all of its bytes) is cut out and unescaped with ``str.replace``;
    ElementTree parses only the small rest. That is exact for text that is plainly well-formed
    character data (only the five predefined entities, no ``<``, no control characters, no
    ``]]>``, which is what dumps write); any other text goes through ElementTree whole, so what
    is malformed still raises and numeric references are resolved by the XML parser itself.
    """
    source = chunk.decode("utf-8")  # strict: invalid UTF-8 is reported, not silently replaced
    opening = _TEXT_OPEN.search(source)
    if opening is not None and opening.group(1) != "/":
        end = source.find("</text>", opening.end())
        content = source[opening.end():end] if end != -1 else ""
        if end != -1 and _plain_character_data(content):
            page = ET.fromstring(source[:opening.end()] + source[end:])
            return _raw_page(page, _unescape_text(content))
    page = ET.fromstring(source)
    return _raw_page(page, None)


def _plain_character_data(content: str) -> bool:
    return ("<" not in content and "]]>" not in content and "&#" not in content
            and _BAD_AMPERSAND.search(content) is None and _CONTROL_CHARS.search(content) is None)


def _unescape_text(content: str) -> str:
    """XML character data to text: line ends normalised as XML parsers do, then the five entities."""
    if "\r" in content:
        content = content.replace("\r\n", "\n").replace("\r", "\n")
    if "&" in content:
        content = (content.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
                   .replace("&apos;", "'").replace("&amp;", "&"))
    return content


def _raw_page(page: ET.Element, text: str | None) -> RawPage:
    revision = page.find("revision")
    if text is None:
        text_el = revision.find("text") if revision is not None else None
        text = (text_el.text or "") if text_el is not None else ""
    return RawPage(
        title=page.findtext("title") or "",
        namespace=int(page.findtext("ns") or 0),
        page_id=(page.findtext("id") or "").strip(),
        revision_id=revision.findtext("id") if revision is not None else None,
        timestamp=revision.findtext("timestamp") if revision is not None else None,
        redirect=page.find("redirect") is not None,
        text=text,
    )


def page_label(chunk: bytes, line: int) -> str:
    """A human pointer to a page that may not parse: its title if findable, and its line."""
    match = _TITLE_BYTES.search(chunk[:4096])
    title = match.group(1).decode("utf-8", "replace") if match else "?"
    return f"page {title!r} at line {line}"


@dataclass
class PageChunk:
    """Raw bytes of one page and the line it started on."""

    data: bytes
    line: int


#: Bytes of XML one page may take before it is dropped unread (``record_too_large``): MediaWiki
#: caps a revision at 2 MiB of wikitext, and escaping can at most about triple it.
MAX_PAGE_BYTES = 16 * 1024 * 1024
_OPENERS: tuple[tuple[bytes, bytes, str], ...] = (
    (b"<page>", b"</page>", "page"),
    (b"<siteinfo", b"</siteinfo>", "siteinfo"),
)


def _own_line_start(buf: bytes, pos: int) -> int:
    """Start of the line holding ``pos`` if only whitespace precedes ``pos`` on it, else -1."""
    start = buf.rfind(b"\n", 0, pos) + 1
    return start if not buf[start:pos].strip() else -1


def _line_end(buf: bytes, pos: int, final: bool) -> int:
    """End (after the newline) of the line holding ``pos`` if only whitespace follows; -1 if not
    known yet (the line continues in the next piece), -2 if other text follows on the line."""
    end = buf.find(b"\n", pos)
    if end == -1:
        if not final:
            return -1
        end = len(buf)
    else:
        end += 1
    return end if not buf[pos:end].strip() else -2


class _ChunkScanner:
    """State of :func:`iter_chunks`: a buffer holding the current chunk and what follows it.

    Positions are indexes into ``buf``; ``pos`` is where its unconsumed part starts. Consuming a
    page only moves ``pos``: slicing the rest off per page copied up to a whole decompressed
    block (several MB) per page, and under Dask's worker default ``MALLOC_TRIM_THRESHOLD_``
    every such copy is a fresh ``mmap`` with its page faults (the Wikipedia stage ran 28% slower
    in a Dask worker than in a plain process). The consumed head is dropped once per piece.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.buf = b""
        self.pos = 0  # start of the unconsumed part of buf, always a line start
        self.line = 1  # line number of buf[pos]
        self.kind: str | None = None
        self.closer = b""
        self.search = 0  # where to look next for an opener or the open chunk's closer
        self.skipping = False  # inside an oversized chunk: its bytes are dropped, not kept
        self.absent = {opener: 0 for opener, _, _ in _OPENERS}  # each opener is not in buf[:absent]

    @property
    def rest(self) -> bytes:
        """The unconsumed bytes (the open chunk and what follows it)."""
        return self.buf[self.pos:]

    def _append(self, piece: bytes) -> None:
        """Add ``piece``, dropping the consumed head (every index shifts down by ``pos``)."""
        shift = self.pos
        self.buf = self.buf[shift:] + piece  # buf[0:] is buf itself: no copy when nothing was read
        self.pos = 0
        self.search = max(self.search - shift, 0)
        for opener, absent in self.absent.items():
            self.absent[opener] = max(absent - shift, 0)

    def _open(self) -> bool:
        """Find the next opener on its own line; consume what comes before it."""
        buf = self.buf
        while True:
            hits = []
            for opener, closer, kind in _OPENERS:
                pos = buf.find(opener, max(self.search, self.absent[opener]))
                if pos == -1:  # remembered, so a rare opener is not searched for again per page
                    self.absent[opener] = max(len(buf) - len(opener), 0)
                else:
                    hits.append((pos, opener, closer, kind))
            if not hits:
                self._consume(buf.rfind(b"\n", self.pos) + 1)  # keep the last partial line
                self.search = max(self.pos, len(buf) - 16)  # an opener may straddle two pieces
                return False
            pos, opener, closer, kind = min(hits)
            start = _own_line_start(buf, pos)
            self.search = pos + len(opener)
            if start != -1:
                self._consume(start)
                self.kind, self.closer = kind, closer
                return True

    def _consume(self, upto: int) -> None:
        """Mark ``buf[pos:upto]`` as read (``upto`` at or before ``pos`` does nothing)."""
        if upto <= self.pos:
            return
        self.line += self.buf.count(b"\n", self.pos, upto)
        self.pos = upto
        self.search = max(self.search, upto)
        for opener, absent in self.absent.items():
            self.absent[opener] = max(absent, upto)

    def _close(self, final: bool) -> tuple[str, bytes, int] | None:
        """The open chunk, if its closer (ending its line) is in the buffer."""
        while True:
            pos = self.buf.find(self.closer, self.search)
            if pos == -1:
                self.search = max(len(self.buf) - len(self.closer), self.search)
                if self.skipping:  # keep only what may hold the start of the closer's line
                    self._consume(self.buf.rfind(b"\n", self.pos, self.search) + 1)
                return None
            end = _line_end(self.buf, pos + len(self.closer), final)
            if end == -1:
                return None  # the rest of the closer's line is not here yet
            self.search = pos + len(self.closer)
            if end >= 0:
                chunk = (self.kind or "", self.buf[self.pos:end], self.line)
                self._consume(end)
                self.kind = None
                if self.skipping:
                    self.skipping = False
                    return "skipped", b"", chunk[2]  # its "oversized" chunk was already given
                return chunk

    def feed(self, piece: bytes, final: bool = False) -> Iterator[tuple[str, bytes, int]]:
        """Chunks completed by ``piece`` (``final``: no more data follows)."""
        self._append(piece)
        while True:
            if self.kind is None and not self._open():
                return
            head, line = self.buf[self.pos:self.pos + 4096], self.line
            chunk = self._close(final)
            if chunk is not None:
                if chunk[0] != "skipped":
                    yield chunk
                continue
            if self.kind == "page" and not self.skipping and len(self.buf) - self.pos > self.max_bytes:
                self.skipping = True
                yield "oversized", head, line
            return


def iter_chunks(pieces: Iterable[bytes], max_bytes: int = MAX_PAGE_BYTES) -> Iterator[tuple[str, bytes, int]]:
    """Split a dump into ``("siteinfo"|"page"|"partial"|"oversized", bytes, line)`` chunks.

    ``pieces`` may be lines or large blocks (the reader passes 1 MiB blocks: scanning them with
    ``bytes.find`` costs far less than a Python step per line). A chunk runs from the start of
    the line whose first non-blank text is ``<page>`` (or ``<siteinfo``) to the end of the line
    that ends with ``</page>`` (``</siteinfo>``); dumps escape ``<`` in text, so these cannot
    occur inside a page's text. A page still open at the end comes out as ``"partial"``: the
    dump was cut. A page longer than ``max_bytes`` comes out once as ``"oversized"`` with only
    its first 4 KiB, and the rest of it is skipped without being held, so memory stays bounded.
    """
    scanner = _ChunkScanner(max_bytes)
    for piece in pieces:
        yield from scanner.feed(piece)
    yield from scanner.feed(b"", final=True)
    if scanner.kind == "page" and not scanner.skipping:
        yield "partial", scanner.rest, scanner.line


class WikitextCleaner:
    """Turns wikitext into plain prose (see the module docstring for what is kept).

    ``engine="fast"`` (the default) runs :class:`sources.formats.wikitext.FastWikitextCleaner`, linear
    regex stages under a size and time bound per page; ``engine="tree"`` is the mwparserfromhell
    tree walk the reader used before, kept as the reference the fast path is compared against
    (benchmarks/wikipedia.py's quality table). The tree walk has no bound of its own: its C
    tokenizer is roughly quadratic on unclosed markup and cannot be interrupted.
    """

    def __init__(self, prefixes: frozenset[str], engine: str = "fast", bounds: Bounds | None = None) -> None:
        if engine not in ("fast", "tree"):
            raise ValueError(f"unknown wikitext engine {engine!r}")
        self.prefixes = prefixes
        self.engine = engine
        self.fast = FastWikitextCleaner(self._is_markup_link, bounds)

    def _is_markup_link(self, title: str) -> bool:
        if ":" not in title:
            return False
        if title.startswith(":"):
            return False  # [[:Category:X]] is an inline link to a page, shown as text
        prefix, sep, _ = title.partition(":")
        return bool(sep) and prefix.strip().casefold().replace("_", " ") in self.prefixes

    def _render(self, code: Wikicode, out: list[str]) -> None:
        for node in code.nodes:
            if isinstance(node, Text):
                out.append(node.value)
            elif isinstance(node, Wikilink):
                self._render_link(node, out)
            elif isinstance(node, Tag):
                self._render_tag(node, out)
            elif isinstance(node, Heading):
                heading: list[str] = []
                self._render(node.title, heading)
                out.append("\n" + "".join(heading).strip() + "\n")
            elif isinstance(node, ExternalLink):
                if node.title is not None:
                    self._render(node.title, out)
                elif not node.brackets:
                    out.append(str(node.url))
                else:
                    out.append(REMOVED)
            elif isinstance(node, HTMLEntity):
                out.append(node.normalize())
            elif isinstance(node, (Template, Argument)):
                out.append(REMOVED)  # rendered as something we drop: a removal site
            # comments render as nothing

    def _render_link(self, node: Wikilink, out: list[str]) -> None:
        title = str(node.title).strip()
        if self._is_markup_link(title):
            out.append(REMOVED)
            return
        if node.text is not None:
            self._render(node.text, out)
        else:
            out.append(title.lstrip(":"))

    def _render_tag(self, node: Tag, out: list[str]) -> None:
        tag = str(node.tag).strip().lower()
        if tag in DROPPED_TAGS:
            out.append(REMOVED)
            return
        block = tag in LINE_BREAK_TAGS
        if block and tag != "br" and node.wiki_markup is None:
            out.append("\n")  # an HTML block starts a line (a wiki list item's "*" already does)
        if node.contents is not None and not node.self_closing:
            self._render(node.contents, out)
        if block:
            out.append("\n")

    def clean(self, wikitext: str) -> str:
        """Return plain text for ``wikitext``.

        Raises :class:`RecordTooLarge` / :class:`CleanerTimeout` past the fast engine's bounds,
        and whatever mwparserfromhell raises with the tree engine.
        """
        if self.engine == "fast":
            text = self.fast.clean(wikitext)
        else:
            out: list[str] = []
            wikitext = protect_literals(drop_noncharacters(wikitext))
            self._render(mwparserfromhell.parse(prestrip(wikitext)), out)
            text = "".join(out)
        if any(mark in text for mark in _RESIDUE_MARKS):
            text = self._clean_residue(text)
        return collapse_whitespace(text)

    def _clean_residue(self, text: str) -> str:
        """Remove markup mwparserfromhell left as text.

        When a construct does not close where the parser expects (an unbalanced template in a
        real article, nesting past its depth limit) it keeps the whole span as literal text.
        A small scanner removes what is left: comments, refs, balanced ``{{…}}`` and ``{|…|}``
        (an unclosed one up to the end of its line), and rewrites leftover links.
        """
        text = _COMMENT.sub("", text)
        text = _REF.sub(REMOVED, text)
        text = remove_balanced(text, _BRACE_TOKENS, "{{")
        text = remove_balanced(text, _TABLE_TOKENS, "{|")
        for _ in range(5):
            new = _LINK.sub(lambda m: self._link_text(m.group(1), m.group(2)), text)
            if new == text:
                break
            text = new
        return text.replace("[[", "").replace("]]", "").replace("{{", "").replace("}}", "")

    def _link_text(self, target: str, label: str | None) -> str:
        if self._is_markup_link(target.strip()):
            return REMOVED
        return label if label is not None else target.strip().lstrip(":")


@functools.lru_cache(maxsize=32)
def _shared_cleaner(prefixes: frozenset[str], bounds: Bounds) -> WikitextCleaner:
    return WikitextCleaner(prefixes, bounds=bounds)


def clean_wikitext(prefixes: frozenset[str], bounds: Bounds, wikitext: str) -> str:
    """Clean one page with the fast engine: the picklable entry point :mod:`core.bounded` calls."""
    return _shared_cleaner(prefixes, bounds).clean(wikitext)


def prestrip(wikitext: str) -> str:
    """Remove comments, refs and templates with C-speed regexes before parsing.

    They are dropped anyway, and building mwparserfromhell nodes for them (an infobox is
    hundreds of nodes) is most of the parse cost. Templates go innermost first, a pass per
    nesting level; whatever does not match (an unbalanced ``{{``) is left to the parser and the
    residue scanner.
    """
    if "<!--" in wikitext:
        wikitext = _COMMENT_CLOSED.sub("", wikitext)
    if "<ref" in wikitext or "<REF" in wikitext:
        wikitext = _REF_CLOSED.sub(REMOVED, wikitext)
    for _ in range(_MAX_TEMPLATE_DEPTH):
        if "{{" not in wikitext:
            break
        stripped = _TEMPLATE.sub(REMOVED, _ARGUMENT.sub(REMOVED, wikitext))
        if stripped == wikitext:
            break
        wikitext = stripped
    return wikitext


def collapse_whitespace(text: str) -> str:
    """The tidy-up after markup removal (:func:`sources.formats.wikitext.tidy`): it touches only
    what removal left behind at :data:`~sources.formats.wikitext.REMOVED` sites, and whitespace."""
    return tidy(text)


@dataclass
class WikipediaReader:
    """Reads one dump file into Documents and Drops.

    ``language`` overrides what the dump says; otherwise siteinfo's dbname, then the file name.
    """

    spec: InputSpec
    language: str | None = None
    namespaces: Sequence[int] = (0,)
    site: SiteInfo = field(default_factory=SiteInfo)
    bounds: Bounds = field(default_factory=Bounds)
    #: Only the bz2 streams in ``[start, end)`` of a multistream dump (a page-range task, see
    #: :mod:`sources.formats.wikipedia_multistream`); the site info then comes from ``[0, header_end)``.
    byte_range: tuple[int, int] | None = None
    header_end: int | None = None

    def _range_pieces(self) -> Iterator[bytes]:
        assert self.byte_range is not None
        if self.header_end:
            yield from read_streams(self.spec.path, 0, self.header_end)
        yield from read_streams(self.spec.path, *self.byte_range)

    def _cleaner(self) -> BoundedCleaner[str]:
        """The page cleaner under :mod:`core.bounded`: pages above ``bounds.inline_chars`` are
        cleaned in a helper process that is killed past the time bound (see :class:`Bounds`)."""
        prefixes = drop_prefixes(self.resolved_language(), self.site.drop_namespace_names)
        return BoundedCleaner(functools.partial(clean_wikitext, prefixes, self.bounds),
                              timeout_s=self.bounds.timeout_s, max_input=self.bounds.max_chars,
                              inline_below=self.bounds.inline_chars, preload=("sources.wikipedia",), shared=True)

    def resolved_language(self) -> str | None:
        """The language of this dump."""
        return self.language or self.site.language or language_from_filename(self.spec.key)

    def _url(self, title: str) -> str | None:
        base = self.site.base_url
        lang = self.resolved_language()
        quoted = urllib.parse.quote(title.replace(" ", "_"), safe="/:(),'!*")
        if base and "/wiki/" in base:
            return base.split("/wiki/", 1)[0] + "/wiki/" + quoted
        return f"https://{lang}.wikipedia.org/wiki/{quoted}" if lang else None

    def __iter__(self) -> Iterator[Record]:
        cleaner: BoundedCleaner[str] | None = None
        where = self.spec.location
        # a file that cannot be opened fails the input
        stream = open_binary(self.spec.path) if self.byte_range is None else open(self.spec.path, "rb")  # noqa: SIM115
        pieces = read_blocks(stream) if self.byte_range is None else self._range_pieces()
        try:
            with stream:
                for kind, chunk, line in iter_chunks(pieces):
                    if kind == "siteinfo":
                        self.site = self._parse_site(chunk)
                        cleaner = None
                        continue
                    if kind == "partial":
                        yield Drop("truncated_input", f"{where}: {page_label(chunk, line)}",
                                   "dump ends inside this page")
                        continue
                    if kind == "oversized":
                        yield Drop("record_too_large", f"{where}: {page_label(chunk, line)}",
                                   f"page XML longer than {MAX_PAGE_BYTES} bytes; skipped unread")
                        continue
                    cleaner = cleaner or self._cleaner()
                    yield self._page_record(chunk, line, cleaner)
        except CODEC_ERRORS as exc:
            yield Drop("truncated_input", f"{where}: end of readable data",
                       f"{type(exc).__name__}: {exc}")

    def _parse_site(self, chunk: bytes) -> SiteInfo:
        try:
            return parse_siteinfo(chunk)
        except ET.ParseError as exc:
            log.warning("%s: unreadable <siteinfo> (%s); language from file name", self.spec.location, exc)
            return SiteInfo()

    def _page_record(self, chunk: bytes, line: int, cleaner: BoundedCleaner[str]) -> Record:
        where = self.spec.location
        language = self.resolved_language()
        try:
            page = parse_page(chunk)
        except UnicodeDecodeError as exc:
            return Drop("invalid_utf8", f"{where}: {page_label(chunk, line)}", str(exc), language)
        except ET.ParseError as exc:
            return Drop("malformed_xml", f"{where}: {page_label(chunk, line)}", str(exc), language)
        label = f"{where}: page {page.title!r} (id {page.page_id})"
        if page.namespace not in self.namespaces:
            return Drop("not_article_namespace", label, language=language)
        if page.redirect:
            return Drop("redirect", label, language=language)
        try:
            text = cleaner.run(label, page.text)
        except RecordTooLarge as exc:
            return Drop("record_too_large", label, str(exc), language)
        except CleanerTimeout as exc:
            return Drop("cleaner_timeout", label, str(exc), language)
        except Exception as exc:  # a cleaner failure on one page costs that page
            return Drop("wikitext_parse_error", label, f"{type(exc).__name__}: {exc}", language)
        if isinstance(text, Drop):  # past the bound enforced by the helper process
            return dataclasses.replace(text, language=language)
        return Document(
            id=make_doc_id(SOURCE, f"{language}/{page.page_id}"),
            text=text,
            source=SOURCE,
            meta={
                "title": page.title,
                "url": self._url(page.title),
                "language": language,
                "page_id": page.page_id,
                "revision_id": page.revision_id,
                "timestamp": page.timestamp,
                "dump": self.spec.key,
            },
        )


@dataclass
class WikipediaRecipe:
    """The Wikipedia source for :mod:`core.pipeline`."""

    language: str | None = None
    namespaces: Sequence[int] = (0,)
    min_chars: int = 1
    name: str = SOURCE
    #: per-page limits of the cleaner (size, wall time); a page past them is a counted drop
    bounds: Bounds = field(default_factory=Bounds)

    def _reader(self, spec: InputSpec) -> WikipediaReader:
        """The dump's reader; for a page-range task (key ``<dump>#<start>-<end>``, see
        :mod:`sources.formats.wikipedia_multistream`) one that reads only that range of streams.

        A range's documents name the dump itself (``meta.dump``), exactly as the one-task run
        does; its drops name the range (``location#start-end``), which says where to look.
        """
        split = parse_range_key(spec.key)
        if split is None:
            return WikipediaReader(spec, language=self.language, namespaces=self.namespaces, bounds=self.bounds)
        key, byte_range = split
        return WikipediaReader(InputSpec(spec.location, spec.path, key), language=self.language,
                               namespaces=self.namespaces, bounds=self.bounds, byte_range=byte_range,
                               header_end=first_stream_end(spec.path))

    def input_language(self, spec: InputSpec) -> str | None:
        """Language of a dump: configured, else from siteinfo, else from the file name."""
        if self.language:
            return self.language
        return read_siteinfo(spec).language or language_from_filename(spec.key)

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Yield the dump's pages as Documents and Drops."""
        return iter(self._reader(spec))

    def steps(self) -> list[Step]:
        """Only a length floor: the reader already cleaned the text."""
        return [MinLength(self.min_chars)]

    def partition(self, doc: Document) -> str:
        """One directory per language."""
        return doc.language or "und"


_SITEINFO_ERRORS: tuple[type[BaseException], ...] = (*CODEC_ERRORS, ET.ParseError)


def read_siteinfo(spec: InputSpec, max_lines: int = 5_000) -> SiteInfo:
    """Read only the head of a dump to find its ``<siteinfo>``."""
    def head() -> Iterator[bytes]:
        with open_binary(spec.path) as stream:
            for number, line in enumerate(stream):
                if number >= max_lines:
                    return
                yield line
    try:
        for kind, chunk, _ in iter_chunks(head()):
            if kind == "siteinfo":
                return parse_siteinfo(chunk)
            if kind == "page":
                break
    except _SITEINFO_ERRORS:
        pass
    return SiteInfo()
