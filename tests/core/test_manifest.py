"""Manifest: one writer, readable while idle, summary and verification."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from core.document import Document, make_doc_id
from core.manifest import InputRecord, Manifest
from core.report import format_summary
from core.shards import ShardWriter


def _record(root: Path, key: str, docs: int) -> InputRecord:
    with ShardWriter(root, root / "docs" / "wikipedia" / "en", key, "wikipedia", "en") as writer:
        writer.write_all(Document(make_doc_id("wikipedia", f"{key}{i}"), f"text {i}", "wikipedia",
                                  {"language": "en"}) for i in range(docs))
    return InputRecord(
        input_key=key, source="wikipedia", location=f"/dumps/{key}", language="en", config_hash="abc",
        records_in=docs + 3, docs_kept=docs,
        drops=[{"step": "reader", "reason": "redirect", "language": "en", "count": 2},
               {"step": "dedup_exact", "reason": "duplicate_exact", "language": "en", "count": 1}],
        errors=[{"step": "reader", "reason": "malformed_xml", "record": f"{key}: page 'X'", "detail": "bad"}],
        shards=[s.to_dict() for s in writer.finished],
    )


@pytest.fixture
def manifest(tmp_path: Path) -> Manifest:
    manifest = Manifest.for_output(tmp_path)
    manifest.start_run("run-1", "wikipedia", "wikipedia", "abc", {"min_chars": 1}, "0.1.0")
    manifest.record_inputs("run-1", [_record(tmp_path, "a.xml", 5), _record(tmp_path, "b.xml", 7)],
                           recipe="wikipedia", code_version="0.1.0")
    manifest.finish_run("run-1", "completed")
    return manifest


def test_tables_and_counts(manifest: Manifest) -> None:
    _, rows = manifest.query("SELECT language, sum(docs) FROM shards GROUP BY 1")
    assert rows == [("en", 12)]
    _, rows = manifest.query("SELECT status, ended_at IS NOT NULL FROM runs")
    assert rows == [("completed", True)]
    _, rows = manifest.query("SELECT sum(records_in), sum(docs_kept), sum(docs_dropped) FROM inputs")
    assert rows == [(18, 12, 6)]
    _, rows = manifest.query("SELECT reason, sum(count) FROM drops GROUP BY 1 ORDER BY 1")
    assert rows == [("duplicate_exact", 2), ("redirect", 4)]
    _, rows = manifest.query("SELECT record FROM errors ORDER BY 1")
    assert rows == [("a.xml: page 'X'",), ("b.xml: page 'X'",)]


def test_rerun_replaces_rather_than_double_counts(manifest: Manifest, tmp_path: Path) -> None:
    manifest.start_run("run-2", "wikipedia", "wikipedia", "abc", {}, "0.1.0")
    manifest.record_inputs("run-2", [_record(tmp_path, "a.xml", 5)], recipe="wikipedia", code_version="0.1.0")
    _, rows = manifest.query("SELECT count(*), sum(docs) FROM shards")
    assert rows == [(2, 12)]
    _, rows = manifest.query("SELECT reason, sum(count) FROM latest_drops GROUP BY 1 ORDER BY 1")
    assert rows == [("duplicate_exact", 2), ("redirect", 4)]


def test_summary_text(manifest: Manifest) -> None:
    text = format_summary(manifest)
    assert "wikipedia" in text and "redirect" in text and "duplicate_exact" in text


def test_verify_reports_missing_and_corrupt(manifest: Manifest, tmp_path: Path) -> None:
    assert manifest.verify(tmp_path) == []
    _, rows = manifest.query("SELECT path FROM shards ORDER BY path")
    (tmp_path / rows[0][0]).unlink()
    target = tmp_path / rows[1][0]
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    problems = {p["path"]: p["problem"] for p in manifest.verify(tmp_path)}
    assert problems == {rows[0][0]: "missing", rows[1][0]: "checksum mismatch"}


def test_waits_for_a_writer_lock_then_reads(manifest: Manifest) -> None:
    """Another process's DuckDB connection holding the file: reads retry rather than fail."""
    import subprocess
    import sys
    import time

    holder = subprocess.Popen([sys.executable, "-c",
                               f"import duckdb,time; c=duckdb.connect({str(manifest.path)!r}); "
                               "print('locked', flush=True); time.sleep(1.5)"], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    started = time.perf_counter()
    _, rows = manifest.query("SELECT count(*) FROM shards")
    holder.wait()
    assert rows == [(2,)] and time.perf_counter() - started > 0.2


def test_read_only_query_cannot_write(manifest: Manifest) -> None:
    with pytest.raises(duckdb.Error):
        manifest.query("DELETE FROM shards")


def test_missing_manifest_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no manifest"):
        Manifest(tmp_path / "nope.duckdb").query("SELECT 1")
