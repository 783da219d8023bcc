"""Two Dask workers build the same reference index as one: every file of every part, byte for byte.

Issue 22 asks for the Pile index to be built "in parallel on Dask workers with the same bytes as a
sequential build". The builds run as a user runs them, ``python -m flows.pile_index --inputs ...
--index ... --runner dask --workers N``, on Pile shards of uneven sizes (so the two workers finish
their parts out of order and the flow commits them as they come back), one with a broken line
(a counted drop that the part's record carries). Signatures, docs tables and band keys must be
equal bytes; the JSON records (``index.json``, ``parts/<part>.json``) equal after removing the
one field that measures the run instead of the data: each part's build ``seconds``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard

from tests.time_limits import timeout_for

pytestmark = pytest.mark.prefect
pytest.importorskip("prefect_dask")
REPO = Path(__file__).resolve().parents[2]

#: The fields of a part's record that measure the run (wall time), not what was built.
RUN_FIELDS = {"seconds"}
#: Documents per shard: uneven, and more shards than workers.
SHARD_DOCS = (90, 12, 55, 30)
SUBSETS = ("Pile-CC", "ArXiv", "Github", "PubMed Abstracts")


def write_shards(folder: Path) -> list[Path]:
    """Pile-format ``NN.jsonl.zst`` shards (streamed zstd frames); shard 01 holds a broken line."""
    rnd = random.Random(22)
    vocabulary = [f"{rnd.choice('bdfgklmnprst')}{rnd.choice('aeiou')}{n}" for n in range(3000)]
    folder.mkdir(parents=True)
    shards = []
    for number, count in enumerate(SHARD_DOCS):
        shard = folder / f"{number:02d}.jsonl.zst"
        with shard.open("wb") as raw, zstandard.ZstdCompressor(level=3).stream_writer(raw) as out:
            for line in range(count):
                text = " ".join(rnd.choices(vocabulary, k=rnd.randint(20, 900)))
                out.write(json.dumps({"text": text, "meta": {"pile_set_name": rnd.choice(SUBSETS)}}).encode() + b"\n")
                if number == 1 and line == 5:
                    out.write(b'{"text": "cut off\n')
        shards.append(shard)
    return shards


def start_build(pile: Path, index: Path, workers: int, env: dict[str, str]) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "flows.pile_index", "--inputs", str(pile / "*.jsonl.zst"), "--index", str(index),
            "--runner", "dask", "--workers", str(workers)]
    return subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def without_run_fields(name: str, content: bytes) -> dict[str, Any]:
    """A JSON record of the index (``index.json`` or a part's marker) less each part's :data:`RUN_FIELDS`,
    which every part record must hold (nothing else is taken out)."""
    record = json.loads(content)
    for part in record["parts"] if name == "index.json" else [record["record"]]:
        assert set(part) >= RUN_FIELDS, f"{name}: {part}"
        for run_field in RUN_FIELDS:
            del part[run_field]
    return record


def files_of(index: Path) -> list[str]:
    return sorted(path.relative_to(index).as_posix() for path in index.rglob("*") if path.is_file())


@timeout_for(600)  # its subprocess's limit (tests/time_limits.py)
def test_two_dask_workers_build_the_bytes_of_one(tmp_path: Path, prefect_api_url: str) -> None:
    pile = tmp_path / "pile"
    shards = write_shards(pile)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PREFECT_API_URL": prefect_api_url}
    indexes = {workers: tmp_path / f"index-{workers}" for workers in (1, 2)}
    builds = {workers: start_build(pile, index, workers, env) for workers, index in indexes.items()}
    for workers, build in builds.items():
        output, _ = build.communicate(timeout=600)
        assert build.returncode == 0, f"--workers {workers} failed:\n{output[-3000:]}"
        assert f"{len(shards)} parts, {sum(SHARD_DOCS)} documents" in output

    one, two = indexes[1], indexes[2]
    names = files_of(one)
    assert names == files_of(two)
    meta = json.loads((one / "index.json").read_text(encoding="utf-8"))
    parts = [p["part"] for p in meta["parts"]]
    assert parts == [f"{n:05d}-{s.name}" for n, s in enumerate(shards)]
    bands = sum(bands for bands, _, _ in meta["layouts"])
    for part in parts:  # each part's signatures, docs table, marker and band keys of every layout
        assert {f"signatures/{part}.u16", f"docs/{part}.parquet", f"parts/{part}.json"} <= set(names)
        assert sum(name.startswith("bands/") and name.endswith(f"/{part}.parquet") for name in names) == bands

    records = 0
    for name in names:
        left, right = (one / name).read_bytes(), (two / name).read_bytes()
        if name == "index.json" or name.startswith("parts/"):
            assert without_run_fields(name, left) == without_run_fields(name, right), name
            records += 1
        else:
            assert left == right, f"{name} differs between 1 and 2 Dask workers"
    assert records == len(shards) + 1

    assert meta["documents"] == sum(SHARD_DOCS)
    assert [p["drops"] for p in meta["parts"]] == [{}, {"bad_json": 1}, {}, {}]
