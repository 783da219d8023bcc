"""Fault injection, Parquet and JSON-lines rows (issue 24 items 4 and 8): one bad row is one drop.

Files are real: Parquet written by pyarrow (the invalid UTF-8 string built with
``pa.Array.from_buffers``, as a foreign writer leaves it), JSON lines written by :mod:`json`.
The memory bomb runs the flow as a user does and measures its peak RSS (:mod:`tests.faults.rss`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.document import Document, Drop, InputSpec
from core.manifest import Manifest
from sources.formats.datasets_text import DatasetFile, DropLog, ReadOptions, read_texts
from sources.reasoning import ReasoningRecipe
from sources.stack_code import StackCodeRecipe
from tests.faults.rss import MAX_RSS_BYTES, run_measured

REPO = Path(__file__).resolve().parents[2]
ROWS = 40
BAD_ROW = 3


def _code(n: int) -> str:
    return f"def handler_{n}(event):\n    total = event.count + {n}\n    return total * 2\n"


def invalid_utf8_column(values: list[str], bad: int) -> pa.Array:
    """A string column whose row ``bad`` holds the byte 0xff (not UTF-8), as a foreign writer leaves it."""
    raw = [v.encode() for v in values]
    raw[bad] = b"x = \"\xff\"\n"
    offsets = [0]
    for item in raw:
        offsets.append(offsets[-1] + len(item))
    return pa.Array.from_buffers(pa.string(), len(raw), [None, pa.py_buffer(pa.array(offsets, pa.int32()).buffers()[1]),
                                                         pa.py_buffer(b"".join(raw))])


def stack_table(contents: pa.Array | list[str]) -> pa.Table:
    count = len(contents)
    return pa.table({
        "content": contents,
        "max_stars_repo_path": [f"src/handler_{n}.py" for n in range(count)],
        "max_stars_repo_name": ["acme/handlers"] * count,
        "max_stars_repo_licenses": pa.array([["MIT"]] * count, pa.list_(pa.string())),
        "hexsha": [f"{n:040x}" for n in range(count)],
        "lang": ["Python"] * count,
    })


def read(recipe: StackCodeRecipe | ReasoningRecipe, path: Path) -> tuple[list[Document], list[Drop]]:
    records = list(recipe.read(InputSpec(str(path), path, path.name)))
    return [r for r in records if isinstance(r, Document)], [r for r in records if isinstance(r, Drop)]


def test_invalid_utf8_in_a_parquet_string_is_one_drop_the_other_rows_kept(tmp_path: Path) -> None:
    path = tmp_path / "the-stack.parquet"
    pq.write_table(stack_table(invalid_utf8_column([_code(n) for n in range(ROWS)], BAD_ROW)), path)
    docs, drops = read(StackCodeRecipe(), path)
    assert [d.reason for d in drops] == ["invalid_utf8"]
    assert drops[0].record == f"{path}: row {BAD_ROW}" and "content" in drops[0].detail
    assert sorted(int(d.meta["row"]) for d in docs) == [n for n in range(ROWS) if n != BAD_ROW]


def test_invalid_utf8_in_a_gsm8k_parquet_is_one_drop(tmp_path: Path) -> None:
    questions = [f"Tom has {n} apples and buys 3 more. How many apples does he have?" for n in range(ROWS)]
    answers = [f"He has {n}+3 = {n + 3} apples.\n#### {n + 3}" for n in range(ROWS)]
    path = tmp_path / "gsm8k.parquet"
    pq.write_table(pa.table({"question": invalid_utf8_column(questions, BAD_ROW), "answer": answers}), path)
    docs, drops = read(ReasoningRecipe(), path)
    assert [(d.reason, d.record) for d in drops] == [("invalid_utf8", f"{path}: row {BAD_ROW}")]
    assert len(docs) == ROWS - 1


def test_invalid_utf8_in_an_external_dataset_is_one_drop(tmp_path: Path) -> None:
    path = tmp_path / "ds.parquet"
    pq.write_table(pa.table({"text": invalid_utf8_column([f"text number {n}" for n in range(ROWS)], BAD_ROW)}), path)
    log = DropLog()
    texts = [t for batch in read_texts(DatasetFile(str(path), "ds.parquet", "parquet"), ReadOptions(), log)
             for t in batch.texts]
    assert dict(log.counts) == {"invalid_utf8": 1} and log.examples[0]["record"] == f"ds.parquet#{BAD_ROW}"
    assert len(texts) == ROWS - 1


def corrupt_middle_row_group(path: Path) -> None:
    """Overwrite the compressed pages of the middle row group's first column (zstd then fails on them)."""
    chunk = pq.ParquetFile(path).metadata.row_group(1).column(0)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    data = bytearray(path.read_bytes())
    data[start + 40:start + chunk.total_compressed_size - 5] = b"U" * (chunk.total_compressed_size - 45)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("recipe", [StackCodeRecipe(), ReasoningRecipe()], ids=["stack_code", "reasoning"])
def test_a_corrupt_row_group_is_one_drop_per_row_the_other_groups_kept(tmp_path: Path,
                                                                       recipe: StackCodeRecipe | ReasoningRecipe) -> None:
    """Both recipes read Parquet through the one row reader (sources.formats.rows.parquet_file_rows)."""
    path = tmp_path / "rows.parquet"
    table = stack_table([_code(n) * 20 for n in range(30)]) if isinstance(recipe, StackCodeRecipe) else pa.table({
        "question": [f"Tom has {n} apples and buys 3 more. How many apples does he have? " * 20 for n in range(30)],
        "answer": [f"He has {n}+3 = {n + 3} apples.\n#### {n + 3}" for n in range(30)]})
    pq.write_table(table, path, compression="zstd", row_group_size=10)
    corrupt_middle_row_group(path)
    docs, drops = read(recipe, path)
    assert [(d.reason, d.record) for d in drops] == [("corrupt_row_group", f"{path}: row {n}") for n in range(10, 20)]
    assert "row group 1" in drops[0].detail and len(docs) == 20


def test_a_corrupt_row_group_of_an_external_dataset_is_one_drop_per_row(tmp_path: Path) -> None:
    """tokenize-external reads Parquet through the same row reader: the groups around it are kept."""
    path = tmp_path / "ds.parquet"
    pq.write_table(pa.table({"text": [f"text number {n} " * 40 for n in range(30)]}), path,
                   compression="zstd", row_group_size=10)
    corrupt_middle_row_group(path)
    log = DropLog()
    batches = list(read_texts(DatasetFile(str(path), "ds.parquet", "parquet"), ReadOptions(), log))
    assert dict(log.counts) == {"corrupt_row_group": 10}
    assert log.examples[0]["record"] == "ds.parquet#10" and "row group 1" in log.examples[0]["detail"]
    assert [key for batch in batches for key in batch.keys] == [f"ds.parquet#{n}" for n in [*range(10), *range(20, 30)]]
    assert [len(batch.keys) for batch in batches] == [10, 10]  # a batch never spans two groups


def test_an_over_long_jsonl_line_is_one_drop_the_next_lines_kept(tmp_path: Path) -> None:
    rows = [{"content": _code(n), "max_stars_repo_path": f"src/h{n}.py", "max_stars_repo_name": "acme/h",
             "max_stars_repo_licenses": ["MIT"]} for n in range(5)]
    rows[2]["content"] = "x = 1\n" * 2_000_000  # 12 MB of content, ~14 MB escaped: over the line bound
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs, drops = read(StackCodeRecipe(), path)
    assert [(d.reason, d.record) for d in drops] == [("too_large", f"{path}: line 3")]
    assert drops[0].detail  # named in the manifest's errors
    assert len(docs) == 4


def _bomb(path: Path, rows: int, row_bytes: int) -> None:
    """One row group of ``rows`` rows of ``row_bytes`` each, as one dictionary value: a 1.5 KB file.

    The test itself holds one value (the dictionary); a reader that decodes the batch densely
    holds ``rows`` copies.
    """
    indices = [0] * rows + [1, 2, 3]  # and three ordinary files, kept
    content = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()),
                                             pa.array(["a" * row_bytes, _code(1), _code(2), _code(3)]))
    pq.write_table(stack_table(content), path, compression="zstd")


@pytest.mark.prefect
def test_parquet_of_huge_rows_stays_under_the_rss_bound(tmp_path: Path, prefect_api_url: str) -> None:
    path = tmp_path / "bomb.parquet"
    _bomb(path, rows=100, row_bytes=30 << 20)
    assert path.stat().st_size < 64 << 10
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PREFECT_API_URL": prefect_api_url}
    run = run_measured([sys.executable, "-m", "flows.stack_code", "--inputs", str(path), "--out", str(out),
                        "--runner", "sequential"], cwd=tmp_path, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.peak_rss_bytes <= MAX_RSS_BYTES, f"peak RSS {run.peak_rss_bytes / 2**30:.2f} GiB"
    _, rows = Manifest.for_output(out).query("SELECT reason, sum(count) FROM latest_drops GROUP BY reason")
    assert dict(rows) == {"too_large": 100}
    _, kept = Manifest.for_output(out).query("SELECT sum(docs_kept) FROM latest_inputs")
    assert kept[0][0] == 3
    _, errors = Manifest.for_output(out).query("SELECT count(*) FROM errors WHERE reason = 'too_large'")
    assert errors[0][0] >= 1
