"""The signals attribute: written by the source stage beside the shards, one row per staged document,
byte-identical on a re-run, and queried through the manifest's ``signals`` view."""

from __future__ import annotations

import bz2
from pathlib import Path

import pyarrow.parquet as pq

from core import pipeline
from core.document import InputSpec
from core.filters.signals import document_signals
from core.layout import signals_attribute_path
from core.manifest import Manifest
from core.shards import ShardLimits, read_documents
from sources.samples.wikipedia import dump_xml, sample_pages
from sources.wikipedia import WikipediaRecipe


def _stage(out: Path, spec: InputSpec) -> None:
    ctx = pipeline.RunContext(out, "wikipedia", "cfg1", ShardLimits(max_docs=7, row_group_docs=3), "wikipedia")
    pipeline.stage_input(WikipediaRecipe(), spec, ctx)


def test_stage_writes_one_signal_row_per_staged_document(tmp_path: Path) -> None:
    dump = tmp_path / "enwiki-a.xml.bz2"
    dump.write_bytes(bz2.compress(dump_xml("en", sample_pages("en", 12, seed=3)).encode()))
    spec = InputSpec(str(dump), dump, dump.name)
    _stage(tmp_path / "out", spec)
    attribute = signals_attribute_path(tmp_path / "out", "wikipedia", spec.key)
    rows = pq.read_table(attribute).to_pylist()
    staged = [doc for shard in sorted((tmp_path / "out" / "_staging").rglob("part-*.parquet"))
              for doc in read_documents(shard)]
    assert [row["id"] for row in rows] == [doc.id for doc in staged]
    assert len(rows) >= 8  # the sample dump also holds redirects and stubs, dropped by the reader
    for row, doc in zip(rows, staged, strict=True):
        assert row["words"] == document_signals(doc.text)["words"]
        assert row["chars"] == len(doc.text)

    first = attribute.read_bytes()
    _stage(tmp_path / "again", spec)  # another output root, the same input: the same bytes
    assert signals_attribute_path(tmp_path / "again", "wikipedia", spec.key).read_bytes() == first

    manifest = Manifest.for_output(tmp_path / "out")
    with manifest.connect():  # the flows create it on their first write
        pass
    columns, result = manifest.query(
        "SELECT source, count(*), min(words) > 0 FROM signals GROUP BY 1")
    assert columns[0] == "source"
    assert result == [("wikipedia", len(rows), True)]


def test_signals_view_is_empty_without_attributes(tmp_path: Path) -> None:
    manifest = Manifest.for_output(tmp_path)
    with manifest.connect():
        pass
    columns, rows = manifest.query("SELECT * FROM signals")
    assert rows == []
    assert {"source", "id", "words", "dup_line_frac", "emails"} <= set(columns)
