"""A reference-index build killed with SIGKILL in the middle of a part resumes to the same bytes.

The build runs in a real child process (the code a ``flows.pile_index`` task runs, small batches
so a part spans several); the child stops after writing part of its second shard and is killed
there, with its temporary files open. A second run on the same directory must reuse the finished
part, rebuild the cut one, leave no temporary file, and produce every file byte for byte as a
build that was never interrupted.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.atomic import TMP_SUFFIX
from dedupe import reference
from dedupe.lsh import BandLayout
from dedupe.minhash import MinHashConfig
from dedupe.reference import ReferenceIndex, index_pile_shard
from tests.dedupe.test_reference import write_pile

BATCH = 8  # documents per batch, so each part is written in several steps
LAYOUTS = [BandLayout.named("0.7"), BandLayout.named("0.8")]

#: The child: builds the index like the flow (parts, then one commit) and, after two batches of
#: the second part, says so and waits to be killed with its files half written.
CHILD = """
import sys, time
from pathlib import Path
from dedupe import reference
from dedupe.lsh import BandLayout
from dedupe.minhash import MinHashConfig

root, ready, shards = Path(sys.argv[1]), Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]]
reference.BATCH_DOCS = %(batch)d
added = {"n": 0}
plain_add = reference.PartBuilder.add

def add_then_stop(self, texts, columns, encoded=None):
    plain_add(self, texts, columns, encoded)
    if self.part.startswith("00001"):
        added["n"] += 1
        if added["n"] == 2:
            self._sigs._handle.flush()
            ready.write_text(self.part)
            time.sleep(600)

reference.PartBuilder.add = add_then_stop
layouts = [BandLayout.named(n) for n in %(layouts)r]
index = reference.ReferenceIndex.open_or_create(root, MinHashConfig(), layouts)
parts = [reference.index_pile_shard(s, root, no, name, index.minhash, index.layouts)
         for s, no, name in index.plan(shards)]
index.commit(parts)
"""


def _build(root: Path, shards: list[Path]) -> ReferenceIndex:
    index = ReferenceIndex.open_or_create(root, MinHashConfig(), LAYOUTS)
    index.commit([index_pile_shard(s, root, no, name, index.minhash, index.layouts)
                  for s, no, name in index.plan(shards)])
    return index


def _contents(root: Path) -> dict[str, object]:
    """Every file's bytes; markers and index.json parsed, without the build's duration."""
    out: dict[str, object] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = path.relative_to(root).as_posix()
        if path.suffix == ".json":
            payload = json.loads(path.read_text(encoding="utf-8"))
            for record in [payload.get("record", {}), *payload.get("parts", [])]:
                record.pop("seconds", None)
            out[name] = payload
        else:
            out[name] = path.read_bytes()
    return out


def _kill_mid_part(root: Path, shards: list[Path], tmp_path: Path) -> str:
    ready = tmp_path / "ready"
    script = CHILD % {"batch": BATCH, "layouts": [str(layout.threshold) for layout in LAYOUTS]}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(reference.__file__).parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", script, str(root), str(ready), *map(str, shards)], env=env)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            if child.poll() is not None:
                pytest.fail(f"the build finished or failed (exit {child.returncode}) before it was killed")
            if time.monotonic() > deadline:
                pytest.fail("the build never reached the middle of its second part")
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    return ready.read_text()


def test_killed_build_resumes_to_the_same_bytes(tmp_path: Path, monkeypatch) -> None:
    rnd = random.Random(5)
    texts = [" ".join(f"w{rnd.randrange(3000)}" for _ in range(rnd.randrange(20, 300))) for _ in range(100)]
    shards = [write_pile(tmp_path / "pile" / "00.jsonl.zst", texts[:30]),
              write_pile(tmp_path / "pile" / "01.jsonl.zst", texts[30:])]
    monkeypatch.setattr(reference, "BATCH_DOCS", BATCH)
    clean = _build(tmp_path / "clean", shards)

    killed = tmp_path / "killed"
    cut = _kill_mid_part(killed, shards, tmp_path)
    left = {p.relative_to(killed).as_posix() for p in killed.rglob("*") if p.is_file()}
    assert "parts/00000-00.jsonl.zst.json" in left and f"parts/{cut}.json" not in left
    assert f"signatures/{cut}.u16{TMP_SUFFIX}" in left  # killed with the part half written
    assert (killed / f"signatures/{cut}.u16{TMP_SUFFIX}").stat().st_size == 2 * BATCH * 128 * 2
    assert ReferenceIndex.open(killed).parts == []  # nothing committed: the flow commits at the end

    first_part = (killed / "parts" / "00000-00.jsonl.zst.json").stat().st_mtime_ns
    resumed = _build(killed, shards)
    assert (killed / "parts" / "00000-00.jsonl.zst.json").stat().st_mtime_ns == first_part  # reused, not rebuilt
    assert not list(killed.rglob(f"*{TMP_SUFFIX}"))
    assert resumed.documents == clean.documents == 100
    assert _contents(killed) == _contents(tmp_path / "clean")
