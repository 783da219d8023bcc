"""HTML bytes to plain text: decode once (charset from headers, ``<meta>``, detection), extract once.

Decoding order, chosen so that *lying* declarations lose to evidence in the bytes:

1. a byte-order mark wins;
2. bytes that are valid UTF-8 are UTF-8 (random legacy-encoded text is almost never valid UTF-8,
   while pages that declare ``iso-8859-1`` but are UTF-8 are common);
3. the charset declared in the HTTP ``Content-Type`` header, then in ``<meta>``, each mapped to
   the superset browsers really use (WHATWG: ``iso-8859-1`` -> ``cp1252``, ``gb2312`` -> ``gb18030``)
   and decoded strictly;
4. ``charset_normalizer`` on the head of the page;
5. the first usable declaration (or ``cp1252``) with replacement characters.

Extraction uses trafilatura (the default) or resiliparse's HTML-to-text (``engine="resiliparse"``,
as DCLM did: several times faster, a somewhat different kept text; see docs/commoncrawl.md) with a
per-document bound on input size and on wall time (:func:`bounded_extractor`): the extractor runs
lxml and regular expressions in C, where ``SIGALRM`` cannot stop it, so it runs in the killable
helper process of :mod:`core.bounded`, in any runner (threads, process pools, Dask's daemonic
workers); a pathological page costs one ``cleaner_timeout`` drop, never a stuck worker.

What trafilatura would drop of a page's visible text (lists in table cells, ``<time>``, figure
captions) is rewritten first into elements it keeps, and every table row it prints is checked
against the page's cells (:mod:`sources.formats.html_cells`): a page that lost cell text anyway
is extracted again in recall mode or dropped by name, never kept short in silence (issue 31).
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import logging
import re
from dataclasses import dataclass
from typing import Any

from core.bounded import DEFAULT_MAX_INPUT, BoundedCleaner

log = logging.getLogger(__name__)

#: Declared labels mapped to what browsers decode them as (a subset of the WHATWG table).
WHATWG_SUPERSETS: dict[str, str] = {
    "iso8859-1": "cp1252", "latin-1": "cp1252", "ascii": "cp1252", "iso8859-9": "cp1254",
    "gb2312": "gb18030", "gbk": "gb18030", "euc_kr": "cp949", "shift_jis": "cp932",
    "tis-620": "cp874", "iso8859-11": "cp874", "big5": "big5hkscs",
}
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]{2,40})""", re.I)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]{2,40})""", re.I)
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)
_DETECT_BYTES = 64 * 1024


@dataclass(frozen=True)
class Decoded:
    """Text of a page and how its encoding was decided (kept in the document's meta)."""

    text: str
    encoding: str
    method: str  # bom | utf-8 | header | meta | detected | fallback


def normalize_charset(label: str | None) -> str | None:
    """Python codec name for a declared charset label, widened to its browser superset; None if unknown."""
    if not label:
        return None
    try:
        name = codecs.lookup(label.strip().strip("\"'").lower()).name
    except LookupError:
        return None
    return WHATWG_SUPERSETS.get(name, name)


def charset_from_content_type(content_type: str | None) -> str | None:
    """The ``charset=`` parameter of a Content-Type header, if present."""
    match = _HEADER_CHARSET.search(content_type or "")
    return match.group(1) if match else None


def charset_from_meta(html: bytes, scan_bytes: int = 4096) -> str | None:
    """The charset declared by ``<meta charset>`` or ``http-equiv`` in the page's head."""
    match = _META_CHARSET.search(html[:scan_bytes])
    return match.group(1).decode("ascii", "replace") if match else None


def _detect(data: bytes) -> str | None:
    from charset_normalizer import from_bytes  # imported lazily: only pages that fail 1-3 need it

    best = from_bytes(data[:_DETECT_BYTES]).best()
    return normalize_charset(best.encoding) if best is not None else None


def decode_html(data: bytes, content_type: str | None = None) -> Decoded:
    """Decode page bytes following the order in the module docstring; never raises."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return Decoded(data.decode(codec, errors="replace"), codec.replace("-sig", ""), "bom")
    try:
        return Decoded(data.decode("utf-8"), "utf-8", "utf-8")
    except UnicodeDecodeError:
        pass
    declared = [
        ("header", normalize_charset(charset_from_content_type(content_type))),
        ("meta", normalize_charset(charset_from_meta(data))),
    ]
    for method, declared_codec in declared:
        if declared_codec and declared_codec != "utf-8":
            with contextlib.suppress(UnicodeDecodeError):
                return Decoded(data.decode(declared_codec), declared_codec, method)
    detected = _detect(data)
    if detected:
        with contextlib.suppress(UnicodeDecodeError):
            return Decoded(data.decode(detected), detected, "detected")
    fallback = next((codec for _, codec in declared if codec), None) or "cp1252"
    return Decoded(data.decode(fallback, errors="replace"), fallback, "fallback")


# -- extraction -----------------------------------------------------------------------------
#: Extraction engines ``ExtractOptions.engine`` accepts.
ENGINES = ("trafilatura", "resiliparse")


@dataclass(frozen=True)
class ExtractOptions:
    """Extractor settings: ``engine`` picks trafilatura or resiliparse; ``fast`` (trafilatura only)
    skips its fallback extractors (about 1.3x faster)."""

    engine: str = "trafilatura"
    fast: bool = True
    favor_precision: bool = False
    include_tables: bool = True
    include_comments: bool = False
    timeout_s: float = 5.0

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"unknown extraction engine {self.engine!r}; choose one of {', '.join(ENGINES)}")

    @property
    def preload(self) -> tuple[str, ...]:
        """Modules a helper process imports before its first page (the engine's own)."""
        return ("resiliparse.extract.html2text",) if self.engine == "resiliparse" else ("trafilatura",)

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``trafilatura.extract``."""
        return {
            "fast": self.fast, "favor_precision": self.favor_precision, "include_tables": self.include_tables,
            "include_comments": self.include_comments, "deduplicate": False, "with_metadata": False,
            "output_format": "txt",
        }


@dataclass(frozen=True)
class Extraction:
    """One page's extracted text, and what the loss check found (see :func:`extract_page`).

    ``fallback`` names the setting that gave the text when the first pass lost table-cell text
    (``favor_recall``); ``lost`` lists the table-cell words still missing after it (then the
    page is dropped as ``extract_lost_text``, never kept short).
    """

    text: str
    fallback: str | None = None
    lost: tuple[str, ...] = ()


def extract_text(html: str, options: ExtractOptions) -> str:
    """Run the configured extractor once on a decoded page; returns "" when it finds no main text."""
    return extract_page(html, options).text


def extract_page(html: str, options: ExtractOptions) -> Extraction:
    """The configured extractor on a decoded page, with trafilatura's losses prevented and checked.

    trafilatura gets the page's tree after :func:`sources.formats.html_cells.unhide_for_trafilatura`
    (lists in table cells, ``<time>``, figure captions: text it would drop); with tables on, every
    table row it prints is then checked against the page's cells (``lost_cell_words``). A page that
    still lost cell text is extracted again in trafilatura's recall mode (which keeps more of a
    cell's blocks); if that loses nothing it is used (``fallback="favor_recall"``), else the
    words lost are returned for the reader to drop the page by name.
    """
    if options.engine == "resiliparse":
        return Extraction(_resiliparse_text(html, options))
    text, lost = _trafilatura_text(html, options.kwargs(), options.include_tables)
    if not lost or not (lost := _loss_beyond_design(html, text, options.favor_precision)):
        return Extraction(text)
    recall = {**options.kwargs(), "favor_precision": False, "favor_recall": True}
    text_recall, lost_recall = _trafilatura_text(html, recall, True)
    if not lost_recall or not _loss_beyond_design(html, text_recall, False):
        return Extraction(text_recall, fallback="favor_recall")
    return Extraction(text, lost=tuple(lost))


def _loss_beyond_design(html: str, text: str, favor_precision: bool) -> list[str]:
    """Cell words lost once what trafilatura removes on purpose is set aside (rarely run: only on a loss).

    trafilatura deletes elements whose class or id names boilerplate (``share``, ``comments``,
    ``teaser``...) by its own XPath lists (comments are never kept: the recipe has no switch for them); a cell emptied that way is its design, not a loss.
    The page is parsed again, those elements are removed as trafilatura removes them, and the
    printed rows are checked against what is left.
    """
    from trafilatura.utils import load_html

    from sources.formats.html_cells import lost_cell_words, table_rows, unhide_for_trafilatura

    tree = load_html(html)
    if tree is None:
        return []
    unhide_for_trafilatura(tree)
    try:  # trafilatura's internals: on a version without them, every loss counts
        from trafilatura import xpaths
        from trafilatura.htmlprocessing import prune_unwanted_nodes
    except ImportError:
        return lost_cell_words(table_rows(tree), text)
    names = ("REMOVE_COMMENTS_XPATH", "OVERALL_DISCARD_XPATH", "TEASER_DISCARD_XPATH",
             *(("PRECISION_DISCARD_XPATH",) if favor_precision else ()))
    prune_unwanted_nodes(tree, [x for name in names for x in getattr(xpaths, name, [])])
    return lost_cell_words(table_rows(tree), text)


def _trafilatura_text(html: str, kwargs: dict[str, Any], check_tables: bool) -> tuple[str, list[str]]:
    """trafilatura on the unhidden tree; with ``check_tables``, the table-cell words it lost."""
    import trafilatura  # heavy import, kept out of module import time
    from trafilatura.utils import load_html

    from sources.formats.html_cells import lost_cell_words, table_rows, unhide_for_trafilatura

    tree = load_html(html)
    if tree is None:
        return "", []
    unhide_for_trafilatura(tree)
    rows = table_rows(tree) if check_tables else []
    text = trafilatura.extract(tree, **kwargs) or ""
    return text, (lost_cell_words(rows, text) if rows and text else [])


def _resiliparse_text(html: str, options: ExtractOptions) -> str:
    """resiliparse's main-content text: navigation, footers and forms left out, lists as bullets.

    Why these settings: they are the ones DCLM used to replace trafilatura at web scale
    (``main_content=True``, no alt texts, links or form fields); ``include_comments`` maps to its
    ``comments`` switch so the two engines are configured alike.
    """
    try:
        from resiliparse.extract.html2text import extract_plain_text
    except ImportError as exc:  # an optional extra: say how to get it, in one line
        raise RuntimeError("extract.engine 'resiliparse' needs the resiliparse package: "
                           "pip install 'kinda-llama[resiliparse]'") from exc
    return extract_plain_text(html, main_content=True, alt_texts=False, links=False, form_fields=False,
                              noscript=False, comments=options.include_comments).strip()


def bounded_extractor(options: ExtractOptions, max_input: int = DEFAULT_MAX_INPUT) -> BoundedCleaner[Extraction]:
    """:func:`extract_page` under ``options.timeout_s`` and ``max_input`` per page, in a killable helper.

    ``run(record, html)`` returns an :class:`Extraction` or a :class:`core.document.Drop` (``cleaner_timeout``,
    ``record_too_large``, ``cleaner_crashed``); the extractor's own errors are raised. The helper is
    shared by the thread's readers and imports the engine before its first page (``preload``).
    """
    return BoundedCleaner(functools.partial(extract_page, options=options), timeout_s=options.timeout_s,
                          max_input=max_input, preload=options.preload, shared=True)


# -- post bodies (StackExchange) to readable text ----------------------------------------------
_BLOCK_TAGS = frozenset({"p", "div", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "table", "hr",
                         "dl", "dd", "dt", "figure", "section", "details", "summary"})
_LINE_TAGS = frozenset({"tr", "br"})
_LIST_TAGS = frozenset({"ul", "ol"})
_SKIP_TAGS = frozenset({"script", "style", "head", "template"})
_SPACE_RUN = re.compile(r"[ \t\r\n\f\v\u00a0]+")
_NEEDS_COLLAPSE = re.compile(r"[\t\r\n\f\v\u00a0]|  ")
_BLANK_RUN = re.compile(r"\n{3,}")
_TRAILING_SPACE = re.compile(r"[ \t]+\n")


def _list_start(element: Any) -> int:
    """The first number of an ``<ol>`` (its ``start`` attribute, 1 when absent or not a number)."""
    value = str(element.get("start") or "1").strip()
    return int(value) if value.isdigit() and 0 < int(value) < 10**9 else 1


class _Body:
    """Text with collapsed whitespace (except in ``<pre>``) and bounded line breaks, built by a walk."""

    __slots__ = ("item_open", "line_start", "parts", "pending")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pending = 0
        self.line_start = True
        self.item_open = False  # a list marker was written and no text yet: its first block stays on its line

    def breaks(self, count: int) -> None:
        if self.parts and count > self.pending and not self.item_open:
            self.pending = count

    def text(self, value: str | None, verbatim: bool) -> None:
        if not value:
            return
        parts = self.parts
        if not verbatim:
            if _NEEDS_COLLAPSE.search(value) is not None:
                value = _SPACE_RUN.sub(" ", value)
            if self.line_start or self.pending or (parts and parts[-1][-1] == " "):
                value = value.lstrip(" ")
                if not value:
                    return
        if self.pending:
            parts.append("\n" * self.pending)
            self.pending = 0
        parts.append(value)
        self.line_start = value[-1] == "\n"
        self.item_open = False

    def walk(self, element: Any, pre: int, lists: int) -> None:
        """Children of ``element``: open, own text, children, close, tail (an element tree walk).

        Items of an ``<ol>`` are numbered as a browser shows them (from its ``start``), others get
        ``*``; a nested list closes with a line break, not a blank line, inside its item.
        """
        number = _list_start(element) if element.tag == "ol" else 0
        for child in element:
            tag = child.tag if isinstance(child.tag, str) else ""
            if tag in _SKIP_TAGS:
                self.text(child.tail, pre > 0)
                continue
            if tag in _BLOCK_TAGS:
                self.breaks(2)
            elif tag in _LIST_TAGS:
                self.breaks(1 if lists else 2)
            elif tag == "li":
                self.breaks(1)
                self.text("  " * max(lists - 1, 0) + (f"{number}. " if number else "* "), True)
                number += 1 if number else 0
                self.line_start = self.item_open = True  # the item's own leading whitespace is dropped
            elif tag in ("td", "th"):
                self.text(" ", False)
            inner_pre, inner_lists = pre + (tag == "pre"), lists + (tag in _LIST_TAGS)
            if tag:
                self.text(child.text, inner_pre > 0)
            if len(child):
                self.walk(child, inner_pre, inner_lists)
            if tag in _BLOCK_TAGS or (tag in _LIST_TAGS and not lists):
                self.breaks(2)
            elif tag in _LINE_TAGS or tag in _LIST_TAGS or tag == "li":
                self.breaks(1)
            self.text(child.tail, pre > 0)

    def result(self) -> str:
        return _BLANK_RUN.sub("\n\n", _TRAILING_SPACE.sub("\n", "".join(self.parts))).strip()


def html_to_text(html: str) -> str:
    """Plain text of an HTML post body: paragraphs as blank-line blocks, list items as ``*`` bullets.

    Code blocks keep their whitespace; nested lists are indented two spaces per level; links
    keep their text; scripts and styles are dropped. lxml's HTML parser decodes entities and
    tolerates bad markup. The same text as the StackExchange reader's walk over lxml's
    ``iterwalk`` events, from a recursive walk over children that does less Python work per
    element (no event tuples, whitespace collapsed only where there is any to collapse).
    """
    if not html or not html.strip():
        return ""
    if "<" not in html and "&" not in html:
        return _SPACE_RUN.sub(" ", html).strip()
    import lxml.html
    from lxml import etree

    try:
        root = lxml.html.fragment_fromstring(html, create_parent="div")
    except (etree.ParserError, ValueError):
        return _SPACE_RUN.sub(" ", html).strip()
    body = _Body()
    body.text(root.text, False)
    body.walk(root, 0, 0)
    return body.result()
