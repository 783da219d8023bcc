"""Group line dedup: first occurrence wins across inputs, the result does not depend on the memory bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dedupe.lines import DuplicateMasks, UnitFiles, UnitHashWriter, hash_units, keep_unmarked, mark_duplicates


def write_input(stem: Path, documents: list[list[str]]) -> UnitFiles:
    files = UnitFiles(stem)
    writer = UnitHashWriter(files)
    for units in documents:
        writer.add(hash_units(units))
    writer.close()
    return files


def masks_of(files: list[UnitFiles]) -> list[list[list[bool]]]:
    return [[m.tolist() for m in DuplicateMasks(f)] for f in files]


def test_first_occurrence_kept_across_inputs(tmp_path: Path) -> None:
    a = write_input(tmp_path / "a", [["menu", "story one", "menu"], ["footer"]])
    b = write_input(tmp_path / "b", [["menu", "story two"], [], ["footer", "story one"]])
    stats = mark_duplicates([a, b], memory_bytes=1 << 20)
    assert stats.units == 8 and stats.duplicates == 4
    assert masks_of([a, b]) == [[[False, False, True], [False]], [[True, False], [], [True, True]]]
    assert keep_unmarked(["Menu", "Story two"], next(iter(DuplicateMasks(b)))) == ["Story two"]


def test_memory_bound_splits_into_buckets_with_the_same_result(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    docs = [[f"line {int(x)}" for x in rng.integers(0, 300, size=20)] for _ in range(60)]
    one = [write_input(tmp_path / f"one{i}", docs[i * 20:(i + 1) * 20]) for i in range(3)]
    many = [write_input(tmp_path / f"many{i}", docs[i * 20:(i + 1) * 20]) for i in range(3)]
    big = mark_duplicates(one, memory_bytes=1 << 30)
    small = mark_duplicates(many, memory_bytes=48 * 100)  # ~100 units per bucket
    assert big.buckets == 1 and small.buckets >= 10
    assert big.duplicates == small.duplicates == 1200 - len({u for d in docs for u in d})
    assert masks_of(one) == masks_of(many)


def test_stale_files_are_detected(tmp_path: Path) -> None:
    a = write_input(tmp_path / "a", [["x", "y"]])
    mark_duplicates([a], 1 << 20)
    write_input(tmp_path / "a", [["x", "y", "z"]])  # rewritten after marking
    with pytest.raises(ValueError, match="disagree"):
        DuplicateMasks(a)
    with pytest.raises(ValueError, match="text changed"):
        keep_unmarked(["x"], np.zeros(2, dtype=bool))


def test_empty_inputs(tmp_path: Path) -> None:
    a = write_input(tmp_path / "a", [])
    b = write_input(tmp_path / "b", [["only"]])
    assert mark_duplicates([a, b], 1 << 20).duplicates == 0
    assert masks_of([a, b]) == [[], [[False]]]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=6), max_size=12),
       st.integers(min_value=48, max_value=4800))
def test_matches_a_python_set(tmp_path_factory: pytest.TempPathFactory, docs: list[list[str]], memory: int) -> None:
    stem = tmp_path_factory.mktemp("prop") / "x"
    files = write_input(stem, docs)
    mark_duplicates([files], memory)
    seen: set[str] = set()
    expected = []
    for doc in docs:
        row = []
        for unit in doc:
            row.append(unit in seen)
            seen.add(unit)
        expected.append(row)
    assert masks_of([files]) == [expected]
