"""The arXiv, StackExchange and Pile sample writers, read back with independent readers of each format
(``tarfile``/``gzip``, ``py7zr`` + ElementTree, ``zstandard`` + json), and the planted duplicates
where the writers say they are."""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import py7zr
import zstandard

from core.document import Document, Drop, InputSpec, make_doc_id
from core.exact import normalize_for_exact
from sources.arxiv import ArxivRecipe
from sources.github import GithubRecipe
from sources.gutenberg import GutenbergRecipe
from sources.samples import arxiv as arxiv_sample
from sources.samples import github as github_sample
from sources.samples import gutenberg as gutenberg_sample
from sources.samples import pile as pile_sample
from sources.samples import stackexchange as se_sample
from sources.samples.wikipedia import write_sample_dumps
from sources.stackexchange import StackExchangeRecipe
from sources.wikipedia import WikipediaRecipe


def _read(recipe: ArxivRecipe | StackExchangeRecipe | WikipediaRecipe | GutenbergRecipe | GithubRecipe,
          path: Path) -> list[Document | Drop]:
    return [r for r in recipe.read(InputSpec(str(path), path, path.name)) if isinstance(r, Document | Drop)]


def _shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(words[i:i + n]) for i in range(max(len(words) - n + 1, 1))}


def _jaccard(a: str, b: str) -> float:
    x, y = _shingles(a), _shingles(b)
    return len(x & y) / len(x | y)


def _written_twice(writer, tmp_path: Path) -> list[Path]:  # type: ignore[no-untyped-def]
    """Write into two folders; the bytes must be the same (a sample run resumes on unchanged inputs)."""
    first = [Path(p) for p in writer(tmp_path / "a")]
    second = [Path(p) for p in writer(tmp_path / "b")]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    return first


# -- arXiv ---------------------------------------------------------------------------------------
def _eprint_files(data: bytes) -> dict[str, bytes]:
    """An e-print's files: a gzipped tar's members, or the one gzipped file as ``<single>``."""
    raw = gzip.decompress(data)
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
            return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    except tarfile.ReadError:
        return {"<single>": raw}


def test_arxiv_bulk_tar_holds_eprints_with_macros_inputs_and_planted_duplicates(tmp_path: Path) -> None:
    [path] = _written_twice(arxiv_sample.write_sample_inputs, tmp_path)
    assert path.name == "arXiv_src_2301_001.tar"
    with tarfile.open(path, mode="r:") as bulk:
        members = {m.name: bulk.extractfile(m).read() for m in bulk.getmembers()}  # type: ignore[union-attr]
    assert list(members) == [f"2301/2301.0000{i}.gz" for i in (1, 2)] + ["2301/2301.00003.pdf"] + [
        f"2301/2301.0000{i}.gz" for i in (4, 5, 6, 7)]
    assert members["2301/2301.00003.pdf"].startswith(b"%PDF")

    paper = _eprint_files(members["2301/2301.00001.gz"])
    assert sorted(paper) == ["figures/rate.png", "main.tex", "sections/intro.tex", "sections/method.tex",
                             "sections/proof.tex"]
    main = paper["main.tex"].decode()
    assert "\\newcommand{\\norm}[1]" in main and "\\def\\eps" in main and "\\begin{thebibliography}" in main
    assert "\n%\\input{sections/old_experiments}" in main and "% TODO" in main  # comments, a commented-out input
    assert [line for line in main.splitlines() if line.startswith("\\input")] == [
        "\\input{sections/intro}", "\\input{sections/method}"]
    assert "\\input{sections/proof}" in paper["sections/method.tex"].decode()  # a nested input

    note = _eprint_files(members["2301/2301.00002.gz"])
    assert list(note) == ["<single>"] and b"\\documentclass" in note["<single>"]
    assert _eprint_files(members["2301/2301.00004.gz"]) == {"note.tex": note["<single>"]}  # exact duplicate
    revised = _eprint_files(members["2301/2301.00005.gz"])
    changed = {name for name in paper if name in revised and paper[name] != revised[name]}
    assert changed == {"main.tex", "sections/intro.tex"}  # the two corrected words
    assert _jaccard(paper["main.tex"].decode() + paper["sections/intro.tex"].decode(),
                    revised["main.tex"].decode() + revised["sections/intro.tex"].decode()) > 0.9
    erratum = _eprint_files(members["2301/2301.00006.gz"])["<single>"].decode()
    assert "\\section" not in erratum

    records = _read(ArxivRecipe(), path)  # the product's reader: what each paper becomes
    kept = [r.meta["arxiv_id"] for r in records if isinstance(r, Document)]
    assert kept == ["2301.00001", "2301.00002", "2301.00004", "2301.00005", "2301.00007"]
    assert [(r.reason, r.record.rsplit("/", 1)[-1]) for r in records if isinstance(r, Drop)] == [
        ("pdf_only", "2301.00003.pdf"), ("no_section", "2301.00006.gz")]
    first = next(r for r in records if isinstance(r, Document))
    assert first.meta["inlined_files"] == 3 and first.meta["macros_expanded"] > 0
    assert "\\norm" not in first.text and "TODO" not in first.text and "Nesterov" not in first.text


# -- StackExchange --------------------------------------------------------------------------------
def test_stackexchange_7z_holds_posts_with_scored_answers_and_planted_reposts(tmp_path: Path) -> None:
    [path] = _written_twice(se_sample.write_sample_inputs, tmp_path)
    assert path.name == "cooking.stackexchange.com.7z"
    with py7zr.SevenZipFile(path) as archive:
        assert sorted(archive.getnames()) == ["Comments.xml", "Posts.xml", "Tags.xml", "Users.xml"]
        extracted = tmp_path / "x"
        archive.extractall(extracted)
    rows = [row.attrib for row in ET.parse(extracted / "Posts.xml").getroot()]
    questions = {int(r["Id"]): r for r in rows if r["PostTypeId"] == "1"}
    answers: dict[int, list[dict[str, str]]] = {}
    for r in rows:
        if r["PostTypeId"] == "2":
            answers.setdefault(int(r["ParentId"]), []).append(r)
    assert sorted(questions) == [1, 4, 8, 11, 12, 13, 15]
    assert all(q["Body"].startswith("<p>") for q in questions.values())  # HTML, unescaped by the parser
    assert questions[1]["AcceptedAnswerId"] == "2" and questions[1]["Tags"] == "<bread><storage-method>"
    assert [int(a["Score"]) for a in answers[1]] == [9, 10, -2]  # scores not in id order

    def thread(qid: int) -> tuple[str, str, list[str]]:
        ranked = sorted(answers.get(qid, []), key=lambda a: (-int(a["Score"]), int(a["Id"])))
        return questions[qid]["Title"], questions[qid]["Body"], [a["Body"] for a in ranked]

    exact, original = se_sample.EXACT_REPOST
    assert thread(exact) == thread(original)  # a repost with its answers copied
    near, original = se_sample.NEAR_REPOST
    assert thread(near)[1:] == thread(original)[1:] and thread(near)[0] != thread(original)[0]
    assert 29 not in questions and [a["Id"] for a in answers[29]] == ["30"]  # an orphan answer
    assert sorted(r["PostTypeId"] for r in rows if r["PostTypeId"] not in ("1", "2")) == ["4", "5"]

    records = _read(StackExchangeRecipe(memory_limit="256MB"), path)
    assert sorted(r.meta["question_id"] for r in records if isinstance(r, Document)) == sorted(questions)
    assert sorted(r.reason for r in records if isinstance(r, Drop)) == [
        "orphan_answer", "other_post_type", "other_post_type"]


# -- the Pile --------------------------------------------------------------------------------------
def test_pile_shards_hold_exact_and_near_copies_of_sample_documents(tmp_path: Path) -> None:
    paths = _written_twice(pile_sample.write_sample_inputs, tmp_path)
    assert [p.relative_to(tmp_path / "a").as_posix() for p in paths] == ["train/00.jsonl.zst", "train/01.jsonl.zst"]
    shards = {}
    for path in paths:
        text = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(path.read_bytes())).read().decode("utf-8")
        shards[path.name] = [json.loads(line) for line in text.splitlines()]
    for lines in shards.values():
        assert all(isinstance(x["text"], str) and x["text"] and set(x) == {"text", "meta"} for x in lines)
    names = {x["meta"]["pile_set_name"] for lines in shards.values() for x in lines}
    assert {"Wikipedia (en)", "ArXiv", "StackExchange", "Gutenberg (PG-19)", "Github", "Pile-CC", "FreeLaw", "PubMed Abstracts"} <= names

    # the documents as the product's readers make them from the other samples
    sources = tmp_path / "sources"
    documents: dict[str, str] = {}
    for recipe, path in [(ArxivRecipe(), Path(arxiv_sample.write_sample_inputs(sources)[0])),
                         (StackExchangeRecipe(memory_limit="256MB"), Path(se_sample.write_sample_inputs(sources)[0])),
                         *[(WikipediaRecipe(), dump) for dump in write_sample_dumps(sources, pages=10)],
                         *[(GutenbergRecipe(), Path(book)) for book in gutenberg_sample.write_sample_inputs(sources)],
                         (GithubRecipe(), Path(github_sample.write_sample_inputs(sources)[0]))]:
        documents |= {r.id: r.text for r in _read(recipe, path) if isinstance(r, Document)}

    planted = pile_sample.planted()
    assert {(p.doc_id, p.kind) for p in planted} == {
        (make_doc_id("wikipedia", "en/10"), "exact"), (make_doc_id("wikipedia", "en/12"), "near"),
        (make_doc_id("arxiv", "2301.00002"), "exact"), (make_doc_id("arxiv", "2301.00001"), "near"),
        (make_doc_id("stackexchange", "cooking.stackexchange.com/8"), "exact"),
        (make_doc_id("books", "gutenberg/3261"), "near"),
        (make_doc_id("github", "sample-owner/textkit/textkit/stats.py"), "exact")}
    for copy in planted:
        line = shards[copy.shard][copy.line - 1]
        assert line["meta"]["pile_set_name"] == copy.pile_set_name
        same = normalize_for_exact(line["text"]) == normalize_for_exact(documents[copy.doc_id])
        assert same == (copy.kind == "exact"), copy
        assert _jaccard(line["text"], documents[copy.doc_id]) > (0.99 if copy.kind == "exact" else 0.85), copy
    copied = {(p.shard, p.line) for p in planted}
    for shard, lines in shards.items():  # every other line matches no sample document
        for number, line in enumerate(lines, start=1):
            if (shard, number) not in copied:
                assert max(_jaccard(line["text"], text) for text in documents.values()) < 0.3, line
