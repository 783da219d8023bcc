"""End to end: the science_books flow on the offline sample (PDF + EPUB 2 + EPUB 3) on a real Prefect API."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from core.manifest import Manifest
from core.shards import read_documents
from flows.science_books import ScienceBooksConfig
from flows.science_books import run as run_science_books
from sources.formats import pdf_text
from sources.samples.scibooks import write_sample_inputs

pytestmark = pytest.mark.prefect


def shard_hashes(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs").rglob("*.parquet"))}


def test_science_books_flow_sample_with_resume(tmp_path: Path, prefect_api_url: str) -> None:
    inputs = write_sample_inputs(tmp_path / "in")
    shutil.copy(inputs[1], tmp_path / "in" / "copy-of-book3.epub")  # the same book twice: exact dedup
    (tmp_path / "in" / "broken.epub").write_bytes(b"not a zip")
    out = tmp_path / "out"
    config = ScienceBooksConfig(inputs=[str(tmp_path / "in" / "*")], out=out, runner="thread", workers=2,
                                progress=False, pdf={"ocr": "off"})
    summary = run_science_books(config)
    assert not summary.failed and len(summary.records) == 5  # one task per file
    for record in summary.records:
        assert record.records_in == record.docs_kept + record.docs_dropped, record.input_key
    assert summary.kept == 3
    docs = [d for p in sorted((out / "docs" / "science_books").rglob("*.parquet")) for d in read_documents(p)]
    assert sorted(d.meta["file"] for d in docs) == ["book2.epub", "book3.epub", "paper.pdf"]
    assert all(d.source == "science_books" and d.meta["language"] == "en" for d in docs)
    manifest = Manifest.for_output(out)
    _, drops = manifest.query("SELECT reason, sum(count) FROM drops GROUP BY reason ORDER BY reason")
    assert dict(drops) == {"duplicate_exact": 1, "not_a_zip": 1, "ocr_disabled": 1}
    _, errors = manifest.query("SELECT record FROM errors WHERE reason = 'ocr_disabled'")
    assert errors[0][0].endswith("paper.pdf page 4")
    first = shard_hashes(out)
    again = run_science_books(config)  # resume: nothing to redo, same bytes
    assert again.kept == 3 and shard_hashes(out) == first
    pdf_text.shared_worker().close()
