"""Arrow columns built straight from buffers, so writing Parquet never imports pandas.

``pa.array`` and ``pa.table`` over numpy arrays or Python lists import pandas the first time
(to vet their input): ~0.7 CPU-s per process, a quarter of indexing a 100 MB Pile shard. The
index's tables hold only integers, booleans, fixed-size binaries and strings, whose Arrow
layouts are simple enough to hand over as buffers; anything else (or a null) goes through
``pa.array`` as before. The arrays are equal either way (tested), so the Parquet bytes are too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa


def arrow_column(values: Any, kind: pa.DataType) -> pa.Array:
    """``pa.array(values, kind)`` for an int64/uint64 array or list, a bool array, a list of
    fixed-size bytes or a list of strings, without importing pandas."""
    if pa.types.is_integer(kind) and kind.bit_width == 64:
        numbers = np.ascontiguousarray(values, dtype=np.int64 if pa.types.is_signed_integer(kind) else np.uint64)
        return pa.Array.from_buffers(kind, len(numbers), [None, pa.py_buffer(numbers)])
    if pa.types.is_boolean(kind) and isinstance(values, np.ndarray):
        bits = np.packbits(values.astype(bool, copy=False), bitorder="little")
        return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(bits)])
    if pa.types.is_fixed_size_binary(kind) and all(isinstance(v, bytes) and len(v) == kind.byte_width for v in values):
        return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(b"".join(values))])
    if pa.types.is_string(kind) and all(isinstance(v, str) for v in values):
        return _string_column(values)
    return pa.array(values, kind)


def _string_column(values: Sequence[str]) -> pa.Array:
    try:
        encoded = [v.encode("utf-8") for v in values]
    except UnicodeEncodeError:  # a lone surrogate: pa.array reports it as it always did
        return pa.array(values, pa.string())
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
    if offsets[-1] >= 1 << 31:  # beyond 32-bit offsets: let pa.array raise its own error
        return pa.array(values, pa.string())
    data = b"".join(encoded)
    return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                               pa.py_buffer(data)])


def arrow_table(columns: dict[str, Any], schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` from per-column values (see :func:`arrow_column`)."""
    return pa.Table.from_arrays([arrow_column(columns[f.name], f.type) for f in schema], schema=schema)
