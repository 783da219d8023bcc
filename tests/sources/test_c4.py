"""Released C4 reader and the C4-from-Common-Crawl recipe."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from core.document import Document, Drop, InputSpec
from core.shards import read_documents
from sources.c4 import C4FromCommonCrawlRecipe, C4Recipe, read_c4_json
from tests.fixed import gzip_text

ROWS = [
    {"text": "First page.\nSecond line.", "timestamp": "2019-04-25 12:57:54", "url": "https://a.example/1"},
    {"text": "Another page.", "timestamp": "2019-04-26 01:00:00", "url": "https://b.example/2"},
]


def write_c4(path: Path, lines: list[str]) -> Path:
    with gzip_text(path) as handle:
        handle.write("".join(line + "\n" for line in lines))
    return path


def test_round_trip(tmp_path: Path) -> None:
    path = write_c4(tmp_path / "c4-train.00000-of-01024.json.gz", [json.dumps(r) for r in ROWS])
    docs = list(read_c4_json(path, str(path)))
    assert [d.text for d in docs] == [r["text"] for r in ROWS]
    assert docs[0].meta["url"] == ROWS[0]["url"] and docs[0].meta["timestamp"] == ROWS[0]["timestamp"]
    assert docs[0].meta["language"] == "en" and docs[0].id != docs[1].id
    assert docs[0].id == next(iter(read_c4_json(path, str(path)))).id  # stable


def test_bad_lines_and_truncation(tmp_path: Path) -> None:
    path = write_c4(tmp_path / "bad.json.gz", [json.dumps(ROWS[0]), "{not json", json.dumps({"url": "x"}),
                                               json.dumps(ROWS[1]) * 50])
    data = path.read_bytes()
    records = list(read_c4_json(path, "bad"))
    assert [r.reason for r in records if isinstance(r, Drop)] == ["malformed_json", "malformed_row", "malformed_json"]
    assert "line 2" in records[1].record
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) - 20])
    records = list(read_c4_json(cut, "cut"))
    assert isinstance(records[0], Document) and records[-1].reason == "truncated_input"


def test_recipe_partition_and_steps() -> None:
    recipe = C4Recipe()
    assert recipe.partition(Document("x", "t", "c4", {"language": "en"})) == "en"
    assert [s.name for s in recipe.steps()] == ["non_empty"]
    assert [s.name for s in C4FromCommonCrawlRecipe(prefilter=False).steps()] == [
        "c4_min_sentences", "c4_bad_words", "language_id"]


@pytest.mark.realdata
def test_real_c4_file(realdata: Path) -> None:
    path = realdata / "c4" / "c4-format-00000-of-00001.DERIVED.json.gz"
    records = list(read_c4_json(path, str(path)))
    assert len(records) == 717 and all(isinstance(r, Document) and r.meta["url"] for r in records)


def _cc_helpers():
    """The WARC writer and phase runner of test_commoncrawl.py (tests have no packages to import from)."""
    spec = importlib.util.spec_from_file_location("cc_helpers", Path(__file__).with_name("test_commoncrawl.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["cc_helpers"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_c4_from_cc_span_dedup(tmp_path: Path) -> None:
    helpers = _cc_helpers()
    shared = ("The harbour was busy every morning. Fishing boats came in with the tide. Traders waited on the "
              "quay with carts.")
    own = [
        ("Children watched from the wall. Gulls circled over the nets. The smell of salt filled the air. "
         "A dog barked at the waves. Nobody minded the noise."),
        ("Rain came in the afternoon. The market closed early that day. Everyone went home to dry off. "
         "The lamps were lit at six. Supper was fish again."),
    ]
    specs = [helpers.write_warc(tmp_path / f"{i}.warc.gz", [(f"http://x/{i}", helpers.page([shared, own[i]]))])
             for i in range(2)]
    records = helpers.run_phases(C4FromCommonCrawlRecipe(prefilter=False), specs, tmp_path / "out")
    docs = {d.meta["url"]: d.text for p in sorted((tmp_path / "out").glob("docs/**/*.parquet"))
            for d in read_documents(p)}
    assert docs["http://x/0"] == shared + "\n" + own[0]
    assert docs["http://x/1"] == own[1]  # the shared three-sentence span went
    assert all(r.records_in == r.docs_kept + r.docs_dropped for r in records)


@pytest.mark.realdata
def test_c4_rules_on_real_wet(realdata: Path, tmp_path: Path) -> None:
    helpers = _cc_helpers()
    paths = [realdata / "warc" / "resiliparse_CC-MAIN-2020-34_sample.DERIVED.warc.wet.gz",
             realdata / "warc" / "dolma_sample-0000.warc.gz"]
    specs = [InputSpec(str(p), p, p.name) for p in paths]
    records = helpers.run_phases(C4FromCommonCrawlRecipe(), specs, tmp_path / "out")
    docs = [d for p in sorted((tmp_path / "out").glob("docs/**/*.parquet")) for d in read_documents(p)]
    assert docs and all(d.meta["language"] == "en" for d in docs)
    assert all(line.endswith((".", "!", "?", '"')) for d in docs for line in d.text.split("\n"))
    assert all(r.records_in == r.docs_kept + r.docs_dropped for r in records)
