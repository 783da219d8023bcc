"""Label and reference-index parts resume through core.markers.Marker: a marker whose outputs are gone is not trusted.

Real files: Pile shards written with zstandard, document shards by the pipeline's ShardWriter,
parts and class shards by the code under test. Each case damages an output and checks that the
work is done again, with the same bytes as the first time (resume never changes output).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import zstandard

from core.atomic import sha256_file
from core.document import Document
from core.markers import OUTPUTS, PROMISED_DOCS
from core.shards import ShardLimits, ShardWriter
from dedupe.labels import LabelJob, label_marker, label_shard
from dedupe.lsh import BandLayout
from dedupe.minhash import MinHashConfig
from dedupe.reference import ReferenceIndex, index_pile_shard, sign_document_shard

LAYOUTS = [BandLayout.named("0.8"), BandLayout.named("0.9")]


def _words(rnd: random.Random, n: int = 120) -> str:
    return " ".join(f"{rnd.choice('bdfgklmnprst')}{rnd.choice('aeiou')}{rnd.randrange(4000)}" for _ in range(n))


def _pile(path: Path, texts: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"text": t, "meta": {"pile_set_name": "Github"}}).encode() + b"\n" for t in texts]
    path.write_bytes(zstandard.ZstdCompressor().compress(b"".join(lines)))
    return path


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".json")}


def test_index_part_marker_names_every_file_and_rebuilds_a_damaged_part(tmp_path: Path) -> None:
    rnd = random.Random(7)
    shard = _pile(tmp_path / "pile" / "00.jsonl.zst", [_words(rnd) for _ in range(12)])
    index = ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), LAYOUTS)
    (plan,) = index.plan([shard])
    record = index_pile_shard(shard, index.root, plan[1], plan[2], index.minhash, index.layouts)
    marker = json.loads((index.root / "parts" / f"{plan[2]}.json").read_text())
    named = {o["path"] for o in marker[OUTPUTS]}
    assert named == set(_files(index.root)) and len(named) == 2 + sum(lay.bands for lay in LAYOUTS)
    assert marker[PROMISED_DOCS] == record["count"] == 12 and marker["record"] == record
    first = _files(index.root)

    again = index_pile_shard(shard, index.root, plan[1], plan[2], index.minhash, index.layouts)
    assert again == record  # trusted: nothing rebuilt (seconds would differ otherwise)
    band = index.root / "bands" / "5x25" / "band=03" / f"{plan[2]}.parquet"
    band.unlink()  # one band file lost: the part is not finished any more
    rebuilt = index_pile_shard(shard, index.root, plan[1], plan[2], index.minhash, index.layouts)
    assert band.is_file() and _files(index.root) == first
    assert {k: v for k, v in rebuilt.items() if k != "seconds"} == {k: v for k, v in record.items() if k != "seconds"}


def test_document_part_marker_is_keyed_by_first_number(tmp_path: Path) -> None:
    rnd = random.Random(8)
    out = tmp_path / "data"
    with ShardWriter(out, out / "docs" / "github" / "en", "input", "github", "en") as writer:
        for i in range(5):
            writer.write(Document(f"g{i}", _words(rnd), "github", {"language": "en"}))
    rel = writer.finished[0].path
    work = tmp_path / "work"
    first = sign_document_shard(out, rel, work, "000000", 0, MinHashConfig(), LAYOUTS[:1])
    assert first["count"] == 5
    (work / "signatures" / "000000.u32").write_bytes(b"")  # cut: the signatures are gone
    moved = sign_document_shard(out, rel, work, "000000", 10, MinHashConfig(), LAYOUTS[:1])
    assert moved["first"] == 10 and (work / "signatures" / "000000.u32").stat().st_size == 5 * 128 * 4
    docs = pq.read_table(work / "docs" / "000000.parquet").column("doc").to_pylist()
    assert docs == [10, 11, 12, 13, 14]


def test_label_marker_is_not_trusted_once_a_class_shard_is_gone(tmp_path: Path) -> None:
    rnd = random.Random(9)
    out = tmp_path / "data"
    with ShardWriter(out, out / "docs" / "wikipedia" / "en", "input", "wikipedia", "en") as writer:
        for i in range(4):
            writer.write(Document(f"w{i}", _words(rnd), "wikipedia", {"language": "en"}))
    info = writer.finished[0].to_dict()
    job = LabelJob(("wikipedia",), (), True, "cfg", ShardLimits(), require_dedup=False, release=False)
    result = label_shard(out, info, job)
    assert result.error is None and result.counts == {"llama": 4}
    (class_shard,) = result.shards
    fingerprint = {"docs": info["sha256"], "attributes": None, "config": "cfg"}
    marker = label_marker(out, info["path"], fingerprint)
    assert marker.load(out) is not None and marker.read() is not None
    assert marker.read()[PROMISED_DOCS] == 4  # type: ignore[index]
    before = (out / class_shard["path"]).read_bytes()
    (out / class_shard["path"]).unlink()
    assert marker.load(out) is None  # the marker alone no longer says "done"
    again = label_shard(out, info, job)
    assert again.error is None and (out / class_shard["path"]).read_bytes() == before
    assert sha256_file(out / class_shard["path"]) == class_shard["sha256"]
    assert label_marker(out, info["path"], {**fingerprint, "config": "other"}).load(out) is None
