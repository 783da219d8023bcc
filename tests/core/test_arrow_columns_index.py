"""The index tables (64-bit keys, fixed-size hashes, bools, strings) built from buffers equal ``pa.array``'s: same Parquet bytes, no pandas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from core.arrow_columns import arrow_column, arrow_table

SCHEMA = pa.schema([pa.field("doc", pa.int64()), pa.field("key", pa.uint64()), pa.field("name", pa.string()),
                    pa.field("hash", pa.binary(4)), pa.field("empty", pa.bool_())])


@given(st.lists(st.tuples(st.integers(-(1 << 63), (1 << 63) - 1), st.integers(0, (1 << 64) - 1), st.text(),
                          st.binary(min_size=4, max_size=4), st.booleans()), max_size=40))
def test_columns_equal_pa_array(rows: list[tuple]) -> None:
    doc, key, name, digest, empty = (list(column) for column in zip(*rows, strict=True)) if rows else ([],) * 5
    values = {"doc": np.array(doc, np.int64), "key": np.array(key, np.uint64), "name": name, "hash": digest,
              "empty": np.array(empty, bool)}
    for field in SCHEMA:
        assert arrow_column(values[field.name], field.type).equals(pa.array(values[field.name], field.type))
    assert arrow_table(values, SCHEMA).equals(pa.table(values, schema=SCHEMA))


def test_strided_integers_lists_and_nulls() -> None:
    keys = np.arange(12, dtype=np.uint64).reshape(4, 3)
    assert arrow_column(keys[:, 1], pa.uint64()).to_pylist() == [1, 4, 7, 10]
    assert arrow_column([3, 1, 2], pa.int64()).to_pylist() == [3, 1, 2]
    assert arrow_column(["a", None], pa.string()).to_pylist() == ["a", None]  # a null takes pa.array


def test_parquet_bytes_equal_and_no_pandas(tmp_path: Path) -> None:
    """Same file bytes as ``pa.table``; and, in a fresh process, writing imports no pandas."""
    values = {"doc": np.arange(5), "key": np.arange(5, dtype=np.uint64) * 7, "name": list("aébcd"),
              "hash": [bytes([i]) * 4 for i in range(5)], "empty": np.array([1, 0, 0, 1, 0], bool)}
    for name, table in (("new", arrow_table(values, SCHEMA)), ("old", pa.table(values, schema=SCHEMA))):
        pq.write_table(table, tmp_path / f"{name}.parquet", compression="zstd")
    assert (tmp_path / "new.parquet").read_bytes() == (tmp_path / "old.parquet").read_bytes()
    code = ("import sys, numpy as np, pyarrow as pa; from core.arrow_columns import arrow_table; "
            "arrow_table({'doc': np.arange(3), 'name': ['a', 'b', 'c']}, "
            "pa.schema([('doc', pa.int64()), ('name', pa.string())])); print('pandas' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
