"""Release records: a deleted docs/ shard counts as intact only while its documents are intact elsewhere."""

from __future__ import annotations

from pathlib import Path

from core.document import Document
from core.released import is_released, read_release, recreated, shard_intact, write_release
from core.shards import ShardWriter


def _shard(out: Path, directory: str, ids: list[str]) -> dict:
    with ShardWriter(out, out / directory, "part", "wiki", "en") as writer:
        for doc_id in ids:
            writer.write(Document(doc_id, f"text of {doc_id} " * 10, "wiki", {"language": "en"}))
    return writer.finished[0].to_dict()


def test_released_shard_is_intact_while_its_class_shards_are(tmp_path: Path) -> None:
    docs = _shard(tmp_path, "docs/wiki/en", ["a", "b", "c"])
    labeled = _shard(tmp_path, "labeled/llama/wiki/en", ["a", "b"])
    assert shard_intact(tmp_path, docs) and not is_released(tmp_path, docs["path"])

    write_release(tmp_path, docs, [labeled], dropped=1)
    original = (tmp_path / docs["path"]).read_bytes()
    (tmp_path / docs["path"]).unlink()
    assert is_released(tmp_path, docs["path"]) and shard_intact(tmp_path, docs)
    assert read_release(tmp_path, docs["path"])["dropped"] == 1
    assert not shard_intact(tmp_path, {**docs, "sha256": "0" * 64})  # another shard under the same name
    assert not shard_intact(tmp_path, {**docs, "bytes": docs["bytes"] + 1})

    with open(tmp_path / labeled["path"], "ab") as handle:  # the only copy damaged: not intact any more
        handle.write(b"x")
    assert not shard_intact(tmp_path, docs)

    assert recreated(tmp_path) == []
    (tmp_path / docs["path"]).write_bytes(original)  # its source ran again
    assert recreated(tmp_path) == [docs["path"]] and not is_released(tmp_path, docs["path"])


def test_unreadable_or_foreign_record_is_no_release(tmp_path: Path) -> None:
    docs = _shard(tmp_path, "docs/wiki/en", ["a"])
    write_release(tmp_path, docs, [], dropped=0)
    record = tmp_path / "_state" / "released"
    only = next(record.glob("*.json"))
    only.write_text("{not json")
    (tmp_path / docs["path"]).unlink()
    assert read_release(tmp_path, docs["path"]) is None and not shard_intact(tmp_path, docs)
