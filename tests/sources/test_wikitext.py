"""The fast wikitext cleaner: same text as the tree walk, bounded on pathological pages."""

from __future__ import annotations

import bz2
import collections
import itertools
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.compressed import open_binary
from core.document import Document, Drop, InputSpec
from sources.formats.wikipedia_names import drop_prefixes
from sources.formats.wikitext import REMOVED, Bounds, CleanerTimeout, RecordTooLarge, remove_balanced
from sources.samples.wikipedia import SamplePage, dump_xml
from sources.wikipedia import (
    WikipediaReader,
    WikitextCleaner,
    iter_chunks,
    parse_page,
    parse_siteinfo,
)

#: Markup that must not survive cleaning (the residue scanner of benchmarks/wikipedia.py).
RESIDUE = re.compile(r"\{\{|\}\}|\[\[|\]\]|<ref|</ref|<!--|\{\||'''|''|\[https?:")

CASES = [
    "Intro\n* a item\n* b [[x|y]]\n** c\n# d\n: e\n; f : g\nend",
    "x<br>y<br/>z <span>q</span> <li>i</li> <p>para</p>after",
    "a &nbsp;b &amp; c &lt;d&gt; &foo;",
    "== H ==\ntext\n=== H3 ===\nmore",
    "a\n----\nb",
    "[http://x.com lab] [http://y.com] http://z.com end",
    "[[File:a.jpg|thumb|cap [[l]] x]] after [[Category:X]] [[:Category:Y]] [[de:Z]]",
    "A {| class=x\n| a || b\n|-\n| c\n|} B",
    "A <ref name=x>r</ref> B <ref name=y/> C <ref>unclosed",
    'x <div style="a">in div</div> y <small>s</small> <sup>2</sup>',
    "a <!-- c --> b <!-- unclosed",
    "x <math>a+b</math> y <code>z</code> <blockquote>q</blockquote>",
    "a < b > c and 3<5",
    "[[a]]s [[b|c]]d",
    "x {{a|{{b|{{c}}}}}} y {{{1}}} z",
    "a <gallery>\nx.jpg|c\n</gallery> b",
    "[http://example.org a [[B|b]] c] after",
]


@pytest.mark.parametrize("wikitext", CASES)
def test_fast_equals_tree_walk_on_common_markup(wikitext: str) -> None:
    prefixes = drop_prefixes("en")
    fast = WikitextCleaner(prefixes).clean(wikitext)
    assert fast == WikitextCleaner(prefixes, engine="tree").clean(wikitext)
    assert not RESIDUE.search(fast)


def test_fast_removes_quotes_the_tree_walk_leaves() -> None:
    """Unbalanced bold/italic quotes stay as text in the tree walk; the fast path drops them."""
    prefixes = drop_prefixes("en")
    text = "a '''bold''' and ''it'' l'''x"
    assert WikitextCleaner(prefixes, engine="tree").clean(text) == "a bold and it l'''x"
    assert WikitextCleaner(prefixes).clean(text) == "a bold and it lx"


PATHOLOGICAL = {
    "templates": "{{a|" * 8000,
    "templates_lines": "{{a|\n" * 8000,
    "refs": "<ref>" * 8000,
    "divs": "<div>" * 8000,
    "external": "[http://x " * 8000,
    "links": "[[a|" * 8000,
    "tables": "{|\n" * 8000,
    "comments": "<!--" * 8000,
    "attributes": "<ref name=" * 8000,
    "literals": "<pre>" * 8000,
    "literals_in_comments": "<nowiki><pre><!---->" * 3000,
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_unclosed_markup_is_linear(name: str, cpu_clock) -> None:
    """Unclosed markup that takes mwparserfromhell 30+ s is cleaned in well under a second."""
    cleaner = WikitextCleaner(drop_prefixes("en"))
    text = PATHOLOGICAL[name] + "\nProse after it."
    started, wall = cpu_clock(), time.perf_counter()
    cleaned = cleaner.clean(text)
    assert cpu_clock() - started < 2.0  # CPU, not wall: the test must pass on a loaded machine
    assert time.perf_counter() - wall < 30
    assert not RESIDUE.search(cleaned)
    if name not in ("refs", "comments", "attributes"):  # those run to the end of the page
        assert cleaned.endswith("Prose after it.")


def test_bounds_raise() -> None:
    cleaner = WikitextCleaner(drop_prefixes("en"), bounds=Bounds(max_chars=100))
    with pytest.raises(RecordTooLarge):
        cleaner.clean("x" * 101)
    with pytest.raises(CleanerTimeout):
        WikitextCleaner(drop_prefixes("en"), bounds=Bounds(timeout_s=0.0)).clean("x [[y]] {{z}}")


def test_remove_balanced_nesting_and_unclosed() -> None:
    tokens = re.compile(r"\{\{|\}\}")
    assert remove_balanced("a {{b {{c}} d}} e", tokens, "{{", "") == "a  e"
    assert remove_balanced("a {{b\nc }} d", tokens, "{{", "") == "a {{b\nc }} d".replace("{{b\nc }}", "")
    assert remove_balanced("a {{b {{c\nnext", tokens, "{{", "") == "a \nnext"
    assert remove_balanced("a }} b", tokens, "{{", "") == "a }} b"
    # by default each cut span leaves one removal site, where the tidy-up may look
    assert remove_balanced("a {{b}}{{c {{d}}}} e {{f", tokens, "{{") == f"a {REMOVED}{REMOVED} e {REMOVED}"


def _reader_records(tmp_path: Path, pages: list[SamplePage], bounds: Bounds | None = None) -> list[object]:
    dump = tmp_path / "enwiki-bounds.xml.bz2"
    dump.write_bytes(bz2.compress(dump_xml("en", pages).encode()))
    reader = WikipediaReader(InputSpec(str(dump), dump, dump.name))
    if bounds is not None:
        reader.bounds = bounds
    return list(reader)


def test_reader_counts_pathological_pages_and_goes_on(tmp_path: Path) -> None:
    pages = [
        SamplePage(1, "Before", 0, "Plain [[prose]] here."),
        SamplePage(2, "Huge", 0, "word " * 30_000),
        SamplePage(3, "Unclosed", 0, "{{a|" * 8000),
        SamplePage(4, "After", 0, "More '''prose'''."),
    ]
    records = _reader_records(tmp_path, pages, Bounds(max_chars=100_000))
    docs = [r for r in records if isinstance(r, Document)]
    drops = [r for r in records if isinstance(r, Drop)]
    assert [d.text for d in docs] == ["Plain prose here.", "", "More prose."]
    assert [(d.reason, "Huge" in d.record) for d in drops] == [("record_too_large", True)]
    records = _reader_records(tmp_path, pages, Bounds(timeout_s=0.0))
    assert [r.reason for r in records if isinstance(r, Drop)] == ["cleaner_timeout"] * 4


def test_oversized_page_xml_is_skipped_unread() -> None:
    head = b"<mediawiki>\n  <page>\n    <title>A</title>\n    <ns>0</ns>\n    <id>1</id>\n  </page>\n"
    big = b"  <page>\n    <title>Big</title>\n" + b"x" * 5000 + b"\n  </page>\n"
    tail = b"  <page>\n    <title>C</title>\n    <ns>0</ns>\n    <id>3</id>\n  </page>\n</mediawiki>\n"
    data = head + big + tail
    pieces = [data[i:i + 300] for i in range(0, len(data), 300)]
    chunks = list(iter_chunks(pieces, max_bytes=2000))
    assert [kind for kind, _, _ in chunks] == ["page", "oversized", "page"]
    assert b"<title>Big</title>" in chunks[1][1] and chunks[1][2] == 7
    assert parse_page(chunks[2][1]).title == "C" and chunks[2][2] == 7 + big.count(b"\n")


_PIECE_DUMP = (
    b"<mediawiki>\n  <siteinfo>\n    <sitename>W</sitename>\n  </siteinfo>\n"
    + b"".join(b"  <page>\n    <title>P%d</title>\n    <ns>0</ns>\n    <id>%d</id>\n    <text>%s</text>\n  </page>\n"
               % (i, i, b"y" * (i * 397 % 3100)) for i in range(40))
    + b"</mediawiki>\n"
)


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(_PIECE_DUMP)), max_size=30))
def test_chunks_do_not_depend_on_how_the_dump_is_cut_into_pieces(cuts: list[int]) -> None:
    """Pages and their line numbers are the same for any piece boundaries, lines or one block."""
    bounds = [0, *sorted(cuts), len(_PIECE_DUMP)]
    pieces = [_PIECE_DUMP[a:b] for a, b in itertools.pairwise(bounds)]
    whole = list(iter_chunks([_PIECE_DUMP]))
    assert [kind for kind, _, _ in whole] == ["siteinfo"] + ["page"] * 40
    assert [line for _, _, line in whole][:3] == [2, 5, 11]
    assert list(iter_chunks(pieces)) == whole
    assert list(iter_chunks(_PIECE_DUMP.splitlines(keepends=True))) == whole


def _real_pages(dump: Path, limit: int) -> tuple[frozenset[str], list[str]]:
    site = None
    texts: list[str] = []
    with open_binary(dump) as stream:
        for kind, chunk, _ in iter_chunks(stream):
            if kind == "siteinfo":
                site = parse_siteinfo(chunk)
            elif kind == "page":
                page = parse_page(chunk)
                if page.namespace == 0 and not page.redirect:
                    texts.append(page.text)
                    if len(texts) >= limit:
                        break
    assert site is not None
    return drop_prefixes(site.language, site.drop_namespace_names), texts


@pytest.mark.realdata
@pytest.mark.parametrize("lang", ["uk", "ja", "vi"])
def test_real_pages_fast_keeps_the_tree_walks_text_with_less_markup(realdata: Path, lang: str) -> None:
    """On real pages: no more residue than the tree walk, and (almost) every word it kept."""
    prefixes, texts = _real_pages(realdata / "mediawiki" / f"{lang}wiki-truncated-100k.REPAIRED.xml.bz2", 25)
    fast, tree = WikitextCleaner(prefixes), WikitextCleaner(prefixes, engine="tree")
    words = re.compile(r"\w+")
    kept = total = residue_fast = residue_tree = 0
    for text in texts:
        new, old = fast.clean(text), tree.clean(text)
        residue_fast += len(RESIDUE.findall(new))
        residue_tree += len(RESIDUE.findall(old))
        old_words = collections.Counter(words.findall(old))
        kept += sum((collections.Counter(words.findall(new)) & old_words).values())
        total += sum(old_words.values())
    assert residue_fast <= residue_tree
    assert kept / total > 0.995


def test_pages_cleaned_in_the_bounded_helper_equal_inline_ones(tmp_path: Path) -> None:
    """Above ``inline_chars`` a page goes through core.bounded's helper process: same text, same drops."""
    pages = [SamplePage(n, f"Page {n}", 0, f"Text {n} with a [[link|label]] and {{{{tpl}}}}.") for n in range(1, 4)]
    inline = _reader_records(tmp_path, pages)
    helper = _reader_records(tmp_path, pages, Bounds(inline_chars=0))
    assert [r.text for r in helper if isinstance(r, Document)] == [r.text for r in inline if isinstance(r, Document)]
    assert next(r.text for r in inline if isinstance(r, Document)) == "Text 1 with a label and."
    timed_out = _reader_records(tmp_path, pages, Bounds(inline_chars=0, timeout_s=0.0))
    assert [(r.reason, r.language) for r in timed_out if isinstance(r, Drop)] == [("cleaner_timeout", "en")] * 3
