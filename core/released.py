"""Released shards: a document shard deleted because its documents now live, once, in their final form.

The label stage splits each final document shard (``docs/…``) into the shards of its membership
classes (``labeled/<class>/…``). Keeping both would store and ship every document twice, so
once the class shards are written the ``docs/`` shard is *released*: deleted, with a record of
what it was and where its documents went:

``<out>/_state/released/<shard>.json``: ``path``, ``sha256``, ``bytes``, ``docs``, ``source``,
``language``, ``into`` (the class shards, each ``path``/``bytes``/``sha256``), ``dropped``
(documents that went to no class: duplicates) and ``order``: which class held each document
position, run-length encoded (``[["llama", 120], [null, 1], ["filtered", 3], ...]``; null: dropped
unstored). With it the shard's document stream can be rebuilt, in its original order, from the
class shards (:func:`released_documents`), so a label run with a new threshold re-labels a
released shard without re-running its source (:mod:`dedupe.labels`).

A stage that checks whether its outputs are still there (a source's resume marker lists its
``docs/`` shards) asks :func:`shard_intact`, which accepts a released shard whose class shards
are intact; the manifest moves the row from ``shards`` to ``released`` (:data:`core.manifest.RELEASED_SQL`),
so every count over ``shards`` sees each document once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.atomic import write_json_atomic
from core.layout import slug

if TYPE_CHECKING:
    from core.document import Document

RELEASED_DIR = ("_state", "released")


def release_record_path(out: Path, shard_path: str) -> Path:
    """Where the release record of one ``docs/`` shard lives."""
    return out.joinpath(*RELEASED_DIR) / f"{slug(shard_path)}.json"


def read_release(out: Path, shard_path: str) -> dict[str, Any] | None:
    """The release record of a shard, or None (never released, or the record is unreadable)."""
    path = release_record_path(out, shard_path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("path") == shard_path else None


def _file_intact(out: Path, entry: dict[str, Any]) -> bool:
    target = out / entry["path"]
    return target.is_file() and target.stat().st_size == int(entry["bytes"])


def released_intact(out: Path, record: dict[str, Any]) -> bool:
    """True when every class shard the released documents went to is still on disk, same size."""
    return all(_file_intact(out, entry) for entry in record.get("into", []))


def shard_intact(out: Path, shard: dict[str, Any]) -> bool:
    """A shard (``path``, ``bytes``; ``sha256`` when known) is on disk, or released with its documents intact."""
    if _file_intact(out, shard):
        return True
    record = read_release(out, shard["path"])
    if record is None or int(record["bytes"]) != int(shard["bytes"]):
        return False
    if shard.get("sha256") and record["sha256"] != shard["sha256"]:
        return False
    return released_intact(out, record)


def release_record(shard: dict[str, Any], into: Sequence[dict[str, Any]], dropped: int,
                   order: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
    """The release record of a shard whose documents went ``into`` these class shards (see the module docstring)."""
    record = {
        "path": shard["path"], "sha256": shard["sha256"], "bytes": int(shard["bytes"]), "docs": int(shard["docs"]),
        "text_bytes": int(shard.get("text_bytes") or 0), "source": shard["source"], "language": shard.get("language"),
        "into": [{"path": s["path"], "bytes": int(s["bytes"]), "sha256": s["sha256"]} for s in into],
        "dropped": int(dropped),
    }
    if order is not None:
        record["order"] = [[cls, int(n)] for cls, n in order]
    return record


def write_release(out: Path, shard: dict[str, Any], into: Sequence[dict[str, Any]], dropped: int,
                  order: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
    """Record a shard's release (call before deleting it, so a crash leaves the shard, not a gap)."""
    record = release_record(shard, into, dropped, order)
    write_json_atomic(release_record_path(out, shard["path"]), record)
    return record


def _class_of(path: str) -> str:
    """The class of a class shard ``labeled/<class>/...``."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 else ""


def released_documents(out: Path, record: dict[str, Any]) -> Iterator[Document | None]:
    """A released shard's documents in their original order, read from its class shards (None where a
    document was dropped unstored); raises ``ValueError`` when the class shards disagree with ``order``."""
    # pyarrow: only a re-label reads shards, and core.markers (every flow's --help) imports this module
    from core.shards import read_documents

    shards: dict[str, list[str]] = {}
    for entry in record.get("into", []):
        shards.setdefault(_class_of(entry["path"]), []).append(entry["path"])
    streams = {cls: (doc for path in sorted(paths) for doc in read_documents(out / path)) for cls, paths in shards.items()}
    for cls, count in record["order"]:
        stream = streams.get(cls) if cls is not None else None
        for _ in range(int(count)):
            if cls is None:
                yield None
                continue
            doc = next(stream, None) if stream is not None else None
            if doc is None:
                raise ValueError(f"{record['path']}: class {cls} holds fewer documents than its release record says")
            yield doc
    if any(next(stream, None) is not None for stream in streams.values()):
        raise ValueError(f"{record['path']}: its class shards hold more documents than its release record says")


def release_records(out: Path) -> list[dict[str, Any]]:
    """Every release record under an output root, in path order."""
    base = out.joinpath(*RELEASED_DIR)
    records = []
    for path in sorted(base.glob("*.json")) if base.is_dir() else []:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and "path" in record:
            records.append(record)
    return sorted(records, key=lambda r: str(r["path"]))


def is_released(out: Path, shard_path: str) -> bool:
    """True when a shard's file is gone because it was released (a row for it must not come back)."""
    return not (out / shard_path).is_file() and read_release(out, shard_path) is not None


def recreated(out: Path) -> list[str]:
    """Released shards that are on disk again (their source ran again): a second copy to release.

    A stage runner that skips the label stage as finished must run it when this is not empty,
    or the corpus is stored twice until the next label run.
    """
    return [r["path"] for r in release_records(out) if (out / r["path"]).is_file()]
