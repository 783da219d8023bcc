"""Generate small Wikipedia dumps in the real MediaWiki export format, for the demo and tests.

The pages use the wikitext constructs real articles use (templates with nested templates,
``<ref>`` in both forms, tables, piped and plain links, file and category links, interwiki
links, headings, comments, HTML entities, bold/italic), plus redirects, talk and template pages
and an exact duplicate, so every cleaning rule and drop reason is exercised. Output is
deterministic for a seed, so the demo's shards are byte-identical from one machine to another.
"""

from __future__ import annotations

import bz2
import html
import random
import re
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

SCHEMAS = {"0.10": "http://www.mediawiki.org/xml/export-0.10/", "0.11": "http://www.mediawiki.org/xml/export-0.11/"}

SENTENCES = {
    "en": [
        "The river rises in the northern hills and flows south through a broad valley.",
        "Its population grew steadily during the nineteenth century as the railway arrived.",
        "Local industry was dominated by weaving, milling and the export of timber.",
        "The town hall, completed in 1884, is a listed building in the Gothic Revival style.",
        "Several species of migratory birds nest along the marshes each spring.",
        "The climate is temperate, with mild summers and cool, wet winters.",
        "A grammar school was founded there by royal charter in the sixteenth century.",
        "The cathedral contains a carved wooden screen and medieval stained glass.",
        "Agriculture remains important, particularly dairy farming and orchards.",
        "The annual festival attracts visitors from across the region every autumn.",
    ],
    "de": [
        "Der Fluss entspringt im nördlichen Bergland und fließt durch ein breites Tal nach Süden.",
        "Die Einwohnerzahl wuchs im 19. Jahrhundert mit dem Bau der Eisenbahn stetig an.",
        "Die örtliche Wirtschaft war von Weberei, Mühlen und dem Holzhandel geprägt.",
        "Das Rathaus wurde 1884 im neugotischen Stil fertiggestellt und steht unter Denkmalschutz.",
        "Zahlreiche Zugvogelarten brüten jedes Frühjahr in den angrenzenden Feuchtgebieten.",
        "Das Klima ist gemäßigt, mit milden Sommern und kühlen, feuchten Wintern.",
        "Im 16. Jahrhundert wurde dort eine Lateinschule gegründet.",
        "Der Dom besitzt einen geschnitzten Lettner und mittelalterliche Glasfenster.",
        "Die Landwirtschaft, vor allem Milchviehhaltung und Obstbau, ist weiterhin bedeutend.",
        "Das jährliche Stadtfest zieht jeden Herbst Besucher aus der ganzen Region an.",
    ],
}
PLACES = {
    "en": ["Ashford", "Brambleton", "Carrow", "Dunmere", "Eastwick", "Fairholme", "Glenmoor", "Hartley"],
    "de": ["Altenau", "Birkenfeld", "Dornbach", "Eichstett", "Falkenau", "Grünwald", "Hohenfels", "Lindau"],
}
LOCAL = {
    "en": {"file": "File", "category": "Category", "template": "Template", "talk": "Talk",
           "infobox": "Infobox settlement", "see_also": "See also", "history": "History",
           "geography": "Geography", "other": "de"},
    "de": {"file": "Datei", "category": "Kategorie", "template": "Vorlage", "talk": "Diskussion",
           "infobox": "Infobox Ort", "see_also": "Siehe auch", "history": "Geschichte",
           "geography": "Geographie", "other": "en"},
}


@dataclass(frozen=True)
class SamplePage:
    """One page to write: title, namespace, wikitext, and whether it is a redirect."""

    page_id: int
    title: str
    namespace: int
    text: str
    redirect_to: str | None = None


def _paragraph(rng: random.Random, lang: str, places: list[str]) -> str:
    sentences = rng.sample(SENTENCES[lang], k=rng.randint(2, 4))
    link = rng.choice(places)
    sentences[0] = sentences[0].replace(" ", f" [[{link}|{link}]] ", 1) if rng.random() < 0.3 else sentences[0]
    return " ".join(sentences) + f" It lies near [[{rng.choice(places)}]]."


def article_wikitext(rng: random.Random, lang: str, title: str) -> str:
    """A realistic article: infobox, lead, sections, refs, table, files, categories, interwiki."""
    names, places = LOCAL[lang], PLACES[lang]
    year = rng.randint(1100, 1900)
    return "\n".join([
        f"{{{{{names['infobox']}\n| name = {title}\n| established = {{{{start date|{year}}}}}\n"
        f"| image = {title}.jpg\n}}}}",
        f"'''{title}''' ({{{{IPA|ˈtaʊn}}}}) is a place first recorded in {year}.<ref name=\"census\">"
        f"{{{{cite web |url=https://example.org/{title} |title=Census}}}}</ref> "
        + _paragraph(rng, lang, places),
        f"<!-- editors: please keep this section short -->\n== {names['history']} ==",
        _paragraph(rng, lang, places) + "<ref>Smith, J. (1999). ''A History''. p.&nbsp;12.</ref>",
        f"[[{names['file']}:{title} view.jpg|thumb|left|A view of [[{title}]] from the hills]]",
        f"=== {names['geography']} ===\n" + _paragraph(rng, lang, places) + " Area: 12&nbsp;km&sup2;.",
        '{| class="wikitable"\n! Year !! Population\n|-\n| 1900 || 1,204\n|-\n| 2000 || 3,118\n|}',
        f"== {names['see_also']} ==\n* [[{rng.choice(places)}]]\n* [[{rng.choice(places)}]]",
        "== References ==\n<references />",
        f"{{{{Authority control}}}}\n[[{names['category']}:Towns]]\n[[{names['category']}:Populated places]]\n"
        f"[[{names['other']}:{title}]]",
    ])


def sample_pages(lang: str, pages: int, seed: int) -> list[SamplePage]:
    """The pages of one sample dump."""
    rng = random.Random(f"{lang}-{seed}")
    names = LOCAL[lang]
    out: list[SamplePage] = []
    for index in range(pages):
        page_id = 10 + index
        title = f"{rng.choice(PLACES[lang])} {index}"
        kind = index % 10
        if kind == 7:
            out.append(SamplePage(page_id, f"{title} (town)", 0, f"#REDIRECT [[{title}]]", redirect_to=title))
        elif kind == 8:
            out.append(SamplePage(page_id, f"{names['talk']}:{title}", 1, "== Sources ==\nPlease add sources. ~~~~"))
        elif kind == 9 and out:
            first = next(p for p in out if p.namespace == 0 and p.redirect_to is None)
            out.append(SamplePage(page_id, f"{first.title} (copy)", 0, first.text))  # exact duplicate text
        else:
            out.append(SamplePage(page_id, title, 0, article_wikitext(rng, lang, title)))
    out.append(SamplePage(10 + pages, f"{names['template']}:{names['infobox']}", 10, "{{{name}}}"))
    return out


def dump_xml(lang: str, pages: list[SamplePage], schema: str = "0.11") -> str:
    """Serialize pages as a ``pages-articles`` export document."""
    names = LOCAL[lang]
    head = (
        f'<mediawiki xmlns="{SCHEMAS[schema]}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        f'version="{schema}" xml:lang="{lang}">\n'
        "  <siteinfo>\n"
        f"    <sitename>Wikipedia</sitename>\n    <dbname>{lang}wiki</dbname>\n"
        f"    <base>https://{lang}.wikipedia.org/wiki/Main_Page</base>\n"
        "    <generator>MediaWiki 1.39.0-wmf.19</generator>\n    <case>first-letter</case>\n"
        "    <namespaces>\n"
        '      <namespace key="-2" case="first-letter">Media</namespace>\n'
        '      <namespace key="0" case="first-letter" />\n'
        f'      <namespace key="1" case="first-letter">{names["talk"]}</namespace>\n'
        f'      <namespace key="6" case="first-letter">{names["file"]}</namespace>\n'
        f'      <namespace key="10" case="first-letter">{names["template"]}</namespace>\n'
        f'      <namespace key="14" case="first-letter">{names["category"]}</namespace>\n'
        "    </namespaces>\n  </siteinfo>\n"
    )
    body = [_page_xml(page, index) for index, page in enumerate(pages)]
    return head + "".join(body) + "</mediawiki>\n"


def _page_xml(page: SamplePage, index: int) -> str:
    redirect = f'    <redirect title="{escape(page.redirect_to, {chr(34): "&quot;"})}" />\n' if page.redirect_to else ""
    timestamp = f"2022-07-{1 + index % 28:02d}T{index % 24:02d}:{index % 60:02d}:00Z"
    return (
        "  <page>\n"
        f"    <title>{escape(page.title)}</title>\n    <ns>{page.namespace}</ns>\n    <id>{page.page_id}</id>\n"
        f"{redirect}"
        "    <revision>\n"
        f"      <id>{1000 + page.page_id}</id>\n      <parentid>{999 + page.page_id}</parentid>\n"
        f"      <timestamp>{timestamp}</timestamp>\n"
        "      <contributor>\n        <username>Example</username>\n        <id>42</id>\n      </contributor>\n"
        "      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
        f'      <text bytes="{len(page.text.encode())}" xml:space="preserve">{escape(page.text)}</text>\n'
        "      <sha1>0000000000000000000000000000000</sha1>\n"
        "    </revision>\n"
        "  </page>\n"
    )


def write_sample_dumps(directory: Path, pages: int = 200, seed: int = 0) -> list[Path]:
    """Write an English (schema 0.11) and a German (schema 0.10) dump as ``.xml.bz2``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for lang, schema in (("en", "0.11"), ("de", "0.10")):
        path = directory / f"{lang}wiki-20220701-pages-articles-sample.xml.bz2"
        data = dump_xml(lang, sample_pages(lang, pages, seed), schema).encode("utf-8")
        compressed = bz2.compress(data, 9)
        if not path.is_file() or path.read_bytes() != compressed:  # unchanged: keep its mtime, so runs resume
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(compressed)
            tmp.replace(path)
        written.append(path)
    return written


def write_multistream(xml: str, directory: Path, name: str, pages_per_stream: int = 100) -> tuple[Path, Path]:
    """Write ``xml`` as ``<name>-pages-articles-multistream.xml.bz2`` plus its ``-multistream-index.txt.bz2``.

    The layout of Wikimedia's multistream dumps: one bz2 stream with everything before the
    first page (``<mediawiki>``, ``<siteinfo>``), then one stream per ``pages_per_stream``
    pages (100 in real dumps), then one holding ``</mediawiki>``. The index has a line
    ``offset:page_id:title`` per page, ``offset`` being the byte offset of the page's stream.
    """
    first = xml.index("  <page>")
    head, body = xml[:first], xml[first:]
    pages = ["  <page>" + part for part in body.split("  <page>")[1:]]
    pages[-1] = pages[-1].rsplit("</mediawiki>", 1)[0]
    directory.mkdir(parents=True, exist_ok=True)
    dump = directory / f"{name}-pages-articles-multistream.xml.bz2"
    index = directory / f"{name}-pages-articles-multistream-index.txt.bz2"
    lines = []
    with open(dump, "wb") as out:
        out.write(bz2.compress(head.encode("utf-8"), 9))
        for start in range(0, len(pages), pages_per_stream):
            group = pages[start: start + pages_per_stream]
            offset = out.tell()
            for page in group:
                page_id = re.search(r"<id>(\d+)</id>", page)
                title = re.search(r"<title>(.*?)</title>", page, re.S)
                if page_id is None or title is None:
                    raise ValueError(f"page without <id> or <title>: {page[:200]!r}")
                lines.append(f"{offset}:{page_id.group(1)}:{html.unescape(title.group(1))}\n")
            out.write(bz2.compress("".join(group).encode("utf-8"), 9))
        out.write(bz2.compress(b"</mediawiki>\n", 9))
    index.write_bytes(bz2.compress("".join(lines).encode("utf-8"), 9))
    return dump, index


def write_sample_multistream(directory: Path, pages: int = 200, seed: int = 0, lang: str = "en",
                             pages_per_stream: int = 100) -> tuple[Path, Path]:
    """A sample dump (see :func:`sample_pages`) written as a multistream dump with its index."""
    xml = dump_xml(lang, sample_pages(lang, pages, seed), "0.11" if lang == "en" else "0.10")
    return write_multistream(xml, directory, f"{lang}wiki-20220701", pages_per_stream)
