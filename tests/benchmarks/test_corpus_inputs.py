"""The scale-input generators of benchmarks/corpus_inputs/ (issue 33 item 1): what the product reads.

Each generator's files must be read by the product's own reader as a worker reads them
(:func:`core.pipeline.stage_input`: read, clean, write the staging shards), keep documents, be the
same bytes for the same arguments wherever they are written, and reach the size asked for. Small
sizes (a few hundred KB each) keep this file to seconds.
"""

from __future__ import annotations

import gzip
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from core.config import deep_merge, stage_yaml
from core.document import InputSpec
from core.pipeline import RunContext, stage_input
from flows.registry import SOURCES
from sources.c4 import C4Recipe

# ``benchmarks.corpus_inputs`` imports from the repository root (appended: it shadows nothing; the
# benchmarks/ folder itself never goes on the path, tests/benchmark_modules.py says why).
ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.append(ROOT)

SIZES = {"c4": 300_000, "github": 300_000, "wikipedia": 600_000, "books": 300_000, "arxiv": 400_000,
         "stackexchange": 150_000}


def _write(source: str, directory: Path, size: int) -> list[str]:
    module: Any = importlib.import_module(f"benchmarks.corpus_inputs.{source}")
    return [str(p) for p in module.write(directory, size)]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    root = tmp_path_factory.mktemp("corpus-inputs")
    return {source: _write(source, root / source, size) for source, size in SIZES.items()}


def _c4_rows(files: list[str]) -> list[dict[str, str]]:
    rows = []
    for name in files:
        with gzip.open(name, "rt", encoding="utf-8") as handle:
            rows += [json.loads(line) for line in handle]
    return rows


def _bytes(files: list[str]) -> int:
    return sum(Path(f).stat().st_size for f in files)


@pytest.mark.parametrize("source", sorted(SIZES))
def test_the_source_reader_keeps_documents_from_every_file(source: str, written: dict[str, list[str]],
                                                           tmp_path: Path) -> None:
    spec = SOURCES[source]
    section = {"dumps": written[source]} if source == "wikipedia" else {"inputs": written[source]}
    config = spec.config.model_validate(deep_merge(stage_yaml(spec.default_yaml), {**section, "out": str(tmp_path)}))
    recipe = C4Recipe() if source == "c4" else config.recipe()  # type: ignore[attr-defined]  # released C4's
    ctx = RunContext(tmp_path, recipe.name, config.config_hash(), config.shards.limits(), recipe.name)
    for location in spec.locations(section):
        record = stage_input(recipe, InputSpec(location, Path(location), Path(location).name), ctx)
        assert record.status == "done", (location, record.error)
        assert record.docs_kept > 0, location
        assert record.records_in == record.docs_kept + record.docs_dropped


@pytest.mark.parametrize("source", sorted(SIZES))
def test_size_is_reached_and_not_far_passed(source: str, written: dict[str, list[str]]) -> None:
    size = SIZES[source]
    assert size <= _bytes(written[source]) <= size * 1.6 + 200_000


@pytest.mark.parametrize("source", ["c4", "stackexchange", "arxiv"])
def test_same_bytes_for_the_same_arguments_in_another_folder(source: str, written: dict[str, list[str]],
                                                             tmp_path: Path) -> None:
    again = _write(source, tmp_path / "else" / source, SIZES[source])
    assert [Path(p).name for p in again] == [Path(p).name for p in written[source]]
    assert all(Path(a).read_bytes() == Path(b).read_bytes() for a, b in zip(again, written[source], strict=True))


def test_c4_documents_vary_and_carry_the_planted_duplicates(written: dict[str, list[str]]) -> None:
    rows = _c4_rows(written["c4"])
    texts = [r["text"] for r in rows]
    assert list(rows[0]) == ["text", "timestamp", "url"]
    assert len(set(texts)) < len(texts)  # exact copies under other URLs are planted (1%)
    assert len(set(texts)) > 0.9 * len(texts)  # not one text tiled
    lengths = sorted(len(t) for t in texts)
    assert lengths[len(lengths) // 10] * 3 < lengths[-len(lengths) // 10]  # a spread of lengths, not one size


def test_pile_reference_copies_some_c4_texts(written: dict[str, list[str]], tmp_path: Path) -> None:
    import zstandard

    pile: Any = importlib.import_module("benchmarks.corpus_inputs.pile")

    files = pile.write(tmp_path / "pile", 300_000, written["c4"])
    lines = [json.loads(line) for f in files
             for line in zstandard.ZstdDecompressor().decompress(Path(f).read_bytes(), max_output_size=1 << 30).splitlines()]
    assert all(set(line) == {"text", "meta"} and "pile_set_name" in line["meta"] for line in lines)
    c4_texts = {row["text"] for row in _c4_rows(written["c4"])}
    assert any(line["text"] in c4_texts for line in lines)  # exact copies for the reference match to find


def test_pile_reference_streams_the_c4_input(written: dict[str, list[str]]) -> None:
    """The copies are picked row by row: the writer never holds all of C4's texts (it held 3.7 GB at 1 GB)."""
    import random
    import tracemalloc

    pile: Any = importlib.import_module("benchmarks.corpus_inputs.pile")
    rows = _c4_rows(written["c4"])
    text_bytes = sum(len(row["text"].encode("utf-8")) for row in rows)
    tracemalloc.start()
    try:
        copies = pile._c4_copies(written["c4"] * 8, random.Random(7))  # eight passes over the files
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0 < len(copies) < len(rows)  # about COPY_RATE of the 8x rows
    # the whole-list version traced more than all of the text read; streaming, the copies and a buffer
    assert peak < 8 * text_bytes / 4, f"{peak} bytes traced for {8 * text_bytes} bytes of C4 text read"
    rng = random.Random(7)  # the same draws as the whole-list version: the reference files keep their bytes
    expected = [row["text"] for row in rows * 8 if rng.random() < pile.COPY_RATE]
    assert copies == expected


def test_grown_stackexchange_sample_counts_each_questions_answers() -> None:
    """posts_xml counts answers in one pass (it scanned every post per question: 73 min at 600k posts)."""
    import re

    from sources.samples.stackexchange import Post, posts_xml

    posts = [Post(i, 1 if i % 3 == 1 else 2, "<p>b</p>", 1, "2010-01-01T00:00:00.000",
                  None if i % 3 == 1 else i - (i - 1) % 3, "t" if i % 3 == 1 else None) for i in range(1, 30_001)]
    posts.append(Post(30_001, 1, "<p>unanswered</p>", 0, "2010-01-01T00:00:00.000", title="none"))
    counts = re.findall(r'AnswerCount="(\d+)"', posts_xml(posts).decode("utf-8"))
    assert counts == ["2"] * 10_000 + ["0"]
