"""The drop-list walk finalize uses: in step with the documents, one batch held, rows written back."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import core.drop_list as drop_list
from core.drop_list import DropListWalk
from core.pipeline import DROP_SCHEMA


def _row(key: str, ordinal: int, reason: str = "duplicate_exact", detail: str | None = None) -> dict[str, object]:
    return {"input_key": key, "ordinal": ordinal, "id": f"{key}/{ordinal}", "step": "dedup_exact",
            "reason": reason, "matched_id": None, "detail": detail}


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    pq.write_table(pa.Table.from_pylist(rows, schema=DROP_SCHEMA), path, row_group_size=3)


def test_walks_one_input_in_step_counts_and_writes_its_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drop_list, "_BATCH_ROWS", 2)  # several batches
    rows = [_row("a", 1), _row("a", 4, "near_duplicate", "matches b/7"), _row("a", 5), _row("a", 12),
            _row("b", 0), _row("b", 3)]
    _write(tmp_path / "drops.parquet", rows)
    walk = DropListWalk(tmp_path / "drops.parquet", "a", tmp_path / "out" / "a.parquet", DROP_SCHEMA, examples=5)
    kept = []
    for ordinal in range(10):  # the input has 10 documents: ordinal 12 is past its end
        if walk.pending == ordinal:
            walk.take("uk" if ordinal < 5 else "ru")
        else:
            kept.append(ordinal)
    walk.finish()
    assert kept == [0, 2, 3, 6, 7, 8, 9] and walk.rows == 4 and walk.pending is None
    assert walk.drop_counts() == [
        {"step": "dedup_exact", "reason": "duplicate_exact", "language": None, "count": 1},
        {"step": "dedup_exact", "reason": "duplicate_exact", "language": "ru", "count": 1},
        {"step": "dedup_exact", "reason": "duplicate_exact", "language": "uk", "count": 1},
        {"step": "dedup_exact", "reason": "near_duplicate", "language": "uk", "count": 1},
    ]
    assert walk.examples == [{"step": "dedup_exact", "reason": "near_duplicate", "record": "a/4",
                              "detail": "matches b/7"}]
    written = pq.read_table(tmp_path / "out" / "a.parquet")
    assert written.schema == DROP_SCHEMA and written.to_pylist() == rows[:4]


def test_no_list_writes_an_empty_file_and_drops_nothing(tmp_path: Path) -> None:
    walk = DropListWalk(tmp_path / "absent.parquet", "a", tmp_path / "a.parquet", DROP_SCHEMA, examples=5)
    assert walk.pending is None
    walk.finish()
    assert pq.read_table(tmp_path / "a.parquet").num_rows == 0 and walk.drop_counts() == []


def test_a_list_out_of_order_is_an_error_naming_the_file(tmp_path: Path) -> None:
    _write(tmp_path / "drops.parquet", [_row("a", 3), _row("a", 3)])
    walk = DropListWalk(tmp_path / "drops.parquet", "a", tmp_path / "a.parquet", DROP_SCHEMA, examples=5)
    with pytest.raises(ValueError, match=r"drops\.parquet: the drop list of a is not in ordinal order"):
        walk.take("")  # reading on to the next row finds it
    walk.abort()
    assert not (tmp_path / "a.parquet").exists()
