"""The Common Crawl sample writer: WARC read back with warcio, and what flows.commoncrawl does with it."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

from core.manifest import Manifest
from dedupe.shingles import shingle_items
from flows import commoncrawl as cc_flow
from sources.samples import blocklist, commoncrawl


class _Paragraphs(HTMLParser):
    """The text of every ``<p>`` of a page, and its ``<html lang>``."""

    def __init__(self) -> None:
        super().__init__()
        self.paragraphs: list[str] = []
        self.lang = ""
        self._inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "html":
            self.lang = dict(attrs).get("lang") or ""
        if tag == "p":
            self._inside, self.paragraphs = True, [*self.paragraphs, ""]

    def handle_endtag(self, tag: str) -> None:
        self._inside = self._inside and tag != "p"

    def handle_data(self, data: str) -> None:
        if self._inside:
            self.paragraphs[-1] += data


def _read(path: Path) -> list[dict]:
    records = []
    with open(path, "rb") as handle:
        for record in ArchiveIterator(handle):
            body = record.content_stream().read()
            status = record.http_headers.get_statuscode() if record.rec_type in ("response", "revisit") else None
            records.append({"type": record.rec_type, "url": record.rec_headers.get_header("WARC-Target-URI"),
                            "status": status, "body": body,
                            "digest": record.rec_headers.get_header("WARC-Payload-Digest"),
                            "content_type": record.http_headers.get_header("Content-Type") if status else None})
    return records


def _page(body: bytes) -> _Paragraphs:
    parser = _Paragraphs()
    parser.feed(body.decode("utf-8"))
    return parser


def _shingles(text: str) -> set[bytes]:
    """Word 5-gram shingles as near-dedup sees them (``flows.dedup``, the book near-dedup)."""
    return set(shingle_items(text))


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return [Path(p) for p in commoncrawl.write_sample_inputs(tmp_path_factory.mktemp("cc"))]


@pytest.fixture(scope="module")
def warcs(written: list[Path]) -> list[Path]:
    return [p for p in written if p.name in commoncrawl.FILES]


def test_deterministic_gzip_members(written: list[Path], tmp_path: Path) -> None:
    again = [Path(p) for p in commoncrawl.write_sample_inputs(tmp_path)]
    assert [p.name for p in again] == [p.name for p in written] == [*commoncrawl.FILES, commoncrawl.WET_FILE]
    for first, second in zip(written, again, strict=True):
        data = first.read_bytes()
        assert data == second.read_bytes()
        assert data[:2] == b"\x1f\x8b" and data[4:8] == b"\0\0\0\0"  # gzip member with mtime 0


def test_records_as_a_crawler_writes_them(warcs: list[Path]) -> None:
    first, second = (_read(p) for p in warcs)
    for records in (first, second):
        assert records[0]["type"] == "warcinfo"
        pairs = records[1:]
        assert [r["type"] for r in pairs[::2]] == ["request"] * (len(pairs) // 2)
        assert all(a["url"] == b["url"] for a, b in zip(pairs[::2], pairs[1::2], strict=True))
    statuses = {r["url"].rsplit("/", 2)[-2]: r["status"] for r in first + second if r["type"] == "response"}
    assert statuses["missing"] == "404" and statuses["old-archive"] == "301"
    assert [r["content_type"] for r in first if r["type"] == "response" and r["url"].endswith(".jpg")] == ["image/jpeg"]
    langs = sorted(_page(r["body"]).lang for r in first + second if r["type"] == "response"
                   and (r["content_type"] or "").startswith("text/html") and r["status"] == "200")
    # 16 English pages, and the two the sample blocklist lists (the second file's last two captures)
    assert {lang: langs.count(lang) for lang in set(langs)} == {"en": 18, "de": 1, "fr": 1, "es": 1, "nl": 1}
    assert [r["url"] for r in second if r["type"] == "response"][-2:] == [blocklist.CC_GAMBLING_URL,
                                                                          blocklist.CC_SPONSORED_URL]
    article = first[2]["body"].decode()
    assert "<nav>" in article and "cookie" in article and "All rights reserved" in article


def test_wet_conversion_records(written: list[Path]) -> None:
    records = _read(written[-1])
    assert [r["type"] for r in records] == ["warcinfo"] + ["conversion"] * 7
    with open(written[-1], "rb") as handle:
        headers = [r.rec_headers for r in ArchiveIterator(handle) if r.rec_type == "conversion"]
    assert all(h.get_header("Content-Type") == "text/plain" and h.get_header("WARC-Refers-To") for h in headers)
    texts = [r["body"].decode("utf-8") for r in records[1:]]
    assert all(t.split("\n")[1:5] == ["Home", "Archive", "About us", "Contact"] for t in texts)  # menus kept
    assert sum("Gregor" in t or "Samsa" in t or " und " in t for t in texts) == 1  # one German page


def test_planted_duplicates(warcs: list[Path]) -> None:
    first, second = (_read(p) for p in warcs)
    responses = {r["url"]: r for r in first + second if r["type"] == "response"}
    original = first[2]
    tracked = responses[original["url"] + "?utm_source=newsletter"]
    assert tracked["body"] == original["body"] and tracked["digest"] == original["digest"]
    revisit = [r for r in second if r["type"] == "revisit"]
    assert len(revisit) == 1 and revisit[0]["url"] == original["url"] and revisit[0]["digest"] == original["digest"]
    long_read, reprint = (_page(responses[u]["body"]).paragraphs for u in commoncrawl.NEAR_URLS)
    assert not set(long_read) & set(reprint[2:-2])  # no article paragraph repeats as a line
    jaccard = len(_shingles(" ".join(long_read)) & _shingles(" ".join(reprint))) / len(
        _shingles(" ".join(long_read)) | _shingles(" ".join(reprint)))
    assert jaccard >= 0.9
    copy = _page(responses[commoncrawl.C4_COPY_URL]["body"]).paragraphs
    assert all(p in copy for p in commoncrawl.c4_copy_paragraphs())


def test_flow_keeps_english_articles_and_drops_the_rest(written: list[Path], tmp_path: Path,
                                                        prefect_api_url: str) -> None:
    # with the sample blocklist, as the offline sample runs it: its two listed pages are its only drops
    blocklist.write_sample_blocklist(tmp_path / "blocklist")
    out = tmp_path / "out"
    config = cc_flow.CommonCrawlConfig(out=out, inputs=[str(w) for w in written], runner="thread", workers=2,
                                       progress=False, url_blocklist=str(tmp_path / "blocklist"))
    summary = cc_flow.run(config)
    assert summary.kept == 19 and not summary.failed
    manifest = Manifest.for_output(out)
    drops = dict(manifest.query("SELECT reason, sum(count) FROM drops GROUP BY reason")[1])
    assert drops == {"language_prefilter": 4, "http_status": 2, "not_html": 1, "too_short": 2, "revisit": 1,
                     "duplicate_lines": 1, "language_not_kept": 1, "url_blocklist:gambling": 2}
    rows = [row for part in sorted((out / "docs").rglob("*.parquet")) for row in pq.read_table(part).to_pylist()]
    texts, metas = [row["text"] for row in rows], [row["meta"] for row in rows]
    joined = "\n".join(texts)
    for boilerplate in ("We use cookies", "All rights reserved", "Privacy policy", "Related posts", "Posted on"):
        # extraction removed it from every HTML page; in WET text, line dedup kept the first page's copy only
        assert joined.count(boilerplate) == 1
    assert joined.count(commoncrawl.NEWSLETTER) == 1  # the line dedup kept its first copy only
    urls = [json.loads(row)["url"] if isinstance(row, str) else row["url"] for row in metas]
    assert set(commoncrawl.NEAR_URLS) | {commoncrawl.C4_COPY_URL} <= set(urls)  # near duplicates: for flows.dedup
