"""What trafilatura would lose from a page's visible text, put where it keeps it; and a check on what it lost.

trafilatura's table handler keeps a cell's paragraphs, divs, headings and code, but not its lists
(``<ul>``, ``<ol>``, ``<dl>``): outside its recall mode it empties those, so a cell that holds a
list comes out as ``| Monday |  |`` (adbar/trafilatura#531; issue 31's case 07). Its cleaning
also removes every ``<time>`` (a date inside a sentence leaves "began on  at the hall") and every
``<figure>`` with its caption. :func:`unhide_for_trafilatura` rewrites those elements, in the
parsed tree trafilatura is then given, into ones it keeps with the same text: list items and
definition terms/descriptions in cells become paragraphs, ``<time>`` an inline span, a figure's
caption a paragraph. Nothing else changes, so pages without them extract exactly as before.

:func:`table_rows` and :func:`lost_cell_words` are the check that no loss of this kind stays
silent: a table row that trafilatura printed (``| a | b |`` in its text output) must hold every
word its cells show in the page. Words trafilatura removes by design are not counted: link text
(navigation) and elements its cleaning drops on purpose (forms, buttons, scripts, ``<nav>``,
``<footer>``...: ``trafilatura.settings.MANUALLY_CLEANED``). A row that still misses words is a
visible loss, and :mod:`sources.formats.html_text` then falls back or drops the page by name.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from typing import Any

#: List elements trafilatura drops inside table cells (outside recall mode), and what they become.
_CELL_LIST_TAGS = {"ul": "div", "ol": "div", "dl": "div", "menu": "div", "li": "p", "dt": "p", "dd": "p"}
_WORD = re.compile(r"\w+")
#: Rows beyond this many are not checked (a page-long data table costs the check, not the page).
MAX_CHECKED_ROWS = 5000
#: Row comparisons per page, at most (each a small Counter difference).
MAX_COMPARISONS = 200_000


def _words(texts: list[str]) -> Counter[str]:
    return Counter(_WORD.findall(" ".join(texts).casefold())) if texts else Counter()


def _mostly_links(element: Any) -> bool:
    """A list whose text is mostly link text is navigation: trafilatura may drop it, as it would anyway."""
    total = len("".join(element.itertext()).strip())
    links = sum(len("".join(a.itertext()).strip()) for a in element.iter("a"))
    return total == 0 or links * 2 > total


def unhide_for_trafilatura(tree: Any) -> None:
    """Rewrite, in place, the elements whose visible text trafilatura would drop (module docstring).

    A list in a cell becomes paragraphs unless it is mostly links (a layout table's menu, which
    trafilatura's link-density test removes in any form; rewriting it would only change which
    container trafilatura picks as the main text).
    """
    for lst in tree.iter("ul", "ol", "dl", "menu"):  # a list rewritten here hides its inner lists from the walk
        if next(lst.iterancestors("td", "th"), None) is not None and not _mostly_links(lst):
            for element in lst.iter(*_CELL_LIST_TAGS):
                element.tag = _CELL_LIST_TAGS[element.tag]
    for element in tree.iter("time"):
        element.tag = "span"
    for element in tree.iter("figcaption"):
        element.tag = "p"
        parent = element.getparent()
        if parent is not None and parent.tag == "figure":
            parent.tag = "div"


@cache
def _not_counted() -> frozenset[str]:
    """Tags whose text trafilatura removes by design (its own cleaning list), plus links."""
    from trafilatura.settings import MANUALLY_CLEANED

    return frozenset(MANUALLY_CLEANED) | {"a", "template"}


def _cell_texts(element: Any, skip: frozenset[str], counted: list[str], other: list[str], in_skip: bool) -> None:
    """Texts under ``element``, nested tables left out (their rows are rows of their own)."""
    for child in element:
        tag = child.tag
        if isinstance(tag, str) and tag != "table":  # comments and processing instructions show nothing
            inner = in_skip or tag in skip
            if child.text:
                (other if inner else counted).append(child.text)
            if len(child):
                _cell_texts(child, skip, counted, other, inner)
        if child.tail:
            (other if in_skip else counted).append(child.tail)


def table_rows(tree: Any) -> list[tuple[Counter[str], Counter[str]]]:
    """Per ``<tr>`` with counted words: (counted words, every word shown), read before extraction."""
    skip = _not_counted()
    rows: list[tuple[Counter[str], Counter[str]]] = []
    for row in tree.iter("tr"):
        counted: list[str] = []
        other: list[str] = []
        for cell in row:
            if cell.tag in ("td", "th"):
                if cell.text:
                    counted.append(cell.text)
                _cell_texts(cell, skip, counted, other, False)
        words = _words(counted)
        if words:
            rows.append((words, words + _words(other)))
            if len(rows) >= MAX_CHECKED_ROWS:
                break
    return rows


def printed_rows(text: str) -> list[Counter[str]]:
    """The words of each table row in trafilatura's text output (``| a | b |``, possibly over lines)."""
    rows: list[Counter[str]] = []
    current: list[str] | None = None
    for line in text.split("\n"):
        stripped = line.strip()
        if current is None and stripped.startswith("|"):
            if set(stripped) <= {"|", "-", " "}:  # the |---|---| line under a header row
                continue
            current = []
        if current is None:
            continue
        current.append(stripped)
        if stripped.endswith("|") and (len(current) > 1 or len(stripped) > 1):
            words = _words(current)
            if words:
                rows.append(words)
            current = None
    return rows


def lost_cell_words(rows: list[tuple[Counter[str], Counter[str]]], text: str,
                    budget: int = MAX_COMPARISONS) -> list[str]:
    """Counted words of the page's table rows that are missing from the rows trafilatura printed.

    Each printed row is matched to a page row that shows all its words: the first that lacks
    nothing it counts, else the one that lacks least (rows print in page order, a nested table's
    rows after its outer table's); the counted words it lacks are lost. Page rows that were not
    printed at all (a table left out as boilerplate) are not judged; after ``budget`` row
    comparisons (a page of huge tables) the rest is not judged either.
    """
    lost: list[str] = []
    unmatched = list(range(len(rows)))
    for printed in printed_rows(text):
        best: tuple[int, int, list[str]] | None = None  # (missing count, position, missing words)
        for position, index in enumerate(unmatched):
            budget -= 1
            if budget < 0:
                return lost
            counted, shown = rows[index]
            if any(shown[word] < count for word, count in printed.items()):
                continue
            missing = list((counted - printed).elements())
            if best is None or len(missing) < best[0]:
                best = (len(missing), position, missing)
            if not missing:
                break
        if best is not None:
            lost.extend(best[2])
            del unmatched[best[1]]
    return lost
