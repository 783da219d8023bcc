"""Page-range tasks over a real multistream dump give the one-task run's records, in order."""

from __future__ import annotations

import bz2
import itertools
from pathlib import Path

import pytest

from core.compressed import TruncatedInputError
from core.document import Document, Drop, InputSpec
from sources.formats.wikipedia_multistream import (
    first_stream_end,
    index_path,
    parse_range_key,
    plan_ranges,
    plan_split,
    range_key,
    read_index,
    read_streams,
)
from sources.samples.wikipedia import write_multistream, write_sample_multistream
from sources.wikipedia import WikipediaReader

PAGES_PER_STREAM = 20  # real dumps put 100 pages in a stream; fewer here gives more streams to cut
PAGES = 150


@pytest.fixture(scope="module")
def multistream(realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[int]]:
    with bz2.open(realdata / "mediawiki" / "ukwiki-truncated-100k.REPAIRED.xml.bz2", "rt", encoding="utf-8") as f:
        xml = f.read()
    cut = 0
    for _ in range(PAGES):
        cut = xml.index("</page>\n", cut) + len("</page>\n")
    dump, index = write_multistream(xml[:cut] + "</mediawiki>\n", tmp_path_factory.mktemp("ms"), "ukwiki-20230101",
                                    PAGES_PER_STREAM)
    return dump, index, read_index(index)


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


def test_index_is_found_beside_whole_and_part_dumps(tmp_path: Path) -> None:
    names = [("enwiki-20240601-pages-articles-multistream.xml.bz2",
              "enwiki-20240601-pages-articles-multistream-index.txt.bz2"),
             ("enwiki-20240601-pages-articles-multistream1.xml-p1p41242.bz2",
              "enwiki-20240601-pages-articles-multistream-index1.txt-p1p41242.bz2")]
    for dump, index in names:
        (tmp_path / dump).write_bytes(b"")
        assert index_path(tmp_path / dump) is None  # no index yet: read whole
        (tmp_path / index).write_bytes(b"")
        assert index_path(tmp_path / dump) == tmp_path / index
    (tmp_path / "enwiki-20240601-pages-articles.xml.bz2").write_bytes(b"")
    assert index_path(tmp_path / "enwiki-20240601-pages-articles.xml.bz2") is None


def test_range_keys_sort_in_file_order_and_parse_back() -> None:
    key = "enwiki-20240601-pages-articles-multistream.xml.bz2"
    keys = [range_key(key, start, end, 123_456) for start, end in [(600, 2_000), (2_000, 10_000), (10_000, 123_456)]]
    assert keys == sorted(keys) and keys[0] == f"{key}#000600-002000"
    assert [parse_range_key(k) for k in keys] == [(key, (600, 2_000)), (key, (2_000, 10_000)), (key, (10_000, 123_456))]
    assert parse_range_key(key) is None
    assert parse_range_key("notes#1-2") is None  # only a multistream dump's name is split


def test_plan_split_on_a_sample_dump(tmp_path: Path) -> None:
    dump, index = write_sample_multistream(tmp_path, pages=300, pages_per_stream=10)
    offsets = read_index(index)
    assert first_stream_end(dump) == offsets[0] and len(offsets) == 31  # 301 pages, 10 per stream
    size = dump.stat().st_size
    assert plan_split(dump, 0) is None and plan_split(dump, size) is None
    ranges = plan_split(dump, size // 4)
    assert ranges is not None and 4 <= len(ranges) <= 5
    assert ranges[0][0] == offsets[0] and ranges[-1][1] == size
    assert all(a[1] == b[0] and a[1] in offsets for a, b in itertools.pairwise(ranges))
    whole = _records(dump)
    assert [r for rng in ranges for r in _records(dump, rng, offsets[0])] == whole and len(whole) == 301

    cut = tmp_path / "cut" / dump.name  # a download cut in the middle: offsets past the end are left out
    cut.parent.mkdir()
    cut.write_bytes(dump.read_bytes()[: offsets[20] + 50])
    (cut.parent / index.name).write_bytes(index.read_bytes())
    cut_ranges = plan_split(cut, size // 4)
    assert cut_ranges is not None and cut_ranges[-1][1] == offsets[20] + 50
    assert all(start < offsets[20] + 50 for start, _ in cut_ranges)
