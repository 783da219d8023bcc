"""A new threshold re-labels released shards from their class shards: no source re-run, each document once.

A docs/ shard with its signals attribute (the real kernel's rows) and dedup attributes (one
duplicate) is labeled and released; a threshold then moves exactly the documents it fails into
``filtered``, in their original order; lifting it gives back the first class shards byte for byte;
a crash after the journal is rolled forward; a setting that would keep a document dropped unstored
is refused with the reason. Contaminated documents go to their own stored class.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.document import Document
from core.filters.signals import signals_table
from core.released import read_release
from core.shards import ShardLimits, ShardWriter, read_documents
from dedupe.decontaminate import Match, contamination_path, write_matches
from dedupe.explain import attributes_path
from dedupe.labels import PENDING, LabelJob, finish_swap, label_shard, relabel_dir
from dedupe.signal_filters import parse_filters

#: (id, words): documents of 20..90 words (plus the final full stop), so a words_min threshold of
#: :data:`THRESHOLD` splits them.
DOCS = [(f"c4-{i:02d}", 20 + 10 * (i % 8)) for i in range(16)]
DUPLICATE = "c4-03"
THRESHOLD = 60


def _text(doc_id: str, words: int) -> str:
    # c400w0, not c4-00w0: a hyphen between digits splits a word (as in spaCy: "c4 - 00w0")
    return " ".join(f"{doc_id.replace('-', '')}w{k}" for k in range(words)) + "."


def _root(out: Path) -> dict[str, Any]:
    with ShardWriter(out, out / "docs" / "c4" / "en", "input.json.gz", "c4", "en") as writer:
        for doc_id, words in DOCS:
            writer.write(Document(doc_id, _text(doc_id, words), "c4", {"language": "en"}))
    shard = writer.finished[0].to_dict()
    signals = out / "attributes" / "c4" / "input.json.gz.signals.parquet"
    signals.parent.mkdir(parents=True)
    pq.write_table(signals_table([d for d, _ in DOCS], [_text(d, w) for d, w in DOCS]), signals)
    attrs = attributes_path(out, shard["path"])
    attrs.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": [d for d, _ in DOCS],
                             "duplicate_of": [("c4-00" if d == DUPLICATE else None) for d, _ in DOCS],
                             "reference_kind": pa.array([None] * len(DOCS), pa.string())}), attrs)
    return shard


def _job(filters: dict | None = None, drop_contaminated: bool = True) -> LabelJob:
    rules = parse_filters(filters)
    return LabelJob(("c4",), (), True, f"cfg-{rules}", ShardLimits(), filters=rules, drop_contaminated=drop_contaminated)


def _classes(out: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((out / "labeled").rglob("*.parquet")):
        found[path.relative_to(out / "labeled").parts[0]] = [d.id for d in read_documents(path)]
    return found


def _digests(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "labeled").rglob("*.parquet"))}


def test_new_threshold_relabels_a_released_shard_and_moves_only_failing_documents(tmp_path: Path) -> None:
    out = tmp_path / "data"
    shard = _root(out)
    first = label_shard(out, shard, _job())
    assert first.error is None and first.released is not None and not (out / shard["path"]).exists()
    before = _digests(out)
    kept = [d for d, _ in DOCS if d != DUPLICATE]
    assert _classes(out) == {"llama": kept}

    stricter = label_shard(out, shard, _job({"gopher": {"words_min": THRESHOLD}}))
    assert stricter.error is None, stricter.error
    words = pq.read_table(out / "attributes" / "c4" / "input.json.gz.signals.parquet").to_pydict()
    short = [d for d, w in zip(words["id"], words["words"], strict=True) if w < THRESHOLD and d != DUPLICATE]
    assert 0 < len(short) < len(kept)
    assert _classes(out) == {"filtered": short, "llama": [d for d in kept if d not in short]}  # original order
    assert stricter.counts == {"duplicate": 1, "filtered": len(short), "llama": len(kept) - len(short)}
    assert stricter.rules == {"gopher.words_min": len(short)}
    record = read_release(out, shard["path"])
    assert record is not None and {e["path"].split("/")[1] for e in record["into"]} == {"filtered", "llama"}
    assert not relabel_dir(out, shard["path"]).exists()

    again = label_shard(out, shard, _job())  # the threshold lifted: the first outputs, byte for byte
    assert again.error is None and _digests(out) == before
    assert label_shard(out, shard, _job()).counts == again.counts  # resumed from its marker


def test_a_crash_after_the_journal_is_rolled_forward(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "data"
    shard = _root(out)
    label_shard(out, shard, _job())
    import dedupe.labels as labels

    def crash(out_: Path, path: str) -> None:
        if (relabel_dir(out_, path) / PENDING).is_file():
            raise KeyboardInterrupt("power cut")
        original(out_, path)

    original = labels.finish_swap
    monkeypatch.setattr(labels, "finish_swap", crash)
    with pytest.raises(KeyboardInterrupt):
        label_shard(out, shard, _job({"gopher": {"words_min": THRESHOLD}}))
    monkeypatch.setattr(labels, "finish_swap", original)
    assert (relabel_dir(out, shard["path"]) / PENDING).is_file()
    finish_swap(out, shard["path"])  # what the next label run does first
    assert sorted(_classes(out)) == ["filtered", "llama"]
    result = label_shard(out, shard, _job({"gopher": {"words_min": THRESHOLD}}))
    assert result.error is None and sum(len(v) for v in _classes(out).values()) == len(DOCS) - 1


def test_contaminated_documents_are_stored_apart_and_can_come_back(tmp_path: Path) -> None:
    out = tmp_path / "data"
    shard = _root(out)
    write_matches(contamination_path(out, shard["path"]),
                  [Match("c4-05", "qa", "1", "a span", 1), Match("c4-09", "qa", "2", "b span", 2)], {"evals": "x"})
    result = label_shard(out, shard, _job())
    assert result.error is None and _classes(out)["contaminated"] == ["c4-05", "c4-09"]
    kept = label_shard(out, shard, _job(drop_contaminated=False))
    assert kept.error is None and "contaminated" not in _classes(out) and "c4-05" in _classes(out)["llama"]


def test_a_duplicate_dropped_unstored_cannot_come_back_without_its_source(tmp_path: Path) -> None:
    out = tmp_path / "data"
    shard = _root(out)
    label_shard(out, shard, _job())
    keep_all = LabelJob(("c4",), (), False, "cfg-keep", ShardLimits())
    result = label_shard(out, shard, keep_all)
    assert result.error is not None and "stored nowhere" in result.error and "source flow" in result.error
    assert _classes(out)["llama"] == [d for d, _ in DOCS if d != DUPLICATE]  # the old copy stands
