"""Common Crawl phases without Prefect: extract -> group line dedup -> stage -> exact dedup -> finalize."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from warcio.statusandheaders import StatusAndHeaders

from core.document import InputSpec
from core.manifest import InputRecord
from core.pipeline import (
    RunContext,
    finalize_input,
    find_exact_duplicates,
    merge_records,
    scope_hash,
    stage_input,
)
from core.shards import ShardLimits, read_documents
from sources import commoncrawl as cc
from tests.fixed import FixedWARCWriter

BOILERPLATE = ["Subscribe to our newsletter for weekly updates and offers.",
               "All rights reserved by the publishing company of this site."]
STORIES = [
    ("The old mill on the river was restored by volunteers over three summers. They replaced the wheel, "
     "repaired the roof, and opened a small museum about the history of flour milling in the valley."),
    ("A new study of coastal erosion shows that the cliffs retreat faster after wet winters. Geologists "
     "compared aerial photographs taken over forty years and measured the loss of land at each site."),
    ("The library extended its opening hours during the exam season. Students filled the reading rooms "
     "late into the evening, and the staff organised quiet study sessions with free tea and biscuits."),
]
GERMAN = ("Die alte Mühle am Fluss wurde in drei Sommern von Freiwilligen restauriert. Sie ersetzten das Rad, "
          "reparierten das Dach und eröffneten ein kleines Museum über die Geschichte der Müllerei im Tal.")


def page(paragraphs: list[str]) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"<html><head><title>t</title></head><body><article>{body}</article></body></html>".encode()


def write_warc(path: Path, pages: list[tuple[str, bytes]]) -> InputSpec:
    with open(path, "wb") as handle:
        writer = FixedWARCWriter(handle, gzip=True, key=path.name)
        for url, body in pages:
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
    return InputSpec(location=str(path), path=path, key=path.name)


def run_phases(recipe: cc.GroupedDedupRecipe, specs: list[InputSpec], out: Path, memory: int = 1 << 20,
               group_files: int = 10) -> list[InputRecord]:
    recipe.out = out
    ctx = RunContext(out, recipe.name, "test-config", ShardLimits(), recipe.name)
    extracted = {s.key: cc.extract_input(recipe, s, ctx) for s in specs}
    for group in cc.make_groups([s.key for s in specs], group_files):
        cc.dedup_group(ctx, group, memory)
    staged = {s.key: merge_records(extracted[s.key], stage_input(recipe, s, ctx)) for s in specs}
    keys = [s.key for s in specs]
    find_exact_duplicates(ctx, keys)
    scope = scope_hash(keys, ctx.config_hash)
    return [finalize_input(recipe, s, ctx, scope, staged[s.key]) for s in specs]


@pytest.fixture
def two_warcs(tmp_path: Path) -> list[InputSpec]:
    first = write_warc(tmp_path / "a.warc.gz", [
        ("http://a/1", page([BOILERPLATE[0], STORIES[0], BOILERPLATE[1]])),
        ("http://a/2", page([GERMAN, GERMAN.replace("alte", "neue")])),
        ("http://a/3", page(["Too short to keep, even in English."])),
    ])
    second = write_warc(tmp_path / "b.warc.gz", [
        ("http://b/1", page([BOILERPLATE[0], STORIES[1], BOILERPLATE[1]])),
        ("http://b/2", page([BOILERPLATE[0], STORIES[2]])),
        ("http://b/3", page([BOILERPLATE[0], STORIES[0], BOILERPLATE[1]])),  # a copy of a/1
    ])
    return [first, second]


def kept_docs(out: Path) -> dict[str, str]:
    return {d.meta["url"]: d.text for p in sorted(out.glob("docs/**/*.parquet")) for d in read_documents(p)}


def test_pipeline_dedups_lines_filters_and_accounts(two_warcs: list[InputSpec], tmp_path: Path) -> None:
    recipe = cc.CommonCrawlRecipe(languages=("en",), min_chars=150, prefilter=False)
    records = run_phases(recipe, two_warcs, tmp_path / "out")
    docs = kept_docs(tmp_path / "out")
    assert set(docs) == {"http://a/1", "http://b/1", "http://b/2"}
    assert docs["http://a/1"].split("\n") == [BOILERPLATE[0], STORIES[0], BOILERPLATE[1]]
    assert docs["http://b/1"] == STORIES[1]  # boilerplate seen earlier in the group is gone
    assert docs["http://b/2"] == STORIES[2]
    for record in records:
        assert record.records_in == record.docs_kept + record.docs_dropped == 3
    reasons = {(d["step"], d["reason"]) for r in records for d in r.drops}
    assert ("language_id", "language_not_kept") in reasons
    assert ("min_length", "too_short") in reasons
    assert ("commoncrawl_reader", "duplicate_lines") in reasons  # b/3: every line seen before
    assert all((tmp_path / "out" / s["path"]).exists() for r in records for s in r.shards)


def test_rerun_and_memory_bound_give_identical_shards(two_warcs: list[InputSpec], tmp_path: Path) -> None:
    recipe = cc.CommonCrawlRecipe(languages=("en",), min_chars=150, prefilter=False)
    first = run_phases(recipe, two_warcs, tmp_path / "one")
    again = run_phases(recipe, two_warcs, tmp_path / "one")  # resumed: markers say done
    tiny = run_phases(recipe, two_warcs, tmp_path / "two", memory=48 * 3, group_files=2)
    shas = [[s["sha256"] for s in r.shards] for r in first]
    assert shas == [[s["sha256"] for s in r.shards] for r in again] == [[s["sha256"] for s in r.shards] for r in tiny]
    meta = pq.read_schema(tmp_path / "one" / first[1].shards[0]["path"]).metadata
    assert meta[b"kinda.source"] == b"commoncrawl"


def test_groups_bound_the_dedup_scope(two_warcs: list[InputSpec], tmp_path: Path) -> None:
    recipe = cc.CommonCrawlRecipe(languages=("en",), min_chars=150, prefilter=False)
    run_phases(recipe, two_warcs, tmp_path / "out", group_files=1)
    docs = kept_docs(tmp_path / "out")
    assert BOILERPLATE[0] in docs["http://b/1"]  # different groups: the line stays
    assert cc.make_groups(["c", "a", "b"], 2) == [["a", "b"], ["c"]]


def test_corrupt_input_is_counted_not_fatal(two_warcs: list[InputSpec], tmp_path: Path) -> None:
    data = two_warcs[1].path.read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    spec = InputSpec(str(cut), cut, cut.name)
    recipe = cc.CommonCrawlRecipe(languages=("en",), min_chars=150, prefilter=False)
    (record,) = run_phases(recipe, [spec], tmp_path / "out")
    assert record.status == "partial"
    assert record.records_in == record.docs_kept + record.docs_dropped
    assert any(d["reason"] == "truncated_input" for d in record.drops)


def test_quality_status_says_what_is_off() -> None:
    status = cc.CommonCrawlRecipe().quality_status()
    assert status["perplexity_buckets"].startswith("off") and status["wikiref_classifier"].startswith("off")


@pytest.mark.realdata
def test_real_cc_warc_keeps_only_configured_languages(realdata: Path, tmp_path: Path) -> None:
    path = realdata / "warc" / "resiliparse_CC-MAIN-2020-34_sample.warc.gz"
    spec = InputSpec(str(path), path, path.name)
    recipe = cc.CommonCrawlRecipe(languages=("en", "de"), prefilter=True)
    (record,) = run_phases(recipe, [spec], tmp_path / "out")
    docs = [d for p in sorted((tmp_path / "out").glob("docs/**/*.parquet")) for d in read_documents(p)]
    assert docs and {d.meta["language"] for d in docs} <= {"en", "de"}
    assert all(d.meta["language_score"] >= 0.5 and len(d.text) >= 300 for d in docs)
    assert record.records_in == 16 == record.docs_kept + record.docs_dropped
    dropped = {d["reason"] for d in record.drops}
    assert dropped & {"language_prefilter", "language_not_kept"}
