"""G.2 dedup and labels through the real flows: priority chains, Pile matches per source, G2 = G1 + extensions.

One output root holds every kind of G.2 document in the pipeline's shard format: GitHub and
stack_code files (real Python source, the standard library's), a Gutenberg book read by the books
reader and a science book that is the same book as a PDF extraction would give it, a PubMed
Central article parsed by the PubMed reader from a JATS file, PubMed abstracts, DM-math question/
answer documents in the Pile's grouping, and a Pile shard (``jsonl.zst`` written with zstandard)
that holds some of them under their ``pile_set_name``. ``flows.pile_index``, ``flows.dedup`` and
``flows.label`` run on it through Prefect with the shipped configs (configs/dedup.yaml,
configs/labels.yaml). About 40 s (three flows under the Prefect test harness).
"""

from __future__ import annotations

import colorsys
import fnmatch
import inspect
import json
import random
import shlex
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from core.document import Document
from core.manifest import Manifest
from core.shards import ShardWriter, shard_metadata
from dedupe.explain import attributes_path, explain, format_explanation
from dedupe.labels import REFERENCE_EXCLUDED, membership_class
from flows.label import LabelConfig
from sources.gutenberg import BookSettings, read_book
from sources.pubmed import CentralSettings, article_record
from sources.samples.dmmath import gcd_pairs, linear_pairs, write_pile_shard
from sources.samples.pubmed import jats_article


def _words(rnd: random.Random, n: int = 200) -> str:
    return " ".join(f"{rnd.choice('bdfgklmnprst')}{rnd.choice('aeiou')}{rnd.randrange(5000)}" for _ in range(n))


def _edit(text: str, every: int = 60) -> str:
    """A few words changed (a near copy: estimated Jaccard well above 0.8)."""
    words = text.split(" ")
    for i in range(every // 2, len(words), every):
        words[i] = "edited"
    return " ".join(words)


def _gutenberg_file(path: Path, rnd: random.Random) -> Path:
    body = "\n\n".join(_words(rnd, 80) for _ in range(40))
    path.write_text("The Project Gutenberg EBook of On Growth and Form\n\nTitle: On Growth and Form\n\n"
                    "Language: English\n\n*** START OF THIS PROJECT GUTENBERG EBOOK ON GROWTH AND FORM ***\n\n"
                    f"{body}\n*** END OF THIS PROJECT GUTENBERG EBOOK ON GROWTH AND FORM ***\nlicence\n",
                    encoding="utf-8")
    return path


def _as_pdf_extraction(text: str) -> str:
    """The book as the science-books reader gives a PDF of it: page numbers gone, a few words differ."""
    paragraphs = text.split("\n\n")
    return "\n\n".join(_edit(p, 70) for p in paragraphs)


def _dm(pairs: list[tuple[str, str]]) -> str:
    return "".join(f"{q}\n{a}\n" for q, a in pairs)


def _write(out: Path, manifest: Manifest, source: str, docs: dict[str, str]) -> None:
    with ShardWriter(out, out / "docs" / source / "en", "input", source, "en") as writer:
        for doc_id, text in docs.items():
            writer.write(Document(doc_id, text, source, {"language": "en"}))
    manifest.record_shards("seed-run", [s.to_dict() for s in writer.finished], "cfg", source, "test")


def make_g2_root(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """The output root of the module docstring; returns it, the Pile shard and named document ids."""
    rnd = random.Random(11)
    code = {name: inspect.getsource(module) for name, module in
            (("textwrap", textwrap), ("colorsys", colorsys), ("shlex", shlex), ("fnmatch", fnmatch))}
    book = read_book(_gutenberg_file(tmp_path / "pg100.txt", rnd), BookSettings(), "raw")
    assert isinstance(book, Document)
    pmc = article_record(jats_article("PMC101", "Mitochondrial turnover in fibroblasts"), "PMC101.nxml",
                         CentralSettings())
    assert isinstance(pmc, Document) and pmc.source == "pubmed_central"
    abstract, dm_in_pile = _words(rnd), _dm(linear_pairs(rnd, 40))
    github_in_pile = _words(rnd)
    pile = write_pile_shard(tmp_path / "pile" / "00.jsonl.zst", [
        ("Pile-CC", _words(rnd)),
        ("PubMed Central", pmc.text),
        ("PubMed Abstracts", _edit(abstract)),
        ("DM Mathematics", dm_in_pile),
        ("Github", code["shlex"]),
        ("Github", github_in_pile),
    ])
    out = tmp_path / "data"
    manifest = Manifest.for_output(out)
    _write(out, manifest, "github", {"g-textwrap": code["textwrap"], "g-colorsys": code["colorsys"],
                                     "g-in-pile": github_in_pile})
    _write(out, manifest, "stack_code", {"s-textwrap": code["textwrap"],
                                         "s-colorsys": code["colorsys"].replace("def rgb_to_yiq", "def rgb_to_yiq_"),
                                         "s-shlex": code["shlex"], "s-fnmatch": code["fnmatch"],
                                         "s-fnmatch-copy": code["fnmatch"]})
    _write(out, manifest, "books", {book.id: book.text})
    _write(out, manifest, "science_books", {"sb-growth-and-form.pdf": _as_pdf_extraction(book.text),
                                            "sb-own": _words(rnd, 600)})
    _write(out, manifest, "pubmed_central", {pmc.id: pmc.text, "pmc-new": _words(rnd)})
    _write(out, manifest, "pubmed_abstracts", {"abs-in-pile": abstract, "abs-new": _words(rnd)})
    _write(out, manifest, "dm_math", {"dm-in-pile": dm_in_pile, "dm-new": _dm(gcd_pairs(rnd, 40))})
    _write(out, manifest, "wikipedia", {"w-plain": _words(rnd)})
    return out, pile, {"book": book.id, "pmc": pmc.id}


def _attributes(out: Path) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for shard in sorted((out / "docs").rglob("*.parquet")):
        for row in pq.read_table(attributes_path(out, shard.relative_to(out).as_posix())).to_pylist():
            rows[row["id"]] = row
    return rows


@pytest.mark.prefect
def test_g2_dedup_and_labels(tmp_path: Path, prefect_api_url: str) -> None:
    from flows import dedup, label, pile_index

    out, pile, ids = make_g2_root(tmp_path)
    index = tmp_path / "index"
    built = pile_index.run(pile_index.parse_args(["--inputs", str(pile), "--index", str(index), "--runner", "thread"]))
    assert built.documents == 6

    config = dedup.parse_args(["--data", str(out), "--against", str(index), "--runner", "thread"])
    assert config.priority == [["github", "stack_code"], ["books", "science_books"]]  # configs/dedup.yaml
    summary = dedup.run(config)
    rows = _attributes(out)

    # 1. priority: the GitHub copy wins; stack_code's copies are duplicates of it, with the kind
    assert (rows["s-textwrap"]["duplicate_of"], rows["s-textwrap"]["duplicate_kind"]) == ("g-textwrap", "exact")
    assert (rows["s-colorsys"]["duplicate_of"], rows["s-colorsys"]["duplicate_kind"]) == ("g-colorsys", "near")
    assert rows["s-fnmatch-copy"]["duplicate_of"] == "s-fnmatch"  # within the source, as before
    assert all(rows[g]["duplicate_of"] is None for g in ("g-textwrap", "g-colorsys", "g-in-pile"))
    # 3. the science book that is a Gutenberg book: a near duplicate of that book, which is kept
    science = rows["sb-growth-and-form.pdf"]
    assert (science["duplicate_of"], science["duplicate_kind"]) == (ids["book"], "near")
    assert science["duplicate_jaccard"] >= 0.8 and rows[ids["book"]]["duplicate_of"] is None
    assert rows["sb-own"]["duplicate_of"] is None
    assert summary.duplicates == 4

    # 4. Pile matches counted per source, in the summary (artifact) and in the manifest's matches table
    per_source = {row["source"]: row for row in summary.sources}
    assert per_source["pubmed_central"] | {} == {
        "source": "pubmed_central", "documents": 2, "duplicates": 0, "duplicates_across": 0, "reference_exact": 1,
        "reference_near": 0, "reference_matches": 1, "reference_sets": {"PubMed Central": 1}}
    assert (per_source["pubmed_abstracts"]["reference_near"], per_source["pubmed_abstracts"]["reference_sets"]) == \
        (1, {"PubMed Abstracts": 1})
    assert per_source["dm_math"]["reference_sets"] == {"DM Mathematics": 1}
    assert (per_source["stack_code"]["duplicates"], per_source["stack_code"]["duplicates_across"]) == (3, 2)
    assert per_source["stack_code"]["reference_sets"] == {"Github": 1}
    assert per_source["science_books"]["duplicates_across"] == 1 and per_source["github"]["reference_sets"] == {"Github": 1}
    assert sum(r["reference_matches"] for r in summary.sources) == summary.reference_matches == 5
    _, matched = Manifest.for_output(out).query(
        "SELECT source, reference_set, count(*) FROM matches WHERE starts_with(kind, 'reference_') GROUP BY 1, 2 ORDER BY 1")
    assert matched == [("dm_math", "DM Mathematics", 1), ("github", "Github", 1), ("pubmed_abstracts", "PubMed Abstracts", 1),
                       ("pubmed_central", "PubMed Central", 1), ("stack_code", "Github", 1)]
    assert rows[ids["pmc"]]["reference_kind"] == "exact" and rows["abs-in-pile"]["reference_kind"] == "near"

    # 2. labels with configs/labels.yaml: Pile subsets are G2 only; stack_code in the Pile's GitHub left out
    results = label.run(label.parse_args(["--data", str(out), "--runner", "thread"]))
    counts: dict[str, int] = {}
    for result in results:
        assert result.error is None
        for key, value in result.counts.items():
            counts[key] = counts.get(key, 0) + value
    assert counts == {"llama": 4, "llama-in-ref": 1, "duplicate": 4, REFERENCE_EXCLUDED: 1, "extension": 8}
    manifest = Manifest.for_output(out)
    _, g3 = manifest.query("SELECT DISTINCT source FROM shards WHERE list_contains(labels, 'G3') ORDER BY 1")
    assert g3 == [("books",), ("github",), ("wikipedia",)]
    _, g1 = manifest.query("SELECT sum(docs) FROM shards WHERE list_contains(labels, 'G1')")
    _, g2 = manifest.query("SELECT sum(docs) FROM shards WHERE list_contains(labels, 'G2')")
    assert (g1, g2) == ([(5,)], [(13,)])  # G2 = G1 + the 8 kept extension documents
    stored: list[str] = []
    for shard in sorted((out / "labeled").rglob("*.parquet")):
        labels = json.loads(shard_metadata(shard)["labels"])
        shard_ids = pq.read_table(shard, columns=["id"]).column("id").to_pylist()
        stored += shard_ids
        if shard.relative_to(out / "labeled").parts[0] == "extension":
            assert labels == ["G2"]
        if ids["pmc"] in shard_ids or "dm-in-pile" in shard_ids:
            assert labels == ["G2"]  # Pile documents: never G3
    assert len(stored) == len(set(stored)) == 13  # each document stored once
    assert "s-shlex" not in stored and "s-textwrap" not in stored and "sb-growth-and-form.pdf" not in stored
    assert not list((out / "docs").rglob("*.parquet"))  # every docs/ shard released: one copy on disk
    why = format_explanation(explain(out, "sb-growth-and-form.pdf"))
    assert why.startswith(f"sb-growth-and-form.pdf: dropped as near duplicate of {ids['book']} (by flows.dedup")


def test_pile_subsets_are_never_g3() -> None:
    config = LabelConfig(extension_sources=["pubmed_central", "dm_math", "stack_code"],
                         reference_excludes={"stack_code": ["Github"]})
    matched = {"duplicate_of": None, "reference_kind": "exact", "reference_set": "PubMed Central"}
    assert membership_class("pubmed_central", matched, config) == "extension"
    assert membership_class("pubmed_central", {**matched, "reference_kind": None}, config) == "extension"
    assert membership_class("dm_math", {**matched, "reference_set": "DM Mathematics"}, config) == "extension"
    assert membership_class("stack_code", {**matched, "reference_set": "Github"}, config) == REFERENCE_EXCLUDED
    assert membership_class("stack_code", {**matched, "reference_set": "Pile-CC"}, config) == "extension"
    assert membership_class("github", {**matched, "reference_set": "Github"}, config) == "llama-in-ref"
    with pytest.raises(ValueError, match="Pile subsets"):
        LabelConfig(llama_sources=["wikipedia", "pubmed_abstracts"])
    with pytest.raises(ValueError, match="both LLaMA and extension"):
        LabelConfig(llama_sources=["github"], extension_sources=["github"])
    with pytest.raises(ValueError, match="LLaMA sources"):
        LabelConfig(reference_excludes={"github": ["Github"]})
