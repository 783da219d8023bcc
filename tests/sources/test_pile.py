"""The Pile reader: real ``*.jsonl.zst`` shards, bad lines counted, truncated shards survived."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.document import Document, Drop, InputSpec
from core.steps import StepStats, run_steps
from sources.formats.pile import PileLine, PileRecipe, iter_pile


def write_pile(path: Path, lines: list[bytes], frames: int = 1) -> Path:
    """A real Pile shard: JSON lines, zstd-compressed, optionally as several concatenated frames."""
    compressor = zstandard.ZstdCompressor(level=3)
    size = max(1, len(lines) // frames)
    chunks = [lines[i : i + size] for i in range(0, len(lines), size)] or [[]]
    path.write_bytes(b"".join(compressor.compress(b"".join(line + b"\n" for line in chunk)) for chunk in chunks))
    return path


def pile_line(text: str, set_name: str = "Pile-CC") -> bytes:
    return json.dumps({"text": text, "meta": {"pile_set_name": set_name}}).encode()


def test_round_trip_with_addresses(tmp_path: Path) -> None:
    shard = write_pile(tmp_path / "00.jsonl.zst", [pile_line(f"document {i}\nsecond line", "ArXiv") for i in range(50)],
                       frames=4)
    items = list(iter_pile(shard))
    assert all(isinstance(i, PileLine) for i in items)
    assert [i.line for i in items] == list(range(1, 51))
    assert items[7].text == "document 7\nsecond line" and items[7].pile_set_name == "ArXiv"
    assert items[7].address == "00.jsonl.zst:8"


def test_bad_lines_are_counted_with_reasons(tmp_path: Path) -> None:
    lines = [
        pile_line("good one"),
        b'{"text": "caf\xe9 latin-1 bytes", "meta": {}}',
        b"{not json",
        json.dumps({"meta": {"pile_set_name": "x"}}).encode(),
        json.dumps({"text": 42}).encode(),
        pile_line("   "),
        b"",
        b'{"text": "lone \\ud800 surrogate"}',
        json.dumps({"text": "no meta"}).encode(),
    ]
    items = list(iter_pile(write_pile(tmp_path / "01.jsonl.zst", lines)))
    drops = {i.record: i.reason for i in items if isinstance(i, Drop)}
    assert drops == {"01.jsonl.zst:2": "invalid_utf8", "01.jsonl.zst:3": "bad_json", "01.jsonl.zst:4": "missing_text",
                     "01.jsonl.zst:5": "missing_text", "01.jsonl.zst:6": "empty_text", "01.jsonl.zst:7": "empty_line",
                     "01.jsonl.zst:8": "invalid_unicode"}
    kept = [i for i in items if isinstance(i, PileLine)]
    assert [(k.line, k.pile_set_name) for k in kept] == [(1, "Pile-CC"), (9, "unknown")]


def test_lines_the_fast_parser_refuses_are_read_as_json_reads_them(tmp_path: Path) -> None:
    """orjson parses the lines; what it refuses (NaN, integers beyond 64 bits) or reads its own way
    (duplicate keys) must come out as the standard library's ``json`` reads it."""
    lines = [b'{"text": "nan score", "score": NaN}', b'{"text": "big", "n": 123456789012345678901234567890}',
             b'{"text": "\\ud83d\\ude00 pair", "meta": {"pile_set_name": "A", "pile_set_name": "B"}}',
             b'{"text": "first", "text": "last wins"}']
    items = list(iter_pile(write_pile(tmp_path / "02.jsonl.zst", lines)))
    assert [(i.text, i.pile_set_name) for i in items if isinstance(i, PileLine)] == [
        ("nan score", "unknown"), ("big", "unknown"), ("\U0001f600 pair", "B"), ("last wins", "unknown")]


def test_a_line_nested_past_the_stack_is_one_bad_json_drop(tmp_path: Path) -> None:
    deep = b'{"text": "deep", "meta": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    lines = [pile_line("before"), deep, pile_line("after")]
    items = list(iter_pile(write_pile(tmp_path / "03.jsonl.zst", lines)))
    assert [(i.reason, i.record) for i in items if isinstance(i, Drop)] == [("bad_json", "03.jsonl.zst:2")]
    assert [i.text for i in items if isinstance(i, PileLine)] == ["before", "after"]


def test_truncated_shard_keeps_what_was_readable(tmp_path: Path) -> None:
    full = write_pile(tmp_path / "full.jsonl.zst", [pile_line(f"text number {i} " * 50) for i in range(400)], frames=8)
    cut = tmp_path / "02.jsonl.zst"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    items = list(iter_pile(cut))
    assert isinstance(items[-1], Drop) and items[-1].reason == "truncated_input" and items[-1].is_error
    assert "02.jsonl.zst" in items[-1].detail
    good = [i for i in items if isinstance(i, PileLine)]
    assert 50 < len(good) < 400 and [g.line for g in good] == list(range(1, len(good) + 1))


def test_corrupt_shard_is_one_drop(tmp_path: Path) -> None:
    bad = tmp_path / "03.jsonl.zst"
    bad.write_bytes(b"this is not zstd at all" * 10)
    items = list(iter_pile(bad))
    assert len(items) == 1 and items[0].reason == "truncated_input"


def test_recipe_accounts_for_every_line(tmp_path: Path) -> None:
    shard = write_pile(tmp_path / "04.jsonl.zst", [pile_line("a real document", "Github"), b"{oops", pile_line("another")])
    stats = StepStats()
    recipe = PileRecipe()
    docs = list(run_steps(recipe.read(InputSpec(str(shard), shard, "04")), recipe.steps(), stats))
    assert stats.records_in == 3 and stats.kept == 2 and stats.balanced()
    assert isinstance(docs[0], Document) and docs[0].meta == {"pile_set_name": "Github", "shard": "04.jsonl.zst", "line": 1}
    assert recipe.partition(docs[0]) == "Github" and docs[0].id.startswith("pile-")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), min_size=1).filter(str.strip), min_size=1, max_size=20))
def test_any_text_round_trips(tmp_path: Path, texts: list[str]) -> None:
    shard = write_pile(tmp_path / "rt.jsonl.zst", [pile_line(t) for t in texts], frames=3)
    assert [i.text for i in iter_pile(shard)] == texts


@pytest.mark.realdata
def test_real_mini_pile(realdata: Path) -> None:
    items = list(iter_pile(realdata / "pile" / "mini-pile-v1-format.DERIVED.jsonl.zst"))
    good = [i for i in items if isinstance(i, PileLine)]
    assert len(items) == 453 and len(good) >= 440
    assert len({g.pile_set_name for g in good}) >= 3


def test_lines_spanning_decompression_blocks(tmp_path: Path, monkeypatch) -> None:
    import core.pile_format as pile

    texts = ["x" * 50, "short", "y" * 120]
    shard = write_pile(tmp_path / "05.jsonl.zst", [pile_line(t) for t in texts])
    monkeypatch.setattr(pile, "_READ_SIZE", 7)  # compressed blocks of 7 bytes: lines cross many blocks
    assert [i.text for i in iter_pile(shard)] == texts
