"""Where the final documents are: ``docs/`` shards, or the class shards of released ones (one copy each).

Shards are written by the pipeline's ShardWriter, labeled and released by dedupe.labels, and the
release recorded by flows.label's own function, so the manifest rows are those a real run writes.
"""

from __future__ import annotations

import random
from pathlib import Path

from core.document import Document
from core.manifest import Manifest
from core.shards import ShardLimits, ShardWriter
from dedupe.labels import LabelJob, label_shard
from flows.label import record_releases


def _shard(out: Path, source: str, ids: list[str]) -> dict:
    rnd = random.Random(source)
    with ShardWriter(out, out / "docs" / source / "en", "input", source, "en") as writer:
        for doc_id in ids:
            writer.write(Document(doc_id, " ".join(str(rnd.random()) for _ in range(50)), source, {"language": "en"}))
    info = writer.finished[0].to_dict()
    Manifest.for_output(out).record_shards("seed", [info], "cfg", source, "test")
    return info


def test_stored_copies_and_final_shards_follow_releases(tmp_path: Path) -> None:
    out = tmp_path / "data"
    manifest = Manifest.for_output(out)
    github, books, web = _shard(out, "github", ["g1", "g2"]), _shard(out, "books", ["b1"]), _shard(out, "web", ["w1"])
    assert manifest.stored_copies() == [] and [s["path"] for s in manifest.final_shards()] == \
        [books["path"], github["path"], web["path"]]

    job = LabelJob(("github", "books"), (), True, "cfg", ShardLimits(), require_dedup=False)
    results = [label_shard(out, shard, job) for shard in (github, books, web)]
    manifest.record_shards("label", [s for r in results for s in r.shards], "cfg", "label", "test")
    assert record_releases(manifest, "label", results) == 2  # web is in no list: its docs/ shard stays
    stored = manifest.stored_copies()
    assert stored == [(r.shards[0]["path"], r.shards[0]["source"], r.shards[0]["sha256"]) for r in results[1::-1]]
    assert [path.split("/")[:3] for path, _, _ in stored] == [["labeled", "llama", "books"], ["labeled", "llama", "github"]]
    assert manifest.stored_copies(["github"]) == stored[1:]
    assert manifest.document_shards() == [(web["path"], "web", web["sha256"])]
    final = manifest.final_shards()
    assert [(s["path"], s["docs"]) for s in final] == [(books["path"], 1), (github["path"], 2), (web["path"], 1)]

    again = _shard(out, "github", ["g1", "g2"])  # the source wrote its shard again: docs/ holds the documents
    assert again["path"] == github["path"] and manifest.stored_copies() == stored[:1]
    assert [s["path"] for s in manifest.final_shards()].count(github["path"]) == 1
