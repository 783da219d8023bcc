"""Fault injection, JSON-lines sources (the Pile's ``.jsonl.zst``, released C4's ``.json.gz``).

Shards are written with :mod:`json` and the codecs' own libraries. The independent truth for a
cut shard is what the codec itself can still decode from the cut bytes (an incremental
decompressor fed everything): every complete line in it must be a record, plus exactly one
``truncated_input`` for the cut, never two and never none.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.document import Document, Drop, InputSpec
from sources.c4 import C4Recipe, read_c4_json
from sources.formats.pile import PileRecipe

LINES = 2500


def jsonl(count: int = LINES) -> bytes:
    rows = [{"text": f"Document {n}: the lighthouse keepers wrote their logbooks by lamplight.",
             "meta": {"pile_set_name": "Pile-CC"}, "url": f"https://example.org/{n}", "timestamp": "2019-04-25"}
            for n in range(1, count + 1)]
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def zst(data: bytes) -> bytes:
    """Several frames, as the Pile's shards have (a cut can fall inside or between them)."""
    compressor = zstandard.ZstdCompressor(level=3)
    third = len(data) // 3
    return b"".join(compressor.compress(data[i:i + third]) for i in range(0, len(data), third))


def decodable(cut: bytes, suffix: str) -> bytes:
    """Everything the codec can decode from ``cut`` (the truth a reader is held to)."""
    if suffix == ".gz":
        return zlib.decompressobj(wbits=31).decompress(cut)
    out, context, rest = [], zstandard.ZstdDecompressor(), cut
    while rest:
        frame = context.decompressobj()
        out.append(frame.decompress(rest))
        if not frame.eof:
            break
        rest = frame.unused_data
    return b"".join(out)


def read(recipe: C4Recipe | PileRecipe, path: Path) -> tuple[list[Document], list[Drop]]:
    records = list(recipe.read(InputSpec(str(path), path, path.name)))
    return [r for r in records if isinstance(r, Document)], [r for r in records if isinstance(r, Drop)]


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fraction=st.floats(0.01, 0.999), family=st.sampled_from(["pile", "c4"]))
@example(fraction=0.9986716918609138, family="pile")  # between the last two frames, inside the last line (found by CI)
def test_cut_anywhere_keeps_every_decodable_line_and_counts_the_cut_once(
        tmp_path_factory: pytest.TempPathFactory, fraction: float, family: str) -> None:
    directory = tmp_path_factory.mktemp(family)
    data = jsonl()
    suffix, whole = (".zst", zst(data)) if family == "pile" else (".gz", gzip.compress(data, mtime=0))
    cut = whole[: int(len(whole) * fraction)]
    path = directory / f"00.jsonl{suffix}"
    path.write_bytes(cut)
    docs, drops = read(PileRecipe() if family == "pile" else C4Recipe(), path)
    complete = decodable(cut, suffix).count(b"\n")
    decoded = decodable(cut, suffix)
    if suffix == ".zst" and decoded == data[: len(decoded)] and _between_frames(cut):
        # a cut between frames is a valid, shorter file; only its last line can be cut short (frames
        # need not end at a newline), and then it is one bad line, named, like any other
        tail = decoded.rsplit(b"\n", 1)[-1]
        whole_line = tail == data.split(b"\n")[complete]
        assert len(docs) == complete + (1 if tail and whole_line else 0)
        expected = [] if not tail or whole_line else [("bad_json", f"{path.name}:{complete + 1}")]
        assert [(d.reason, d.record) for d in drops] == expected
        return
    assert [d.reason for d in drops] == ["truncated_input"], drops
    assert len(docs) == complete  # every line the codec can give back is kept, none after the cut
    assert [int(d.text.split(":")[0].split()[1]) for d in docs] == list(range(1, complete + 1))


def _between_frames(cut: bytes) -> bool:
    context, rest = zstandard.ZstdDecompressor(), cut
    while rest:
        frame = context.decompressobj()
        frame.decompress(rest)
        if not frame.eof:
            return False
        rest = frame.unused_data
    return True


def test_bad_lines_in_the_middle_cost_one_record_each(tmp_path: Path) -> None:
    lines = jsonl(100).split(b"\n")
    lines[40] = b'{"text": "broken \xff\xfe utf-8"}'
    lines[60] = b'{"text": "unterminated'
    data = b"\n".join(lines)
    for recipe, path in ((PileRecipe(), tmp_path / "00.jsonl.zst"), (C4Recipe(), tmp_path / "c4-train.json.gz")):
        path.write_bytes(zst(data) if path.suffix == ".zst" else gzip.compress(data, mtime=0))
        docs, drops = read(recipe, path)
        assert len(docs) == 98 and len(drops) == 2, (recipe, drops)
        assert [d.record.rsplit(":", 1)[-1].strip().removeprefix("line ") for d in drops] == ["41", "61"]


def test_huge_c4_line_is_one_drop_and_never_held(tmp_path: Path) -> None:
    lines = jsonl(20).split(b"\n")
    lines[9] = json.dumps({"text": "x" * 3_000_000}).encode()
    path = tmp_path / "c4-train.00000-of-01024.json.gz"
    path.write_bytes(gzip.compress(b"\n".join(lines), mtime=0))
    records = list(read_c4_json(path, str(path), max_line_bytes=1 << 20))
    assert [r.reason if isinstance(r, Drop) else "kept" for r in records] == ["kept"] * 9 + ["too_large"] + [
        "kept"] * 10
    assert "line 10" in records[9].record
