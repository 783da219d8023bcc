"""Wikipedia: stream MediaWiki ``pages-articles`` XML dumps and clean wikitext to plain text.

Reading: the dump is read line by line (bz2/xz/gz or plain; multistream bz2 too) and cut into
``<page>…</page>`` chunks, each parsed on its own. Dumps write those tags on their own lines and
escape ``<`` inside text, so the cut is exact; parsing page by page keeps memory constant, makes
one malformed page cost one page (not the rest of the file), and ignores the XML namespace, so
export schemas 0.10 and 0.11 read alike. Entities are never resolved beyond XML's five.

Cleaning: mwparserfromhell parses the wikitext; a single walk over its nodes keeps prose and link
text, drops templates, refs, comments, tables, file/image/category links and language interwiki
links (local names from siteinfo plus :mod:`sources.wikipedia_names`), keeps headings as plain
lines, then collapses whitespace.
"""

from __future__ import annotations

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
    Comment,
    ExternalLink,
    Heading,
    HTMLEntity,
    Tag,
    Template,
    Text,
    Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

from core.compressed import CODEC_ERRORS, open_binary
from core.document import Document, Drop, InputSpec, make_doc_id
from core.steps import MinLength, Record, Step
from sources.wikipedia_names import drop_prefixes

log = logging.getLogger(__name__)

SOURCE = "wikipedia"

#: Tags whose content is not prose (mwparserfromhell's invisible tags plus refs and tables).
DROPPED_TAGS: frozenset[str] = frozenset(
    {"ref", "references", "table", "gallery", "math", "chem", "ce", "timeline", "imagemap", "score",
     "graph", "categorytree", "inputbox", "section", "templatedata", "mapframe", "maplink", "hiero",
     "syntaxhighlight", "source", "poem-ref", "noinclude", "includeonly", "onlyinclude", "nowiki-ref"}
)
#: Tags that end a line when rendered.
LINE_BREAK_TAGS: frozenset[str] = frozenset({"br", "li", "dd", "dt", "p", "div", "tr"})

_BEHAVIOUR_SWITCH = re.compile(r"__[A-Z]+__")
_EMPTY_BRACKETS = re.compile(r"\(\s*[,;:]?\s*\)")
_SPACES = re.compile(r"[ \t\u00a0\u200b]+")
_SPACE_BEFORE_PUNCT = re.compile(r" +([,.;:!?])")
_BLANK_LINES = re.compile(r"\n{3,}")
_DBNAME = re.compile(r"^([a-z][a-z_]*?)wiki$")
_FILE_LANG = re.compile(r"^([a-z][a-z_]*?)wiki-")
_RESIDUE = re.compile(r"\{\{|\}\}|\[\[|\]\]|<ref|<!--|\{\|")
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
_REF = re.compile(r"<ref[^>]*/>|<ref[^>]*>.*?(?:</ref\s*>|$)|</?references[^>]*>", re.S | re.I)
_LINK = re.compile(r"\[\[([^\[\]|]*)(?:\|([^\[\]]*))?\]\]")
_COMMENT_CLOSED = re.compile(r"<!--.*?-->", re.S)
_REF_CLOSED = re.compile(r"<ref\b[^>]*/>|<ref\b[^>/]*>.*?</ref\s*>", re.S | re.I)
_ARGUMENT = re.compile(r"\{\{\{[^{}]*\}\}\}")
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_MAX_TEMPLATE_DEPTH = 20
_TITLE_BYTES = re.compile(rb"<title>(.*?)</title>", re.S)


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
    """Parse one ``<page>…</page>`` chunk; raises ``ET.ParseError`` or ``UnicodeDecodeError``."""
    chunk.decode("utf-8")  # strict: invalid UTF-8 is reported, not silently replaced
    page = ET.fromstring(chunk)
    revision = page.find("revision")
    text_el = revision.find("text") if revision is not None else None
    return RawPage(
        title=page.findtext("title") or "",
        namespace=int(page.findtext("ns") or 0),
        page_id=(page.findtext("id") or "").strip(),
        revision_id=revision.findtext("id") if revision is not None else None,
        timestamp=revision.findtext("timestamp") if revision is not None else None,
        redirect=page.find("redirect") is not None,
        text=(text_el.text or "") if text_el is not None else "",
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


def iter_chunks(lines: Iterable[bytes]) -> Iterator[tuple[str, bytes, int]]:
    """Split dump lines into ``("siteinfo"|"page"|"partial", bytes, line)`` chunks.

    A page still open at the end of the stream comes out as ``"partial"``: the dump was cut.
    """
    buffer: list[bytes] = []
    kind: str | None = None
    start = 0
    for number, line in enumerate(lines, start=1):
        if kind is None:
            stripped = line.strip()
            if stripped.startswith(b"<page>") or stripped == b"<page>":
                kind, start, buffer = "page", number, [line]
            elif stripped.startswith(b"<siteinfo"):
                kind, start, buffer = "siteinfo", number, [line]
            if kind is None:
                continue
            if kind == "page" and stripped.endswith(b"</page>"):
                yield kind, b"".join(buffer), start
                kind = None
            continue
        buffer.append(line)
        if kind == "page" and line.rstrip().endswith(b"</page>"):
            yield "page", b"".join(buffer), start
            kind = None
        elif kind == "siteinfo" and line.rstrip().endswith(b"</siteinfo>"):
            yield "siteinfo", b"".join(buffer), start
            kind = None
    if kind == "page":
        yield "partial", b"".join(buffer), start


class WikitextCleaner:
    """Turns wikitext into plain prose (see the module docstring for what is kept)."""

    def __init__(self, prefixes: frozenset[str]) -> None:
        self.prefixes = prefixes

    def _is_markup_link(self, title: str) -> bool:
        if title.startswith(":"):
            return False  # [[:Category:X]] is an inline link to a page, shown as text
        prefix, sep, _ = title.partition(":")
        return bool(sep) and prefix.strip().casefold().replace("_", " ") in self.prefixes

    def _render(self, code: Wikicode, out: list[str]) -> None:
        for node in code.nodes:
            kind = type(node)
            if kind is Text:
                out.append(node.value)
            elif kind is Wikilink:
                self._render_link(node, out)
            elif kind is Tag:
                self._render_tag(node, out)
            elif kind is Heading:
                heading: list[str] = []
                self._render(node.title, heading)
                out.append("\n" + "".join(heading).strip() + "\n")
            elif kind is ExternalLink:
                if node.title is not None:
                    self._render(node.title, out)
                elif not node.brackets:
                    out.append(str(node.url))
            elif kind is HTMLEntity:
                out.append(node.normalize())
            elif kind in (Template, Comment, Argument):
                continue

    def _render_link(self, node: Wikilink, out: list[str]) -> None:
        title = str(node.title).strip()
        if self._is_markup_link(title):
            return
        if node.text is not None:
            self._render(node.text, out)
        else:
            out.append(title.lstrip(":"))

    def _render_tag(self, node: Tag, out: list[str]) -> None:
        tag = str(node.tag).strip().lower()
        if tag in DROPPED_TAGS:
            return
        if node.contents is not None and not node.self_closing:
            self._render(node.contents, out)
        if tag in LINE_BREAK_TAGS:
            out.append("\n")

    def clean(self, wikitext: str) -> str:
        """Return plain text for ``wikitext``; raises what mwparserfromhell raises."""
        out: list[str] = []
        self._render(mwparserfromhell.parse(prestrip(wikitext)), out)
        text = "".join(out)
        if _RESIDUE.search(text):
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
        text = _REF.sub("", text)
        text = _remove_balanced(text, "{{", "}}")
        text = _remove_balanced(text, "{|", "|}")
        for _ in range(5):
            new = _LINK.sub(lambda m: self._link_text(m.group(1), m.group(2)), text)
            if new == text:
                break
            text = new
        return text.replace("[[", "").replace("]]", "").replace("{{", "").replace("}}", "")

    def _link_text(self, target: str, label: str | None) -> str:
        if self._is_markup_link(target.strip()):
            return ""
        return label if label is not None else target.strip().lstrip(":")


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
        wikitext = _REF_CLOSED.sub("", wikitext)
    for _ in range(_MAX_TEMPLATE_DEPTH):
        if "{{" not in wikitext:
            break
        stripped = _TEMPLATE.sub("", _ARGUMENT.sub("", wikitext))
        if stripped == wikitext:
            break
        wikitext = stripped
    return wikitext


def _remove_balanced(text: str, opener: str, closer: str) -> str:
    """Remove ``opener … closer`` spans, nested; an unclosed span ends at its line's end."""
    out: list[str] = []
    position = 0
    while (start := text.find(opener, position)) != -1:
        out.append(text[position:start])
        depth, cursor = 0, start
        while cursor < len(text):
            if text.startswith(opener, cursor):
                depth, cursor = depth + 1, cursor + len(opener)
            elif text.startswith(closer, cursor):
                depth, cursor = depth - 1, cursor + len(closer)
                if depth == 0:
                    break
            else:
                cursor += 1
        if depth != 0:
            line_end = text.find("\n", start)
            cursor = len(text) if line_end == -1 else line_end
        position = cursor
    out.append(text[position:])
    return "".join(out)


def collapse_whitespace(text: str) -> str:
    """Tidy what is left after markup removal: spaces, empty brackets, blank lines."""
    text = _BEHAVIOUR_SWITCH.sub("", text)
    text = _EMPTY_BRACKETS.sub("", text)
    lines = [_SPACE_BEFORE_PUNCT.sub(r"\1", _SPACES.sub(" ", line)).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


@dataclass
class WikipediaReader:
    """Reads one dump file into Documents and Drops.

    ``language`` overrides what the dump says; otherwise siteinfo's dbname, then the file name.
    """

    spec: InputSpec
    language: str | None = None
    namespaces: Sequence[int] = (0,)
    site: SiteInfo = field(default_factory=SiteInfo)

    def _cleaner(self) -> WikitextCleaner:
        return WikitextCleaner(drop_prefixes(self.resolved_language(), self.site.drop_namespace_names))

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
        cleaner: WikitextCleaner | None = None
        where = self.spec.location
        stream = open_binary(self.spec.path)  # a file that cannot be opened fails the input
        try:
            with stream:
                for kind, chunk, line in iter_chunks(stream):
                    if kind == "siteinfo":
                        self.site = self._parse_site(chunk)
                        cleaner = None
                        continue
                    if kind == "partial":
                        yield Drop("truncated_input", f"{where}: {page_label(chunk, line)}",
                                   "dump ends inside this page")
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

    def _page_record(self, chunk: bytes, line: int, cleaner: WikitextCleaner) -> Record:
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
            text = cleaner.clean(page.text)
        except Exception as exc:  # mwparserfromhell failure on one page
            return Drop("wikitext_parse_error", label, f"{type(exc).__name__}: {exc}", language)
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

    def _reader(self, spec: InputSpec) -> WikipediaReader:
        return WikipediaReader(spec, language=self.language, namespaces=self.namespaces)

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
    except (*CODEC_ERRORS, ET.ParseError):
        pass
    return SiteInfo()
