"""The one row reader of the Parquet and JSON-lines sources: bad rows become named errors, bounded in memory.

Every Parquet/JSON-lines source (stack_code, reasoning, the external datasets of
:mod:`sources.formats.datasets_text`) reads its rows here and turns each :class:`RowError` into
one counted drop in its own vocabulary, naming the file and the row; the rows before and after
are kept. :func:`parquet_file_rows` and :func:`json_rows` give one item per row (or line), in
order, so the caller's row numbers are its count of items.

Two ways one bad row used to cost a whole file, or all the memory:

* **Parquet.** ``RecordBatch.to_pylist`` decodes every string of a batch at once, so one row
  with invalid UTF-8 in a string column raised ``UnicodeDecodeError`` for the batch (and the
  reader lost the file); and a batch of 1,024 rows is built in Arrow before any row's size is
  looked at, so a 100 KB file of highly compressible 30 MB rows decoded gigabytes.
  :func:`parquet_rows` sizes each batch from the row group's footer (uncompressed bytes per
  row, so a batch holds about :data:`BATCH_BYTES`), reads each row's byte length from the Arrow
  offsets (``binary_length``, no Python object built), never turns a value over
  ``max_value_bytes`` into a Python string (it comes back as :class:`Oversized`), and decodes a
  batch that fails row by row so the bad row alone is a :class:`RowError`.
* **JSON lines.** ``for line in stream`` reads a line whole, however long. :func:`bounded_lines`
  reads at most ``limit + 1`` bytes of a line and skips the rest of a longer one in bounded
  pieces, so a 2 GB line costs one drop and a bounded buffer.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.json_line import parse_json_line

#: How many decoded bytes one Parquet batch aims at (a batch is never smaller than one row).
BATCH_BYTES = 64 << 20
#: How far :func:`bounded_lines` reads at a time while skipping the rest of an over-long line.
SKIP_BYTES = 1 << 20


@dataclass(frozen=True)
class Oversized:
    """A value left in Arrow because its encoded size is over the bound (``nbytes`` of it)."""

    nbytes: int


@dataclass(frozen=True)
class RowError:
    """A row that cannot be decoded (``reason`` such as ``invalid_utf8``, ``detail`` names the column)."""

    reason: str
    detail: str


class LineSource(Protocol):
    """Anything with a binary ``readline(size)``: an open file, a GzipFile, a zstd text stream."""

    def readline(self, size: int = -1, /) -> bytes: ...


def bounded_lines(handle: LineSource, limit: int) -> Iterator[bytes | None]:
    """Lines of a binary stream (newline kept), None for a line over ``limit`` bytes (never held whole)."""
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while True:  # skip to the end of the long line in bounded pieces
                rest = handle.readline(SKIP_BYTES)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


def json_rows(handle: LineSource, max_line_bytes: int) -> Iterator[dict[str, Any] | RowError | None]:
    """One item per line of a JSON-lines stream: its object, None for a blank line, else a :class:`RowError`.

    The errors: ``too_large`` (over ``max_line_bytes``, skipped unread), ``malformed_json`` (not
    JSON, or not UTF-8), ``not_object`` (a JSON list or scalar). A codec error of the stream (a
    truncated ``.gz``) propagates: the caller records where its input ended.
    """
    for line in bounded_lines(handle, max_line_bytes):
        if line is None:
            yield RowError("too_large", f"over {max_line_bytes:,} bytes; not read")
        elif not line.strip():
            yield None
        else:
            yield _json_object(line)


def _json_object(line: bytes) -> dict[str, Any] | RowError:
    try:
        row = parse_json_line(line)
    except ValueError as exc:  # not JSON, not UTF-8, or nested too deeply: this line only
        return RowError("malformed_json", f"{type(exc).__name__}: {exc}")
    if not isinstance(row, dict):
        return RowError("not_object", f"a JSON {type(row).__name__}, not an object")
    return row


def utf8_key(column: str) -> str:
    """The row key under which :func:`parquet_rows` gives a ``utf8`` column's value as its UTF-8 bytes."""
    return f"{column}\x00utf8"


def parquet_file_rows(parquet: pq.ParquetFile, columns: Sequence[str], most: int,
                      sized: dict[str, int], utf8: Sequence[str] = ()) -> Iterator[dict[str, Any] | RowError]:
    """Every row of a Parquet file, row group by row group (:func:`parquet_rows`), one item per row.

    A row group that fails to decode (a corrupt page) gives one ``corrupt_row_group`` error for
    each of its rows not yet given, and the next group is read: the file's rows before and after
    are kept.
    """
    meta = parquet.metadata
    for group in range(meta.num_row_groups):
        left = meta.row_group(group).num_rows
        try:
            for row in parquet_rows(parquet, group, columns, most, sized, utf8):
                yield row
                left -= 1
        except (OSError, pa.ArrowException) as exc:
            error = RowError("corrupt_row_group", f"row group {group}: {type(exc).__name__}: {exc}")
            for _ in range(left):
                yield error


def open_parquet(source: Any, large: Iterable[str]) -> pq.ParquetFile:
    """A ParquetFile whose ``large`` text columns stay dictionary-encoded in Arrow where the file has them so.

    A dictionary page lets one 30 MB value stand for every row of a row group (a 1.4 KB file of
    100 such rows); decoded densely, one batch is gigabytes before any row is looked at. Kept as
    a dictionary, a batch costs the dictionary once and each row's size is read from the
    dictionary's offsets (:func:`parquet_rows`). Other columns are read as usual.
    """
    parquet = pq.ParquetFile(source)
    wanted = set(large)
    meta = parquet.metadata
    coded = {meta.row_group(g).column(c).path_in_schema for g in range(meta.num_row_groups)
             for c in range(meta.num_columns) if meta.row_group(g).column(c).has_dictionary_page}
    keep = sorted(wanted & coded)
    if not keep:
        return parquet
    parquet.close()
    return pq.ParquetFile(source, read_dictionary=keep)


def batch_rows_for(parquet: pq.ParquetFile, group: int, columns: Sequence[str], most: int) -> int:
    """Rows per batch for one row group: ``most``, fewer when its rows are large (footer sizes)."""
    meta = parquet.metadata.row_group(group)
    if meta.num_rows == 0:
        return max(1, most)
    wanted = set(columns)
    total = 0
    for index in range(meta.num_columns):
        chunk = meta.column(index)
        if chunk.path_in_schema.split(".", 1)[0] in wanted:
            total += max(chunk.total_uncompressed_size, chunk.total_compressed_size)
    per_row = max(1, total // meta.num_rows)
    return max(1, min(most, BATCH_BYTES // per_row))


def parquet_rows(parquet: pq.ParquetFile, group: int, columns: Sequence[str], most: int,
                 sized: dict[str, int], utf8: Sequence[str] = ()) -> Iterator[dict[str, Any] | RowError]:
    """The rows of one row group, each a dict of ``columns`` or a :class:`RowError`.

    ``sized`` maps string/binary columns to their byte bound: a longer value is an
    :class:`Oversized` in the row (the caller drops it in its own order of checks). Arrow
    errors (a corrupt page) propagate: the caller counts the rest of the group.

    ``utf8``: string columns whose values the caller also needs as UTF-8 bytes (to hash them):
    each row then holds, under :func:`utf8_key`, a ``memoryview`` of its value's bytes in the
    batch's Arrow buffer, the very bytes its string was decoded from, so the caller does not
    encode the string again. Only for a string column, plain or dictionary-encoded (another type
    has no key: the caller encodes).
    """
    batch_size = batch_rows_for(parquet, group, columns, most)
    for batch in parquet.iter_batches(batch_size=batch_size, row_groups=[group], columns=list(columns)):
        yield from _batch_rows(batch, sized, utf8)


def _batch_rows(batch: pa.RecordBatch, sized: dict[str, int],
                utf8: Sequence[str] = ()) -> Iterator[dict[str, Any] | RowError]:
    values: dict[str, list[Any]] = {}
    errors: dict[int, RowError] = {}
    for name in batch.schema.names:
        column = batch.column(name)
        skip = _oversized(column, sized.get(name))
        values[name], bad = _column_values(column, skip)
        for row, detail in bad.items():
            errors.setdefault(row, RowError("invalid_utf8", f"column {name!r}: {detail}"))
        if name in utf8 and (views := _utf8_views(column)) is not None:
            values[utf8_key(name)] = views
    names = list(values)
    for row, items in enumerate(zip(*values.values(), strict=True)):
        yield errors.get(row) or dict(zip(names, items, strict=True))


def _utf8_views(column: pa.Array) -> list[memoryview] | None:
    """Each row's bytes in a string column's data buffer (no copy), or None for another type of column.

    A dictionary-encoded column (:func:`open_parquet` keeps large text columns so) gives each
    row its dictionary value's bytes, found through the row's index: the dictionary of a batch
    holds every value of its row group read so far (it grows batch by batch), so a view per
    dictionary value would be quadratic in the row group's rows. A null row gives empty bytes
    (its value is None anyway).
    """
    coded = isinstance(column, pa.DictionaryArray)
    strings = column.dictionary if coded else column
    if not (pa.types.is_string(strings.type) or pa.types.is_large_string(strings.type)):
        return None
    _, offsets, data = strings.buffers()
    dtype = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    bounds = np.frombuffer(offsets, dtype)[strings.offset:strings.offset + len(strings) + 1]
    whole = memoryview(data if data is not None else b"")
    if not coded:
        return [whole[start:end] for start, end in itertools.pairwise(bounds.tolist())]
    empty = memoryview(b"")
    if not len(strings):  # an empty dictionary: every row is null
        return [empty] * len(column)
    indices = column.indices.to_pylist()
    rows = np.array([index or 0 for index in indices], np.int64)
    return [whole[start:end] if index is not None else empty
            for start, end, index in zip(bounds[rows].tolist(), bounds[rows + 1].tolist(), indices, strict=True)]


def _oversized(column: pa.Array, bound: int | None) -> dict[int, int]:
    """Rows whose value is over ``bound`` bytes, with their sizes, read from the offsets only."""
    values = column.dictionary if isinstance(column, pa.DictionaryArray) else column
    if bound is None or not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
                             or pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)):
        return {}
    lengths = pc.binary_length(values)
    if isinstance(column, pa.DictionaryArray):
        lengths = lengths.take(column.indices)
    sizes = _int_values(lengths)
    return {row: int(sizes[row]) for row in np.flatnonzero(sizes > bound).tolist()}


def _int_values(lengths: pa.Array) -> np.ndarray:
    """An int32/int64 Arrow array's values in numpy, a null as 0, read from its buffers.

    Not ``to_numpy`` nor a compute call with a Python number: both import pandas, a second of
    CPU on the first batch of a run that never uses it.
    """
    dtype = np.int64 if pa.types.is_int64(lengths.type) else np.int32
    values = np.frombuffer(lengths.buffers()[1], dtype)[lengths.offset:lengths.offset + len(lengths)]
    if not lengths.null_count:
        return values
    valid = np.unpackbits(np.frombuffer(lengths.buffers()[0], np.uint8), bitorder="little")
    return np.where(valid[lengths.offset:lengths.offset + len(lengths)].astype(bool), values, 0)


def _column_values(column: pa.Array, skip: dict[int, int]) -> tuple[list[Any], dict[int, str]]:
    """Python values of a column; oversized rows as :class:`Oversized`, undecodable rows reported.

    The rows between two oversized ones are decoded together (one ``to_pylist``); only a run
    holding a row that is not UTF-8 is decoded one row at a time, to find it.
    """
    values: list[Any] = []
    bad: dict[int, str] = {}
    start = 0
    for stop in [*sorted(skip), len(column)]:
        values.extend(_run_values(column, start, stop, bad))
        if stop < len(column):
            values.append(Oversized(skip[stop]))
        start = stop + 1
    return values, bad


def _run_values(column: pa.Array, start: int, stop: int, bad: dict[int, str]) -> list[Any]:
    """Rows ``start`` to ``stop`` (exclusive) decoded; a row that is not UTF-8 is None, its error in ``bad``."""
    if stop <= start:
        return []
    try:
        return column.slice(start, stop - start).to_pylist()
    except UnicodeDecodeError:
        pass  # some row is not UTF-8: decode one at a time to find it
    values: list[Any] = []
    for row in range(start, stop):
        try:
            values.append(column[row].as_py())
        except UnicodeDecodeError as exc:
            values.append(None)
            bad[row] = f"{type(exc).__name__}: {exc}"
    return values
