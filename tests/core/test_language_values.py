"""One language value, one meaning, from a document's folder to ``kinda manifest summary`` (issue 34).

``und`` (undetermined) was the folder of documents without a language but NULL in the manifest,
``""`` in the shards' Parquet metadata and ``-`` in the summary, where NULL and ``-`` also stood for
"each document has its own language" (a WARC). A toy JSON-lines source runs through the real
phases (stage, run-wide exact dedup, finalize), its input is recorded in a real manifest and its
``und`` shard is labeled: ``und`` is then the value in the path, the metadata, the manifest's
``shards`` and ``drops``, the class shard and the summary; ``mul`` is what the summary and the
source's table artifact print for the input whose documents each carry their own language.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow.parquet as pq

from core import pipeline
from core.document import Document, Drop, InputSpec, make_doc_id
from core.manifest import Manifest
from core.report import format_summary
from core.shards import ShardLimits
from core.steps import Record, Step
from dedupe.labels import LabelJob, label_shard
from flows.runtime.source_flow import language_table

#: (text, language): two documents without a language (one of them twice: an exact duplicate) and
#: two in English (one twice); one line that is not JSON (a reader drop, before any language).
LINES = [("A first page of text without any language the reader could tell.", None),
         ("An English page about a bridge over the river.", "en"),
         ("A first page of text without any language the reader could tell.", None),
         ("A second page, also of no language the reader could tell.", None),
         ("An English page about a bridge over the river.", "en")]


class ToyRecipe:
    """JSON lines ``{"text", "language"}``; documents go to their language's folder, ``und`` without one."""

    name = "toy"

    def input_language(self, spec: InputSpec) -> str | None:
        return None  # a WARC's case: each document has its own

    def read(self, spec: InputSpec) -> Iterator[Record]:
        for number, line in enumerate(spec.path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                row = json.loads(line)
            except ValueError as exc:
                yield Drop("malformed_json", f"line {number}", str(exc))
                continue
            meta = {"language": row["language"]} if row["language"] else {}
            yield Document(make_doc_id("toy", str(number)), row["text"], "toy", meta)

    def steps(self) -> Sequence[Step]:
        return []

    def partition(self, doc: Document) -> str:
        return doc.language or "und"


def _metadata_language(out: Path, shard: dict[str, object]) -> bytes:
    return pq.read_schema(out / str(shard["path"])).metadata[b"kinda.language"]


def test_und_is_one_value_from_folder_to_summary(tmp_path: Path) -> None:
    source = tmp_path / "pages.jsonl"
    lines = [json.dumps({"text": text, "language": language}) for text, language in LINES]
    source.write_text("\n".join([*lines[:2], "{not json", *lines[2:]]) + "\n", encoding="utf-8")
    spec = InputSpec(str(source), source, "pages.jsonl")
    out, recipe = tmp_path / "data", ToyRecipe()
    ctx = pipeline.RunContext(out, "toy", "cfg", ShardLimits(), "toy")
    staged = pipeline.stage_input(recipe, spec, ctx)
    pipeline.find_exact_duplicates(ctx, [spec.key])
    record = pipeline.finalize_input(recipe, spec, ctx, pipeline.scope_hash([spec.key], "cfg"), staged)

    shards = {s["path"].split("/")[2]: s for s in record.shards}
    assert {folder: s["language"] for folder, s in shards.items()} == {"en": "en", "und": "und"}
    assert {folder: _metadata_language(out, s) for folder, s in shards.items()} == {"en": b"en", "und": b"und"}

    manifest = Manifest.for_output(out)
    manifest.start_run("run-1", "toy", "toy", "cfg", {}, "0.1.0")
    manifest.record_inputs("run-1", [record], recipe="toy", code_version="0.1.0")
    manifest.finish_run("run-1", "completed")
    assert manifest.query("SELECT language, sum(docs) FROM shards GROUP BY 1 ORDER BY 1")[1] == [("en", 1), ("und", 2)]
    assert manifest.query("SELECT language, reason, count FROM drops ORDER BY 1, 2")[1] == [
        ("en", "duplicate_exact", 1), ("und", "duplicate_exact", 1), ("und", "malformed_json", 1)]
    assert manifest.query("SELECT language FROM inputs")[1] == [(None,)]  # no one language: each document's own

    summary = format_summary(manifest)
    languages = [line.split()[1] for line in summary.splitlines() if line.startswith("toy ")]
    assert languages == ["en", "und", "mul", "en", "und", "und"], summary  # shards, the input, drops
    assert [row["language"] for row in language_table([record])] == ["mul"]

    job = LabelJob(("toy",), (), True, "labels", ShardLimits(), require_dedup=False, release=False)
    labeled = label_shard(out, shards["und"], job)
    assert labeled.error is None and [s["language"] for s in labeled.shards] == ["und"]
    assert [_metadata_language(out, s) for s in labeled.shards] == [b"und"]


def test_a_folder_that_is_no_language_records_none(tmp_path: Path) -> None:
    """A shard under a folder that is not its documents' language (a GSM8K variant) records none (NULL: ``mul``)."""
    writer = pipeline.PartitionedWriter(pipeline.RunContext(tmp_path, "toy", "cfg", ShardLimits(), "toy"), "in")
    writer.write("main", Document("toy-1", "Text of a worked problem.", "toy", {"language": "en"}))
    writer.write("und", Document("toy-2", "Text of no language.", "toy", {"language": "und"}))  # a language ID's und
    shards = {s["path"].split("/")[2]: s for s in writer.close()}
    assert {folder: s["language"] for folder, s in shards.items()} == {"main": None, "und": "und"}
    assert _metadata_language(tmp_path, shards["main"]) == b""
