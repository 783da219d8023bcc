"""Fidelity corpus, Common Crawl: WARC responses and WET conversions, kept text written by hand.

One ``.warc.gz`` (and one ``.warc.wet.gz``) written by warcio with fixed record ids and dates
(:class:`tests.fixed.FixedWARCWriter`), every record with the raw HTTP head a server sends, is read
through the recipe's own extract phase (:meth:`CommonCrawlRecipe.read_raw`: charset decoding,
trafilatura after the cell rewrite and loss check; then tidy lines). Each case is one page; what
a reader sees is the page's main text: headings, paragraphs, lists as ``- `` items, tables as
``| a | b |`` rows with every cell's text, code, dates and captions; not the menu, footer,
cookie banner, scripts or forms. Records that are no page (PDF, image, 404, revisit) are
counted drops with their reason. Every case is an exact match (trafilatura's output on these
pages is deterministic; none needs a similarity floor).
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from core.document import Document, Drop, InputSpec
from core.steps import StepStats, run_steps
from sources.commoncrawl import CommonCrawlRecipe
from tests.fixed import FixedWARCWriter

pytestmark = pytest.mark.fidelity("commoncrawl")

P1 = ("The town council met on Tuesday evening to discuss the new budget for parks, roads and the public "
      "library, and residents filled the hall to hear the plans.")
P2 = ("After two hours of debate the council voted to approve the budget, with a promise to review spending "
      "on roads again in the spring when the new figures arrive.")
UTF8 = b"text/html; charset=utf-8"


def article(middle: str, head: str = "", before: str = "", after: str = "") -> str:
    """A page: optional chrome before and after the ``<main>`` that holds P1, ``middle``, P2."""
    return (f"<!DOCTYPE html><html><head><title>Council</title>{head}</head><body>{before}<main>"
            f"<p>{P1}</p>{middle}<p>{P2}</p></main>{after}</body></html>")


def kept_around(middle: str) -> str:
    return f"{P1}\n{middle}\n{P2}" if middle else f"{P1}\n{P2}"


NAV = "<nav><ul><li><a href='/'>Home</a></li><li><a href='/news'>News</a></li><li><a href='/about'>About</a></li></ul></nav>"
FOOTER = "<footer><p>Copyright 2024 Town Gazette. All rights reserved.</p><a href='/privacy'>Privacy</a></footer>"
COOKIES = ("<div id='cookie-banner' class='cookie-consent'><p>We use cookies to improve your experience on our "
           "site. By continuing you accept our cookie policy.</p><button>Accept all</button></div>")

#: url path -> (content type, body, expected kept text or the drop reason)
HTML_CASES: dict[str, tuple[bytes, bytes, str]] = {
    "plain": (UTF8, article("").encode(), kept_around("")),
    "nav-footer": (UTF8, article("", before=NAV, after=FOOTER).encode(), kept_around("")),
    "cookie-banner": (UTF8, article("", before=COOKIES).encode(), kept_around("")),
    "sidebar": (UTF8, article("", after="<aside><h3>Most read</h3><p>Ten things to do this weekend in town.</p></aside>")
                .encode(), kept_around("")),
    "script-style": (UTF8, article("<script>var tracking = 'do not keep';</script><style>p {color: red}</style>"
                                   "<noscript>Please enable JavaScript.</noscript>").encode(), kept_around("")),
    "form": (UTF8, article("<form><label>Your email</label><input name='e'><button>Subscribe</button></form>")
             .encode(), kept_around("")),
    "headings": (UTF8, article("<h2>Parks</h2><p>Two new playgrounds will open in May.</p><h3>Roads</h3>"
                               "<p>The bridge on Mill Street will be repaired.</p>").encode(),
                 kept_around("Parks\nTwo new playgrounds will open in May.\nRoads\n"
                             "The bridge on Mill Street will be repaired.")),
    "bullets": (UTF8, article("<ul><li>a new roof for the library</li><li>benches in the park</li></ul>").encode(),
                kept_around("- a new roof for the library\n- benches in the park")),
    "numbered": (UTF8, article("<ol><li>Open the meeting.</li><li>Read the minutes.</li></ol>").encode(),
                 kept_around("- Open the meeting.\n- Read the minutes.")),
    "nested-list": (UTF8, article("<ul><li>Parks<ul><li>playgrounds</li><li>benches</li></ul></li>"
                                  "<li>Roads</li></ul>").encode(),
                    kept_around("- Parks\n- playgrounds\n- benches\n- Roads")),
    "definitions": (UTF8, article("<dl><dt>Budget</dt><dd>the money the town plans to spend</dd></dl>").encode(),
                    kept_around("- Budget\n- the money the town plans to spend")),
    "code-block": (UTF8, article("<pre><code>def total(items):\n    return sum(items)\n</code></pre>").encode(),
                   kept_around("def total(items):\nreturn sum(items)")),
    "inline-code": (UTF8, article("<p>Residents can call <code>main()</code> on the <code>.NET</code> "
                                  "service desk.</p>").encode(),
                    kept_around("Residents can call main() on the .NET service desk.")),
    "quote": (UTF8, article("<blockquote><p>We listened to every resident who wrote to us.</p></blockquote>")
              .encode(), kept_around("We listened to every resident who wrote to us.")),
    "line-breaks": (UTF8, article("<p>Town Hall<br>1 Market Square<br>Springfield</p>").encode(),
                    kept_around("Town Hall\n1 Market Square\nSpringfield")),
    "entities": (UTF8, article("<p>Fish &amp; chips &mdash; caf&eacute; &lt;open&gt; &#8220;daily&#8221;.</p>")
                 .encode(), kept_around("Fish & chips — café <open> “daily”.")),
    "table": (UTF8, article("<table><thead><tr><th>Item</th><th>Cost</th></tr></thead><tbody><tr><td>Roads</td>"
                            "<td>4 million</td></tr><tr><td>Parks</td><td>1 million</td></tr></tbody></table>").encode(),
              kept_around("| Item | Cost |\n|---|---|\n| Roads | 4 million |\n| Parks | 1 million |")),
    "table-lists": (UTF8, article("<table><tr><td><p>Monday</p></td><td><ul><li>open nine to six</li></ul></td></tr>"
                                  "<tr><td>Sunday</td><td><ul><li>closed</li><li>except in December</li></ul></td></tr>"
                                  "</table>").encode(),
                    kept_around("| Monday | open nine to six |\n| Sunday | closed except in December |")),
    "table-definitions": (UTF8, article("<table><tr><td>Fees</td><td><dl><dt>Adults</dt><dd>two euros</dd></dl>"
                                        "</td></tr></table>").encode(),
                          kept_around("| Fees | Adults two euros |")),
    "table-nested": (UTF8, article("<table><tr><td>Ward</td><td><table><tr><td>North</td><td>East</td></tr></table>"
                                   "</td></tr><tr><td>Seats</td><td>twelve</td></tr></table>").encode(),
                     kept_around("| Ward | |\n| Seats | twelve |\n| North | East |")),
    "table-blocks": (UTF8, article("<table><tr><td><p>Roads</p><p>and bridges</p></td><td><div>four million</div>"
                                   "</td></tr></table>").encode(),
                     kept_around("| Roads and bridges | four million |")),
    "date": (UTF8, article("<p>The vote was held on <time datetime='2024-03-05'>5 March 2024</time> in the hall.</p>")
             .encode(), kept_around("The vote was held on 5 March 2024 in the hall.")),
    "caption": (UTF8, article("<figure><img src='hall.jpg' alt=''><figcaption>The council hall on the night of the "
                              "vote.</figcaption></figure>").encode(),
                kept_around("The council hall on the night of the vote.")),
    "german": (UTF8, "<html><head><title>Rat</title></head><body><main><p>Der Gemeinderat hat am Dienstag über den "
               "neuen Haushalt für Straßen, Parks und die öffentliche Bücherei beraten.</p><p>Nach zwei Stunden "
               "wurde der Haushalt mit großer Mehrheit beschlossen.</p></main></body></html>".encode(),
               "Der Gemeinderat hat am Dienstag über den neuen Haushalt für Straßen, Parks und die öffentliche "
               "Bücherei beraten.\nNach zwei Stunden wurde der Haushalt mit großer Mehrheit beschlossen."),
    "japanese": (UTF8, "<html><head><title>議会</title></head><body><main><p>町議会は火曜日の夜に公園と道路と図書館の新しい予算"
                 "について話し合いました。</p><p>二時間の議論の後、予算は承認されました。</p></main></body></html>".encode(),
                 "町議会は火曜日の夜に公園と道路と図書館の新しい予算について話し合いました。\n二時間の議論の後、予算は承認されました。"),
    "russian-cp1251": (b"text/html; charset=windows-1251",
                       "<html><head><title>Совет</title></head><body><main><p>Городской совет во вторник обсудил "
                       "новый бюджет на парки, дороги и библиотеку.</p><p>После двух часов споров бюджет был "
                       "принят.</p></main></body></html>".encode("cp1251"),
                       "Городской совет во вторник обсудил новый бюджет на парки, дороги и библиотеку.\n"
                       "После двух часов споров бюджет был принят."),
    "latin1-declared-cp1252": (b"text/html; charset=iso-8859-1",
                               article("<p>The mayor said: \u201cwe\u2019re done\u201d \u2014 and left the caf\u00e9."
                                       "</p>").encode("cp1252"),
                               kept_around("The mayor said: \u201cwe\u2019re done\u201d \u2014 and left the caf\u00e9.")),
    "meta-charset-only": (b"text/html",
                          article("<p>Cr\u00e8me br\u00fbl\u00e9e was served after the vote.</p>",
                                  head="<meta charset='windows-1252'>").encode("cp1252"),
                          kept_around("Cr\u00e8me br\u00fbl\u00e9e was served after the vote.")),
    "utf8-bom": (b"text/html", b"\xef\xbb\xbf" + article("<p>Na\u00efve r\u00e9sum\u00e9s were handed out.</p>")
                 .encode(), kept_around("Na\u00efve r\u00e9sum\u00e9s were handed out.")),
    "pdf": (b"application/pdf", b"%PDF-1.4 not a page", "not_html"),
    "image": (b"image/jpeg", b"\xff\xd8\xff\xe0 jpeg bytes", "not_html"),
}

STATUS_CASES = {"missing": (b"404 Not Found", "http_status"), "moved": (b"301 Moved Permanently", "http_status")}

#: WET conversions: the text Common Crawl extracted; kept as it is, line by line, tidied.
WET_CASES: dict[str, tuple[str, str]] = {
    "wet-plain": ("Council news\n\nThe council met on Tuesday.\n   Residents   filled the hall.  \n",
                  "Council news\nThe council met on Tuesday.\nResidents filled the hall."),
    "wet-languages": ("Der Rat tagte am Dienstag.\nLe conseil s'est réuni mardi.\n議会は火曜日に開かれました。\n",
                      "Der Rat tagte am Dienstag.\nLe conseil s'est réuni mardi.\n議会は火曜日に開かれました。"),
    "wet-blank": ("   \n\n", "empty"),
}

BASE = "https://gazette.example.org/"


def _response(writer: FixedWARCWriter, url: str, status: bytes, content_type: bytes, body: bytes) -> None:
    head = b"HTTP/1.1 " + status + b"\r\nContent-Type: " + content_type + b"\r\nContent-Length: %d\r\n\r\n" % len(body)
    writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(head + body),
                                                  warc_content_type="application/http; msgtype=response"))


def write_corpus(folder: Path) -> tuple[Path, Path]:
    """The WARC (every HTML and status case, one revisit) and the WET file, byte-deterministic."""
    warc, wet = folder / "fidelity.warc.gz", folder / "fidelity.warc.wet.gz"
    with open(warc, "wb") as handle:
        writer = FixedWARCWriter(handle, gzip=True, key="cc-fidelity")
        writer.write_record(writer.create_warcinfo_record(warc.name, {"software": "kinda-llama tests"}))
        for path, (content_type, body, _) in HTML_CASES.items():
            _response(writer, BASE + path, b"200 OK", content_type, body)
        for path, (status, _) in STATUS_CASES.items():
            _response(writer, BASE + path, status, UTF8, b"<html><body>gone</body></html>")
        writer.write_record(writer.create_warc_record(BASE + "again", "revisit", payload=io.BytesIO(b""),
                                                      warc_content_type="application/http; msgtype=response"))
    with open(wet, "wb") as handle:
        writer = FixedWARCWriter(handle, gzip=True, key="cc-fidelity-wet")
        for path, (text, _) in WET_CASES.items():
            writer.write_record(writer.create_warc_record(BASE + path, "conversion",
                                                          payload=io.BytesIO(text.encode()),
                                                          warc_content_type="text/plain"))
    return warc, wet


def _outcomes(path: Path) -> dict[str, str]:
    """URL -> kept text, or ``drop:<reason>``, through the recipe's extract phase (read, tidy lines).

    The reader's drops name the record (``<file>: <record id> <url>``); documents go on through the
    recipe's pre-steps as in phase A, and every record read is kept or dropped.
    """
    recipe = CommonCrawlRecipe(prefilter=False)
    out: dict[str, str] = {}
    documents: list[Document] = []
    for record in recipe.read_raw(InputSpec(str(path), path, path.name)):
        if isinstance(record, Drop):
            out[str(record.record).rsplit(" ", 1)[-1]] = f"drop:{record.reason}"
        else:
            documents.append(record)
    stats = StepStats()
    kept = list(run_steps(iter(documents), recipe.pre_steps(), stats))
    assert stats.records_in == len(kept) + sum(stats.drops.values())
    out.update({doc.meta["url"]: doc.text for doc in kept})
    return out


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    warc, wet = write_corpus(tmp_path_factory.mktemp("cc"))
    return {**_outcomes(warc), **_outcomes(wet)}


def _expected(value: str) -> str:
    return f"drop:{value}" if value in ("not_html", "http_status", "empty") else value


@pytest.mark.parametrize("path", sorted(HTML_CASES))
def test_page_keeps_what_a_reader_sees(kept: dict[str, str], path: str) -> None:
    assert kept[BASE + path] == _expected(HTML_CASES[path][2])


@pytest.mark.parametrize("path", sorted(STATUS_CASES))
def test_no_page_is_a_counted_drop(kept: dict[str, str], path: str) -> None:
    assert kept[BASE + path] == f"drop:{STATUS_CASES[path][1]}"


@pytest.mark.parametrize("path", sorted(WET_CASES))
def test_wet_text_is_kept_as_converted(kept: dict[str, str], path: str) -> None:
    assert kept[BASE + path] == _expected(WET_CASES[path][1])


def test_revisit_is_a_counted_drop(kept: dict[str, str]) -> None:
    assert kept[BASE + "again"] == "drop:revisit"


def test_corpus_is_byte_deterministic(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = write_corpus(tmp_path / "a"), write_corpus(tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


CASE_07 = Path(__file__).resolve().parents[3] / "shared" / "cases" / "fidelity" / "07-cc-table-list" / "make.py"


@pytest.mark.skipif(not CASE_07.exists(), reason="the shared fidelity cases are not beside this checkout")
def test_shared_case_07_table_list_cells_through_the_phases(tmp_path: Path) -> None:
    """Issue 31's case 07 as its make.py writes it, through extract, line dedup, stage and finalize."""
    from core.shards import read_documents
    from tests.sources.test_commoncrawl import run_phases

    subprocess.run([sys.executable, str(CASE_07), str(tmp_path / "in")], check=True, capture_output=True, timeout=120)
    warc = tmp_path / "in" / "case07.warc.gz"
    records = run_phases(CommonCrawlRecipe(prefilter=False), [InputSpec(str(warc), warc, warc.name)], tmp_path / "out")
    assert records[0].docs_kept == 1, records
    (text,) = [d.text for p in sorted((tmp_path / "out").rglob("*.parquet"))
               if "docs" in p.parts and "_staging" not in p.parts for d in read_documents(p)]
    for row in ("| Monday | OPENMON from nine in the morning until six in the evening |",
                "| Tuesday | OPENTUE from nine in the morning until eight in the evening |",
                "| Sunday | CLOSEDSUN the building is closed all day |"):
        assert row in text
