"""Shards: bounded, atomic, byte-reproducible, readable by pyarrow, DuckDB and HF datasets."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.atomic import sha256_file
from core.document import Document, make_doc_id
from core.shards import ShardLimits, ShardWriter, read_documents, shard_metadata


def _docs(n: int, size: int = 50) -> list[Document]:
    return [
        Document(make_doc_id("test", str(i)), f"document {i} " + "x" * size, "test",
                 {"language": "en", "title": f"T{i}", "n": i})
        for i in range(n)
    ]


def _write(root: Path, docs: list[Document], limits: ShardLimits) -> list:
    with ShardWriter(root, root / "docs", "input", "test", "en", labels=["G1"], limits=limits) as writer:
        writer.write_all(docs)
    return writer.finished


def test_bounded_by_docs_and_bytes(tmp_path: Path) -> None:
    by_docs = _write(tmp_path / "a", _docs(25), ShardLimits(max_docs=10, row_group_docs=4))
    assert [s.docs for s in by_docs] == [10, 10, 5]
    by_bytes = _write(tmp_path / "b", _docs(25, size=1000), ShardLimits(max_bytes=5_000, row_group_docs=3))
    assert all(s.text_bytes <= 5_000 + 1_020 for s in by_bytes) and sum(s.docs for s in by_bytes) == 25
    assert len(by_bytes) > 3


def test_round_trip_through_pyarrow_duckdb_and_datasets(tmp_path: Path) -> None:
    docs = _docs(30)
    shards = _write(tmp_path, docs, ShardLimits(max_docs=20))
    paths = [tmp_path / s.path for s in shards]
    assert [d for p in paths for d in read_documents(p)] == docs
    table = pq.read_table(paths[0])
    assert table.column_names == ["id", "text", "source", "meta"]
    assert pq.ParquetFile(paths[0]).metadata.row_group(0).column(1).compression == "ZSTD"
    rows = duckdb.sql(
        f"SELECT id, meta->>'$.title' AS title FROM read_parquet({[str(p) for p in paths]}) ORDER BY id"
    ).fetchall()
    assert sorted((d.id, d.meta["title"]) for d in docs) == rows
    import datasets

    loaded = datasets.load_dataset("parquet", data_files=[str(p) for p in paths], split="train",
                                   cache_dir=str(tmp_path / "hf"))
    assert loaded.num_rows == 30 and json.loads(loaded[0]["meta"])["language"] == "en"
    assert shard_metadata(paths[0]) == {"source": "test", "language": "en", "labels": '["G1"]'}


def test_checksums_sizes_and_no_temp_files(tmp_path: Path) -> None:
    shards = _write(tmp_path, _docs(12), ShardLimits(max_docs=5))
    for shard in shards:
        path = tmp_path / shard.path
        assert shard.sha256 == sha256_file(path) and shard.bytes == path.stat().st_size
    assert not list(tmp_path.rglob("*.tmp"))


def test_same_documents_give_identical_bytes(tmp_path: Path) -> None:
    first = _write(tmp_path / "one", _docs(40), ShardLimits(max_docs=15))
    second = _write(tmp_path / "two", _docs(40), ShardLimits(max_docs=15))
    assert [s.sha256 for s in first] == [s.sha256 for s in second]


def test_error_leaves_no_partial_shard(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), ShardWriter(tmp_path, tmp_path / "d", "x", "test") as writer:
        writer.write_all(_docs(3))
        raise RuntimeError("crash mid-shard")
    assert not list((tmp_path / "d").glob("*"))


@given(st.lists(st.tuples(st.text(max_size=300), st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=20),
                                                                 max_size=3)), max_size=30))
@settings(max_examples=40, deadline=None)
def test_any_text_and_meta_round_trips(tmp_path_factory: pytest.TempPathFactory, rows: list) -> None:
    root = tmp_path_factory.mktemp("prop")
    docs = [Document(make_doc_id("p", str(i)), text, "p", meta) for i, (text, meta) in enumerate(rows)]
    shards = _write(root, docs, ShardLimits(max_docs=7, row_group_docs=3))
    assert [d for s in shards for d in read_documents(root / s.path)] == docs
