"""Fault injection, GSM8K JSON lines (issue 24 items 7 and 11): linear parsing, drops that name their row.

The file is real GSM8K JSON lines written by :mod:`json`; the pathological answer is the one
that made ``^####\\s*(.+?)\\s*$`` quadratic (``#### 1``, 95,000 spaces, ``x``: ~30 CPU-s a row).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from core.document import Document, Drop, InputSpec
from sources.reasoning import ReasoningRecipe, ReasoningSettings, RowBound, parse_answer, row_record

SLOW_ANSWER = "He has 2 apples.\n#### 1" + " " * 95_000 + "x"

def _row(n: int) -> dict[str, str]:
    return {"question": f"Tom has {n} apples and buys 3 more. How many apples does he have?",
            "answer": f"He buys 3, so {n}+3 = <<{n}+3={n + 3}>>{n + 3}.\n#### {n + 3}"}

def _read(path: Path, settings: ReasoningSettings | None = None) -> tuple[list[Document], list[Drop]]:
    recipe = ReasoningRecipe(settings or ReasoningSettings())
    records = list(recipe.read(InputSpec(str(path), path, path.name)))
    return [r for r in records if isinstance(r, Document)], [r for r in records if isinstance(r, Drop)]

def test_the_final_line_parses_in_linear_time() -> None:
    started = time.process_time()
    for _ in range(5):
        solution = parse_answer(SLOW_ANSWER)
    spent = time.process_time() - started
    assert not isinstance(solution, str) and solution.answer == "1" + " " * 95_000 + "x"
    assert spent < 1.0, f"5 pathological rows took {spent:.1f} CPU-s (was ~150 with the regex)"

def test_pathological_rows_are_read_with_the_rows_around_them(tmp_path: Path) -> None:
    rows = [_row(1), {"question": "Q?", "answer": SLOW_ANSWER}, _row(2), {"question": "Q?", "answer": SLOW_ANSWER},
            _row(3)]
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    started = time.process_time()
    docs, drops = _read(path)
    assert time.process_time() - started < 10.0
    assert drops == [] and len(docs) == 5
    # released data names the file, not the local path (issue 34 item 2); drops still say where it was read
    assert [d.meta["input"] for d in docs] == [f"{path.name}: line {n}" for n in range(1, 6)]

def test_too_large_and_no_final_answer_name_their_row_in_errors(tmp_path: Path) -> None:
    rows = [_row(1), {"question": "Q?", "answer": "x" * 200_000 + "\n#### 2"},
            {"question": "Q?", "answer": "no final line here"}, _row(2)]
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs, drops = _read(path)
    assert len(docs) == 2
    assert [(d.reason, d.record) for d in drops] == [("too_large", f"{path}: line 2"),
                                                     ("no_final_answer", f"{path}: line 3")]
    assert all(d.is_error and d.record in d.detail for d in drops)  # an errors row names the record

def test_an_over_long_line_is_one_drop_never_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps(_row(1)) + "\n" + json.dumps({"question": "Q?", "answer": "y" * 3_000_000}) + "\n"
                    + json.dumps(_row(2)) + "\n")
    docs, drops = _read(path)
    assert len(docs) == 2 and [(d.reason, d.record) for d in drops] == [("too_large", f"{path}: line 2")]

def test_a_large_row_is_formatted_in_the_bounded_helper_like_inline() -> None:
    row = {"question": "Q?", "answer": "step " * 14_000 + "\n#### 7"}  # 70 K characters: over the inline size
    settings = ReasoningSettings()

    bound = RowBound(settings)
    helped = bound.run(row, "mem: line 1")
    assert isinstance(helped, Document) and bound._cleaner is not None  # went to the helper
    assert helped == row_record(row, "mem: line 1", settings)
