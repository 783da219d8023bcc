"""Wikipedia reader and cleaner on real-format MediaWiki XML (bz2, multistream, xz, plain)."""

from __future__ import annotations

import bz2
import lzma
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sources.wikipedia as wikipedia
from core.document import Document, Drop, InputSpec
from core.steps import StepStats, run_steps
from sources.formats.wikipedia_names import drop_prefixes
from sources.samples.wikipedia import SamplePage, article_wikitext, dump_xml, sample_pages
from sources.wikipedia import (
    WikipediaRecipe,
    WikitextCleaner,
    collapse_whitespace,
    language_from_dbname,
    language_from_filename,
    parse_page,
)


def _write(path: Path, xml: str | bytes) -> Path:
    data = xml.encode("utf-8") if isinstance(xml, str) else xml
    if path.name.endswith(".bz2"):
        path.write_bytes(bz2.compress(data))
    elif path.name.endswith(".xz"):
        path.write_bytes(lzma.compress(data))
    else:
        path.write_bytes(data)
    return path


def _run(path: Path, recipe: WikipediaRecipe | None = None) -> tuple[list[Document], StepStats]:
    recipe = recipe or WikipediaRecipe()
    spec = InputSpec(str(path), path, path.name)
    stats = StepStats()
    docs = list(run_steps(recipe.read(spec), recipe.steps(), stats, "reader", recipe.input_language(spec)))
    return docs, stats


def _reasons(stats: StepStats) -> dict[str, int]:
    out: dict[str, int] = {}
    for (_, reason, _), count in stats.drops.items():
        out[reason] = out.get(reason, 0) + count
    return out


@pytest.fixture
def en_pages() -> list[SamplePage]:
    return sample_pages("en", 40, seed=1)


def test_cleaner_removes_markup_and_keeps_prose() -> None:
    import random

    text = article_wikitext(random.Random(0), "en", "Ashford")
    cleaned = WikitextCleaner(drop_prefixes("en")).clean(text)
    for residue in ("[[", "]]", "{{", "}}", "<ref", "</ref", "<!--", "{|", "wikitable", "Category:", "Towns",
                    "thumb", "view.jpg", "de:Ashford", "Authority control", "Census", "Smith, J."):
        assert residue not in cleaned, residue
    assert cleaned.startswith("Ashford is a place first recorded in")
    assert "\nHistory\n" in cleaned and "\nGeography\n" in cleaned  # headings as plain lines
    assert "Area: 12 km²." in cleaned  # entities decoded
    assert "  " not in cleaned and "\n\n\n" not in cleaned


@pytest.mark.parametrize(
    ("wikitext", "expected"),
    [
        ("[[Paris|the capital]] of [[France]].", "the capital of France."),
        ("Berlin ({{lang-de|Berlin}}) is big.", "Berlin is big."),
        ("A<ref name=x/> b<ref>cite</ref>.", "A b."),
        ("[[Datei:x.jpg|mini|Bild]]Text [[Kategorie:Ort]][[fr:Berlin]]", "Text"),
        ("See [[:Category:Towns|towns]].", "See towns."),
        ("'''Bold''' and ''italic''", "Bold and italic"),
        ("x [http://example.org label] y [http://example.org/bare]", "x label y"),
        ("== Head ==\nbody", "Head\n\nbody"),
        ("__NOTOC__Text", "Text"),
        ("{{unclosed template\n| a = b\nText after", "| a = b\nText after"),
    ],
)
def test_cleaner_cases(wikitext: str, expected: str) -> None:
    cleaner = WikitextCleaner(drop_prefixes("de"))
    assert cleaner.clean(wikitext) == expected


@given(st.text(alphabet=st.characters(blacklist_characters="[]{}<>|=&'~_:*#;\r", blacklist_categories=("Cs", "Cc")),
               max_size=200))
@settings(max_examples=150, deadline=None)
def test_cleaner_keeps_plain_prose(text: str) -> None:
    """Text without wiki markup passes through unchanged (modulo whitespace tidying)."""
    cleaner = WikitextCleaner(drop_prefixes("en"))
    assert cleaner.clean(text) == collapse_whitespace(text)


@given(title=st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40),
       body=st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=300))
@settings(max_examples=100, deadline=None)
def test_page_xml_round_trip(title: str, body: str) -> None:
    """Whatever a title or text holds, serialized as a dump page it parses back identically."""
    title = title.strip() or "x"
    xml = dump_xml("en", [SamplePage(1, title, 0, body)])
    chunk = xml[xml.index("<page>"): xml.index("</page>") + len("</page>")].encode()
    page = parse_page(chunk)
    assert (page.title, page.text.replace("\r", "\n")) == (title, body.replace("\r", "\n"))


def test_counts_balance_and_drop_reasons(tmp_path: Path, en_pages: list[SamplePage]) -> None:
    dump = _write(tmp_path / "enwiki-20220701-pages-articles.xml.bz2", dump_xml("en", en_pages))
    docs, stats = _run(dump)
    articles = [p for p in en_pages if p.namespace == 0 and p.redirect_to is None]
    assert stats.records_in == len(en_pages)
    assert len(docs) == len(articles)
    assert _reasons(stats) == {"redirect": 4, "not_article_namespace": 5}
    assert stats.balanced()
    doc = docs[0]
    assert doc.meta["language"] == "en" and doc.meta["title"] == articles[0].title
    assert doc.meta["url"] == "https://en.wikipedia.org/wiki/" + articles[0].title.replace(" ", "_")
    assert doc.meta["timestamp"].startswith("2022-07-") and doc.meta["page_id"] == str(articles[0].page_id)
    assert doc.id == docs[0].id and len({d.id for d in docs}) == len(docs)


def test_schemas_compressions_and_multistream_read_alike(tmp_path: Path, en_pages: list[SamplePage]) -> None:
    xml10, xml11 = dump_xml("en", en_pages, "0.10"), dump_xml("en", en_pages, "0.11")
    plain, _ = _run(_write(tmp_path / "enwiki-a.xml", xml11))
    old_schema, _ = _run(_write(tmp_path / "enwiki-b.xml.bz2", xml10))
    xz, _ = _run(_write(tmp_path / "enwiki-c.xml.xz", xml11))
    # multistream: the dump cut into independently compressed bz2 streams, concatenated
    cut = xml11.index("  <page>", len(xml11) // 2)
    multi = tmp_path / "enwiki-d-multistream.xml.bz2"
    multi.write_bytes(bz2.compress(xml11[:cut].encode()) + bz2.compress(xml11[cut:].encode()))
    multistream, _ = _run(multi)
    texts = [d.text for d in plain]
    assert texts == [d.text for d in old_schema] == [d.text for d in xz] == [d.text for d in multistream]


def test_truncated_bz2_keeps_earlier_pages_and_counts_the_cut(tmp_path: Path, en_pages: list[SamplePage]) -> None:
    full = bz2.compress(dump_xml("en", en_pages).encode())
    # several bz2 streams so that the first ones are complete when the file is cut
    xml = dump_xml("en", en_pages)
    cut = xml.index("  <page>", len(xml) // 2)
    data = bz2.compress(xml[:cut].encode()) + bz2.compress(xml[cut:].encode())
    dump = tmp_path / "enwiki-cut.xml.bz2"
    dump.write_bytes(data[: len(data) - 200])
    docs, stats = _run(dump)
    assert 0 < len(docs) < len(en_pages)
    assert _reasons(stats)["truncated_input"] == 1
    assert stats.balanced()
    assert any("enwiki-cut.xml.bz2" in e["record"] for e in stats.errors)
    assert len(full) > 0


def test_malformed_page_and_invalid_utf8_cost_one_page_each(tmp_path: Path, en_pages: list[SamplePage]) -> None:
    xml = dump_xml("en", en_pages).encode()
    first_page_end = xml.index(b"</page>") + len(b"</page>\n")
    bad_xml = b"  <page>\n    <title>Broken & Co</title>\n    <ns>0</ns>\n    <id>999</id>\n  </page>\n"
    bad_utf8 = (b"  <page>\n    <title>Bad bytes</title>\n    <ns>0</ns>\n    <id>998</id>\n    <revision><text>"
                b"caf\xe9 \xff</text></revision>\n  </page>\n")
    dump = _write(tmp_path / "enwiki-bad.xml", xml[:first_page_end] + bad_xml + bad_utf8 + xml[first_page_end:])
    docs, stats = _run(dump)
    clean_docs, _ = _run(_write(tmp_path / "enwiki-good.xml", xml))
    assert [d.text for d in docs] == [d.text for d in clean_docs]
    assert _reasons(stats)["malformed_xml"] == 1 and _reasons(stats)["invalid_utf8"] == 1
    records = {e["reason"]: e["record"] for e in stats.errors}
    assert "Broken & Co" in records["malformed_xml"] and "enwiki-bad.xml" in records["malformed_xml"]
    assert "Bad bytes" in records["invalid_utf8"]
    assert stats.balanced()


def test_wikitext_parser_failure_drops_only_that_page(
    tmp_path: Path, en_pages: list[SamplePage], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_clean = wikipedia.FastWikitextCleaner.clean

    def clean(self: wikipedia.FastWikitextCleaner, text: str) -> str:  # a page the cleaner chokes on
        if "BOOM" in text:
            raise RecursionError("maximum recursion depth exceeded")
        return real_clean(self, text)

    monkeypatch.setattr(wikipedia.FastWikitextCleaner, "clean", clean)
    pages = [*en_pages, SamplePage(500, "Exploding page", 0, "BOOM {{x}}")]
    docs, stats = _run(_write(tmp_path / "enwiki-x.xml", dump_xml("en", pages)))
    assert _reasons(stats)["wikitext_parse_error"] == 1
    assert "Exploding page" in stats.errors[0]["record"] and "RecursionError" in stats.errors[0]["detail"]
    articles = [p for p in en_pages if p.namespace == 0 and p.redirect_to is None]
    assert stats.balanced() and len(docs) == len(articles)


def test_language_sources() -> None:
    assert language_from_dbname("enwiki") == "en"
    assert language_from_dbname("zh_yuewiki") == "zh-yue"
    assert language_from_dbname("enwiktionary") is None
    assert language_from_filename("dewiki-20220701-pages-articles1.xml-p1p297012.bz2") == "de"
    assert language_from_filename("dump.xml") is None


def test_language_from_file_name_when_siteinfo_is_missing(tmp_path: Path, en_pages: list[SamplePage]) -> None:
    xml = dump_xml("en", en_pages)
    no_site = re.sub(r"<siteinfo>.*</siteinfo>\n", "", xml, flags=re.S)
    docs, _ = _run(_write(tmp_path / "svwiki-20220701-pages-articles.xml", no_site))
    assert {d.meta["language"] for d in docs} == {"sv"}
    docs, _ = _run(_write(tmp_path / "x.xml", no_site), WikipediaRecipe(language="hr"))
    assert {d.meta["language"] for d in docs} == {"hr"}


def _independent_article_count(path: Path) -> tuple[int, int]:
    """(pages, main-namespace non-redirect pages) counted with the standard library's parser."""
    opener = bz2.open if path.name.endswith(".bz2") else open
    pages = articles = 0
    with opener(path, "rb") as handle:
        for _, element in ET.iterparse(handle):
            if element.tag.endswith("}page"):
                pages += 1
                ns = element.find("{*}ns")
                if ns is not None and ns.text == "0" and element.find("{*}redirect") is None:
                    articles += 1
                element.clear()
    return pages, articles


_LITERAL = re.compile(r"<(nowiki|pre|syntaxhighlight|source)(?:\s[^>]*)?>(.*?)</\1\s*>", re.S | re.I)


def _literal_contents(path: Path) -> dict[str, str]:
    """Per page title, what its ``<nowiki>``/``<pre>``/``<syntaxhighlight>``/``<source>`` elements hold."""
    out = {}
    with bz2.open(path, "rb") as handle:
        for _, element in ET.iterparse(handle):
            if element.tag.endswith("}page"):
                text = element.findtext("{*}revision/{*}text") or ""
                out[element.findtext("{*}title") or ""] = "".join(m.group(2) for m in _LITERAL.finditer(text))
                element.clear()
    return out


@pytest.mark.realdata
@pytest.mark.parametrize("lang", ["uk", "ja", "vi"])
def test_real_dumps(realdata: Path, lang: str) -> None:
    dump = realdata / "mediawiki" / f"{lang}wiki-truncated-100k.REPAIRED.xml.bz2"
    docs, stats = _run(dump)
    pages, articles = _independent_article_count(dump)
    assert stats.records_in == pages
    assert len(docs) + _reasons(stats).get("too_short", 0) == articles
    assert stats.balanced()
    assert {d.meta["language"] for d in docs} == {lang}
    literal = _literal_contents(dump)
    for doc in docs:
        for residue in ("[[", "{{", "<ref"):  # only inside code blocks and <nowiki>, shown as written
            assert doc.text.count(residue) <= literal.get(doc.meta["title"], "").count(residue), \
                (doc.meta["title"], residue)
    assert sum(len(d.text) for d in docs) > 100_000


@pytest.mark.realdata
def test_real_dump_cut_mid_xml(realdata: Path) -> None:
    """The original xz sample ends inside a page: earlier pages kept, the cut counted."""
    docs, stats = _run(realdata / "mediawiki" / "ssvb-xztextfilter_viwiki-truncated-100k.xml.xz")
    assert len(docs) > 100
    assert _reasons(stats)["truncated_input"] == 1
    assert stats.balanced()


def test_drop_records_name_file_and_page(tmp_path: Path, en_pages: list[SamplePage]) -> None:
    recipe = WikipediaRecipe()
    dump = _write(tmp_path / "enwiki-n.xml", dump_xml("en", en_pages))
    records = list(recipe.read(InputSpec(str(dump), dump, dump.name)))
    drops = [r for r in records if isinstance(r, Drop)]
    assert drops and all("enwiki-n.xml" in d.record and "page " in d.record for d in drops)
