"""DuckDB's memory limit and spill folder are settings: a small limit spills and gives the same result.

Exact dedup (run-wide, per source) and the dedup flow's band joins run in DuckDB with a memory
limit; past it DuckDB writes to its spill folder. The tests run each with a limit far below the
working set: the output must equal the roomy run's, and pointing the spill folder at something
that is not a folder must fail, which shows the work really went through the configured folder.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core import pipeline
from core.layout import duplicates_path, staging_dir
from core.shards import ShardLimits
from flows.dedup import DedupConfig

ROWS = 200_000  # keys and ids of 400k staged documents: past a 64 MB limit once sorted


def _stage_hashes(out: Path, keys: list[str]) -> None:
    """Each input's ``hashes.parquet`` as staging writes it; every third key repeats an earlier one."""
    rng = np.random.default_rng(7)
    for key in keys:
        values = rng.integers(0, ROWS // 3, ROWS)
        hashes = [hashlib.sha256(int(v).to_bytes(8, "little")).digest() for v in values]
        table = pa.table({"ordinal": np.arange(ROWS, dtype=np.int64),
                          "id": [f"{key}-{i}" for i in range(ROWS)], "hash": hashes}, schema=pipeline.HASH_SCHEMA)
        target = staging_dir(out, "web", key) / "hashes.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, target)


def _dedup(out: Path, memory: str, spill: Path | None) -> tuple[dict[str, int], pa.Table]:
    ctx = pipeline.RunContext(out, "web", "cfg", ShardLimits(), "web", memory, spill)
    counts = pipeline.find_exact_duplicates(ctx, ["a", "b"])
    return counts, pq.read_table(duplicates_path(out, "web"))


def test_exact_dedup_spills_past_its_memory_limit_with_the_same_result(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _stage_hashes(out, ["a", "b"])
    roomy_counts, roomy = _dedup(out, "2GB", None)
    small_counts, small = _dedup(out, "64MB", tmp_path / "spill")
    assert small_counts == roomy_counts and sum(roomy_counts.values()) > ROWS
    assert small.equals(roomy)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the spill folder should be")
    with pytest.raises(duckdb.Error):  # the 16 MB run had to spill, and spills where it is told
        _dedup(out, "64MB", blocker / "spill")


def test_settings_are_validated_and_left_out_of_the_hash(tmp_path: Path) -> None:
    base = DedupConfig(out=tmp_path)
    tuned = DedupConfig(out=tmp_path, spill_dir=tmp_path / "fast-disk", exact_dedup_memory="512MB")
    assert tuned.config_hash() == base.config_hash()
    assert tuned.join_settings(tmp_path).temp_directory == tmp_path / "fast-disk"
    assert base.join_settings(tmp_path).temp_directory == tmp_path / "_dedup" / "duckdb_tmp"
    with pytest.raises(ValueError, match="not a memory size"):
        DedupConfig(out=tmp_path, exact_dedup_memory="lots")
