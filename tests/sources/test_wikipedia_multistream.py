"""Page-range tasks over a real multistream dump give the one-task run's records, in order."""

from __future__ import annotations

import bz2
import html
import itertools
import re
from pathlib import Path

import pytest

from core.compressed import TruncatedInputError
from core.document import Document, Drop, InputSpec
from sources.wikipedia import WikipediaReader
from sources.wikipedia_multistream import plan_ranges, read_index, read_streams

PAGES_PER_STREAM = 20  # real dumps put 100 pages in a stream; fewer here gives more streams to cut
PAGES = 150


def build_multistream(xml: str, directory: Path, name: str) -> tuple[Path, Path, list[int]]:
    """A ``-pages-articles-multistream.xml.bz2`` and its ``-multistream-index.txt.bz2``, as dumps lay them out.

    Stream 1: everything before the first page (``<mediawiki>``, ``<siteinfo>``); then one
    stream per ``PAGES_PER_STREAM`` pages; last: ``</mediawiki>``. The index has a line
    ``offset:page_id:title`` per page, ``offset`` being the byte offset of the page's stream.
    """
    first = xml.index("  <page>")
    head, body = xml[:first], xml[first:]
    pages = ["  <page>" + part for part in body.split("  <page>")[1:]]
    pages[-1] = pages[-1].rsplit("</mediawiki>", 1)[0]
    dump, index = directory / f"{name}-pages-articles-multistream.xml.bz2", directory / f"{name}-multistream-index.txt.bz2"
    offsets, lines = [], []
    with open(dump, "wb") as out:
        out.write(bz2.compress(head.encode()))
        for start in range(0, len(pages), PAGES_PER_STREAM):
            group = pages[start: start + PAGES_PER_STREAM]
            offset = out.tell()
            offsets.append(offset)
            for page in group:
                page_id = re.search(r"<id>(\d+)</id>", page).group(1)  # type: ignore[union-attr]
                title = html.unescape(re.search(r"<title>(.*?)</title>", page).group(1))  # type: ignore[union-attr]
                lines.append(f"{offset}:{page_id}:{title}\n")
            out.write(bz2.compress("".join(group).encode()))
        out.write(bz2.compress(b"</mediawiki>\n"))
    index.write_bytes(bz2.compress("".join(lines).encode()))
    return dump, index, offsets


@pytest.fixture(scope="module")
def multistream(realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[int]]:
    with bz2.open(realdata / "mediawiki" / "ukwiki-truncated-100k.REPAIRED.xml.bz2", "rt", encoding="utf-8") as f:
        xml = f.read()
    cut = 0
    for _ in range(PAGES):
        cut = xml.index("</page>\n", cut) + len("</page>\n")
    return build_multistream(xml[:cut] + "</mediawiki>\n", tmp_path_factory.mktemp("ms"), "ukwiki-20230101")


def _records(dump: Path, byte_range: tuple[int, int] | None = None, header_end: int | None = None) -> list[object]:
    spec = InputSpec(str(dump), dump, dump.name)
    return list(WikipediaReader(spec, byte_range=byte_range, header_end=header_end))


@pytest.mark.realdata
def test_index_gives_the_stream_offsets(multistream: tuple[Path, Path, list[int]]) -> None:
    dump, index, offsets = multistream
    assert read_index(index) == offsets
    with open(dump, "rb") as handle:  # each offset is the first byte of a bz2 stream
        for offset in offsets:
            handle.seek(offset)
            assert handle.read(3) == b"BZh"
    first = b"".join(read_streams(dump, offsets[0], offsets[1]))
    assert first.startswith(b"  <page>") and first.count(b"<page>") == PAGES_PER_STREAM


@pytest.mark.realdata
@pytest.mark.parametrize("tasks", [1, 3, 50])
def test_page_range_tasks_equal_the_one_task_run(multistream: tuple[Path, Path, list[int]], tasks: int) -> None:
    dump, index, _ = multistream
    whole = _records(dump)
    offsets = read_index(index)
    ranges = plan_ranges(offsets, dump.stat().st_size, tasks)
    assert len(ranges) == min(tasks, len(offsets))
    assert ranges[0][0] == offsets[0] and ranges[-1][1] == dump.stat().st_size
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    split = [record for byte_range in ranges for record in _records(dump, byte_range, offsets[0])]
    assert split == whole
    docs = [r for r in whole if isinstance(r, Document)]
    assert len(docs) > 50 and len(whole) == PAGES
    assert {d.meta["language"] for d in docs} == {"uk"}


@pytest.mark.realdata
def test_a_range_cut_inside_a_stream_is_a_counted_drop(multistream: tuple[Path, Path, list[int]]) -> None:
    dump, _, offsets = multistream
    with pytest.raises(TruncatedInputError):
        b"".join(read_streams(dump, offsets[0], offsets[1] - 10))
    records = _records(dump, (offsets[0], offsets[1] - 10), offsets[0])
    drops = [r for r in records if isinstance(r, Drop)]
    assert drops[-1].reason == "truncated_input"


def test_plan_ranges_balances_compressed_bytes() -> None:
    offsets = [100, 200, 300, 400, 500, 600, 700, 800]
    assert plan_ranges(offsets, 900, 4) == [(100, 300), (300, 500), (500, 700), (700, 900)]
    assert plan_ranges(offsets, 900, 1) == [(100, 900)]
    assert plan_ranges([], 900, 4) == []
    with pytest.raises(ValueError, match="tasks"):
        plan_ranges(offsets, 900, 0)


def test_read_index_refuses_a_malformed_line(tmp_path: Path) -> None:
    index = tmp_path / "x-multistream-index.txt.bz2"
    index.write_bytes(bz2.compress(b"10:1:A\n10:2:B: with colon\nnot-a-number:3:C\n"))
    with pytest.raises(ValueError, match="line 3"):
        read_index(index)
    index.write_bytes(bz2.compress(b"10:1:A\n10:2:B: with colon\n900:3:C\n"))
    assert read_index(index) == [10, 900]
