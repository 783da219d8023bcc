"""``kinda report --html`` as a reader sees it: per-source funnels, log-scaled charts, units, one tensor root.

The manifest is written through the product's own writers (``Manifest.record_inputs``,
``record_shards``, ``loader.tensor_manifest.record_tensors``, a ``matches`` row as ``flows.dedup``
writes it) with fixed ids and counts, so the expected numbers are known: a big source (Wikipedia,
700 records read) beside a small one (arXiv, 3 read, 1 kept), the case where linear bars once made
every source but Wikipedia a sliver. The page is then rendered by headless Chromium and the
screenshot checked for what a reader would see (skipped where ``/usr/bin/chromium`` is absent;
``.ci/run`` installs it).
"""

from __future__ import annotations

import math
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from core.manifest import InputRecord, Manifest
from core.report import report_tables
from kinda.cli import main
from kinda.report_page import BAR, log_bars_svg, plural
from loader.tensor_manifest import record_tensors

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def _input(source: str, key: str, read: int, kept: int, drops: dict[str, int]) -> InputRecord:
    return InputRecord(key, source, f"raw/{source}/{key}", "en", "cfg", records_in=read, docs_kept=kept,
                       drops=[{"step": "filter", "reason": r, "count": c} for r, c in drops.items()])


def _shard(path: str, source: str, docs: int, labels: list[str]) -> dict[str, object]:
    return {"path": path, "source": source, "language": "en", "labels": labels, "docs": docs,
            "text_bytes": docs * 1000, "bytes": docs * 400, "sha256": "0" * 64}


@pytest.fixture()
def out(tmp_path: Path) -> Path:
    """An output root whose manifest says: wikipedia 700 read, 500 kept, 2 duplicates, 498 in G1, 490 in G3,
    9,000 tokens; arxiv 3 read, 1 kept, 0 duplicates, 1 in G1, 0 in G3, 40 tokens; one tensor root."""
    root = tmp_path / "data"
    root.mkdir()
    manifest = Manifest.for_output(root)
    manifest.start_run("run-src", "wikipedia", None, "cfg", {}, "test")
    manifest.record_inputs("run-src", [_input("wikipedia", "enwiki", 700, 500, {"redirect": 150, "too_short": 50}),
                                       _input("arxiv", "2301", 3, 1, {"no_tex": 2})], "test", "test")
    manifest.record_shards("run-lab", [
        _shard("labeled/llama/wikipedia/en/a.parquet", "wikipedia", 490, ["G1", "G2", "G3"]),
        _shard("labeled/llama-in-ref/wikipedia/en/a.parquet", "wikipedia", 8, ["G1", "G2"]),
        _shard("labeled/llama-in-ref/arxiv/en/a.parquet", "arxiv", 1, ["G1", "G2"])], "cfg", "labels", "test")
    manifest.write([("INSERT INTO matches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [[f"run-dedup-{n}", f"wikipedia/{doc}", "wikipedia", "docs/wikipedia/en/a.parquet",
                       "duplicate_exact", "wikipedia/keep", None, None, None, None, None, None, None]
                      for n in (1, 2) for doc in ("dup-1", "dup-2")], True)])  # two dedup runs: counted once
    tensors = root / "tensors" / "g1"
    record_tensors(manifest, tensors, "run-tok", [
        {"status": "done", "input": f"labeled/llama/{src}/en/a.parquet", "source": src, "language": "en",
         "labels": ["G1"], "tokenizer_hash": "t", "splits": {"train": {
             "tokens_path": f"{src}.tokens", "tokens": tokens, "docs": docs, "tokens_bytes": 4 * tokens,
             "tokens_sha256": "0" * 64}}}
        for src, tokens, docs in (("wikipedia", 9000, 498), ("arxiv", 40, 1))], split_digits=False)
    return root


def test_funnel_follows_each_source_from_read_to_tokens(out: Path) -> None:
    funnel = {row["source"]: row for row in report_tables(Manifest.for_output(out), out)["funnel"]}
    assert funnel["wikipedia"] == {"source": "wikipedia", "read": 700, "kept": 500, "after_dedup": 498,
                                   "G1": 498, "G2": 498, "G3": 490, "tokens tensors/g1": 9000}
    assert funnel["arxiv"] == {"source": "arxiv", "read": 3, "kept": 1, "after_dedup": 1,
                               "G1": 1, "G2": 1, "G3": 0, "tokens tensors/g1": 40}


def test_page_shows_funnels_units_and_the_tensor_root_once(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page_path = out.parent / "report.html"
    assert main(["--out", str(out), "report", "--html", str(page_path)]) == 0
    page = page_path.read_text(encoding="utf-8")
    assert "1 docs" not in page and "1 tokens" not in page  # "1 docs" once said one document
    assert ">1 document<" in page and ">500 documents<" in page and ">9,000 tokens<" in page
    funnels = re.findall(r'<div class="funnel"><h3>(\w+)</h3><svg', page)
    assert funnels == ["arxiv", "wikipedia"]  # a chart per source, each to its own scale
    arxiv = page.split('<div class="funnel"><h3>arxiv</h3>')[1].split("</svg>")[0]
    widths = [float(w) for w in re.findall(r'<rect x="120" y="[\d.]+" width="([\d.]+)"', arxiv)]
    assert widths == pytest.approx([widths[0], *[widths[0] / 3] * 4], abs=0.1)  # 3 read, then 1: G3 (0) no bar
    assert widths[0] > 100
    assert page.count(str(out / "tensors" / "g1")) == 0  # the absolute root on no row
    assert page.count("tensor root <code>tensors/g1</code>") == 1
    assert page.count(f"<code>{out}</code>") == 1  # the output root, said once
    assert "Log scale" in page


def test_log_bars_keep_a_small_source_readable() -> None:
    svg = log_bars_svg([("wikipedia", 700.0), ("arxiv", 3.0)], "document")
    widths = [float(w) for w in re.findall(r'<rect x="230" y="[\d.]+" width="([\d.]+)"', svg)]
    assert widths[1] / widths[0] == pytest.approx(math.log10(4) / math.log10(701), rel=1e-3)  # linear: 0.004
    assert widths[1] / widths[0] > 0.2
    assert [t for t in re.findall(r">([\d,]+)</text>", svg)] == ["0", "10", "100", "1,000"]  # a tick per decade
    assert (plural(1, "document"), plural(2, "token"), plural(1234, "document")) == (
        "1 document", "2 tokens", "1,234 documents")


def _png_rows(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and unfiltered RGB(A) rows of an 8-bit PNG (the filters undone, as the spec says)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, b"", b""
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        data = png[pos + 8:pos + 8 + length]
        header = data if kind == b"IHDR" else header
        chunks += data if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, previous = zlib.decompress(chunks), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        previous = line
    return width, bpp, rows


def _runs(row: bytes, bpp: int, colour: bytes) -> list[tuple[int, int]]:
    """(first x, length) of each run of ``colour`` pixels in a row, left to right."""
    hits = [row[x:x + 3] == colour for x in range(0, len(row), bpp)]
    runs, start = [], None
    for x, hit in enumerate([*hits, False]):
        if hit and start is None:
            start = x
        elif not hit and start is not None:
            runs.append((start, x - start))
            start = None
    return runs


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs it: apt-get install chromium)")
@pytest.mark.timeout(300)
def test_headless_chromium_draws_each_source_to_its_own_scale(out: Path, tmp_path: Path) -> None:
    """The page as a browser draws it (a 1000x1400 CSS-pixel window at half scale: a 500x700 PNG,
    decoded here without an imaging library): bars cover real area down the page, and arXiv's
    funnel, the first, draws its 3 records read three times as long as its 1 document kept."""
    page = tmp_path / "report.html"
    assert main(["--out", str(out), "report", "--html", str(page)]) == 0
    shot = tmp_path / "report.png"
    done = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--force-device-scale-factor=0.5", "--window-size=1000,1400", f"--screenshot={shot}",
                           page.as_uri()], capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    width, bpp, rows = _png_rows(shot.read_bytes())
    assert (width, len(rows)) == (500, 700)
    white = b"\xff" * 3
    inked = sum(1 for row in rows for x in range(0, len(row), bpp) if row[x:x + 3] != white)
    assert inked > 0.03 * width * len(rows), inked  # not a blank page
    bar = bytes.fromhex(BAR.removeprefix("#"))
    bar_rows = [y for y, row in enumerate(rows) if _runs(row, bpp, bar)]
    assert len(bar_rows) > 40, len(bar_rows)  # funnels and charts: bars down the page
    groups: list[list[int]] = []
    for y in bar_rows:  # the bars of one funnel line are consecutive pixel rows
        if groups and y == groups[-1][-1] + 1:
            groups[-1].append(y)
        else:
            groups.append([y])
    read, kept = (_runs(rows[g[len(g) // 2]], bpp, bar)[0][1] for g in groups[:2])  # leftmost: arXiv's funnel
    assert read > 30 and read / kept == pytest.approx(3, abs=0.35), (read, kept)
