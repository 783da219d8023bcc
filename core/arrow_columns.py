"""Arrow columns built straight from buffers, so writing Parquet imports no pandas.

``pa.array``, ``pa.table`` and ``pa.Table.from_pylist`` over Python lists or numpy arrays import
pandas the first time (to vet their input): ~0.25 CPU-s of every worker process that writes a
shard, for nothing the worker uses. The tables a worker writes (shards, content hashes, drop
lists) hold only integers, booleans, fixed-size binaries and strings (null or not), whose Arrow
layouts are simple enough to hand over as buffers; anything else goes through ``pa.array`` as
before. The arrays are equal either way (tested), so the Parquet bytes are too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa


def arrow_column(values: Any, kind: pa.DataType) -> pa.Array:
    """``pa.array(values, kind)`` for integers (an integer array, or a list of integers and Nones), a
    bool array, a list of fixed-size bytes, a list of strings and Nones or of floats without Nones,
    without importing pandas."""
    if pa.types.is_integer(kind) and _integers(values):
        return _integer_column(values, kind)
    if pa.types.is_boolean(kind) and isinstance(values, np.ndarray):
        bits = np.packbits(values.astype(bool, copy=False), bitorder="little")
        return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(bits)])
    if pa.types.is_fixed_size_binary(kind) and all(isinstance(v, bytes) and len(v) == kind.byte_width for v in values):
        return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(b"".join(values))])
    if pa.types.is_string(kind) and all(v is None or isinstance(v, str) for v in values):
        return _string_column(values)
    if pa.types.is_floating(kind) and all(v is not None for v in values):  # signals: no nulls
        data = np.ascontiguousarray(values, dtype=_numpy_float(kind))
        return pa.Array.from_buffers(kind, len(data), [None, pa.py_buffer(data)])
    return pa.array(values, kind)


def _numpy_float(kind: pa.DataType) -> np.dtype[Any]:
    return np.dtype(f"f{kind.bit_width // 8}")


def _numpy_integer(kind: pa.DataType) -> np.dtype[Any]:
    return np.dtype(f"{'i' if pa.types.is_signed_integer(kind) else 'u'}{kind.bit_width // 8}")


def _validity(nulls: list[bool]) -> pa.Buffer | None:
    """The validity bitmap of a column with these nulls (None: no null, as ``pa.array`` gives)."""
    return pa.py_buffer(np.packbits(~np.array(nulls, bool), bitorder="little")) if any(nulls) else None


def _integers(values: Any) -> bool:
    """An integer array, or integers (Python or numpy, not bool) and Nones."""
    if isinstance(values, np.ndarray):
        return values.dtype.kind in "iu"
    return all(v is None or (isinstance(v, int | np.integer) and not isinstance(v, bool)) for v in values)


def _integer_column(values: Any, kind: pa.DataType) -> pa.Array:
    if isinstance(values, np.ndarray):  # cast as numpy casts (a strided slice is copied)
        numbers = np.ascontiguousarray(values, dtype=_numpy_integer(kind))
        return pa.Array.from_buffers(kind, len(numbers), [None, pa.py_buffer(numbers)])
    try:
        numbers = np.array([0 if v is None else v for v in values], dtype=_numpy_integer(kind))
    except OverflowError:  # out of the type's range: pa.array reports it as it always did
        return pa.array(values, kind)
    return pa.Array.from_buffers(kind, len(numbers), [_validity([v is None for v in values]), pa.py_buffer(numbers)])


def _string_column(values: Sequence[str | None]) -> pa.Array:
    try:
        encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    except UnicodeEncodeError:  # a lone surrogate: pa.array reports it as it always did
        return pa.array(values, pa.string())
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
    if offsets[-1] >= 1 << 31:  # beyond 32-bit offsets: let pa.array raise its own error
        return pa.array(values, pa.string())
    validity = _validity([v is None for v in values])
    return pa.Array.from_buffers(pa.string(), len(encoded), [validity, pa.py_buffer(offsets.astype(np.int32)),
                                                             pa.py_buffer(b"".join(encoded))])


def arrow_table(columns: dict[str, Any], schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` from per-column values (see :func:`arrow_column`)."""
    return pa.Table.from_arrays([arrow_column(columns[f.name], f.type) for f in schema], schema=schema)


def arrow_rows(rows: Sequence[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """``pa.Table.from_pylist(rows, schema=schema)`` (a missing key is a null), through :func:`arrow_table`."""
    return arrow_table({name: [row.get(name) for row in rows] for name in schema.names}, schema)
