"""The shared row reader (sources.formats.rows.RowReader) on real files: JSON lines plain, .gz and
.zst, CSV and Parquet, each with one bad record in the middle. The records before and after it
are kept; the bad one is one drop under the reader's one name for its fault, naming file and line
(or row); skip and limit are the reader's, not the adapter's. The C4 recipe's reasons follow it."""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from core.document import Document, Drop, InputSpec
from sources.c4 import C4Recipe
from sources.formats.rows import RowAt, RowReader, row_format

ROWS = [{"text": f"row number {n}", "n": n} for n in range(1, 7)]


def adapter(row: dict[str, Any], at: RowAt) -> Document | Drop:
    """A minimal adapter: a document per row with a string text, a malformed_row otherwise."""
    if not isinstance(row.get("text"), str):
        return Drop("malformed_row", at.where, "no text")
    return Document(f"d{at.number}", row["text"], "toy", {"at": at.origin})


def read(path: Path, reader: RowReader | None = None) -> tuple[list[Document], list[Drop]]:
    records = list((reader or RowReader(adapter))(InputSpec(str(path), path, path.name)))
    return ([r for r in records if isinstance(r, Document)], [r for r in records if isinstance(r, Drop)])


def jsonl_with_bad_line(bad: bytes) -> bytes:
    lines = [json.dumps(r).encode() for r in ROWS]
    lines.insert(3, bad)  # line 4
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("name", ["rows.jsonl", "rows.jsonl.gz", "rows.jsonl.zst"])
@pytest.mark.parametrize(("bad", "reason"), [(b'{"text": "cut', "malformed_json"), (b'["a", "list"]', "malformed_json"),
                                             (b"\xff\xfe{}", "malformed_json"), (b'{"text": 7}', "malformed_row")])
def test_jsonl_bad_line_mid_file_is_one_drop(tmp_path: Path, name: str, bad: bytes, reason: str) -> None:
    data = jsonl_with_bad_line(bad)
    path = tmp_path / name
    path.write_bytes(gzip.compress(data, mtime=0) if name.endswith(".gz")
                     else zstandard.ZstdCompressor().compress(data) if name.endswith(".zst") else data)
    docs, drops = read(path)
    assert [d.text for d in docs] == [r["text"] for r in ROWS]  # before and after the bad line
    assert [(d.reason, d.record) for d in drops] == [(reason, f"{path}: line 4")]
    assert docs[3].meta["at"] == f"{name}: line 5"  # the key, never the path spelling


def test_jsonl_over_long_line_blank_lines_and_a_cut_stream(tmp_path: Path) -> None:
    lines = [json.dumps(r).encode() for r in ROWS]
    lines[2] = json.dumps({"text": "x" * 5000}).encode()
    lines.insert(1, b"   ")  # blank: no record, but it counts as a line
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "rows.jsonl.gz"
    path.write_bytes(gzip.compress(data, mtime=0))
    docs, drops = read(path, RowReader(adapter, max_bytes=1000))
    assert [(d.reason, d.record) for d in drops] == [("too_large", f"{path}: line 4")]
    assert len(docs) == 5 and drops[0].record in drops[0].detail
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(path.read_bytes()[:-30])
    docs, drops = read(cut, RowReader(adapter, max_bytes=1000))
    assert drops[-1].reason == "truncated_input" and drops[-1].record.startswith(f"{cut}: after line ")
    assert docs and all(isinstance(d, Document) for d in docs)


@pytest.fixture
def csv_limit() -> Iterator[None]:
    """The csv module's field limit is process-wide: put back what it was."""
    before = csv.field_size_limit()
    yield
    csv.field_size_limit(before)


@pytest.mark.usefixtures("csv_limit")
def test_csv_bad_byte_and_huge_field_cost_their_rows(tmp_path: Path) -> None:
    lines = ["text,n"] + [f"row number {n},{n}" for n in range(1, 7)]
    lines[3] = "bad \udcff byte,3"  # row 3
    lines[5] = '"' + "y" * 5000 + '",5'  # row 5
    path = tmp_path / "rows.csv.gz"
    path.write_bytes(gzip.compress(("\r\n".join(lines) + "\r\n").encode("utf-8", "surrogateescape"), mtime=0))
    assert row_format(path) == "csv"
    docs, drops = read(path, RowReader(adapter, max_bytes=1000))
    assert [(d.reason, d.record) for d in drops] == [("invalid_utf8", f"{path}: row 3"),
                                                     ("too_large", f"{path}: row 5")]
    assert [d.text for d in docs] == ["row number 1", "row number 2", "row number 4", "row number 6"]


def test_parquet_bad_utf8_row_and_missing_column(tmp_path: Path) -> None:
    texts = [f"row number {n}".encode() for n in range(6)]
    texts[2] = b"bad \xff byte"
    table = pa.table({"text": pa.array(texts, pa.binary()).cast(pa.string(), safe=False), "n": list(range(6))})
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path, row_group_size=4)
    docs, drops = read(path, RowReader(adapter, columns=("text",)))
    assert [(d.reason, d.record) for d in drops] == [("invalid_utf8", f"{path}: row 2")]
    assert [d.text for d in docs] == [f"row number {n}" for n in (0, 1, 3, 4, 5)]
    docs, drops = read(path, RowReader(adapter, columns=("text", "title")))
    assert docs == [] and {d.reason for d in drops} == {"missing_column"} and len(drops) == 6
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not a footer")
    assert [d.reason for d in read(broken)[1]] == ["unreadable_input"]


def test_skip_and_limit_are_counted_drops(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(jsonl_with_bad_line(b"{broken"))
    docs, drops = read(path, RowReader(adapter, skip=2, limit=3))
    assert [d.text for d in docs] == ["row number 3", "row number 4"]  # rows 3 and 5 of the file; line 4 is bad
    assert [(d.reason, d.record) for d in drops] == [
        ("skipped_row", f"{path}: line 1"), ("skipped_row", f"{path}: line 2"), ("malformed_json", f"{path}: line 4"),
        ("row_limit", f"{path}: from line 6 (stopped after 3)")]


def test_c4_names_its_faults_as_the_reader_does(tmp_path: Path) -> None:
    path = tmp_path / "c4-train.00000-of-01024.json.gz"
    path.write_bytes(gzip.compress(jsonl_with_bad_line(b'{"text": "cut'), mtime=0))
    records = list(C4Recipe().read(InputSpec(str(path), path, path.name)))
    drops = [r for r in records if isinstance(r, Drop)]
    assert [(d.reason, d.record, d.language) for d in drops] == [("malformed_json", f"{path}: line 4", "en")]
    assert [r.meta["line"] for r in records if isinstance(r, Document)] == [1, 2, 3, 5, 6, 7]
