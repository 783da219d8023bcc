"""Small Common Crawl WARC and WET files, as the crawl writes them, of pages made from real prose.

``flows.commoncrawl`` reads WARC ``response`` records (HTML, text extracted with trafilatura) and
WET ``conversion`` records (text Common Crawl extracted, every line of the page). Two WARC files:
every page is an HTML document with the boilerplate real sites carry (header, navigation, cookie
banner, "related posts", footer), which extraction must remove. One WET file of a third site,
whose pages keep their menu and footer lines, as WET text does: cc_net's paragraph dedup removes
those lines from every page but the first of the group. Each file is written with warcio, one
gzip member per record (gzip header mtime 0), and opens with a ``warcinfo`` record; each
capture is a ``request`` then a ``response`` record. Record ids, dates and digests are fixed
(ids are UUID5 of the file name and record number), so the bytes are the same on every machine.

What is planted (English pages keep; the rest are dropped with the reason shown):

* ``…-00000``: six English articles of one site (every article ends with the same newsletter
  line: line dedup keeps its first copy only), a German and a French article (language ID:
  ``language_prefilter`` before extraction), a contact page with a few words (``too_short``), a
  404 page (``http_status``), a JPEG (``not_html``), a long article (:data:`NEAR_URLS` [0]) and
  one article (:data:`C4_COPY_URL`) that C4's sample holds as well (a cross-source copy: C4 is
  made from Common Crawl), and the first article again under a tracking-parameter URL: every one
  of its lines was seen before in the group (``duplicate_lines``, cc_net's paragraph dedup);
* ``…-00001``: five more English articles of another site, a Spanish and a Dutch article, a
  ``revisit`` record of the first article (``revisit``), a 301 redirect (``http_status``), and
  the long article syndicated by another site (:data:`NEAR_URLS` [1]): the same text with its
  paragraphs joined in pairs and two words changed, so no line repeats (paragraph dedup keeps it)
  but the two documents are near duplicates (MinHash drops one in ``flows.dedup``); last, two
  English articles whose URLs the sample blocklist lists (:mod:`sources.samples.blocklist`: a host
  below a listed domain, a page under a listed URL), dropped as ``url_blocklist:gambling`` when the
  run is given that list (the offline sample is) and kept otherwise;
* ``…-00002.warc.wet.gz``: five English pages and a German one (``language_not_kept``: no
  pre-filter on WET text, language ID after extraction), and a newsletter page whose only line not
  shared with the others is one sentence (``too_short`` once paragraph dedup has run).
"""

from __future__ import annotations

import base64
import hashlib
import io
import urllib.parse
import uuid
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from core.atomic import atomic_path
from sources.samples import blocklist, prose

CRAWL = "CC-MAIN-2023-06"
FILES = (
    "CC-MAIN-20230127143940-20230127173940-00000.warc.gz",
    "CC-MAIN-20230127143940-20230127173940-00001.warc.gz",
)
WET_FILE = "CC-MAIN-20230127143940-20230127173940-00002.warc.wet.gz"
SITES = ("valley-letters.example.org", "northern-review.example.net", "harbour-gazette.example.com")
NEWSLETTER = "Subscribe to our newsletter for a weekly letter from the valley and news of the next meeting."
NEAR_URLS = ("https://valley-letters.example.org/2023/01/the-long-read/",
             "https://northern-review.example.net/reprints/the-long-read.html")
C4_COPY_URL = "https://valley-letters.example.org/2023/01/from-the-archive/"
#: English passages this writer draws (one draw: the slices below never overlap).
ENGLISH_PASSAGES = 23
LONG_ARTICLE = slice(11, 15)
C4_COPY = slice(15, 18)
WET_PAGES = slice(18, 23)
#: English passages of the pages the sample blocklist lists, drawn after the others (same draw, longer).
LISTED_PASSAGES = 2
WARC_DATE = "2023-01-27T15:{minute:02d}:{second:02d}Z"
NAMESPACE = uuid.UUID("6f1d7c1e-55d3-4d7e-9f57-2a3b6c0d9e11")
JPEG = bytes.fromhex("ffd8ffe000104a46494600010100000100010000ffdb004300") + bytes(range(64)) + b"\xff\xd9"


@dataclass
class Capture:
    """One fetched URL: HTTP status, content type and body (or a revisit of an earlier capture)."""

    url: str
    body: bytes
    status: str = "200 OK"
    content_type: str = "text/html; charset=utf-8"
    revisit_of: Capture | None = None
    extra_headers: list[tuple[str, str]] = field(default_factory=list)


def english_passages() -> list[prose.Passage]:
    """The writer's English passages (C4's sample reuses :data:`C4_COPY` of them)."""
    return prose.draw("en", ENGLISH_PASSAGES, seed=0, share="commoncrawl")


def c4_copy_paragraphs() -> list[str]:
    """The paragraphs of the article at :data:`C4_COPY_URL`, which C4's sample also holds."""
    return [p for passage in english_passages()[C4_COPY] for p in passage.paragraphs]


def title_of(paragraphs: list[str]) -> str:
    """A headline: the first words of the article."""
    words = paragraphs[0].split()[:7]
    return " ".join(words).strip(",;:.!?\"'_-") or "Untitled"


def article_html(site: str, title: str, paragraphs: list[str], lang: str = "en", newsletter: bool = True) -> bytes:
    """A blog article page with the usual boilerplate around the text."""
    body = "\n".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    extra = f"\n<p>{NEWSLETTER}</p>" if newsletter else ""
    return f"""<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} | {site}</title>
<link rel="stylesheet" href="/static/site.css">
<script>window.dataLayer = window.dataLayer || []; function gtag(){{dataLayer.push(arguments);}}</script>
</head>
<body>
<header class="site-header"><a class="logo" href="/">{site}</a>
<nav><ul><li><a href="/">Home</a></li><li><a href="/archive/">Archive</a></li><li><a href="/about/">About us</a></li>
<li><a href="/contact/">Contact</a></li></ul></nav></header>
<div class="cookie-banner" id="cookie-notice"><p>We use cookies to improve your experience on our site.
By continuing to browse you agree to our use of cookies.</p><button>Accept</button></div>
<main><article><h1>{escape(title)}</h1>
<p class="byline">Posted on 12 January 2023 by the editors</p>
{body}{extra}
</article>
<aside class="related"><h2>Related posts</h2><ul><li><a href="/2022/12/winter/">Winter on the river</a></li>
<li><a href="/2022/11/letters/">Letters from readers</a></li></ul></aside></main>
<footer><p>&copy; 2023 {site}. All rights reserved.</p>
<p><a href="/privacy/">Privacy policy</a> | <a href="/terms/">Terms of use</a></p></footer>
</body>
</html>
""".encode()


def contact_html(site: str) -> bytes:
    """A page with almost no text once the boilerplate is gone."""
    return article_html(site, "Contact", ["Write to the editors at the address below. We read every letter."],
                        newsletter=False)


def _url(site: str, index: int, title: str) -> str:
    slug = "-".join(w.lower() for w in title.split()[:4] if w.isalnum()) or f"post-{index}"
    return f"https://{site}/2023/01/{slug}-{index}/"


def _foreign(lang: str, site: str, count: int) -> list[Capture]:
    captures = []
    for index, passage in enumerate(prose.draw(lang, count, seed=0, share="commoncrawl")):
        title = title_of(list(passage.paragraphs))
        captures.append(Capture(f"https://{site}/{lang}/{index}/", article_html(site, title, list(passage.paragraphs),
                                                                                lang, newsletter=False)))
    return captures


def syndicated(paragraphs: list[str]) -> list[str]:
    """Another site's reprint: paragraphs joined in pairs (no line repeats), two words changed."""
    joined = [" ".join(paragraphs[i: i + 2]) for i in range(0, len(paragraphs), 2)]
    joined[0] = joined[0].replace(" the ", " this ", 1)
    joined[-1] = joined[-1].replace(" and ", " & ", 1)
    return joined


def listed_captures() -> list[Capture]:
    """The pages at the URLs the sample blocklist lists: English articles any other rule keeps.

    Their passages extend the writer's one draw (``random.sample`` gives the same first
    :data:`ENGLISH_PASSAGES` for a longer draw), so no other page changes."""
    drawn = prose.draw("en", ENGLISH_PASSAGES + LISTED_PASSAGES, seed=0, share="commoncrawl")[ENGLISH_PASSAGES:]
    urls = (blocklist.CC_GAMBLING_URL, blocklist.CC_SPONSORED_URL)
    return [Capture(url, article_html(url.split("/")[2], title_of(list(p.paragraphs)), list(p.paragraphs),
                                      newsletter=False)) for url, p in zip(urls, drawn, strict=True)]


def captures() -> list[list[Capture]]:
    """The captures of each WARC file, in file order (see the module docstring)."""
    english = english_passages()
    first_site, second_site = SITES[:2]
    articles = [list(p.paragraphs) for p in english[:11]]
    pages = [(title_of(a), a) for a in articles]
    first = [Capture(_url(first_site, i, t), article_html(first_site, t, a)) for i, (t, a) in enumerate(pages[:6])]
    long_article = [p for passage in english[LONG_ARTICLE] for p in passage.paragraphs]
    copy = c4_copy_paragraphs()
    warc0 = [
        *first[:3],
        *_foreign("de", first_site, 1), *_foreign("fr", first_site, 1),
        Capture(f"https://{first_site}/contact/", contact_html(first_site)),
        Capture(f"https://{first_site}/2021/05/missing/", b"<html><body><h1>Not Found</h1></body></html>",
                status="404 Not Found"),
        Capture(f"https://{first_site}/static/header.jpg", JPEG, content_type="image/jpeg"),
        *first[3:],
        Capture(NEAR_URLS[0], article_html(first_site, title_of(long_article), long_article)),
        Capture(C4_COPY_URL, article_html(first_site, title_of(copy), copy)),
        Capture(first[0].url + "?utm_source=newsletter", first[0].body),
    ]
    second = [Capture(_url(second_site, i, t), article_html(second_site, t, a, newsletter=False))
              for i, (t, a) in enumerate(pages[6:])]
    warc1 = [
        *second[:3],
        *_foreign("es", second_site, 1), *_foreign("nl", second_site, 1),
        Capture(first[0].url, b"", revisit_of=first[0]),
        Capture(f"https://{second_site}/old-archive/", b"", status="301 Moved Permanently", content_type="text/html",
                extra_headers=[("Location", f"https://{second_site}/archive/")]),
        *second[3:],
        Capture(NEAR_URLS[1], article_html(second_site, title_of(long_article), syndicated(long_article),
                                           newsletter=False)),
        *listed_captures(),  # last: every record before keeps its number (ids, dates)
    ]
    return [warc0, warc1]


def _record_headers(file_name: str, number: int, extra: dict[str, str]) -> dict[str, str]:
    second = number * 7
    return {
        "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(NAMESPACE, f'{file_name}#{number}')}>",
        "WARC-Date": WARC_DATE.format(minute=(second // 60) % 60, second=second % 60),
        **extra,
    }


def _payload_digest(body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def write_warc(path: Path, file_name: str, items: list[Capture]) -> None:
    """Write one WARC file: warcinfo, then request + response (or revisit) per capture."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        writer = WARCWriter(handle, gzip=True, warc_version="1.0")
        info = {"software": "kinda-llama sample writer (Apache Nutch 1.19 layout)", "isPartOf": CRAWL,
                "operator": "Common Crawl Admin", "format": "WARC File Format 1.0",
                "robots": "checked via crawler-commons 1.4"}
        payload = "".join(f"{k}: {v}\r\n" for k, v in info.items()).encode()
        writer.write_record(writer.create_warc_record(
            "", "warcinfo", payload=io.BytesIO(payload), length=len(payload), warc_content_type="application/warc-fields",
            warc_headers_dict={**_record_headers(file_name, 0, {}), "WARC-Filename": file_name}))
        number = 1
        for item in items:
            parts = urllib.parse.urlsplit(item.url)
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            request = (f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nUser-Agent: CCBot/2.0 "
                       "(https://commoncrawl.org/faq/)\r\nAccept: text/html\r\n\r\n").encode()
            writer.write_record(writer.create_warc_record(
                item.url, "request", payload=io.BytesIO(request), length=len(request),
                warc_content_type="application/http; msgtype=request",
                warc_headers_dict=_record_headers(file_name, number, {})))
            number += 1
            writer.write_record(_response(writer, file_name, number, item))
            number += 1


def _response(writer: WARCWriter, file_name: str, number: int, item: Capture) -> ArcWarcRecord:
    headers = [("Content-Type", item.content_type), ("Content-Length", str(len(item.body))), *item.extra_headers]
    http = StatusAndHeaders(item.status, headers, protocol="HTTP/1.1")
    if item.revisit_of is not None:
        original = item.revisit_of
        extra = {"WARC-Profile": "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
                 "WARC-Refers-To-Target-URI": original.url, "WARC-Payload-Digest": _payload_digest(original.body)}
        return writer.create_warc_record(item.url, "revisit", payload=io.BytesIO(b""), length=0, http_headers=http,
                                         warc_headers_dict=_record_headers(file_name, number, extra))
    return writer.create_warc_record(item.url, "response", payload=io.BytesIO(item.body), length=len(item.body),
                                     http_headers=http, warc_headers_dict=_record_headers(file_name, number, {}))


def wet_text(site: str, title: str, paragraphs: list[str]) -> str:
    """A page as Common Crawl's WET extraction gives it: every text line, menus and footer included."""
    return "\n".join([f"{title} | {site}", "Home", "Archive", "About us", "Contact",
                      "We use cookies to improve your experience on our site. By continuing to browse you agree "
                      "to our use of cookies.", "Accept", title, "Posted on 12 January 2023 by the editors",
                      *paragraphs, "Related posts", "Winter on the river", "Letters from readers",
                      f"\u00a9 2023 {site}. All rights reserved.", "Privacy policy | Terms of use"]) + "\n"


def wet_pages() -> list[tuple[str, str]]:
    """(url, text) of the WET file's pages (see the module docstring)."""
    site = SITES[2]
    pages = []
    for index, passage in enumerate(english_passages()[WET_PAGES]):
        title = title_of(list(passage.paragraphs))
        pages.append((_url(site, index, title), wet_text(site, title, list(passage.paragraphs))))
    (german,) = prose.draw("de", 1, seed=1, share="commoncrawl")
    pages.insert(2, (f"https://{site}/de/0/", wet_text(site, title_of(list(german.paragraphs)),
                                                       list(german.paragraphs))))
    pages.append((f"https://{site}/newsletter/", wet_text(site, "Newsletter", [NEWSLETTER])))
    return pages


def write_wet(path: Path) -> None:
    """Write the WET file: warcinfo, then one ``conversion`` record (plain text) per page."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        writer = WARCWriter(handle, gzip=True, warc_version="1.0")
        info = (f"Software-Info: ia-web-commons.1.1.10\r\nisPartOf: {CRAWL}\r\n"
                "operator: Common Crawl Admin\r\n").encode()
        writer.write_record(writer.create_warc_record(
            "", "warcinfo", payload=io.BytesIO(info), length=len(info), warc_content_type="application/warc-fields",
            warc_headers_dict={**_record_headers(WET_FILE, 0, {}), "WARC-Filename": WET_FILE}))
        for number, (url, text) in enumerate(wet_pages(), start=1):
            body = text.encode("utf-8")
            refers_to = f"<urn:uuid:{uuid.uuid5(NAMESPACE, f'response {url}')}>"
            writer.write_record(writer.create_warc_record(
                url, "conversion", payload=io.BytesIO(body), length=len(body), warc_content_type="text/plain",
                warc_headers_dict=_record_headers(WET_FILE, number, {"WARC-Refers-To": refers_to})))


def write_sample_inputs(directory: Path) -> list[str]:
    """Write the two WARC files and the WET file (see the module docstring); return their paths, sorted."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, items in zip(FILES, captures(), strict=True):
        target = directory / file_name
        write_warc(target, file_name, items)
        written.append(str(target))
    write_wet(directory / WET_FILE)
    return sorted([*written, str(directory / WET_FILE)])
