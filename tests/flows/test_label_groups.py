"""Which label runs stay in the flow's process: small ones, one task per source, every shard once and in order."""

from __future__ import annotations

from typing import Any

from flows.label import INLINE_SHARDS, INLINE_TEXT_BYTES, inline_groups


def _shard(source: str, n: int, text_bytes: int = 1000) -> dict[str, Any]:
    return {"path": f"docs/{source}/en/in-{n:05d}.parquet", "source": source, "text_bytes": text_bytes}


def test_a_small_run_is_one_task_per_source_in_manifest_order() -> None:
    shards = [_shard("books", 0), _shard("books", 1), _shard("c4", 0), _shard("wikipedia", 0)]
    groups = inline_groups(shards)
    assert groups == {"books (2 shards)": shards[:2], "c4 (1 shard)": [shards[2]], "wikipedia (1 shard)": [shards[3]]}
    assert [s for group in groups.values() for s in group] == shards  # each shard once


def test_a_large_run_goes_to_the_runner_one_task_per_shard() -> None:
    assert inline_groups([_shard("c4", n) for n in range(INLINE_SHARDS)]) is not None
    assert inline_groups([_shard("c4", n) for n in range(INLINE_SHARDS + 1)]) is None  # too many shards
    assert inline_groups([_shard("c4", 0, INLINE_TEXT_BYTES)]) is not None
    assert inline_groups([_shard("c4", 0, INLINE_TEXT_BYTES), _shard("c4", 1, 1)]) is None  # too much text
    assert inline_groups([]) == {}
