"""The Common Crawl scale-input generator (benchmarks/corpus_inputs/commoncrawl.py, issue 33).

Its files must be what the product reads (warcio's WARC/WET, read back by the product's own WARC
reader), the same bytes for the same arguments wherever written, of the requested size, and hold
what the corpus cost benchmark relies on: languages mixed, site chrome repeated across a host's
pages (what paragraph dedup removes), planted exact copies, non-HTML responses.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from core.filters.langid import LanguageID
from sources.formats.warc import WarcPage, WarcRecords
from tests.benchmark_modules import load_benchmark

generator = load_benchmark("corpus_inputs/commoncrawl")
pages, write_commoncrawl = generator.pages, generator.write_commoncrawl

SIZE = 400_000


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    root = tmp_path_factory.mktemp("ccgen")
    return {kind: write_commoncrawl(root / kind, SIZE, kind, seed=7, file_bytes=150_000) for kind in ("warc", "wet")}


def _pages(paths: list[Path]) -> list[WarcPage]:
    return [p for path in paths for p in WarcRecords(path) if isinstance(p, WarcPage)]


def test_same_bytes_for_the_same_arguments_in_another_folder(tmp_path: Path,
                                                             written: dict[str, list[Path]]) -> None:
    again = write_commoncrawl(tmp_path / "deeper" / "other", SIZE, "wet", seed=7, file_bytes=150_000)
    assert [p.name for p in again] == [p.name for p in written["wet"]]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(again, written["wet"], strict=True))
    other_seed = write_commoncrawl(tmp_path / "seed8", SIZE, "wet", seed=8, file_bytes=150_000)
    assert other_seed[0].read_bytes() != written["wet"][0].read_bytes()


@pytest.mark.parametrize("kind", ["warc", "wet"])
def test_size_and_file_names(kind: str, written: dict[str, list[Path]]) -> None:
    paths = written[kind]
    total = sum(p.stat().st_size for p in paths)
    assert SIZE <= total < SIZE + 100_000
    assert len(paths) == 3 and all(p.name.startswith("CC-MAIN-2023") for p in paths)
    assert all(p.name.endswith(".warc.wet.gz") == (kind == "wet") for p in paths)


def test_warc_pages_are_html_of_several_languages_with_pdfs(written: dict[str, list[Path]]) -> None:
    found = _pages(written["warc"])
    kinds = Counter(p.content_type.split(";")[0] for p in found if p.content_type)
    assert kinds["text/html"] > 20 * kinds["application/pdf"]
    assert all(p.kind == "html" and p.http_status == 200 for p in found)
    langs = Counter(p.body.split(b'lang="', 1)[1][:2].decode() for p in found if b'lang="' in p.body)
    assert "en" in langs and len(langs) >= 2  # a few hosts at this size; the mix is checked on WET


def test_wet_text_keeps_host_chrome_that_line_dedup_removes(written: dict[str, list[Path]]) -> None:
    texts = [p.body.decode() for p in _pages(written["wet"])]
    lines = Counter(line for text in texts for line in text.split("\n"))
    total = sum(lines.values())
    repeated = sum(count for count in lines.values() if count > 1)
    assert 0.3 < repeated / total < 0.9  # chrome lines repeat, paragraphs do not (unless planted)
    paragraphs = [line for line in lines if len(line) > 200]
    assert sum(lines[p] for p in paragraphs) < 1.2 * len(paragraphs)
    detector = LanguageID(["en"], 0.5)
    english = sum(1 for language, _ in detector.classify(texts) if language == "en")
    assert 0.25 < english / len(texts) < 0.7


def test_planted_exact_copies_share_the_original_text() -> None:
    crawl = list(pages(seed=1, count=3000))
    by_url = {p.url: p for p in crawl}
    copies = [p for p in crawl if "?" in p.url]
    assert 0.015 < len(copies) / len(crawl) < 0.05
    assert all(by_url[c.url.split("?")[0]].blocks == c.blocks for c in copies)
    reprints = [p for p in crawl if "/reprints/" in p.url]
    assert 0.06 < len(reprints) / len(crawl) < 0.16
