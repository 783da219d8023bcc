"""G.2 sources deduplicated into an output root whose G.1 sources were already labeled (issue 16.3 + 13).

Labeling releases the ``docs/`` shards of GitHub and the books once their documents are in class
shards (one copy on disk). Adding stack_code and science_books afterwards and running dedup and
labels again must still compare them with GitHub and the books (configs/dedup.yaml priority chains),
reading those from their labeled copies, and must keep every document stored once; ``kinda dedup
explain`` must answer for each kind of document with the real ids of that run, including a
stack_code file left out because the Pile's Github subset holds it (``reference_excludes``).

Real formats: Python source files of the standard library as code, a Project Gutenberg text read
by the books reader, a Pile shard written with zstandard, shards by the pipeline's ShardWriter;
the three flows run through Prefect with the shipped configs. About 25 s of flow runs (six) plus
the Prefect test server's start (about a minute on a loaded machine).
"""

from __future__ import annotations

import colorsys
import fnmatch
import inspect
import random
import re
import shlex
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from core.document import Document
from core.manifest import Manifest
from core.shards import ShardWriter
from dedupe.explain import attributes_path
from kinda.cli import main as kinda_main
from sources.gutenberg import BookSettings, read_book
from sources.samples.dmmath import write_pile_shard


def _words(rnd: random.Random, n: int = 200) -> str:
    return " ".join(f"{rnd.choice('bdfgklmnprst')}{rnd.choice('aeiou')}{rnd.randrange(5000)}" for _ in range(n))


def _edit(text: str, every: int = 70) -> str:
    words = text.split(" ")
    for i in range(every // 2, len(words), every):
        words[i] = "edited"
    return " ".join(words)


def _write(out: Path, source: str, docs: dict[str, str]) -> None:
    with ShardWriter(out, out / "docs" / source / "en", "input", source, "en") as writer:
        for doc_id, text in docs.items():
            writer.write(Document(doc_id, text, source, {"language": "en"}))
    Manifest.for_output(out).record_shards("seed-run", [s.to_dict() for s in writer.finished], "cfg", source, "test")


def _book(tmp_path: Path, rnd: random.Random) -> Document:
    body = "\n\n".join(_words(rnd, 80) for _ in range(40))
    path = tmp_path / "pg100.txt"
    path.write_text("The Project Gutenberg EBook of On Growth and Form\n\nTitle: On Growth and Form\n\n"
                    "Language: English\n\n*** START OF THIS PROJECT GUTENBERG EBOOK ON GROWTH AND FORM ***\n\n"
                    f"{body}\n*** END OF THIS PROJECT GUTENBERG EBOOK ON GROWTH AND FORM ***\nlicence\n",
                    encoding="utf-8")
    book = read_book(path, BookSettings(), "raw")
    assert isinstance(book, Document)
    return book


def _explain(capsys: pytest.CaptureFixture[str], out: Path, doc_id: str) -> tuple[int, str, str]:
    status = kinda_main(["--out", str(out), "dedup", "explain", doc_id])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _stored_ids(out: Path) -> list[str]:
    return [i for shard in sorted((out / "labeled").rglob("*.parquet"))
            for i in pq.read_table(shard, columns=["id"]).column("id").to_pylist()]


def _label(out: Path) -> None:
    from flows import label

    results = label.run(label.parse_args(["--data", str(out), "--runner", "thread"]))
    assert [r.error for r in results] == [None] * len(results)


@pytest.mark.prefect
def test_g2_sources_added_to_a_labeled_g1_root(tmp_path: Path, prefect_api_url: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from flows import dedup, pile_index

    rnd = random.Random(16)
    code = {name: inspect.getsource(module) for name, module in
            (("textwrap", textwrap), ("colorsys", colorsys), ("shlex", shlex), ("fnmatch", fnmatch))}
    book, github_in_pile = _book(tmp_path, rnd), _words(rnd)
    pile = write_pile_shard(tmp_path / "pile" / "00.jsonl.zst",
                            [("Pile-CC", _words(rnd)), ("Github", code["shlex"]), ("Github", github_in_pile)])
    index = tmp_path / "index"
    pile_index.run(pile_index.parse_args(["--inputs", str(pile), "--index", str(index), "--runner", "thread"]))

    # G.1: GitHub and the books, deduplicated and labeled: their docs/ shards are released
    out = tmp_path / "data"
    _write(out, "github", {"g-textwrap": code["textwrap"], "g-colorsys": code["colorsys"],
                           "g-in-pile": github_in_pile, "g-textwrap-copy": code["textwrap"]})
    _write(out, "books", {book.id: book.text})
    args = ["--data", str(out), "--against", str(index), "--runner", "thread"]
    first = dedup.run(dedup.parse_args(args))
    assert (first.documents, first.duplicates, first.stored) == (5, 1, 0)
    _label(out)
    assert not list((out / "docs").rglob("*.parquet"))
    g1_files = {p: p.read_bytes() for p in sorted((out / "labeled").rglob("*.parquet"))}
    g1_attributes = {p: p.read_bytes() for p in sorted((out / "attributes" / "dedup").rglob("*.parquet"))}

    # G.2 on top: stack_code and science_books shards arrive in docs/; dedup + labels again
    _write(out, "stack_code", {"s-textwrap": code["textwrap"],
                               "s-colorsys": _edit(code["colorsys"], 150),
                               "s-shlex": code["shlex"], "s-fnmatch": code["fnmatch"]})
    _write(out, "science_books", {"sb-growth-and-form.pdf": "\n\n".join(_edit(p) for p in book.text.split("\n\n")),
                                  "sb-own": _words(rnd, 600)})
    second = dedup.run(dedup.parse_args(args))
    assert (second.shards, second.documents, second.stored) == (2, 6, 4)  # 4 G.1 documents read from labeled/
    rows = {r["id"]: r for shard in ("stack_code", "science_books")
            for r in pq.read_table(attributes_path(out, f"docs/{shard}/en/input-00000.parquet")).to_pylist()}
    assert (rows["s-textwrap"]["duplicate_of"], rows["s-textwrap"]["duplicate_kind"]) == ("g-textwrap", "exact")
    assert (rows["s-colorsys"]["duplicate_of"], rows["s-colorsys"]["duplicate_kind"]) == ("g-colorsys", "near")
    assert (rows["sb-growth-and-form.pdf"]["duplicate_of"], rows["sb-growth-and-form.pdf"]["duplicate_kind"]) == \
        (book.id, "near")
    assert rows["s-shlex"]["reference_set"] == "Github" and rows["s-fnmatch"]["duplicate_of"] is None
    assert second.duplicates == 3 and {r["source"]: r["duplicates_across"] for r in second.sources} == \
        {"stack_code": 2, "science_books": 1}
    # G.1's decisions and files are untouched: same attribute bytes, same class shards
    assert {p: p.read_bytes() for p in sorted((out / "attributes" / "dedup").rglob("*.parquet"))
            if p in g1_attributes} == g1_attributes

    _label(out)
    stored = _stored_ids(out)
    assert len(stored) == len(set(stored)) == 6  # each document once: G.1's 4 and the 2 new ones
    assert set(stored) == {"g-textwrap", "g-colorsys", "g-in-pile", book.id, "s-fnmatch", "sb-own"}
    assert not list((out / "docs").rglob("*.parquet"))
    assert {p: p.read_bytes() for p in g1_files} == g1_files  # G.1's class shards are not written again
    _, rows_ = Manifest.for_output(out).query("SELECT sum(docs) FROM shards")
    assert rows_ == [(6,)]
    _, matches = Manifest.for_output(out).query("SELECT * FROM matches ORDER BY ALL")
    third = dedup.run(dedup.parse_args(args))  # all labeled: nothing to decide, nothing re-signed
    assert (third.shards, third.documents) == (0, 0)
    assert Manifest.for_output(out).query("SELECT * FROM matches ORDER BY ALL")[1] == matches

    # kinda dedup explain, every kind of answer, with this run's ids
    status, text, _ = _explain(capsys, out, "s-textwrap")
    assert status == 0 and text.startswith("s-textwrap: dropped as exact duplicate of g-textwrap (by flows.dedup")
    status, text, _ = _explain(capsys, out, "s-colorsys")
    jaccard = re.search(r"near duplicate of g-colorsys \(by flows.dedup, estimated Jaccard (\d\.\d+), threshold 0.8",
                        text)
    assert status == 0 and jaccard is not None and 0.8 <= float(jaccard.group(1)) < 1
    status, text, _ = _explain(capsys, out, "g-textwrap-copy")  # decided by the first run, still answered
    assert status == 0 and text.startswith("g-textwrap-copy: dropped as exact duplicate of g-textwrap")
    status, text, _ = _explain(capsys, out, "s-shlex")
    assert status == 0 and "s-shlex: matched reference document 00.jsonl.zst:2 (Github, exact" in text
    assert "s-shlex: excluded from every set (reference_excluded" in text
    assert "docs/stack_code/en/input-00000.parquet was released" in text and "unknown" not in text
    status, text, _ = _explain(capsys, out, "g-in-pile")
    assert status == 0 and "matched reference document 00.jsonl.zst:3 (Github, exact" in text
    assert "g-in-pile: kept in class llama-in-ref, labels G1 G2 (labeled/llama-in-ref/github/" in text
    status, text, _ = _explain(capsys, out, "g-textwrap")
    assert status == 0 and "g-textwrap: kept in class llama, labels G1 G2 G3" in text
    assert "representative of 2 duplicate(s)" in text  # its copy in GitHub and the stack_code one
    status, text, _ = _explain(capsys, out, "s-fnmatch")
    assert status == 0 and "s-fnmatch: kept in class extension, labels G2" in text
    status, text, err = _explain(capsys, out, "s-no-such-file")
    assert status == 1 and text == "" and "s-no-such-file: unknown id" in err
