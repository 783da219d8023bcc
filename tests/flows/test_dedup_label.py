"""Pile index -> dedup -> labels, end to end through real Prefect flows, plus the pure pieces."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import zstandard

from core.document import Document
from core.manifest import Manifest
from core.shards import ShardWriter, shard_metadata
from dedupe.explain import attributes_path, explain, format_explanation
from flows.label import LabelConfig, membership_class
from kinda.cli_dedup import register


def _words(rnd: random.Random, n: int = 150) -> str:
    return " ".join(f"{rnd.choice('bdfgklmnprst')}{rnd.choice('aeiou')}{rnd.randrange(5000)}" for _ in range(n))


def _edit(text: str) -> str:
    words = text.split()
    words[75] = "edited"
    return " ".join(words)


def make_output_root(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """Two sources' final shards recorded in a manifest, and a Pile shard sharing some texts."""
    rnd = random.Random(5)
    pile_texts = [_words(rnd) for _ in range(20)]
    pile = tmp_path / "pile" / "00.jsonl.zst"
    pile.parent.mkdir(parents=True)
    lines = [json.dumps({"text": t, "meta": {"pile_set_name": "Wikipedia (en)"}}).encode() for t in pile_texts]
    pile.write_bytes(zstandard.ZstdCompressor().compress(b"".join(x + b"\n" for x in [*lines, b"{bad"])))
    unique = [_words(rnd) for _ in range(6)]
    wiki = {"w-unique0": unique[0], "w-unique1": unique[1], "w-dup-a": unique[2], "w-dup-b": _edit(unique[2]),
            "w-in-pile-exact": pile_texts[3], "w-in-pile-near": _edit(pile_texts[7]), "w-short": "tiny"}
    science = {"s-paper": unique[3], "s-in-pile": pile_texts[9], "s-copy-of-wiki": unique[0]}
    other = {"o-unlisted": unique[4]}
    out = tmp_path / "data"
    manifest = Manifest.for_output(out)
    for source, docs in (("wikipedia", wiki), ("science", science), ("other", other)):
        with ShardWriter(out, out / "docs" / source / "en", "input", source, "en") as writer:
            for doc_id, text in docs.items():
                writer.write(Document(doc_id, text, source, {"language": "en"}))
        manifest.record_shards("seed-run", [s.to_dict() for s in writer.finished], "cfg", source, "test")
    return out, pile, {**wiki, **science, **other}


@pytest.fixture(scope="module")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield


@pytest.mark.prefect
def test_index_dedup_label_end_to_end(tmp_path: Path, prefect_harness) -> None:
    from flows import dedup, label, pile_index

    out, pile, _ = make_output_root(tmp_path)
    index = tmp_path / "index"
    built = pile_index.run(pile_index.parse_args(["--inputs", str(pile), "--index", str(index), "--runner", "thread"]))
    assert built.documents == 20 and built.parts[0]["drops"] == {"bad_json": 1}

    attributes = {}
    for workers in ("1", "2"):
        summary = dedup.run(dedup.parse_args(["--data", str(out), "--against", str(index), "--runner", "thread",
                                              "--workers", workers]))
        assert summary.documents == 11 and summary.duplicates == 1 and summary.reference_matches == 3
        attributes[workers] = {a["shard"]: (out / a["attributes"]).read_bytes() for a in summary.attributes}
    assert attributes["1"] == attributes["2"]  # same decisions whatever the worker count

    wiki_attrs = pq.read_table(attributes_path(out, "docs/wikipedia/en/input-00000.parquet")).to_pylist()
    by_id = {row["id"]: row for row in wiki_attrs}
    assert by_id["w-dup-b"]["duplicate_of"] == "w-dup-a" and by_id["w-dup-b"]["duplicate_kind"] == "near"
    assert by_id["w-in-pile-exact"]["reference_kind"] == "exact"
    assert (by_id["w-in-pile-near"]["reference_shard"], by_id["w-in-pile-near"]["reference_line"]) == ("00.jsonl.zst", 8)
    assert by_id["w-unique0"]["duplicate_of"] is None  # across_sources is off: the science copy is not a duplicate

    why = explain(out / "manifest.duckdb", "w-in-pile-near")
    assert why["matches"][0]["reference_line"] == 8
    assert "00.jsonl.zst line 8" in format_explanation(why)

    results = label.run(label.parse_args(["--data", str(out), "--runner", "thread",
                                          "--set", "extension_sources=[science]"]))
    counts: dict[str, int] = {}
    for result in results:
        for key, value in result.counts.items():
            counts[key] = counts.get(key, 0) + value
    assert counts == {"llama": 4, "llama-in-ref": 2, "duplicate": 1, "extension": 3, "unlisted_source": 1}
    manifest = Manifest.for_output(out)
    _, rows = manifest.query("SELECT source, sum(docs) FROM shards WHERE list_contains(labels, 'G3') GROUP BY 1")
    assert rows == [("wikipedia", 4)]
    _, rows = manifest.query("SELECT sum(docs) FROM shards WHERE list_contains(labels, 'G2')")
    assert rows == [(9,)]
    g3 = next(p for p in (out / "labeled" / "llama").rglob("*.parquet"))
    assert json.loads(shard_metadata(g3)["labels"]) == ["G1", "G2", "G3"]


def test_membership_classes() -> None:
    config = LabelConfig(llama_sources=["wikipedia"], extension_sources=["science"])
    assert membership_class("wikipedia", {"duplicate_of": None, "reference_kind": None}, config) == "llama"
    assert membership_class("wikipedia", {"duplicate_of": None, "reference_kind": "near"}, config) == "llama-in-ref"
    assert membership_class("science", {"duplicate_of": None, "reference_kind": "exact"}, config) == "extension"
    assert membership_class("wikipedia", {"duplicate_of": "x", "reference_kind": None}, config) == "duplicate"
    assert membership_class("web", None, config) == "unlisted_source"


def test_explain_cli_without_a_dedup_run(tmp_path: Path, capsys) -> None:
    import argparse

    Manifest.for_output(tmp_path).record_shards("r", [], "c", "x", "v")
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="data")
    parser.add_argument("--manifest")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["dedup", "explain", "doc-1", "--out", str(tmp_path)])
    assert args.func(args) == 0
    assert "no dedup run recorded" in capsys.readouterr().out
    args = parser.parse_args(["dedup", "explain", "doc-1", "--out", str(tmp_path / "missing")])
    assert args.func(args) == 1
