"""The three phases without Prefect: run-wide exact dedup, resume after a crash, failures."""

from __future__ import annotations

import bz2
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from core import pipeline
from core.document import InputSpec
from core.layout import state_path
from core.manifest import InputRecord
from core.shards import ShardLimits
from sources.samples.wikipedia import SamplePage, dump_xml, sample_pages
from sources.wikipedia import WikipediaRecipe

RECIPE = WikipediaRecipe()


def _dump(directory: Path, name: str, pages: list[SamplePage]) -> InputSpec:
    path = directory / name
    path.write_bytes(bz2.compress(dump_xml(name[:2], pages).encode()))
    return InputSpec(str(path), path, name)


@pytest.fixture
def specs(tmp_path: Path) -> list[InputSpec]:
    inputs = tmp_path / "in"
    inputs.mkdir()
    en = sample_pages("en", 30, seed=3)
    shared = SamplePage(900, "Shared article", 0, en[0].text)  # the same text in a second dump
    return [
        _dump(inputs, "enwiki-a.xml.bz2", en),
        _dump(inputs, "enwiki-b.xml.bz2", [shared, *sample_pages("en", 20, seed=4)]),
        _dump(inputs, "dewiki-c.xml.bz2", sample_pages("de", 25, seed=5)),
    ]


def _ctx(out: Path) -> pipeline.RunContext:
    return pipeline.RunContext(out, "wikipedia", "cfg1", ShardLimits(max_docs=7, row_group_docs=3), "wikipedia")


def _run_all(out: Path, specs: list[InputSpec]) -> list[InputRecord]:
    ctx = _ctx(out)
    keys = [s.key for s in specs]
    scope = pipeline.scope_hash(keys, ctx.config_hash)
    staged = {s.key: pipeline.stage_input(RECIPE, s, ctx) for s in specs}
    pipeline.find_exact_duplicates(ctx, keys)
    records = [pipeline.finalize_input(RECIPE, s, ctx, scope, staged[s.key]) for s in specs]
    pipeline.clean_staging(ctx, keys)
    return records


def _tree(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted((out / "docs").rglob("*.parquet"))}


def test_first_occurrence_wins_across_inputs(tmp_path: Path, specs: list[InputSpec]) -> None:
    records = {r.input_key: r for r in _run_all(tmp_path / "out", specs)}
    dups = {k: sum(d["count"] for d in r.drops if d["reason"] == "duplicate_exact") for k, r in records.items()}
    # a sample dump holds one in-dump copy per 10 pages; b also repeats the first article of a
    assert dups == {"enwiki-a.xml.bz2": 3, "enwiki-b.xml.bz2": 3, "dewiki-c.xml.bz2": 2}
    kept_texts = [t for p in (tmp_path / "out" / "docs").rglob("*.parquet")
                  for t in pq.read_table(p).column("text").to_pylist()]
    assert len(kept_texts) == len(set(kept_texts)) == sum(r.docs_kept for r in records.values())
    for record in records.values():
        assert record.records_in == record.docs_kept + record.docs_dropped
    assert not (tmp_path / "out" / "_staging").exists()


def test_crash_then_resume_is_byte_identical(tmp_path: Path, specs: list[InputSpec]) -> None:
    reference = _tree_after(_run_all(tmp_path / "ref", specs), tmp_path / "ref")
    out = tmp_path / "crashed"
    ctx = _ctx(out)
    keys = [s.key for s in specs]
    scope = pipeline.scope_hash(keys, ctx.config_hash)
    # a first run staged two inputs, finalized one, and died writing a shard
    staged = {s.key: pipeline.stage_input(RECIPE, s, ctx) for s in specs[:2]}
    pipeline.find_exact_duplicates(ctx, keys[:2])
    pipeline.finalize_input(RECIPE, specs[0], ctx, pipeline.scope_hash(keys[:2], "cfg1"), staged[specs[0].key])
    (out / "docs" / "wikipedia" / "en" / "garbage-00000.parquet.tmp").write_bytes(b"half a shard")
    marker = state_path(out, "wikipedia", specs[1].key, "stage")
    before = marker.stat().st_mtime_ns
    records = _run_all(out, specs)  # the re-run
    assert marker.exists() is False and before > 0
    assert _tree_after(records, out) == reference
    assert scope != pipeline.scope_hash(keys[:2], "cfg1")


def _tree_after(records: list[InputRecord], out: Path) -> dict[str, bytes]:
    listed = sorted(s["path"] for r in records for s in r.shards)
    tree = _tree(out)
    assert sorted(tree) == listed  # no stale shards from an earlier partial run
    return tree


def test_finished_inputs_are_skipped(tmp_path: Path, specs: list[InputSpec], monkeypatch) -> None:
    out = tmp_path / "out"
    first = _run_all(out, specs)
    calls: list[str] = []
    real_read = WikipediaRecipe.read
    monkeypatch.setattr(WikipediaRecipe, "read", lambda self, spec: calls.append(spec.key) or real_read(self, spec))
    ctx = _ctx(out)
    scope = pipeline.scope_hash([s.key for s in specs], ctx.config_hash)
    again = [pipeline.load_done(s, ctx, scope) for s in specs]
    assert [r.to_dict() for r in again if r] == [r.to_dict() for r in first] and calls == []


def test_changed_config_redoes_the_work(tmp_path: Path, specs: list[InputSpec]) -> None:
    out = tmp_path / "out"
    _run_all(out, specs)
    ctx = pipeline.RunContext(out, "wikipedia", "cfg2", ShardLimits(max_docs=7), "wikipedia")
    scope = pipeline.scope_hash([s.key for s in specs], "cfg2")
    assert all(pipeline.load_done(s, ctx, scope) is None for s in specs)


def test_unreadable_input_fails_alone(tmp_path: Path, specs: list[InputSpec]) -> None:
    missing = InputSpec("/nowhere/enwiki-x.xml.bz2", Path("/nowhere/enwiki-x.xml.bz2"), "enwiki-x.xml.bz2")
    directory = tmp_path / "dir.xml"
    directory.mkdir()
    as_dir = InputSpec(str(directory), directory, "dir.xml")
    records = {r.input_key: r for r in _run_all(tmp_path / "out", [*specs, missing, as_dir])}
    assert records["enwiki-x.xml.bz2"].status == "failed" and "not found" in records["enwiki-x.xml.bz2"].error
    assert records["dir.xml"].status == "failed" and "dir.xml" in records["dir.xml"].error
    assert all(records[s.key].status == "done" and records[s.key].docs_kept > 0 for s in specs)


def test_moved_output_root_still_verifies(tmp_path: Path, specs: list[InputSpec]) -> None:
    records = _run_all(tmp_path / "out", specs)
    shutil.move(tmp_path / "out", tmp_path / "moved")
    assert all((tmp_path / "moved" / s["path"]).exists() for r in records for s in r.shards)


def test_dedup_with_no_staged_input(tmp_path: Path) -> None:
    """Every input failed: the run-wide dedup finds nothing instead of failing the run."""
    assert pipeline.find_exact_duplicates(_ctx(tmp_path / "out"), ["gone.xml.bz2"]) == {}
