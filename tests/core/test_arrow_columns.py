"""Columns built from buffers equal ``pa.array``'s (nulls and narrow integers too), so Parquet bytes stay the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.arrow_columns import arrow_column, arrow_rows, arrow_table
from core.document import Document
from core.shards import SCHEMA, documents_to_table

SCHEMA_WIDE = pa.schema([pa.field("kind", pa.int8()), pa.field("post", pa.int32()), pa.field("id", pa.int64()),
                         pa.field("key", pa.uint64()), pa.field("name", pa.string()), pa.field("hash", pa.binary(4))])


def _maybe(values: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), values)


@given(st.lists(st.tuples(_maybe(st.integers(-128, 127)), _maybe(st.integers(-(1 << 31), (1 << 31) - 1)),
                          _maybe(st.integers(-(1 << 63), (1 << 63) - 1)), st.integers(0, (1 << 64) - 1),
                          _maybe(st.text()), st.binary(min_size=4, max_size=4)), max_size=30))
def test_columns_equal_pa_array(rows: list[tuple]) -> None:
    dicts = [dict(zip(SCHEMA_WIDE.names, row, strict=True)) for row in rows]
    for field in SCHEMA_WIDE:
        values = [row[field.name] for row in dicts]
        assert arrow_column(values, field.type).equals(pa.array(values, field.type)), field.name
    assert arrow_rows(dicts, SCHEMA_WIDE).equals(pa.Table.from_pylist(dicts, schema=SCHEMA_WIDE))
    arrays = {"kind": np.arange(len(rows), dtype=np.int8), "key": np.arange(3 * len(rows), dtype=np.uint64)[::3]}
    narrow = pa.schema([("kind", pa.int8()), ("key", pa.uint64())])
    assert arrow_table(arrays, narrow).equals(pa.table(arrays, schema=narrow))  # numpy arrays, a strided one too


def test_what_pa_array_refuses_it_still_refuses() -> None:
    with pytest.raises(pa.ArrowInvalid):
        arrow_column([1 << 40], pa.int32())
    with pytest.raises(UnicodeEncodeError):
        arrow_column(["\ud800"], pa.string())  # a lone surrogate


def test_shard_bytes_equal_pa_table(tmp_path: Path) -> None:
    docs = [Document(f"d{n}", text, "src", {"n": n}) for n, text in enumerate(["a", "é" * 50, "", "z\n"])]
    old = pa.table({"id": [d.id for d in docs], "text": [d.text for d in docs], "source": [d.source for d in docs],
                    "meta": [d.meta_json() for d in docs]}, schema=SCHEMA)
    for name, table in (("new", documents_to_table(docs)), ("old", old)):
        pq.write_table(table, tmp_path / f"{name}.parquet", compression="zstd")
    assert (tmp_path / "new.parquet").read_bytes() == (tmp_path / "old.parquet").read_bytes()
