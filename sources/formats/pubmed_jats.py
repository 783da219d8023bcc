"""One PubMed Central article (JATS 1.x or the older NLM 2.x archiving DTD) -> plain text.

The document is what a reader of the paper reads: the title, the abstract (a structured
abstract's parts keep their labels, ``Background: …``), then the body's sections with their
headings in order; figure and table captions stay as text, table bodies are linearised (one row
per line, cells joined by `` | ``) or dropped. Everything that is metadata rather than prose is
left out: author lists, affiliations, funding, footnotes, acknowledgements, the reference list
and the rest of ``<back>``; supplementary-material blocks (file lists) too.

Math: a formula given as ``tex-math`` (alone or inside ``<alternatives>``) is kept as TeX, with
PMC's ``\\documentclass…\\begin{document}`` wrapper stripped (``$…$`` inline, ``$$…$$`` on its
own line for display math); otherwise MathML becomes readable linear text (``(a − b)/c``,
``x_i^2``, ``sqrt(x)``); a MathML ``annotation`` in TeX is used when present. Formulas that are
only images (old NLM 2.3 files do this) cannot be read: they are left out and counted in the
document's ``meta["math"]["image_dropped"]``.

Safety: articles are parsed with DTD loading, network access and entity resolution off
(``resolve_entities=False, no_network=True, load_dtd=False``), so neither the files' external
DTDs nor an attacker's external entity is ever fetched. An article whose internal DTD subset
declares entities (XXE or an entity bomb) is rejected whole (:class:`UnsafeXmlError`); named
references that stay unresolved are skipped and counted. Parsing is bounded by the caller's
size limit and by a deadline checked while the tree is walked.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from lxml import etree

from sources.formats.mathml import local, reading, tex_formula

MML = "{http://www.w3.org/1998/Math/MathML}"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"

TableMode = Literal["linearize", "drop"]

#: Body sections that list files or declarations, not prose (by ``sec-type``).
SKIPPED_SEC_TYPES = frozenset({
    "supplementary-material", "COI-statement", "coi-statement", "funding-information", "author-contributions",
    "data-availability", "display-objects", "ethics-statement",
})
#: Abstract types that are not the paper's abstract (graphical abstracts, tables-of-contents blurbs).
SKIPPED_ABSTRACT_TYPES = frozenset({"graphical", "teaser", "toc", "web-summary", "precis"})
#: Elements skipped wherever they occur (with their text; their tail text is kept).
SKIPPED_ELEMENTS = frozenset({
    "supplementary-material", "ref-list", "fn-group", "contrib-group", "aff", "funding-group",
    "author-notes", "ack", "table-wrap-foot", "attrib", "object-id", "alt-text", "long-desc", "permissions",
    "graphic", "inline-graphic", "media", "uri",
})
#: Elements rendered as blocks of their own (separate paragraphs), even when nested in a ``<p>``.
BLOCK_ELEMENTS = frozenset({"fig", "table-wrap", "list", "def-list", "boxed-text", "disp-quote", "disp-formula",
                            "statement", "verse-group", "preformat", "code", "fig-group", "table-wrap-group"})

_WS = re.compile(r"[ \t\r\n\u00a0]+")
_LINE = "\x00"  # a hard line break inside inline text (display math, list items)


class UnsafeXmlError(ValueError):
    """The article declares entities in an internal DTD subset (XXE, entity expansion bombs)."""


class DeadlineError(TimeoutError):
    """Rendering an article took longer than its time bound."""


@dataclass
class Counts:
    """What a render kept and left out, per article (goes to ``meta``)."""

    tex: int = 0
    mathml: int = 0
    image_dropped: int = 0
    tables: int = 0
    figures: int = 0
    unresolved_entities: int = 0

    def math(self) -> dict[str, int]:
        """The math counters as stored in ``meta["math"]``."""
        return {"tex": self.tex, "mathml": self.mathml, "image_dropped": self.image_dropped}


@dataclass
class Article:
    """A rendered article: text pieces and what ``meta`` needs."""

    title: str
    abstract: list[str]
    sections: list[str]  # headings in order (for meta and tests)
    text: str
    ids: dict[str, str]
    article_type: str | None
    licence: dict[str, Any]
    dtd: str | None
    language: str | None
    counts: Counts = field(default_factory=Counts)


def make_parser() -> etree.XMLParser:
    """The one safe parser configuration (see the module docstring)."""
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
                           huge_tree=False, remove_comments=True, remove_blank_text=False)


def squash(text: str) -> str:
    """Collapse whitespace runs to one space, keeping the hard line breaks of display blocks."""
    lines = [_WS.sub(" ", part).strip() for part in text.split(_LINE)]
    return "\n".join(line for line in lines if line)


# -- math -----------------------------------------------------------------------------------
def formula_text(node: Any, counts: Counts) -> str | None:
    """The text of a formula element, preferring tex-math; None (counted) when it is only an image."""
    tex = [n for n in node.iter() if local(n.tag) == "tex-math"]
    if tex:
        counts.tex += 1
        return "$" + tex_formula("".join(tex[0].itertext())) + "$"
    maths = [n for n in node.iter() if n.tag == MML + "math" or local(n.tag) == "math"]
    if maths:
        counts.mathml += 1
        return reading(maths[0])
    if any(local(n.tag) in ("graphic", "inline-graphic") for n in node.iter()):
        counts.image_dropped += 1
        return None
    text = _WS.sub(" ", "".join(t for n in node if local(n.tag) != "label" for t in n.itertext())).strip()
    return text or None


# -- renderer -------------------------------------------------------------------------------
class Renderer:
    """Walks one article tree into paragraphs; stateful only for counts and the deadline."""

    def __init__(self, table_mode: TableMode, deadline: float) -> None:
        self.table_mode = table_mode
        self.deadline = deadline
        self.counts = Counts()
        self.headings: list[str] = []
        self._ticks = 0

    def _tick(self) -> None:
        self._ticks += 1
        if self._ticks % 512 == 0 and time.monotonic() > self.deadline:
            raise DeadlineError("article took longer than its time bound")

    # inline ------------------------------------------------------------------------------
    def inline(self, node: Any, out: list[str], blocks: list[str]) -> None:
        """Append the inline text of ``node``'s content to ``out``; nested blocks go to ``blocks``."""
        if node.text:
            out.append(node.text)
        for child in node:
            self._tick()
            name = local(child.tag)
            if not name:
                if isinstance(child, etree._Entity):
                    self.counts.unresolved_entities += 1
            elif name in SKIPPED_ELEMENTS:
                pass
            elif name == "disp-formula":
                formula = formula_text(child, self.counts)
                if formula:
                    out.append(f"{_LINE}${formula}${_LINE}" if formula.startswith("$") else f"{_LINE}{formula}{_LINE}")
            elif name in ("inline-formula", "tex-math") or child.tag == MML + "math":
                formula = formula_text(child, self.counts) if name != "tex-math" else f"${tex_formula(child.text or '')}$"
                if formula:
                    out.append(formula)
            elif name in BLOCK_ELEMENTS:
                blocks.extend(self.block(child))
            elif name == "break":
                out.append(_LINE)
            else:
                self.inline(child, out, blocks)
            if child.tail:
                out.append(child.tail)

    def text_of(self, node: Any) -> str:
        """Inline text of a node with its nested blocks appended as lines."""
        out: list[str] = []
        blocks: list[str] = []
        self.inline(node, out, blocks)
        return "\n".join(p for p in [squash("".join(out)), *blocks] if p)

    # blocks ------------------------------------------------------------------------------
    def block(self, node: Any) -> list[str]:
        """Paragraph blocks for one block-level element."""
        self._tick()
        name = local(node.tag)
        if not name or name in SKIPPED_ELEMENTS:
            return []
        if name == "p":
            out: list[str] = []
            nested: list[str] = []
            self.inline(node, out, nested)
            return [p for p in [squash("".join(out)), *nested] if p]
        if name == "sec":
            return self.section(node)
        if name in ("fig", "table-wrap"):
            return self.captioned(node, name)
        if name == "disp-formula":
            formula = formula_text(node, self.counts)
            return [f"${formula}$" if formula and formula.startswith("$") else formula] if formula else []
        if name in ("list", "def-list"):
            return self.listing(node)
        if name in ("title", "label"):
            return []
        if name in ("fig-group", "table-wrap-group", "boxed-text", "disp-quote", "statement", "glossary",
                    "app", "verse-group"):
            return self.children(node)
        return [t for t in [self.text_of(node)] if t]

    def children(self, node: Any) -> list[str]:
        """Blocks of every child, with a boxed section's title first."""
        blocks: list[str] = []
        title = node.find("title")
        if title is not None:
            heading = self.text_of(title)
            if heading:
                blocks.append(heading)
        for child in node:
            blocks.extend(self.block(child))
        return blocks

    def section(self, node: Any) -> list[str]:
        """A section: its heading (label + title) then its blocks, nested sections in order."""
        if node.get("sec-type") in SKIPPED_SEC_TYPES:
            return []
        label, title = node.find("label"), node.find("title")
        heading = " ".join(t for t in (self.text_of(label) if label is not None else "",
                                       self.text_of(title) if title is not None else "") if t)
        mark = len(self.headings)
        if heading:
            self.headings.append(heading)
        blocks = [b for child in node for b in self.block(child)]
        if not blocks:  # only file lists or figures of other places: no heading without content
            del self.headings[mark:]
            return []
        return [heading, *blocks] if heading else blocks

    def captioned(self, node: Any, name: str) -> list[str]:
        """A figure or table: ``Label: caption`` and, for tables in linearize mode, the rows."""
        if name == "fig":
            self.counts.figures += 1
        else:
            self.counts.tables += 1
        label = node.find("label")
        caption = node.find("caption")
        parts = []
        if caption is not None:
            for child in caption:
                text = self.text_of(child) if local(child.tag) in ("title", "p") else ""
                if text:
                    parts.append(text)
        label_text = self.text_of(label) if label is not None else ""
        text = " ".join(parts)
        head = f"{label_text.rstrip('.:')}: {text}" if label_text and text else (label_text or text)
        blocks = [head] if head else []
        if name == "table-wrap" and self.table_mode == "linearize":
            rows = self.table_rows(node)
            if rows:
                blocks.append("\n".join(rows))
        return blocks

    def table_rows(self, node: Any) -> list[str]:
        """Each ``<tr>`` as one line, cells joined by `` | ``."""
        rows = []
        for tr in node.iter("tr"):
            self._tick()
            cells = [squash(self.text_of(c)).replace("\n", " ") for c in tr if local(c.tag) in ("td", "th")]
            if any(cells):
                rows.append(" | ".join(cells))
        return rows

    def listing(self, node: Any) -> list[str]:
        """A list as ``- item`` lines (definition lists as ``term: definition``)."""
        lines = []
        for item in node:
            name = local(item.tag)
            if name == "list-item":
                text = " ".join(self.text_of(c) for c in item if local(c.tag) != "label")
                if text.strip():
                    lines.append("- " + text.replace("\n", " ").strip())
            elif name == "def-item":
                term = item.find("term")
                definition = item.find("def")
                t = self.text_of(term) if term is not None else ""
                d = self.text_of(definition) if definition is not None else ""
                if t or d:
                    lines.append(f"{t}: {d}".strip(": "))
        return ["\n".join(lines)] if lines else []

    # abstract ----------------------------------------------------------------------------
    def abstract(self, node: Any) -> list[str]:
        """Abstract parts; a structured abstract's sections become ``Label: text``."""
        parts: list[str] = []
        title = node.find("title")
        if title is not None and node.get("abstract-type"):
            heading = self.text_of(title)
            if heading:
                parts.append(heading)
        for child in node:
            name = local(child.tag)
            if name == "sec":
                head = child.find("title")
                label = self.text_of(head) if head is not None else ""
                body = [b for c in child if local(c.tag) not in ("title", "label") for b in self.block(c)]
                if body:
                    parts.append(f"{label.rstrip(':.')}: {body[0]}" if label else body[0])
                    parts.extend(body[1:])
            elif name not in ("title", "label"):
                parts.extend(self.block(child))
        return parts


# -- licence --------------------------------------------------------------------------------
_CC = re.compile(r"creativecommons\.org/(licenses|publicdomain)/([a-z-]+)(?:/(\d(?:\.\d)?))?", re.IGNORECASE)
#: Licences that allow commercial use of the text.
COMMERCIAL = frozenset({"cc0", "public-domain", "cc-by", "cc-by-sa"})


def licence_key(href: str | None, kind: str | None, text: str) -> str:
    """A short licence key (``cc-by``, ``cc-by-nc-nd``, ``cc0``, ``public-domain``, ``unknown``)."""
    match = _CC.search(href or "") or _CC.search(text)
    if match:
        family, name = match.group(1).lower(), match.group(2).lower()
        if family == "publicdomain":
            return "cc0" if name.startswith("zero") else "public-domain"
        return "cc-" + name
    kind = (kind or "").lower()
    if kind in ("cc-by", "cc-by-sa", "cc-by-nc", "cc-by-nc-sa", "cc-by-nc-nd", "cc-by-nd", "cc0"):
        return kind
    lowered = text.lower()
    if "public domain" in lowered or kind == "public-domain":
        return "public-domain"
    if "noncommercial" in lowered.replace("-", "").replace(" ", ""):
        return "cc-by-nc"
    if "creative commons attribution" in lowered:
        return "cc-by"
    return "unknown"


def licence_of(root: Any, open_access_pi: bool) -> dict[str, Any]:
    """``{"key", "url", "type", "open_access", "commercial"}`` from ``<permissions>``."""
    lic = next((n for n in root.iter("license") if n.getparent() is not None
                and local(n.getparent().tag) == "permissions"), None)
    href = lic.get(XLINK_HREF) if lic is not None else None
    kind = lic.get("license-type") if lic is not None else None
    text = _WS.sub(" ", "".join(lic.itertext())).strip() if lic is not None else ""
    if lic is not None and href is None:
        href = next((e.get(XLINK_HREF) for e in lic.iter("ext-link") if e.get(XLINK_HREF)), None)
    if lic is None:  # NLM 2.x files often state the licence only in the copyright statement
        statement = next(root.iter("copyright-statement"), None)
        text = _WS.sub(" ", "".join(statement.itertext())).strip() if statement is not None else ""
    key = licence_key(href, kind, text)
    return {"key": key, "url": href, "type": kind, "commercial": key in COMMERCIAL,
            "open_access": open_access_pi or (kind or "").lower() == "open-access"}


# -- article --------------------------------------------------------------------------------
def parse_article(data: bytes) -> Any:
    """Parse bytes safely; raise UnsafeXmlError for entity declarations, XMLSyntaxError when broken."""
    if b"<!ENTITY" in data:  # only markup can hold it (text would carry &lt;): refuse before libxml2 sees it
        raise UnsafeXmlError("the document declares entities; they are never resolved")
    root = etree.fromstring(data, make_parser())
    internal = root.getroottree().docinfo.internalDTD
    if internal is not None and any(True for _ in internal.iterentities()):  # type: ignore[union-attr]  # lxml-stubs lack it
        raise UnsafeXmlError("the internal DTD subset declares entities; they are never resolved")
    return root


def _ids(meta: Any) -> dict[str, str]:
    ids = {}
    for node in meta.findall("article-id"):
        kind = node.get("pub-id-type") or "other"
        if node.text and kind not in ids:
            ids[kind] = node.text.strip()
    return ids


def render(root: Any, table_mode: TableMode = "linearize", max_seconds: float = 10.0) -> Article:
    """Render a parsed article (``<article>`` root, or a PMC ``<pmc-articleset>`` holding one)."""
    if local(root.tag) != "article":
        found = next((n for n in root.iter() if local(n.tag) == "article"), None)
        if found is None:
            raise ValueError(f"no <article> element (root is <{local(root.tag)}>)")
        root = found
    renderer = Renderer(table_mode, time.monotonic() + max_seconds)
    meta = root.find("front/article-meta")
    title_node = meta.find("title-group/article-title") if meta is not None else None
    title = renderer.text_of(title_node).replace("\n", " ") if title_node is not None else ""
    abstract: list[str] = []
    if meta is not None:
        for node in meta.findall("abstract"):
            if (node.get("abstract-type") or "") not in SKIPPED_ABSTRACT_TYPES:
                abstract.extend(renderer.abstract(node))
    body = root.find("body")
    body_blocks = [b for child in body for b in renderer.block(child)] if body is not None else []
    floats = root.find("floats-group")  # figures and tables gathered after <back> (JATS floats-group)
    if floats is not None:
        body_blocks.extend(b for child in floats for b in renderer.block(child))
    text = "\n\n".join(p for p in [title, *abstract, *body_blocks] if p)
    open_access = any(isinstance(n, etree._ProcessingInstruction) and "open_access" in (n.text or "")
                      for n in root.iter(etree.PI))
    docinfo = root.getroottree().docinfo
    return Article(
        title=title, abstract=abstract, sections=renderer.headings, text=text,
        ids=_ids(meta) if meta is not None else {}, article_type=root.get("article-type"),
        licence=licence_of(root, open_access), dtd=docinfo.public_id, counts=renderer.counts,
        language=root.get("{http://www.w3.org/XML/1998/namespace}lang"),
    )


def article_meta(article: Article, where: str) -> dict[str, Any]:
    """The Document ``meta`` of a rendered article."""
    counts = article.counts
    return {
        "title": article.title, "pmcid": article.ids.get("pmc") or article.ids.get("pmcid"),
        "pmid": article.ids.get("pmid"), "doi": article.ids.get("doi"), "article_type": article.article_type,
        "license": article.licence["key"], "license_url": article.licence["url"],
        "license_type": article.licence["type"], "open_access": article.licence["open_access"],
        "commercial_use": article.licence["commercial"], "dtd": article.dtd, "sections": article.sections,
        "math": counts.math(), "tables": counts.tables, "figures": counts.figures,
        "unresolved_entities": counts.unresolved_entities, "file": where,
        "language": (article.language or "en").split("-")[0].lower(),
    }


def element_counts(root: Any) -> Counter[str]:
    """How many of each element an article has (tests and debugging)."""
    return Counter(local(n.tag) for n in root.iter() if local(n.tag))


def iter_text_nodes(root: Any) -> Iterator[str]:
    """Every text and tail string of a tree (tests use it to check what survives)."""
    for node in root.iter():
        if node.text:
            yield node.text
        if node.tail:
            yield node.tail
