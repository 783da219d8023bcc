"""WARC/WET readers, charset decoding, bounded extraction and paths lists, on files written with warcio."""

from __future__ import annotations

import gzip
import io
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from core.document import Document, Drop
from sources.formats.crawl_paths import crawl_paths_url, read_paths_list, resolve_url
from sources.formats.html_text import (
    Extraction,
    ExtractOptions,
    bounded_extractor,
    decode_html,
    normalize_charset,
)
from sources.formats.warc import (
    WarcLimits,
    WarcReader,
    WarcRecords,
    visible_text,
)
from tests.fixed import FixedWARCWriter, gzip_text

ENGLISH = (
    "The history of the lighthouse keepers on the northern coast is a story of isolation and duty. "
    "For more than a century, families lived on rocky islands, trimming wicks and winding clockwork. "
    "Their logbooks record storms, shipwrecks, and the slow arrival of electricity to the coast."
)
GERMAN = (
    "Die Geschichte der Leuchtturmwärter an der nördlichen Küste ist eine Geschichte von Einsamkeit "
    "und Pflicht. Mehr als ein Jahrhundert lang lebten Familien auf felsigen Inseln und warteten die Lampen."
)


def html_page(title: str, paragraphs: list[str], charset: str | None = "utf-8") -> str:
    meta = f'<meta charset="{charset}">' if charset else ""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<!DOCTYPE html><html><head>{meta}<title>{title}</title></head><body>"
            f"<nav><a href='/'>Home</a> <a href='/about'>About</a></nav><article><h1>{title}</h1>{body}</article>"
            "<footer>Copyright 2020</footer></body></html>")


def add_response(writer: WARCWriter, url: str, body: bytes, content_type: str = "text/html; charset=utf-8",
                 status: str = "200 OK", extra_headers: list[tuple[str, str]] | None = None) -> None:
    headers = [("Content-Type", content_type), *(extra_headers or [])]
    http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
    record = writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http)
    writer.write_record(record)


def add_raw_response(writer: WARCWriter, url: str, raw: bytes) -> None:
    """A response record whose block is written verbatim (warcio's writer would refuse bad HTTP)."""
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\n"
            f"WARC-Record-ID: <urn:uuid:broken-{len(raw)}>\r\nWARC-Date: 2020-01-01T00:00:00Z\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(raw)}\r\n\r\n")
    writer.out.write(gzip.compress(head.encode() + raw + b"\r\n\r\n", mtime=0))


def write_warc(path: Path, build) -> Path:
    with open(path, "wb") as handle:
        writer = FixedWARCWriter(handle, gzip=True, key=path.name)
        build(writer)
    return path


@pytest.fixture
def sample_warc(tmp_path: Path) -> Path:
    def build(w: WARCWriter) -> None:
        add_response(w, "http://example.com/en", html_page("Keepers", [ENGLISH] * 2).encode())
        add_response(w, "http://example.de/de", html_page("Wärter", [GERMAN] * 2).encode())
        add_response(w, "http://example.com/logo.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 50, "image/png")
        add_response(w, "http://example.com/missing", b"<html>gone</html>", status="404 Not Found")
        add_raw_response(w, "http://example.com/broken", b"THIS IS NOT HTTP\r\nfoo\r\n\r\n<html></html>")
        gz = gzip.compress(html_page("Gzipped", [ENGLISH]).encode(), mtime=0)
        add_response(w, "http://example.com/gz", gz, extra_headers=[("Content-Encoding", "gzip")])
        req = w.create_warc_record("http://example.com/en", "request", payload=io.BytesIO(b"GET / HTTP/1.1\r\n\r\n"))
        w.write_record(req)

    return write_warc(tmp_path / "sample.warc.gz", build)


def test_warc_round_trip_keeps_capture_facts(sample_warc: Path) -> None:
    records = list(WarcRecords(sample_warc))
    assert len(records) == 6  # the request record is not an input record
    pages = [r for r in records if not isinstance(r, Drop)]
    reasons = sorted(r.reason for r in records if isinstance(r, Drop))
    assert reasons == ["bad_http_headers", "http_status", "not_html"]
    assert [p.url for p in pages] == ["http://example.com/en", "http://example.de/de", "http://example.com/gz"]
    assert all(p.record_id.startswith("<urn:uuid:") and p.digest and p.date for p in pages)
    assert pages[2].body.startswith(b"<!DOCTYPE html>")  # Content-Encoding: gzip was undone

    docs = [r for r in WarcReader(sample_warc, "sample", "commoncrawl", "sample.warc.gz") if isinstance(r, Document)]
    assert len(docs) == 3
    assert "lighthouse keepers" in docs[0].text and "Home" not in docs[0].text  # boilerplate gone
    assert docs[0].meta["url"] == "http://example.com/en"
    assert docs[0].meta["warc_record_id"] == pages[0].record_id
    assert docs[0].meta["charset"] == "utf-8"
    assert len({d.id for d in docs}) == 3


def test_truncated_warc_keeps_what_was_readable(sample_warc: Path, tmp_path: Path) -> None:
    data = sample_warc.read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: int(len(data) * 0.6)])
    records = list(WarcReader(cut, "cut", "commoncrawl", "cut.warc.gz"))
    assert isinstance(records[-1], Drop) and records[-1].reason == "truncated_input"
    assert "cut" in records[-1].record and records[-1].detail
    assert any(isinstance(r, Document) for r in records)


def test_size_bound_drops_huge_pages(tmp_path: Path) -> None:
    def build(w: WARCWriter) -> None:
        add_response(w, "http://example.com/huge", html_page("Huge", [ENGLISH * 200]).encode())
        add_response(w, "http://example.com/small", html_page("Small", [ENGLISH]).encode())

    path = write_warc(tmp_path / "huge.warc.gz", build)
    records = list(WarcReader(path, "huge", "cc", "huge", limits=WarcLimits(max_body_bytes=10_000)))
    assert isinstance(records[0], Drop) and records[0].reason == "too_large"
    assert isinstance(records[1], Document)


def test_wet_conversion_records(tmp_path: Path) -> None:
    path = tmp_path / "x.warc.wet.gz"
    with open(path, "wb") as handle:
        writer = FixedWARCWriter(handle, gzip=True, key=path.name)
        for i, text in enumerate([ENGLISH, "", GERMAN]):
            headers = {"WARC-Refers-To": f"<urn:uuid:0000000{i}>"}
            record = writer.create_warc_record(f"http://site/{i}", "conversion", payload=io.BytesIO(text.encode()),
                                               warc_headers_dict=headers, warc_content_type="text/plain")
            writer.write_record(record)
    records = list(WarcReader(path, "x", "commoncrawl", "x"))
    assert [type(r).__name__ for r in records] == ["Document", "Drop", "Document"]
    assert records[0].text == ENGLISH and records[0].meta["warc_record_id"] == "<urn:uuid:00000000>"
    assert records[1].reason == "empty"


def test_lying_and_odd_charsets() -> None:
    text = "Grüße aus Köln – €5"
    # declared latin-1, really UTF-8: the bytes win
    assert decode_html(text.encode("utf-8"), "text/html; charset=iso-8859-1").text == text
    # declared UTF-8, really windows-1252: header fails, <meta> wins
    page = f'<meta charset="windows-1252"><p>{text}</p>'.encode("cp1252")
    decoded = decode_html(page, "text/html; charset=utf-8")
    assert text in decoded.text and decoded.method == "meta"
    # unknown label, no meta: detection or fallback, never an exception
    assert decode_html("Привет, мир! Это тест.".encode("cp1251") * 20, "text/html; charset=x-nonsense").text
    assert normalize_charset("ISO-8859-1") == "cp1252" and normalize_charset("gb2312") == "gb18030"
    assert normalize_charset("no-such-charset") is None


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400), st.one_of(st.none(), st.text(max_size=40)))
def test_decode_html_never_raises(data: bytes, content_type: str | None) -> None:
    decoded = decode_html(data, content_type)
    assert isinstance(decoded.text, str) and decoded.encoding


def test_visible_text_strips_scripts_and_tags() -> None:
    html = "<html><script>var x = 'hidden';</script><style>p{}</style><p>Hello &amp; welcome</p></html>"
    assert visible_text(html) == "Hello & welcome"


def test_extractor_is_bounded_in_its_helper_from_any_thread() -> None:
    """The extractor runs in core.bounded's killable helper: a page past its bound is one drop, in a thread too."""
    page = html_page("T", [ENGLISH] * 2)
    huge = html_page("T", [ENGLISH] * 20_000)  # ~5 MB: far more than 1 ms of extraction anywhere
    result: list[object] = []

    def read() -> None:
        with bounded_extractor(ExtractOptions(timeout_s=0.001)) as tight:
            result.append(tight.run("huge page", huge))
        with bounded_extractor(ExtractOptions(timeout_s=60)) as extractor:
            result.append(extractor.run("page", page))

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(120)
    stuck, text = result
    assert isinstance(stuck, Drop) and stuck.reason == "cleaner_timeout" and stuck.record == "huge page"
    assert isinstance(text, Extraction) and "lighthouse keepers" in text.text and not text.lost


def test_paths_list_and_urls(tmp_path: Path) -> None:
    paths = tmp_path / "wet.paths.gz"
    with gzip_text(paths) as handle:
        handle.write("crawl-data/CC-MAIN-2023-06/segments/1/wet/a.warc.wet.gz\n\ncrawl-data/x/b.warc.wet.gz\n")
    assert read_paths_list(paths) == ["crawl-data/CC-MAIN-2023-06/segments/1/wet/a.warc.wet.gz",
                                      "crawl-data/x/b.warc.wet.gz"]
    assert resolve_url("https://data.commoncrawl.org", "crawl-data/x/b.gz") == "https://data.commoncrawl.org/crawl-data/x/b.gz"
    assert resolve_url("https://mirror/cc/", "/crawl-data/x") == "https://mirror/cc/crawl-data/x"
    assert crawl_paths_url("https://h", "CC-MAIN-2023-06", "warc") == "https://h/crawl-data/CC-MAIN-2023-06/warc.paths.gz"
    with pytest.raises(ValueError):
        crawl_paths_url("https://h", "2023-06")


def test_real_samples_read_without_errors(realdata: Path) -> None:
    for name in ["resiliparse_CC-MAIN-2020-34_sample.warc.gz", "resiliparse_clueweb-quirk.warc.gz",
                 "dolma_sample-0000.warc.gz", "whirlwind.warc.wet.gz"]:
        records = list(WarcReader(realdata / "warc" / name, name, "cc", name))
        errors = [r for r in records if isinstance(r, Drop) and r.is_error]
        assert records and not errors, (name, errors[:3])
    japanese = [r for r in WarcReader(realdata / "warc" / "resiliparse_clueweb-quirk.warc.gz", "q", "cc", "q")
                if isinstance(r, Document)]
    assert all(r.meta["charset"] == "euc_jp" for r in japanese) and "新作" in japanese[0].text
