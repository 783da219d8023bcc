"""Fault injection, DeepMind Mathematics module files (issue 24 items 5 and 8).

The files are module files as released (question line, answer line, ``.txt`` and ``.txt.gz``)
with one line removed or one line blown up. The truth is the pairing of the intact file: every
pair the reader keeps must be one of the intact file's pairs, all pairs but the broken one are
kept, and the one drop names the broken pair's own line.
"""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import pytest

from core.document import Document, Drop
from sources.dmmath import DmMathSettings, iter_module_file

PAIRS = 60


def _pair(n: int) -> tuple[str, str]:
    kind = n % 3
    if kind == 0:
        return f"Solve {n + 2}*k - {n}*k - {2 * n + 4} = 0 for k.", f"{n + 2}"
    if kind == 1:
        return f"What is the greatest common divisor of {3 * n} and {6 * n}?", f"{3 * n}"
    return f"Let w = {n} + 4. Calculate the remainder when w is divided by 3.", f"{(n + 4) % 3}"


def _write(path: Path, lines: list[str]) -> Path:
    data = "".join(line + "\n" for line in lines).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data)
    return path


def _lines() -> list[str]:
    return [line for n in range(PAIRS) for line in _pair(n)]


def _pairs_kept(records: list[Document | Drop]) -> list[tuple[str, str]]:
    text = "".join(r.text for r in records if isinstance(r, Document))
    lines = text.splitlines()
    return list(zip(lines[0::2], lines[1::2], strict=True))


@pytest.mark.parametrize("name", ["algebra__linear_1d.txt", "algebra__linear_1d.txt.gz"])
def test_a_missing_answer_drops_its_question_alone_and_later_pairs_stay_aligned(tmp_path: Path, name: str) -> None:
    lines = _lines()
    del lines[2 * 20 + 1]  # the answer of pair 20 (question on line 41)
    path = _write(tmp_path / "train-easy" / name, lines)
    records = list(iter_module_file(path, DmMathSettings(chunk_chars=400)))
    drops = [r for r in records if isinstance(r, Drop)]
    assert [(d.reason, d.record) for d in drops] == [("unpaired_question", f"train-easy/{name}:41")]
    assert _pairs_kept(records) == [_pair(n) for n in range(PAIRS) if n != 20]


def test_a_missing_question_drops_its_answer_alone(tmp_path: Path) -> None:
    lines = _lines()
    del lines[2 * 30]  # the question of pair 30: its answer is now on line 61
    path = _write(tmp_path / "train-easy" / "numbers__gcd.txt", lines)
    records = list(iter_module_file(path, DmMathSettings(chunk_chars=400)))
    drops = [r for r in records if isinstance(r, Drop)]
    assert [(d.reason, d.record) for d in drops] == [("unpaired_answer", "train-easy/numbers__gcd.txt:61")]
    assert _pairs_kept(records) == [_pair(n) for n in range(PAIRS) if n != 30]


def test_an_over_long_line_is_one_drop_read_in_bounded_memory(tmp_path: Path) -> None:
    lines = _lines()
    lines[2 * 10] = "Solve " + "1 + " * 12_500_000 + "x = 0 for x."  # a 50 MB question line
    path = _write(tmp_path / "train-easy" / "algebra__linear_1d.txt.gz", lines)
    assert path.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        records = list(iter_module_file(path, DmMathSettings(chunk_chars=400)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    drops = [r for r in records if isinstance(r, Drop)]
    assert [(d.reason, d.record) for d in drops] == [("line_too_long", "train-easy/algebra__linear_1d.txt.gz:21")]
    assert _pairs_kept(records) == [_pair(n) for n in range(PAIRS) if n != 10]
    assert peak < 16 << 20, f"peak {peak / 2**20:.0f} MiB of Python allocations for a 50 MB line"
