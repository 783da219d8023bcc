"""EPUB 2 and 3 to text: the spine's content documents in order, without navigation or boilerplate.

The OPF package is found through ``META-INF/container.xml`` (never by the position of the
``mimetype`` entry: Debian's EPUBs put ``container.xml`` first). The spine gives the reading
order; each content document is read once, at its first spine position (EPUB 2 files such as the
Live Systems Manual list the same file many times with ``#fragment`` hrefs). Left out:

* the EPUB 3 nav document (``properties="nav"``) and the NCX (not content);
* spine items with ``linear="no"`` (auxiliary content: the Ubuntu Packaging Guide puts its
  translations there), unless ``include_nonlinear``;
* boilerplate pages named by the EPUB 2 ``<guide>`` or the EPUB 3 landmarks (cover, title page,
  table of contents, copyright page, colophon, index) and Sphinx's ``genindex``/``search`` pages.

XHTML becomes text block by block (headings, paragraphs, list items, table rows, ``<pre>`` kept
verbatim), without navigation inside pages (``epub:type`` toc/landmarks/page-list/pagebreak, ARIA
navigation roles, ``<nav>``, generators' bar classes such as DITA's ``related-links``) and without
a heading that repeats the block before it. ``<math>`` (MathML) becomes linear text
(:mod:`sources.formats.mathml`: ``x_2^3``, ``4x_1 + 5x_2``, ``(a)/(b)``, ``sqrt(x)``); its ``alttext`` is
used only when it is real text, never a publisher's placeholder such as "Alternative text not
available" (a known phrase, an alttext shared by formulas that read differently, or one sharing
no symbol with its formula).

Safety: XML is parsed without DTDs, entities or network; every member is read with a size bound
(a zip bomb ends as ``zip_bomb``, not a full disk or memory), hrefs are resolved inside the zip's
own namespace (``../../etc/passwd`` is ``href_outside_package``, never opened on disk).

Each content document's XHTML-to-text (lxml's parser in recover mode, then a walk of the tree)
runs in a :class:`core.bounded.BoundedCleaner` helper under ``chapter_timeout_s``: recovering
parsers have had super-linear cases, and C code cannot be interrupted otherwise. A chapter past
the bound (``cleaner_timeout``), whose helper died (``cleaner_crashed``) or that is not even HTML
(``broken_chapter``) is one counted drop naming the chapter; the rest of the book is kept.
The size bound is ``max_member_bytes`` (a larger member is a ``zip_bomb`` before it is read).
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from lxml import etree
from lxml import html as lxml_html

from core.bounded import BoundedCleaner, CleanerError
from core.document import Drop
from sources.formats.mathml import local, reading, repeated_alttexts, useful_alttext

CONTAINER = "META-INF/container.xml"
OPF_NS = "http://www.idpf.org/2007/opf"
DC_NS = "http://purl.org/dc/elements/1.1/"
OPS_NS = "http://www.idpf.org/2007/ops"
MATHML_NS = "http://www.w3.org/1998/Math/MathML"
XHTML_TYPES = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}
BOILERPLATE_TYPES = {"cover", "title-page", "titlepage", "toc", "copyright-page", "colophon", "index", "loi",
                     "lot", "lof", "dedication-page", "acknowledgements", "imprint", "imprimatur"}
_BOILERPLATE_NAMES = re.compile(r"(?:^|/)(?:cover|titlepage|title_page|toc|copyright|colophon|genindex|search|"
                                r"py-modindex|nav)(?:[-_.]\w*)?\.x?html?$", re.I)
BLOCKS = {"p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "tr", "blockquote", "section",
          "article", "figcaption", "caption", "pre", "table", "ul", "ol", "dl", "header", "footer", "aside",
          "hr", "br", "body", "figure", "address", "main", "nav"}
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
SKIP = {"script", "style", "head", "title", "svg", "object", "embed", "iframe", "noscript", "nav"}
#: Page furniture inside content documents, by the EPUB's own semantics: ARIA roles and ``epub:type``s
#: of navigation and page-break markers (a ``pagebreak`` span holds the print page number).
SKIP_ROLES = {"navigation", "doc-toc", "doc-pagelist", "doc-pagebreak", "doc-pageheader", "doc-pagefooter"}
SKIP_EPUB_TYPES = {"toc", "landmarks", "page-list", "pagebreak", "loi", "lot", "lof", "nav"}
#: ... and by the classes generators give their bars: Sphinx ``related``/``sphinxsidebar``, DocBook
#: ``navheader``/``navfooter``, DITA-OT ``related-links``/``familylinks`` ("Parent topic / Previous
#: topic / Next topic"), common breadcrumb and pager classes.
SKIP_CLASSES = {"related", "sphinxsidebar", "footer", "headerlink", "navheader", "navfooter", "related-links",
                "familylinks", "parentlink", "previouslink", "nextlink", "breadcrumb", "breadcrumbs", "navbar",
                "nav-bar", "navlinks", "nav-links", "pager", "prev-next", "prevnext", "chapter-nav", "page-nav"}
#: A content document whose text is mostly links is a table of contents (e.g. a ``index.xhtml`` TOC).
LINK_PAGE_SHARE = 0.6
LINK_PAGE_MIN_LINKS = 10
_NUMBER_BLOCK = re.compile(r"^\[?\d{1,5}\]?$")
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                          remove_comments=True, remove_pis=True, recover=True)


class EpubError(Exception):
    """A whole EPUB cannot be read; ``reason`` is the drop reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail

    def __reduce__(self) -> tuple[type[EpubError], tuple[str, str]]:
        """Pickle with both arguments: the error crosses the pipe from the chapter helper."""
        return type(self), (self.reason, self.detail)


@dataclass(frozen=True)
class EpubSettings:
    """Bounds and choices for EPUBs (defaults in ``configs/science_books.yaml``)."""

    max_member_bytes: int = 32 * 1024 * 1024
    max_total_bytes: int = 512 * 1024 * 1024
    max_ratio: float = 200.0  # uncompressed / compressed size of one member; above it: a zip bomb
    max_members: int = 20_000
    include_nonlinear: bool = False
    #: Wall-time bound of one chapter's XHTML-to-text (a real chapter takes milliseconds).
    chapter_timeout_s: float = 30.0
    #: Address-space bound of the chapter helper (``core.bounded``): a chapter whose tree needs more
    #: (32 MiB of tiny elements is ~1 GB in lxml) is one dropped chapter, not a process out of memory.
    chapter_memory_bytes: int = 1536 << 20


@dataclass(frozen=True)
class ChapterDrop:
    """A content document that could not be read: the book goes on without it."""

    reason: str
    name: str
    detail: str


@dataclass
class EpubText:
    """A book's text, its metadata and what was left out."""

    text: str
    title: str | None = None
    creator: str | None = None
    language: str | None = None
    version: str | None = None
    chapters: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    math: int = 0
    #: Chapters left out because they could not be read (each a counted drop naming the chapter).
    dropped: list[ChapterDrop] = field(default_factory=list)


def resolve_href(base_dir: str, href: str) -> str | None:
    """A package-relative href as a zip member name, or None if it escapes the package."""
    path = unquote(urlsplit(href).path)
    if not path or path.startswith("/") or "\\" in path or re.match(r"^[A-Za-z]:", path):
        return None
    joined = posixpath.normpath(posixpath.join(base_dir, path))
    if joined.startswith("../") or joined == ".." or joined.startswith("/"):
        return None
    return joined


class BoundedZip:
    """A zip whose members are read with size and ratio bounds."""

    def __init__(self, path: Path, settings: EpubSettings) -> None:
        try:
            self.zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise EpubError("not_a_zip", f"{type(exc).__name__}: {exc}") from exc
        infos = self.zip.infolist()
        if len(infos) > settings.max_members:
            raise EpubError("zip_bomb", f"{len(infos)} members (limit {settings.max_members})")
        if sum(i.file_size for i in infos) > settings.max_total_bytes:
            raise EpubError("zip_bomb", f"declared size {sum(i.file_size for i in infos)} bytes "
                                        f"(limit {settings.max_total_bytes})")
        self.infos = {i.filename: i for i in infos}
        self.settings = settings
        self.read_total = 0

    def read(self, name: str) -> bytes:
        """A member's bytes; EpubError for a bomb (declared or actual size over the bounds)."""
        info = self.infos.get(name)
        if info is None:
            raise KeyError(name)
        limit = self.settings.max_member_bytes
        if info.file_size > limit or info.file_size > self.settings.max_ratio * max(info.compress_size, 1024):
            raise EpubError("zip_bomb", f"{name}: {info.file_size} bytes from {info.compress_size}")
        try:
            with self.zip.open(info) as handle:
                data = handle.read(limit + 1)  # the header may lie: never read more than the bound
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
            raise EpubError("broken_epub", f"{name}: {type(exc).__name__}: {exc}") from exc
        if len(data) > limit:
            raise EpubError("zip_bomb", f"{name}: more than {limit} bytes when decompressed")
        self.read_total += len(data)
        if self.read_total > self.settings.max_total_bytes:
            raise EpubError("zip_bomb", f"more than {self.settings.max_total_bytes} bytes decompressed in all")
        return data

    def close(self) -> None:
        self.zip.close()


def _parse_xml(data: bytes, name: str) -> Any:
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise EpubError("broken_epub", f"{name}: {exc}") from exc
    if root is None:
        raise EpubError("broken_epub", f"{name}: empty XML")
    return root


def opf_path(book: BoundedZip) -> str:
    """The package document's member name, from ``META-INF/container.xml``."""
    if CONTAINER not in book.infos:
        raise EpubError("no_container", f"{CONTAINER} is missing")
    root = _parse_xml(book.read(CONTAINER), CONTAINER)
    for element in root.iter():
        if local(element.tag) == "rootfile" and element.get("full-path"):
            media = element.get("media-type", "application/oebps-package+xml")
            if media == "application/oebps-package+xml":
                resolved = resolve_href("", element.get("full-path", ""))
                if resolved is None:
                    raise EpubError("href_outside_package", f"rootfile {element.get('full-path')!r}")
                return resolved
    raise EpubError("no_package", f"{CONTAINER} names no OPF rootfile")


@dataclass
class SpineItem:
    """A content document to read, in spine order."""

    name: str
    media_type: str


def _first_text(root: Any, ns: str, tag: str) -> str | None:
    found = root.find(f".//{{{ns}}}{tag}")
    return " ".join(found.text.split()) if found is not None and found.text and found.text.strip() else None


def _landmark_hrefs(book: BoundedZip, nav_name: str | None) -> set[str]:
    """Members that the EPUB 3 landmarks nav marks as boilerplate."""
    if nav_name is None or nav_name not in book.infos:
        return set()
    root = _parse_xml(book.read(nav_name), nav_name)
    out: set[str] = set()
    base = posixpath.dirname(nav_name)
    for nav in root.iter(f"{{{'http://www.w3.org/1999/xhtml'}}}nav", "nav"):
        if nav.get(f"{{{OPS_NS}}}type") != "landmarks":
            continue
        for anchor in nav.iter(f"{{{'http://www.w3.org/1999/xhtml'}}}a", "a"):
            kind = anchor.get(f"{{{OPS_NS}}}type", "")
            target = resolve_href(base, anchor.get("href", ""))
            if kind in BOILERPLATE_TYPES and target:
                out.add(target)
    return out


def read_package(book: BoundedZip, settings: EpubSettings, result: EpubText) -> list[SpineItem]:
    """Metadata into ``result``; the spine's content documents, each once, boilerplate left out."""
    name = opf_path(book)
    if name not in book.infos:
        raise EpubError("no_package", f"OPF {name} is not in the zip")
    root = _parse_xml(book.read(name), name)
    base = posixpath.dirname(name)
    result.version = root.get("version")
    result.title = _first_text(root, DC_NS, "title")
    result.creator = _first_text(root, DC_NS, "creator")
    result.language = _first_text(root, DC_NS, "language")
    manifest: dict[str, tuple[str | None, str, str]] = {}
    nav_name = None
    for item in root.iter(f"{{{OPF_NS}}}item"):
        target = resolve_href(base, item.get("href", ""))
        properties = (item.get("properties") or "").split()
        manifest[item.get("id", "")] = (target, item.get("media-type", ""), " ".join(properties))
        if "nav" in properties:
            nav_name = target
        if target is None:
            result.skipped["href_outside_package"] = result.skipped.get("href_outside_package", 0) + 1
    boilerplate = _landmark_hrefs(book, nav_name)
    for reference in root.iter(f"{{{OPF_NS}}}reference"):
        target = resolve_href(base, reference.get("href", ""))
        if target and reference.get("type", "").lower() in BOILERPLATE_TYPES and reference.get("type", "").lower() != "text":
            boilerplate.add(target)
    spine: list[SpineItem] = []
    seen: set[str] = set()

    def skip(reason: str) -> None:
        result.skipped[reason] = result.skipped.get(reason, 0) + 1

    for itemref in root.iter(f"{{{OPF_NS}}}itemref"):
        target, media, properties = manifest.get(itemref.get("idref", ""), (None, "", ""))
        if target is None:  # an href outside the package was counted with the manifest
            if itemref.get("idref", "") not in manifest:
                skip("spine_item_missing")
        elif target in seen:
            continue
        elif itemref.get("linear", "yes") == "no" and not settings.include_nonlinear:
            skip("nonlinear")
        elif target == nav_name or "nav" in properties.split():
            skip("navigation")
        elif target in boilerplate or _BOILERPLATE_NAMES.search(target):
            skip("boilerplate")
        elif media not in XHTML_TYPES:
            skip("not_xhtml")
        elif target not in book.infos:
            skip("spine_item_missing")
        else:
            spine.append(SpineItem(target, media))
        if target:
            seen.add(target)
    return spine


# -- MathML and XHTML to text -----------------------------------------------------------------
def mathml_text(element: Any, placeholders: frozenset[str] | set[str] = frozenset()) -> str:
    """MathML as linear text: the author's ``alttext`` when it is real, else the markup read out.

    ``alttext`` is skipped when it is boilerplate (:func:`sources.formats.mathml.useful_alttext`: a known
    placeholder phrase, one of ``placeholders``, or text sharing no symbol with the formula); the
    reading prefers a TeX ``annotation`` and otherwise linearises the presentation markup.
    """
    return useful_alttext(element, placeholders) or reading(element)


def _epub_types(element: Any) -> set[str]:
    """The ``epub:type`` tokens of an element (namespaced in XHTML, a plain attribute when read as HTML)."""
    value = element.get(f"{{{OPS_NS}}}type") or element.get("epub:type") or ""
    return set(value.split())


def _is_furniture(element: Any) -> bool:
    """Navigation bars, page-break markers, sidebars and footers inside a content document.

    By the EPUB's own semantics first (``epub:type`` toc/landmarks/page-list/pagebreak, ARIA
    ``role="navigation"``, ``doc-toc``...), then by the classes that generators give their bars
    (Sphinx ``related``, DocBook ``navheader``/``navfooter``, DITA ``related-links``/``familylinks``).
    """
    if element.get("role") in SKIP_ROLES or not SKIP_EPUB_TYPES.isdisjoint(_epub_types(element)):
        return True
    classes = element.get("class")
    return bool(classes) and not SKIP_CLASSES.isdisjoint(classes.split())


@dataclass
class Chapter:
    """One content document as text blocks, with its formula and link counts."""

    blocks: list[str]
    formulas: int = 0
    links: int = 0
    link_chars: int = 0
    #: Headings dropped because they repeat the block just before them.
    repeated_headings: int = 0
    #: Alttexts found to be boilerplate in this chapter (the next chapters skip them too).
    placeholders: set[str] = field(default_factory=set)

    def is_link_page(self) -> bool:
        """Mostly links: a table of contents or an index, not content."""
        total = sum(len(b) for b in self.blocks)
        return self.links >= LINK_PAGE_MIN_LINKS and self.link_chars >= LINK_PAGE_SHARE * max(total, 1)


def _out_of_memory(exc: Exception) -> bool:
    """libxml2 reports a failed allocation (the helper's memory bound) as a syntax error."""
    return getattr(exc, "code", None) == etree.ErrorTypes.ERR_NO_MEMORY


def _parse_chapter(data: bytes, name: str) -> Any:
    """The chapter's tree: as XML, else (not well-formed) as HTML; MemoryError past the helper's bound."""
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        if _out_of_memory(exc):
            raise MemoryError(f"{name}: the XML parser ran out of memory") from None
        root = None
    if root is None:  # not well-formed XML: read it as HTML instead
        try:
            root = lxml_html.document_fromstring(data)
        except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
            if _out_of_memory(exc):
                raise MemoryError(f"{name}: the HTML parser ran out of memory") from None
            raise EpubError("broken_chapter", f"{name}: {exc}") from None
    return root


def xhtml_blocks(data: bytes, name: str, placeholders: frozenset[str] = frozenset()) -> Chapter:
    """A content document's text blocks in order, and how many formulas and links it had.

    ``placeholders``: alttexts earlier chapters showed to be boilerplate.
    """
    root = _parse_chapter(data, name)
    body = next((e for e in root.iter() if local(e.tag) == "body"), root)
    chapter = Chapter([])
    maths = [e for e in body.iter() if local(e.tag) == "math"]
    chapter.placeholders = repeated_alttexts(maths)
    known = placeholders | chapter.placeholders
    blocks = chapter.blocks
    current: list[str] = []

    def flush(tag: str = "") -> None:
        text = " ".join("".join(current).split())
        current.clear()
        if not text or _NUMBER_BLOCK.match(text):  # paragraph numbers (SiSU's "ocn" labels), page numbers
            return
        # a heading repeating the block just before it (a banner, then the title); headings that recur
        # with text between them ("Example", "Proof") are the book's own and stay
        if tag in HEADINGS and blocks and text == blocks[-1]:
            chapter.repeated_headings += 1
            return
        blocks.append(text)

    def walk(element: Any) -> None:
        tag = local(element.tag)
        if tag in SKIP or not isinstance(element.tag, str) or _is_furniture(element):
            pass
        elif tag == "math":
            chapter.formulas += 1
            current.append(mathml_text(element, known))
        elif tag == "pre":
            flush()
            code = "".join(element.itertext()).strip("\n")
            if code.strip():
                blocks.append(code)
        else:
            if tag == "a":
                chapter.links += 1
                chapter.link_chars += len(" ".join("".join(element.itertext()).split()))
            block = tag in BLOCKS
            if block:
                flush()
            if element.text:
                current.append(element.text)
            for child in element:
                walk(child)
            if tag in ("td", "th"):
                current.append(" ")
            if block:
                flush(tag)
        if element.tail:
            current.append(element.tail)

    walk(body)
    flush()
    return chapter


def chapter_cleaner(settings: EpubSettings) -> BoundedCleaner[Chapter]:
    """The helper that turns one content document into text blocks under ``chapter_timeout_s``."""
    return BoundedCleaner(xhtml_blocks, timeout_s=settings.chapter_timeout_s, max_input=settings.max_member_bytes,
                          memory_limit=settings.chapter_memory_bytes, shared=True)


def _bounded_chapter(cleaner: BoundedCleaner[Chapter], data: bytes, name: str,
                     placeholders: frozenset[str]) -> Chapter | EpubError:
    """:func:`xhtml_blocks` in the helper; a chapter that cannot be read is an :class:`EpubError` (returned)."""
    try:
        chapter = cleaner.run(name, data, name, placeholders)
    except EpubError as exc:  # broken_chapter: not even HTML
        return exc
    except CleanerError as exc:  # an error that could not cross the pipe as itself
        return EpubError("broken_chapter", f"{name}: {exc}")
    except RecursionError:
        return EpubError("broken_chapter", f"{name}: markup nested too deeply")
    if isinstance(chapter, Drop):
        return EpubError(chapter.reason, f"{name}: {chapter.detail}")
    return chapter


def read_epub(path: Path, settings: EpubSettings) -> EpubText:
    """A whole EPUB as text (raises :class:`EpubError` with the drop reason when the book cannot be read).

    A chapter that cannot be read (past ``chapter_timeout_s``, its helper crashed, not even HTML)
    is left out and listed in ``dropped``; the rest of the book is kept.
    """
    book = BoundedZip(path, settings)
    try:
        result = EpubText(text="")
        chapters: list[str] = []
        placeholders: set[str] = set()
        with chapter_cleaner(settings) as cleaner:
            for item in read_package(book, settings, result):
                chapter = _bounded_chapter(cleaner, book.read(item.name), item.name, frozenset(placeholders))
                if isinstance(chapter, EpubError):
                    result.dropped.append(ChapterDrop(chapter.reason, item.name, chapter.detail))
                    continue
                placeholders |= chapter.placeholders
                if chapter.is_link_page():
                    result.skipped["link_page"] = result.skipped.get("link_page", 0) + 1
                    continue
                result.math += chapter.formulas
                if chapter.repeated_headings:
                    result.skipped["repeated_heading"] = result.skipped.get("repeated_heading", 0) + \
                        chapter.repeated_headings
                if chapter.blocks:
                    chapters.append("\n\n".join(chapter.blocks))
        result.chapters = len(chapters)
        result.text = "\n\n".join(chapters) + "\n" if chapters else ""
        return result
    finally:
        book.close()
