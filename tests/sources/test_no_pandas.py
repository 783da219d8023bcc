"""Staging an input (read, clean, write staging shards and hashes) imports no pandas.

pyarrow imports pandas the first time ``pa.array``, ``pa.table``, ``pa.Table.from_pylist``,
``pa.scalar``, ``to_numpy`` or ``pyarrow.dataset`` is used: ~0.25 CPU-s of every worker process,
for nothing a reader needs. The readers stage their sample inputs in one fresh process, in turn
(``benchmarks/_stage_samples.py``); the first whose staging brings pandas in is named, with the
lines that did it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from flows.registry import SOURCES

#: Readers of JSON lines (gzip, zstd NDJSON with a bad line: reddit's slow path), Parquet, 7z XML
#: (StackExchange's row spill), plain text and tar archives.
READERS = ["c4", "github", "stackexchange", "dialogue", "stack_code", "reasoning", "dm_math", "books"]
STAGE_SAMPLES = Path(__file__).resolve().parents[2] / "benchmarks" / "_stage_samples.py"


def test_staging_imports_no_pandas(tmp_path: Path) -> None:
    inputs = {name: SOURCES[name].sample(tmp_path / name) for name in READERS}  # type: ignore[misc]
    done = subprocess.run([sys.executable, str(STAGE_SAMPLES), json.dumps(inputs), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
