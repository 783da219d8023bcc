"""The sources' own phases through the driver with the in-process executor: no Prefect.

Common Crawl's extraction and paragraph dedup, the books' near-dedup and StackExchange's site
ranking submit their work through the driver's executor, so they run here on the real-format
sample inputs (WARC/WET by warcio, Project Gutenberg text, a 7z site dump) as a flow runs them
under Prefect (``tasks.phases`` maps each call to its task): what each phase planted in its
sample comes out, the phase's calls went through the executor, and a second run resumes from
the done markers with the same bytes.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from core import pipeline
from core.document import InputSpec
from core.driver import InProcessExecutor, SourcePhases, drive_source
from core.manifest import InputRecord
from core.shards import ShardLimits
from dedupe.near_books import NearDupSettings
from dedupe.near_books_phase import near_dedup_phases
from sources import commoncrawl as cc
from sources import stackexchange as se
from sources.gutenberg import GutenbergRecipe
from sources.samples import commoncrawl as cc_sample
from sources.samples import gutenberg as books_sample
from sources.samples import stackexchange as se_sample


def _specs(paths: list[str]) -> list[InputSpec]:
    return [InputSpec(p, Path(p), Path(p).name) for p in paths]


def _drive(recipe: pipeline.SourceRecipe, specs: list[InputSpec], out: Path,
           phases: SourcePhases) -> tuple[list[InputRecord], InProcessExecutor]:
    ctx = pipeline.RunContext(out, recipe.name, "cfg1", ShardLimits(), recipe.name)
    executor = InProcessExecutor()
    return drive_source(recipe, specs, ctx, executor, phases=phases), executor


def _tree(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted([*(out / "docs").rglob("*.parquet"), *(out / "attributes").rglob("*.parquet")])}


def _drops(records: list[InputRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        for drop in record.drops:
            counts[drop["reason"]] = counts.get(drop["reason"], 0) + drop["count"]
    return counts


def _assert_resumes(recipe: pipeline.SourceRecipe, specs: list[InputSpec], out: Path, phases: SourcePhases,
                    first: list[InputRecord], idle: bool = True) -> None:
    """A second run gives the same records' statuses and bytes; ``idle``: it submits nothing at all."""
    tree = _tree(out)
    again, executor = _drive(recipe, specs, out, phases)
    if idle:  # every input done for this scope: no phase, no task
        assert executor.submitted == []
    assert [r.status for r in again] == [r.status for r in first] and _tree(out) == tree


def test_book_near_dedup_runs_in_process(tmp_path: Path) -> None:
    # the near-duplicate pair and a file that is no book (the rest of the mirror costs time, not cover)
    specs = [s for s in _specs(books_sample.write_sample_inputs(tmp_path / "in"))
             if s.key in ("README.txt", "pg683.txt", "pg9198.txt")]
    phases = near_dedup_phases(NearDupSettings())
    recipe = GutenbergRecipe()
    records, executor = _drive(recipe, specs, tmp_path / "out", phases)
    assert executor.submitted.count("write_signatures") == len(specs)  # one MinHash call per input
    assert executor.submitted.count("match_near_duplicates") == 1
    assert _drops(records)["near_duplicate"] == 1
    (table,) = (phases.tables or (lambda: []))()
    assert [(row["input_key"], row["matched_input_key"]) for row in table[1]] == [("pg9198.txt", "pg683.txt")]
    assert (tmp_path / "out" / "attributes" / "books" / "near_duplicates.parquet").exists()
    _assert_resumes(recipe, specs, tmp_path / "out", phases, records)


def test_commoncrawl_extract_and_paragraph_dedup_run_in_process(tmp_path: Path) -> None:
    specs = _specs(cc_sample.write_sample_inputs(tmp_path / "in"))
    recipe = cc.CommonCrawlRecipe()
    phases = cc.grouped_dedup_phases(recipe, group_files=2, memory_bytes=1 << 20)
    records, executor = _drive(recipe, specs, tmp_path / "out", phases)
    assert executor.submitted.count("extract_input") == len(specs)
    assert executor.submitted.count("dedup_group") == 2  # 3 inputs in groups of 2
    assert all(r.status == "done" for r in records)
    (table,) = (phases.tables or (lambda: []))()
    assert sum(row["duplicates"] for row in table[1]) > 0  # the syndicated paragraphs
    texts = [t for p in sorted((tmp_path / "out" / "docs").rglob("*.parquet")) for t in pq.read_table(p)["text"].to_pylist()]
    assert texts and not [p for p in (tmp_path / "out" / "_staging").rglob("*") if p.is_file()]  # phases' files cleaned
    _assert_resumes(recipe, specs, tmp_path / "out", phases, records)


def test_stackexchange_ranking_runs_in_process(tmp_path: Path) -> None:
    (site,) = se_sample.write_sample_inputs(tmp_path / "in")
    meta = tmp_path / "in" / "cooking.meta.stackexchange.com.7z"
    shutil.copyfile(site, meta)
    specs = _specs([site, str(meta)])
    recipe = se.StackExchangeRecipe(scratch_dir=tmp_path / "scratch")
    phases = se.ranking_phases(top_sites=1, rank_by="posts")
    records, executor = _drive(recipe, specs, tmp_path / "out", phases)
    assert executor.submitted.count("measure_site") == 2
    assert [r.status for r in records] == ["done", "skipped"]
    assert records[1].error is not None and records[1].error.startswith("meta_site")
    (table,) = (phases.tables or (lambda: []))()
    assert {row["input"]: row["kept"] for row in table[1]} == {Path(site).name: True, meta.name: False}
    # a skipped site holds no done marker, so the run is done again (sizes cached), to the same bytes
    _assert_resumes(recipe, specs, tmp_path / "out", phases, records, idle=False)
