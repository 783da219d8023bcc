"""The source-run driver with the in-process executor: no Prefect, real MediaWiki XML dumps (bz2).

What a source run promises, checked on the driver itself: a fresh run, a resumed run that does
no work and leaves the same bytes, one failed input not failing the others, exact duplicates
across inputs dropped once, the phase hooks in their order, and a split input giving the
whole input's shards.
"""

from __future__ import annotations

import bz2
import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from core import pipeline
from core.document import InputSpec
from core.driver import InProcessExecutor, PhaseRun, SourcePhases, drive_source
from core.layout import drops_attribute_path, staging_dir
from core.manifest import InputRecord
from core.shards import ShardLimits
from flows.wikipedia import page_ranges
from sources.formats.wikipedia_multistream import plan_split
from sources.samples.wikipedia import (
    SamplePage,
    dump_xml,
    sample_pages,
    write_sample_dumps,
    write_sample_multistream,
)
from sources.wikipedia import WikipediaRecipe

RECIPE = WikipediaRecipe()


@pytest.fixture
def specs(tmp_path: Path) -> list[InputSpec]:
    """The sample's English and German dumps, and a later English dump copying the first English page."""
    english, german = write_sample_dumps(tmp_path / "in", pages=20, seed=3)
    copy = tmp_path / "in" / "enwiki-20220702-pages-articles-copy.xml.bz2"
    pages = [SamplePage(900, "Copied article", 0, sample_pages("en", 20, seed=3)[0].text),
             *sample_pages("en", 15, seed=4)]
    copy.write_bytes(bz2.compress(dump_xml("en", pages).encode()))
    return [InputSpec(str(path), path, path.name) for path in (english, german, copy)]


def _ctx(out: Path) -> pipeline.RunContext:
    return pipeline.RunContext(out, "wikipedia", "cfg1", ShardLimits(max_docs=7), "wikipedia")


def _drive(out: Path, specs: list[InputSpec], **options: object) -> tuple[list[InputRecord], InProcessExecutor]:
    executor = InProcessExecutor()
    records = drive_source(RECIPE, specs, _ctx(out), executor, **options)  # type: ignore[arg-type]
    return records, executor


def _tree(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs").rglob("*.parquet"))}


def _texts(out: Path) -> list[str]:
    return [t for p in sorted((out / "docs").rglob("*.parquet")) for t in pq.read_table(p).column("text").to_pylist()]


def _duplicates(record: InputRecord) -> int:
    return sum(d["count"] for d in record.drops if d["reason"] == pipeline.DEDUP_REASON)


def test_fresh_run_drops_duplicates_across_inputs_once(tmp_path: Path, specs: list[InputSpec]) -> None:
    progress: list[tuple[int, int]] = []
    records, executor = _drive(tmp_path / "out", specs, progress=lambda done, total: progress.append((done, total)))
    assert [r.input_key for r in records] == [s.key for s in specs]
    assert all(r.status == "done" and r.records_in == r.docs_kept + r.docs_dropped for r in records)
    assert executor.submitted == ["stage_input"] * 3 + ["find_exact_duplicates"] + ["finalize_input"] * 3
    assert progress == [(n, 6) for n in range(7)]
    texts = _texts(tmp_path / "out")
    assert len(texts) == len(set(texts)) == sum(r.docs_kept for r in records)
    # the later dump's copy of the first English page is dropped, naming the kept English document
    english_ids = {i for p in (tmp_path / "out" / "docs").rglob(f"{specs[0].key}-*")
                   for i in pq.read_table(p).column("id").to_pylist()}
    drops = pq.read_table(drops_attribute_path(tmp_path / "out", "wikipedia", specs[2].key)).to_pylist()
    assert drops[0]["ordinal"] == 0 and drops[0]["matched_id"] in english_ids
    assert sum(_duplicates(r) for r in records) == sum(len(pq.read_table(p)) for p in (tmp_path / "out").rglob("*.drops.parquet"))
    assert not (tmp_path / "out" / "_staging").exists()


def test_resumed_run_does_no_work_and_gives_the_same_bytes(tmp_path: Path, specs: list[InputSpec]) -> None:
    out = tmp_path / "out"
    first, _ = _drive(out, specs)
    tree = _tree(out)
    again, executor = _drive(out, specs)
    assert executor.submitted == []
    assert [r.to_dict() for r in again] == [r.to_dict() for r in first]
    assert _tree(out) == tree and len(tree) >= 3

    # a new run over the same inputs in a fresh root writes the same bytes
    _drive(tmp_path / "other", specs)
    assert _tree(tmp_path / "other") == tree


def test_a_failed_input_does_not_fail_the_others(tmp_path: Path, specs: list[InputSpec]) -> None:
    out = tmp_path / "out"
    bad = tmp_path / "in" / "enwiki-bad.xml.bz2"
    bad.mkdir()  # a folder where the dump should be: its reader cannot even open it
    records, _ = _drive(out, [*specs, InputSpec(str(bad), bad, bad.name)])
    by_key = {r.input_key: r for r in records}
    assert by_key[bad.name].status == "failed"
    assert f"{bad}: IsADirectoryError" in str(by_key[bad.name].error)
    assert all(by_key[s.key].status == "done" and by_key[s.key].shards for s in specs)
    # a failed input keeps the run's staging: the next run resumes from it
    assert staging_dir(out, "wikipedia", specs[0].key).is_dir()
    _drive(tmp_path / "clean", specs)
    assert _tree(out) == _tree(tmp_path / "clean")  # the others' output as if the failed one was absent


def test_phase_hooks_run_in_order_and_end_inputs(tmp_path: Path, specs: list[InputSpec]) -> None:
    calls: list[tuple[str, list[str]]] = []

    def before_stage(ctx: pipeline.RunContext, given: list[InputSpec], run: PhaseRun) -> dict[str, InputRecord]:
        calls.append(("before_stage", [s.key for s in given]))
        skipped = InputRecord(input_key=given[2].key, source=ctx.source, location=given[2].location, language=None,
                              config_hash=ctx.config_hash, status="skipped", error="ranked out")
        return {skipped.input_key: skipped}

    phases = SourcePhases(
        before_stage=before_stage,
        after_dedup=lambda ctx, keys, run: calls.append(("after_dedup", keys)),
        cleanup=lambda ctx, keys: calls.append(("cleanup", keys)),
    )
    records, executor = _drive(tmp_path / "out", specs, phases=phases)
    keys = [s.key for s in specs]
    assert calls == [("before_stage", keys), ("after_dedup", keys[:2]), ("cleanup", keys)]
    assert [r.status for r in records] == ["done", "done", "skipped"]
    assert executor.submitted.count("stage_input") == 2 and executor.submitted.count("finalize_input") == 2


def _timeless(record: InputRecord) -> dict[str, object]:
    """A record without its times (wall seconds, each step's CPU seconds): what a split must reproduce."""
    return record.to_dict() | {"seconds": 0, "steps": [s | {"cpu_seconds": 0} for s in record.steps]}


def test_split_input_gives_the_whole_inputs_bytes(tmp_path: Path) -> None:
    dump, _ = write_sample_multistream(tmp_path / "in", pages=80, seed=3, pages_per_stream=10)
    spec = InputSpec(str(dump), dump, dump.name)
    split_bytes = dump.stat().st_size // 4
    ranges = plan_split(dump, split_bytes) or []
    assert len(ranges) >= 3
    whole, _ = _drive(tmp_path / "whole", [spec])
    split, executor = _drive(tmp_path / "split", [spec], split=page_ranges(split_bytes))
    # one stage task per range; the joined dump's own staging costs none
    assert executor.submitted.count("stage_input") == len(ranges)
    assert _tree(tmp_path / "split") == _tree(tmp_path / "whole")
    assert [_timeless(r) for r in split] == [_timeless(r) for r in whole]
    assert not list((tmp_path / "split").rglob(f"{dump.name}_*"))  # range staging, markers and signals removed
    signals = f"attributes/wikipedia/{dump.name}.signals.parquet"  # the ranges' rows joined in file order
    assert (tmp_path / "split" / signals).read_bytes() == (tmp_path / "whole" / signals).read_bytes()



def test_an_input_fixed_after_failing_dedups_against_the_finished_ones(tmp_path: Path,
                                                                        specs: list[InputSpec]) -> None:
    """A failed input that ranks first, fixed and run again, wins its duplicates over finished inputs."""
    english = specs[0]
    fixed = tmp_path / "in" / "aawiki-fixed.xml.bz2"  # ranks before every other input
    fixed.mkdir()
    out = tmp_path / "out"
    first, _ = _drive(out, [english, InputSpec(str(fixed), fixed, fixed.name)])
    assert [r.status for r in first] == ["done", "failed"]
    fixed.rmdir()
    copied = SamplePage(901, "Copied first", 0, sample_pages("en", 20, seed=3)[0].text)
    fixed.write_bytes(bz2.compress(dump_xml("en", [copied]).encode()))
    both = [english, InputSpec(str(fixed), fixed, fixed.name)]
    again, _ = _drive(out, both)
    _drive(tmp_path / "clean", both)
    assert _tree(out) == _tree(tmp_path / "clean")
    texts = _texts(out)
    assert len(texts) == len(set(texts)) == sum(r.docs_kept for r in again)
