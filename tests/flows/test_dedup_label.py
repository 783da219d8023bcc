"""Pile index -> dedup -> labels, end to end through real Prefect flows, plus the pure pieces."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import zstandard

from core.document import Document
from core.manifest import Manifest
from core.released import read_release, shard_intact
from core.shards import ShardWriter, shard_metadata
from dedupe.explain import attributes_path, explain, format_explanation
from dedupe.labels import membership_class
from flows.label import LabelConfig
from kinda.cli import main as kinda_main


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
            "w-in-pile-exact": pile_texts[3], "w-in-pile-near": _edit(pile_texts[7]), "w-short": "tiny",
            "w-copy-of-unique1": unique[1]}
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


def _kinda(capsys, *argv: str) -> tuple[int, str, str]:
    status = kinda_main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.prefect
def test_index_dedup_label_end_to_end(tmp_path: Path, prefect_api_url: str, capsys) -> None:
    from flows import dedup, label, pile_index

    out, pile, _ = make_output_root(tmp_path)
    index = tmp_path / "index"
    built = pile_index.run(pile_index.parse_args(["--inputs", str(pile), "--index", str(index), "--runner", "thread"]))
    assert built.documents == 20 and built.parts[0]["drops"] == {"bad_json": 1}

    attributes = {}
    for workers in ("1", "2"):
        summary = dedup.run(dedup.parse_args(["--data", str(out), "--against", str(index), "--runner", "thread",
                                              "--workers", workers]))
        assert summary.documents == 12 and summary.duplicates == 2 and summary.reference_matches == 3
        attributes[workers] = {a["shard"]: (out / a["attributes"]).read_bytes() for a in summary.attributes}
    assert attributes["1"] == attributes["2"]  # same decisions whatever the worker count

    wiki_attrs = pq.read_table(attributes_path(out, "docs/wikipedia/en/input-00000.parquet")).to_pylist()
    by_id = {row["id"]: row for row in wiki_attrs}
    assert by_id["w-dup-b"]["duplicate_of"] == "w-dup-a" and by_id["w-dup-b"]["duplicate_kind"] == "near"
    assert by_id["w-copy-of-unique1"]["duplicate_of"] == "w-unique1"
    assert by_id["w-in-pile-exact"]["reference_kind"] == "exact"
    assert (by_id["w-in-pile-near"]["reference_shard"], by_id["w-in-pile-near"]["reference_line"]) == ("00.jsonl.zst", 8)
    assert by_id["w-unique0"]["duplicate_of"] is None  # across_sources is off: the science copy is not a duplicate

    why = explain(out, "w-in-pile-near")
    assert why["references"][0]["reference_line"] == 8 and why["verdict"] == "kept"
    assert "00.jsonl.zst:8" in format_explanation(why)
    assert "in no labeled set" in format_explanation(explain(out, "w-unique1"))  # before labeling

    results = label.run(label.parse_args(["--data", str(out), "--runner", "thread",
                                          "--set", "extension_sources=[science]"]))
    counts: dict[str, int] = {}
    for result in results:
        assert result.error is None
        for key, value in result.counts.items():
            counts[key] = counts.get(key, 0) + value
    assert counts == {"llama": 4, "llama-in-ref": 2, "duplicate": 2, "extension": 3, "unlisted_source": 1}
    manifest = Manifest.for_output(out)
    _, rows = manifest.query("SELECT source, sum(docs) FROM shards WHERE list_contains(labels, 'G3') GROUP BY 1")
    assert rows == [("wikipedia", 4)]
    _, rows = manifest.query("SELECT sum(docs) FROM shards WHERE list_contains(labels, 'G2')")
    assert rows == [(9,)]
    g3 = next(p for p in (out / "labeled" / "llama").rglob("*.parquet"))
    assert json.loads(shard_metadata(g3)["labels"]) == ["G1", "G2", "G3"]

    # 16.3: each kept document stored once and counted once (10 = 12 minus the 2 duplicates)
    wiki_docs = "docs/wikipedia/en/input-00000.parquet"
    assert not (out / wiki_docs).exists() and not (out / "docs" / "science").exists()
    assert (out / "docs" / "other" / "en").is_dir()  # an unlisted source's documents have no other copy
    release = read_release(out, wiki_docs)
    assert release is not None and release["dropped"] == 2 and release["docs"] == 8
    assert shard_intact(out, {"path": wiki_docs, "bytes": release["bytes"], "sha256": release["sha256"]})
    _, rows = manifest.query("SELECT sum(docs) FROM shards")
    assert rows == [(10,)]
    _, rows = manifest.query("SELECT language, sum(docs) FROM shards GROUP BY 1")  # the README's query
    assert rows == [("en", 10)]
    status, text, _ = _kinda(capsys, "--out", str(out), "manifest", "summary")
    assert status == 0 and "Storage: 10 documents" in text
    ratio = float(text.rsplit(": ", 1)[1].rstrip("x\n"))
    assert 0.95 <= ratio <= 1.05
    status, text, _ = _kinda(capsys, "report", "--out", str(out))
    assert status == 0 and "Storage: 10 documents" in text
    assert ["wikipedia", "all", "documents", "6"] in [line.split()[:4] for line in text.splitlines()]

    again = label.run(label.parse_args(["--data", str(out), "--runner", "thread",
                                        "--set", "extension_sources=[science]"]))
    assert [r.error for r in again] == [None] * len(again)  # released shards resume from their records
    assert sorted(s["path"] for r in again for s in r.shards) == sorted(s["path"] for r in results for s in r.shards)
    _, rows = manifest.query("SELECT sum(docs) FROM shards")
    assert rows == [(10,)]

    # 16.2: every kind of answer, from the real run's ids
    status, text, err = _kinda(capsys, "dedup", "explain", "w-dup-b", "--out", str(out))
    jaccard = re.search(r"estimated Jaccard (\d\.\d+), threshold (\d\.\d+)", text)
    assert status == 0 and "near duplicate of w-dup-a" in text and jaccard is not None
    assert 0.8 <= float(jaccard.group(1)) < 1 and float(jaccard.group(2)) == 0.8
    status, text, _ = _kinda(capsys, "--out", str(out), "dedup", "explain", "w-copy-of-unique1")
    assert status == 0 and text.startswith("w-copy-of-unique1: dropped as exact duplicate of w-unique1")
    status, text, _ = _kinda(capsys, "--out", str(out), "dedup", "explain", "w-in-pile-near")
    assert "matched reference document 00.jsonl.zst:8 (Wikipedia (en), near" in text
    assert "kept in class llama-in-ref, labels G1 G2" in text
    status, text, _ = _kinda(capsys, "--out", str(out), "dedup", "explain", "w-unique1")
    assert status == 0 and "w-unique1: kept in class llama, labels G1 G2 G3" in text
    assert "representative of 1 duplicate(s)" in text
    status, text, _ = _kinda(capsys, "--out", str(out), "dedup", "explain", "s-paper")
    assert "kept in class extension, labels G2" in text
    status, text, _ = _kinda(capsys, "--out", str(out), "dedup", "explain", "o-unlisted")
    assert status == 0 and "kept, in no labeled set" in text
    status, text, err = _kinda(capsys, "--out", str(out), "dedup", "explain", "no-such-doc")
    assert status == 1 and text == "" and len(err.strip().splitlines()) == 1 and "unknown id" in err


def test_membership_classes() -> None:
    config = LabelConfig(llama_sources=["wikipedia"], extension_sources=["science"])
    assert membership_class("wikipedia", {"duplicate_of": None, "reference_kind": None}, config) == "llama"
    assert membership_class("wikipedia", {"duplicate_of": None, "reference_kind": "near"}, config) == "llama-in-ref"
    assert membership_class("science", {"duplicate_of": None, "reference_kind": "exact"}, config) == "extension"
    assert membership_class("wikipedia", {"duplicate_of": "x", "reference_kind": None}, config) == "duplicate"
    assert membership_class("web", None, config) == "unlisted_source"


def test_explain_without_a_dedup_run(tmp_path: Path, capsys) -> None:
    Manifest.for_output(tmp_path).record_shards("r", [], "c", "x", "v")
    status, out, err = _kinda(capsys, "dedup", "explain", "doc-1", "--out", str(tmp_path))
    assert status == 1 and out == "" and "doc-1: unknown id" in err
    status, out, err = _kinda(capsys, "dedup", "explain", "doc-1", "--out", str(tmp_path / "missing"))
    assert status == 2 and err.count("\n") == 1 and "no manifest at" in err


def _pg_book(title: str, seed: int) -> str:
    rnd = random.Random(seed)
    body = "\n\n".join(_words(rnd, 60) for _ in range(30))
    return (f"The Project Gutenberg EBook of {title}\n\nTitle: {title}\n\nLanguage: English\n\n"
            f"*** START OF THIS PROJECT GUTENBERG EBOOK {title.upper()} ***\n\n{body}\n"
            f"*** END OF THIS PROJECT GUTENBERG EBOOK {title.upper()} ***\nlicence text\n")


@pytest.mark.prefect
def test_explain_a_source_runs_exact_duplicate(tmp_path: Path, prefect_api_url: str, capsys) -> None:
    """The source run's exact dedup records which kept document each duplicate duplicates."""
    from flows import books
    from sources.gutenberg import BookSettings, read_book

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "11.txt").write_text(_pg_book("Kept", 1), encoding="utf-8")
    (raw / "12.txt").write_text(_pg_book("Other", 2), encoding="utf-8")
    (raw / "13.txt").write_text(_pg_book("Kept", 1), encoding="utf-8")  # the same book again
    kept, copy = (read_book(raw / name, BookSettings(), "x") for name in ("11.txt", "13.txt"))
    assert isinstance(kept, Document) and isinstance(copy, Document) and kept.id != copy.id
    out = tmp_path / "data"
    summary = books.run(books.parse_args(["--inputs", str(raw / "*.txt"), "--out", str(out), "--runner", "thread",
                                          "--books-per-input", "1", "--set", "min_chars=100"]))
    assert summary.kept == 2
    status, text, _ = _kinda(capsys, "dedup", "explain", copy.id, "--out", str(out))
    assert status == 0 and text.startswith(f"{copy.id}: dropped as exact duplicate of {kept.id}")
    status, text, _ = _kinda(capsys, "dedup", "explain", kept.id, "--out", str(out))
    assert status == 0 and text.startswith(f"{kept.id}: kept, in no labeled set")
