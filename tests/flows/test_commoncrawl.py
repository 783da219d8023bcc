"""The Common Crawl, C4 and classifier flows: command lines, and one real Prefect run end to end."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from core.manifest import Manifest
from flows import c4 as c4_flow
from flows import commoncrawl as cc_flow
from flows import quality_classifier


def _cc_helpers():
    path = Path(__file__).parent.parent / "sources" / "test_commoncrawl.py"
    spec = importlib.util.spec_from_file_location("cc_flow_helpers", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["cc_flow_helpers"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_command_lines(tmp_path: Path) -> None:
    config = cc_flow.parse_args(["--inputs", "CC-MAIN-2023-06", "--limit-files", "20", "--out", str(tmp_path),
                                 "--set", "min_chars=200", "--languages", "en,de"])
    assert config.inputs == ["CC-MAIN-2023-06"] and config.limit_files == 20 and config.min_chars == 200
    assert config.languages == ["en", "de"] and config.paths_kind == "wet"
    assert config.recipe().quality_status()["perplexity_buckets"].startswith("off")
    changed = cc_flow.parse_args(["--inputs", "x", "--set", "dedup_memory_mb=64"])
    assert changed.config_hash() == cc_flow.parse_args(["--inputs", "x"]).config_hash()  # runtime only
    c4 = c4_flow.parse_args(["--from-commoncrawl", "segments/*.warc.wet.gz", "--out", str(tmp_path)])
    assert c4.from_commoncrawl == ["segments/*.warc.wet.gz"] and c4.from_cc_recipe().units.span == 3
    clf = quality_classifier.parse_args(["--positives", "a.warc.gz", "--negatives", "b.jsonl", "--out", "m.bin"])
    assert clf.model == Path("m.bin") and clf.positives == ["a.warc.gz"]


@pytest.mark.prefect
def test_commoncrawl_flow_end_to_end(tmp_path: Path, prefect_api_url: str) -> None:
    helpers = _cc_helpers()
    warcs = tmp_path / "segments"
    warcs.mkdir()
    helpers.write_warc(warcs / "a.warc.gz", [
        ("http://a/1", helpers.page([helpers.BOILERPLATE[0], helpers.STORIES[0]])),
        ("http://a/2", helpers.page([helpers.GERMAN, helpers.GERMAN.replace("alte", "neue")])),
    ])
    helpers.write_warc(warcs / "b.warc.gz", [
        ("http://b/1", helpers.page([helpers.BOILERPLATE[0], helpers.STORIES[1]])),
    ])
    config = cc_flow.CommonCrawlConfig(out=tmp_path / "out", inputs=[str(warcs / "*.warc.gz")], runner="thread",
                                       workers=2, min_chars=150, prefilter=False, progress=False)
    summary = cc_flow.run(config)
    assert summary.kept == 2 and not summary.failed
    manifest = Manifest.for_output(tmp_path / "out")
    _, rows = manifest.query("SELECT input_key, records_in, docs_kept, docs_dropped FROM inputs ORDER BY input_key")
    assert rows == [("a.warc.gz", 2, 1, 1), ("b.warc.gz", 1, 1, 0)]
    _, drops = manifest.query("SELECT step, reason, language FROM drops")
    assert drops == [("language_id", "language_not_kept", "de")]
    shards = sorted(p.read_bytes() for p in (tmp_path / "out" / "docs").rglob("*.parquet"))
    assert not (tmp_path / "out" / "_staging").exists(), sorted((tmp_path / "out" / "_staging").rglob("*"))

    again = cc_flow.run(config)  # resumed: nothing redone, same bytes
    assert again.kept == 2
    assert shards == sorted(p.read_bytes() for p in (tmp_path / "out" / "docs").rglob("*.parquet"))
    assert manifest.verify(tmp_path / "out") == []
