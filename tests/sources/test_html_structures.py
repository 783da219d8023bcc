"""Extraction over an HTML-structure corpus: which engine keeps how much of each structure's visible text.

Each structure (lists, paragraphs, divs, definition lists, code and line breaks in table cells;
nested tables; lists, code blocks, headings, quotes, dates, captions in the text) stands between two
prose paragraphs of a page's main content; its visible words are what a browser shows of it (our
own block-aware walk, :func:`sources.formats.html_text.html_to_text`), and an engine keeps the
fraction of them found in its output. The default (trafilatura after
:func:`sources.formats.html_cells.unhide_for_trafilatura`) must keep every word of every structure;
the table for docs/commoncrawl.md is printed by ``python -m tests.sources.test_html_structures``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import pytest

from sources.formats import html_cells
from sources.formats.html_text import ExtractOptions, extract_page, extract_text, html_to_text

PROSE_1 = ("<p>The town council met on Tuesday evening to discuss the new budget for parks, roads and the public "
           "library, and residents filled the hall to hear the plans.</p>")
PROSE_2 = ("<p>After two hours of debate the council voted to approve the budget, with a promise to review "
           "spending on roads again in the spring when the new figures arrive.</p>")

#: name -> the structure's HTML (words chosen apart from the prose's, so each one counts once)
STRUCTURES: dict[str, str] = {
    "cell: bullet list": "<table><tr><td><p>Mondays</p></td><td><ul><li>alpha bravo charlie</li><li>delta echo</li>"
                         "</ul></td></tr><tr><td>Tuesdays</td><td><ul><li>foxtrot golf</li></ul></td></tr></table>",
    "cell: numbered list": "<table><tr><td>Step one</td><td><ol><li>alpha bravo</li><li>charlie delta</li></ol></td>"
                           "</tr></table>",
    "cell: nested list": "<table><tr><td><ul><li>alpha<ul><li>bravo charlie</li></ul></li></ul></td><td>delta</td>"
                         "</tr></table>",
    "cell: text then list": "<table><tr><td><p>Opening</p><ul><li>alpha bravo</li></ul></td><td>charlie</td></tr>"
                            "</table>",
    "cell: definition list": "<table><tr><td>Terms</td><td><dl><dt>alpha</dt><dd>bravo charlie</dd><dt>delta</dt>"
                             "<dd>echo foxtrot</dd></dl></td></tr></table>",
    "cell: paragraphs": "<table><tr><td><p>alpha bravo</p><p>charlie delta</p></td><td><p>echo foxtrot</p></td></tr>"
                        "</table>",
    "cell: divs": "<table><tr><td><div>alpha bravo</div><div>charlie delta</div></td><td><div><div>echo foxtrot"
                  "</div></div></td></tr></table>",
    "cell: line breaks": "<table><tr><td>alpha<br>bravo</td><td>charlie<br/>delta<br>echo</td></tr></table>",
    "cell: heading": "<table><tr><td><h3>alpha bravo</h3><p>charlie delta</p></td><td>echo</td></tr></table>",
    "cell: code": "<table><tr><td>Example</td><td><pre><code>x = compute(alpha, bravo)\nprint(x)</code></pre></td>"
                  "</tr></table>",
    "cell: quote": "<table><tr><td><blockquote>alpha bravo charlie</blockquote></td><td>delta</td></tr></table>",
    "table: header row": "<table><thead><tr><th>Name</th><th>Score</th></tr></thead><tbody><tr><td>alpha</td>"
                         "<td>12</td></tr><tr><td>bravo</td><td>15</td></tr></tbody></table>",
    "table: caption": "<table><caption>Prices in the market</caption><tr><td>apples</td><td>three</td></tr></table>",
    "table: nested": "<table><tr><td>outer alpha</td><td><table><tr><td>inner bravo</td><td>inner charlie</td></tr>"
                     "</table></td></tr><tr><td>outer delta</td><td>outer echo</td></tr></table>",
    "bullet list": "<ul><li>alpha bravo charlie</li><li>delta echo foxtrot</li></ul>",
    "nested list": "<ul><li>alpha bravo<ul><li>charlie delta</li><li>echo</li></ul></li><li>foxtrot</li></ul>",
    "list of paragraphs": "<ol><li><p>alpha bravo</p><p>charlie</p></li><li><div>delta echo</div></li></ol>",
    "definition list": "<dl><dt>alpha</dt><dd>bravo charlie delta</dd><dt>echo</dt><dd>foxtrot golf</dd></dl>",
    "code block": "<pre><code>def alpha(bravo):\n    return bravo + 1\n</code></pre>",
    "inline code": "<p>Call <code>main()</code> then <code>exit(0)</code> now.</p>",
    "headings": "<h2>alpha bravo</h2><p>charlie delta echo foxtrot golf hotel.</p><h3>india juliet</h3>"
                "<p>kilo lima mike november oscar.</p><h4>papa</h4><p>quebec romeo sierra tango.</p>",
    "quote": "<blockquote><p>alpha bravo charlie delta echo foxtrot</p></blockquote>",
    "divs only": "<div>alpha bravo charlie delta echo foxtrot golf hotel india.</div><div><div>juliet kilo lima "
                 "mike november oscar.</div></div>",
    "line breaks": "<div>alpha bravo<br>charlie delta<br><span>echo foxtrot</span></div>",
    "date in a sentence": "<p>The vote was held on <time datetime='2024-03-05'>March fifth</time> in the hall.</p>",
    "figure caption": "<figure><img src='a.png' alt=''><figcaption>alpha bravo charlie</figcaption></figure>",
}

_WORD = re.compile(r"\w+")
#: List markers of html_to_text ("* ", "1. "): a browser draws them, they are no words of the page.
_MARKER = re.compile(r"(?m)^\s*(?:\d+\.|\*) ")


def _words(text: str) -> Counter[str]:
    return Counter(w.casefold() for w in _WORD.findall(text))


def page(structure: str) -> str:
    return (f"<html><head><title>Council</title></head><body><main><h1>Council news</h1>{PROSE_1}{structure}"
            f"{PROSE_2}</main></body></html>")


def kept_fraction(structure: str, extract: Callable[[str], str]) -> float:
    """Share of the structure's visible words in the engine's output (the prose's words set aside)."""
    want = _words(_MARKER.sub("", html_to_text(structure)))
    got = _words(extract(page(structure))) - _words(html_to_text(PROSE_1 + PROSE_2) + " Council news")
    return sum(min(count, got[word]) for word, count in want.items()) / sum(want.values())


def _raw_trafilatura(**settings: object) -> Callable[[str], str]:
    """trafilatura as it is, without our rewrite (what the recipe ran before issue 31)."""
    def run(html: str) -> str:
        import trafilatura

        return trafilatura.extract(html, **{**ExtractOptions().kwargs(), **settings}) or ""
    return run


ENGINES: dict[str, Callable[[str], str]] = {
    "default (trafilatura + rewrite)": lambda html: extract_page(html, ExtractOptions()).text,
    "trafilatura fast": _raw_trafilatura(),
    "trafilatura with fallbacks": _raw_trafilatura(fast=False),
    "trafilatura favor_recall": _raw_trafilatura(favor_recall=True),
    "resiliparse": lambda html: extract_text(html, ExtractOptions(engine="resiliparse")),
}


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_default_keeps_every_visible_word(name: str) -> None:
    assert kept_fraction(STRUCTURES[name], ENGINES["default (trafilatura + rewrite)"]) == 1.0


@pytest.mark.parametrize("name", ["cell: bullet list", "cell: definition list", "date in a sentence"])
def test_raw_trafilatura_loses_these(name: str) -> None:
    """The measurement can fail: trafilatura without the rewrite loses part of these structures."""
    assert kept_fraction(STRUCTURES[name], ENGINES["trafilatura fast"]) < 1.0


# -- the loss check ------------------------------------------------------------------------------
def _check(structure: str, text: str) -> list[str]:
    from trafilatura.utils import load_html

    return html_cells.lost_cell_words(html_cells.table_rows(load_html(page(structure))), text)


def test_check_names_the_cell_words_raw_trafilatura_lost() -> None:
    structure = STRUCTURES["cell: bullet list"]
    lost = _check(structure, ENGINES["trafilatura fast"](page(structure)))
    assert sorted(lost) == sorted(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"])
    assert _check(structure, ENGINES["default (trafilatura + rewrite)"](page(structure))) == []


@pytest.mark.parametrize("structure", [
    # a layout table's link menu: trafilatura's link-density rule removes it, by design
    "<table><tr><td><ul><li><a href='/'>Home</a></li><li><a href='/n'>News</a></li></ul></td>"
    "<td><p>alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima.</p></td></tr></table>",
    # boilerplate by class or id (share widgets, comments): trafilatura's own XPath lists
    "<table><tr><td>Mondays open</td><td><div class='social-share'>Share this article</div></td></tr>"
    "<tr><td>alpha</td><td>bravo</td></tr></table>",
    "<table><tr><td>Mondays open</td><td><div id='comments'>Comment from a reader</div></td></tr></table>",
    # a form's controls
    "<table><tr><td>Your name</td><td><form><label>Name</label><button>Send</button></form></td></tr></table>",
])
def test_removals_by_design_are_no_loss(structure: str) -> None:
    extraction = extract_page(page(structure), ExtractOptions())
    assert extraction.lost == () and extraction.fallback is None


def test_a_loss_the_rewrite_misses_falls_back_to_recall(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the rewrite (a structure it does not know), the check sees the loss and recall mode recovers it."""
    monkeypatch.setattr(html_cells, "unhide_for_trafilatura", lambda tree: None)
    extraction = extract_page(page(STRUCTURES["cell: bullet list"]), ExtractOptions())
    assert extraction.fallback == "favor_recall" and extraction.lost == ()
    assert "alpha bravo charlie" in extraction.text and "foxtrot golf" in extraction.text


def test_printed_rows_span_lines_and_skip_the_header_rule() -> None:
    text = "intro\n| Name | Score |\n|---|---|\n| alpha\nbravo | 12 |\nafter"
    assert html_cells.printed_rows(text) == [Counter(["name", "score"]), Counter(["alpha", "bravo", "12"])]


def table() -> str:
    """The structures x engines table (fraction of visible words kept), as Markdown."""
    pytest.importorskip("resiliparse")
    lines = ["| structure | " + " | ".join(ENGINES) + " |", "|---" * (len(ENGINES) + 1) + "|"]
    for name, structure in STRUCTURES.items():
        cells = [f"{kept_fraction(structure, run):.2f}" for run in ENGINES.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
