"""The one row reader of the JSON-lines, CSV and Parquet sources: bad rows become named drops, bounded in memory.

A source that reads rows composes :class:`RowReader` with an *adapter*, a function from one
decoded row (a ``dict``) and its place (:class:`RowAt`) to a Document or a Drop, as datatrove's
readers take an adapter. The reader does the rest, the same way for every such source: opening
the file (plain, ``.gz``, ``.zst``, ``.bz2``, ``.xz``; format by name, or ``fmt``), the line or
row numbers that name each record, skipping blank lines, the byte bound of a line or value, a
row's skip and limit, and one drop for each fault, under one name whatever the source:

======================  ==========================================================================
``malformed_json``      a JSON line that is not JSON, not UTF-8, nested too deeply, or not an object
``too_large``           a line (or Parquet value, CSV field) over the byte bound, skipped unread
``invalid_utf8``        a Parquet or CSV row with bytes that are not UTF-8
``malformed_csv``       a CSV row the csv module cannot parse
``corrupt_row_group``   each row of a Parquet row group that cannot be decoded
``missing_column``      each row of a Parquet file without a column the reader was told to read
``unreadable_input``    a Parquet file whose footer cannot be read (one drop for the file)
``truncated_input``     a compressed stream cut short: one drop after the last line read
``skipped_row``         a row before ``skip`` (counted, never decoded)
``row_limit``           one drop where the reader stopped after ``limit`` rows
======================  ==========================================================================

The rows before and after a bad one are kept. The adapter decides about the row's content
(a missing field is its ``malformed_row``, say) and never sees a row the reader dropped.

The lower layers stay usable alone (the external datasets of
:mod:`sources.formats.datasets_text` keep their own vocabulary): :func:`parquet_file_rows`,
:func:`json_rows` and :func:`csv_rows` give one item per row (or line), in order, so the caller's
row numbers are its count of items.

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

import csv
import io
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.compressed import CODEC_ERRORS, open_binary
from core.document import Document, Drop, InputSpec
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


# -- CSV --------------------------------------------------------------------------------------
#: A byte that was not UTF-8, as ``surrogateescape`` decoding keeps it.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def csv_rows(handle: IO[bytes], max_field_bytes: int) -> Iterator[dict[str, Any] | RowError]:
    """One item per data row of a CSV stream with a header row: its ``{column: value}``, or a :class:`RowError`.

    Bad bytes are decoded as surrogates (``surrogateescape``), so they cost their row
    (``invalid_utf8``), not the file; a field over ``max_field_bytes`` is ``too_large`` and any
    other parse error ``malformed_csv``, and reading goes on at the next row. An empty stream
    gives nothing; an unparseable header gives one ``malformed_csv`` error and nothing else.
    The csv module's field limit is process-wide: it is set to ``max_field_bytes`` when reading
    starts, so two CSV readers with different bounds must not interleave in one process (every
    CSV reader of this project uses 16 MiB).
    """
    csv.field_size_limit(max_field_bytes)
    text = io.TextIOWrapper(handle, encoding="utf-8", errors="surrogateescape", newline="")
    reader = csv.DictReader(text)
    try:
        if reader.fieldnames is None:  # reads the header row; an empty file has no rows
            return
    except csv.Error as exc:
        yield RowError("malformed_csv", f"header: {type(exc).__name__}: {exc}")
        return
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # the row is lost, the reader goes on after it
            yield _csv_error(exc, max_field_bytes)
            continue
        bad = [key for key, value in row.items() if isinstance(value, str) and _ESCAPED_BYTE.search(value)]
        yield RowError("invalid_utf8", f"column {bad[0]!r}: bytes that are not UTF-8") if bad else row


def _csv_error(exc: csv.Error, max_field_bytes: int) -> RowError:
    if "field larger than field limit" in str(exc):
        return RowError("too_large", f"a field over {max_field_bytes:,} bytes")
    return RowError("malformed_csv", f"{type(exc).__name__}: {exc}")


# -- the reader a source composes ---------------------------------------------------------------
RowFormat = Literal["jsonl", "csv", "parquet"]
#: The lower layers' error names that the reader folds into one (a JSON list is malformed JSON lines too).
_FOLDED = {"not_object": "malformed_json"}


@dataclass(frozen=True)
class RowAt:
    """Where a row is in its input: ``unit`` (``line`` for JSON lines, ``row`` otherwise) and its number.

    JSON lines count from 1 like an editor (blank lines count, though they are no record);
    CSV data rows from 1 after the header; Parquet rows from 0 like the file's row index.
    """

    spec: InputSpec
    unit: str
    number: int

    @property
    def where(self) -> str:
        """The record as the user gave its input (``<location>: line 7``): what a drop names."""
        return f"{self.spec.location}: {self.unit} {self.number}"

    @property
    def origin(self) -> str:
        """The record by the input's key (``<key>: line 7``): what a document may store, never a path spelling."""
        return f"{self.spec.key}: {self.unit} {self.number}"

    @property
    def file_name(self) -> str:
        """The input's file name (``c4-train.00000-of-01024.json.gz``)."""
        return Path(self.spec.location).name


#: What a source gives the reader: one decoded row and its place -> a Document or a Drop.
Adapter = Callable[[dict[str, Any], RowAt], "Document | Drop"]


@dataclass(frozen=True)
class ParquetColumns:
    """What to read of one Parquet file: ``columns``, the byte bound of some (``sized``), and the
    string columns whose UTF-8 bytes come with each row (``utf8``, see :func:`parquet_rows`)."""

    columns: tuple[str, ...]
    sized: dict[str, int]
    utf8: tuple[str, ...] = ()


#: A source that reads more than one Parquet layout chooses per file from its column names:
#: the columns to read, or the detail of a ``missing_column`` drop (one per row of the file).
ColumnChooser = Callable[[Sequence[str]], "ParquetColumns | str"]


def row_format(path: Path) -> RowFormat:
    """The format a file's name says: ``.parquet``/``.pq`` Parquet, ``.csv`` (compressed or not) CSV, else JSON lines."""
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    stem = name.rsplit(".", 1)[0] if name.endswith((".gz", ".zst", ".bz2", ".xz")) else name
    return "csv" if stem.endswith(".csv") else "jsonl"


@dataclass(frozen=True)
class RowReader:
    """Rows of one input -> Documents and Drops, through a source's ``adapter`` (module docstring).

    ``columns``: the Parquet columns to read, all required (a file without one is a
    ``missing_column`` drop per row); JSON lines and CSV rows come whole, the adapter checks its
    fields. ``max_bytes`` bounds a JSON line, a CSV field and each Parquet value of ``columns``
    (a longer Parquet value reaches the adapter as an :class:`Oversized`, never as a string).
    ``language`` goes on the reader's own drops. ``skip`` rows are counted (``skipped_row``)
    without being decoded; after ``limit`` adapted rows the reader stops with one ``row_limit``
    drop. Build it in the recipe's ``read`` (an adapter that is a lambda does not pickle).
    """

    adapter: Adapter
    columns: tuple[str, ...] = ()
    max_bytes: int = 16 << 20
    language: str | None = None
    fmt: RowFormat | None = None
    skip: int = 0
    limit: int | None = None
    #: Parquet rows per batch at most (fewer when rows are large: :func:`batch_rows_for`).
    batch_rows: int = 1024
    #: Parquet: choose the columns per file (several layouts) instead of ``columns``; ``columns``
    #: then names the large text columns kept dictionary-encoded (:func:`open_parquet`).
    choose: ColumnChooser | None = None

    def __call__(self, spec: InputSpec) -> Iterator[Document | Drop]:
        """Every record of ``spec``, in file order."""
        fmt = self.fmt or row_format(spec.path)
        items = self._parquet(spec) if fmt == "parquet" else self._stream(spec, fmt)
        seen = 0
        for at, item in items:
            if isinstance(item, Drop):
                yield item
                continue
            seen += 1
            if seen <= self.skip:
                yield Drop("skipped_row", at.where, language=self.language)
            elif self.limit is not None and seen > self.skip + self.limit:
                yield Drop("row_limit", f"{spec.location}: from {at.unit} {at.number} (stopped after {self.limit:,})",
                           language=self.language)
                return
            elif isinstance(item, RowError):
                yield Drop(_FOLDED.get(item.reason, item.reason), at.where, f"{at.where}: {item.detail}", self.language)
            else:
                yield self.adapter(item, at)

    def _stream(self, spec: InputSpec, fmt: RowFormat) -> Iterator[tuple[RowAt, dict[str, Any] | RowError | Drop]]:
        """JSON lines or CSV: numbered items; a cut compressed stream ends with one ``truncated_input`` drop."""
        unit = "line" if fmt == "jsonl" else "row"
        number = 0
        try:
            with open_binary(spec.path) as stream:
                rows: Iterable[dict[str, Any] | RowError | None] = (
                    json_rows(stream, self.max_bytes) if fmt == "jsonl" else csv_rows(stream, self.max_bytes))
                for number, row in enumerate(rows, start=1):
                    if row is not None:  # a blank line: no record
                        yield RowAt(spec, unit, number), row
        except CODEC_ERRORS as exc:
            at = RowAt(spec, unit, number)
            yield at, Drop("truncated_input", f"{spec.location}: after {unit} {number}",
                           f"{type(exc).__name__}: {exc}", self.language)

    def _parquet(self, spec: InputSpec) -> Iterator[tuple[RowAt, dict[str, Any] | RowError | Drop]]:
        """Parquet, one row group at a time (:func:`parquet_file_rows`)."""
        try:
            parquet = open_parquet(spec.path, self.columns)
        except (OSError, pa.ArrowException) as exc:
            yield RowAt(spec, "row", 0), Drop("unreadable_input", f"{spec.location}: file",
                                               f"{type(exc).__name__}: {exc}", self.language)
            return
        with parquet:
            chosen = self._columns(parquet.schema_arrow.names)
            rows: Iterable[dict[str, Any] | RowError]
            if isinstance(chosen, str):
                rows = itertools.repeat(RowError("missing_column", chosen), parquet.metadata.num_rows)
            else:
                rows = parquet_file_rows(parquet, chosen.columns, self.batch_rows, chosen.sized, chosen.utf8)
            for number, row in enumerate(rows):
                yield RowAt(spec, "row", number), row

    def _columns(self, names: Sequence[str]) -> ParquetColumns | str:
        """The file's columns to read (``choose``, else ``columns`` all bounded), or why it has none."""
        if self.choose is not None:
            return self.choose(names)
        columns = self.columns or tuple(names)
        missing = [c for c in columns if c not in names]
        if missing:
            return f"missing column(s) {', '.join(missing)}"
        return ParquetColumns(columns, dict.fromkeys(columns, self.max_bytes))
