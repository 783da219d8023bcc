"""The C4 sample writer: released-C4 files read back with gzip + json, and what flows.c4 does with them."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from core.manifest import Manifest
from dedupe.shingles import shingle_items
from flows.c4 import C4Config
from flows.c4 import run as run_c4
from sources.samples import blocklist, c4, commoncrawl


def _rows(path: Path) -> list[dict[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _jaccard(first: str, second: str) -> float:
    """Of the word 5-gram shingles ``flows.dedup`` computes."""
    a, b = set(shingle_items(first)), set(shingle_items(second))
    return len(a & b) / len(a | b)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return [Path(p) for p in c4.write_sample_inputs(tmp_path_factory.mktemp("c4"))]


def test_released_layout_and_determinism(files: list[Path], tmp_path: Path) -> None:
    assert [p.name for p in files] == ["c4-train.00000-of-01024.json.gz", "c4-train.00001-of-01024.json.gz"]
    for path, again in zip(files, c4.write_sample_inputs(tmp_path), strict=True):
        assert path.read_bytes() == Path(again).read_bytes()
        assert path.read_bytes()[4:8] == b"\0\0\0\0"  # gzip mtime 0
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                assert list(json.loads(line)) == ["text", "timestamp", "url"]
                assert line.startswith('{"text":"')
    rows = _rows(files[0]) + _rows(files[1])
    assert len(rows) == 23  # 22 pages, and the sample blocklist's listed page last
    assert rows[-1]["url"] == blocklist.C4_PHISHING_URL
    assert all(re.fullmatch(r"2019-04-\d\dT\d\d:\d\d:\d\dZ", r["timestamp"]) for r in rows)
    lines = [line for r in rows for line in r["text"].split("\n")]
    assert all(line.endswith((".", "?", "!", '"')) and len(line.split()) >= 3 for line in lines)  # C4's rules


def test_planted_duplicates(files: list[Path]) -> None:
    first, second = _rows(files[0]), _rows(files[1])
    texts = [r["text"] for r in first + second]
    repeated = [t for t in set(texts) if texts.count(t) > 1]
    assert repeated == [first[c4.DUPLICATED]["text"]] and first[c4.DUPLICATED] != second[3]
    by_url = {r["url"]: r["text"] for r in first + second}
    long_read, reprint = (by_url[u] for u in c4.NEAR_URLS)
    assert long_read != reprint and _jaccard(long_read, reprint) >= 0.9
    copy = by_url[commoncrawl.C4_COPY_URL].split("\n")
    assert copy[-1] == commoncrawl.NEWSLETTER and len(copy) >= 3
    assert all(line in commoncrawl.c4_copy_paragraphs() for line in copy[:-1])


def test_flow_drops_the_exact_copy(files: list[Path], tmp_path: Path, prefect_api_url: str) -> None:
    # with the sample blocklist, as the offline sample runs it: the listed row is dropped too
    blocklist.write_sample_blocklist(tmp_path / "blocklist")
    summary = run_c4(C4Config(inputs=[str(p) for p in files], out=tmp_path / "out", runner="thread", workers=2,
                              progress=False, url_blocklist=str(tmp_path / "blocklist")))
    assert summary.kept == 21 and not summary.failed
    manifest = Manifest.for_output(tmp_path / "out")
    assert dict(manifest.query("SELECT reason, sum(count) FROM drops GROUP BY reason")[1]) == {
        "duplicate_exact": 1, "url_blocklist:phishing": 1}
