"""Per-record bounds set in the YAML configs reach the readers (books, EPUB chapters, MEDLINE, Pile).

Each bound used to be a library default; these tests set it through the flow's config (the same
``from_yaml`` + overrides a ``--set`` goes through) and check the reader applies it: a record past
the configured bound is the counted drop, and at the default the config hash is the one of runs
made before the bound was configurable. Runtime: ~15 s (a book-cleaner helper, one Prefect flow).
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import pytest
import zstandard

from core.document import Document, Drop, InputSpec
from dedupe.reference import part_marker
from flows import books, pile_index, pubmed, science_books
from sources.formats.epub import chapter_cleaner
from sources.formats.pile import PileRecipe
from sources.gutenberg import book_cleaner


def _config(module: Any, overrides: dict[str, Any] | None = None) -> Any:
    return module.cli.config_cls.from_yaml(module.cli.config_file, overrides)


def test_yaml_lines_name_the_readers_defaults() -> None:
    assert _config(books).recipe().settings.clean_timeout_s == 30.0
    assert _config(science_books).recipe().settings.epub.chapter_timeout_s == 30.0
    bounds = _config(pubmed).abstracts_recipe().bounds
    assert (bounds.inline_bytes, bounds.max_record_bytes, bounds.timeout_s) == (64 << 10, 16 << 20, 30.0)
    assert _config(pile_index).pile_max_line_bytes == PileRecipe().max_line_bytes == 256 << 20


@pytest.mark.parametrize(("module", "key", "value"), [
    (books, "clean_timeout_s", 5.0),
    (science_books, "epub.chapter_timeout_s", 5.0),
    (pubmed, "citation.timeout_s", 5.0),
    (pubmed, "citation.max_record_bytes", 1 << 20),
])
def test_bound_is_hashed_only_when_set(module: Any, key: str, value: float) -> None:
    default = _config(module).config_hash()
    head, _, leaf = key.rpartition(".")
    assert _config(module, {key: value}).config_hash() != default  # a set bound can change what is kept
    current = _config(module).model_dump()
    same = current[head][leaf] if head else current[leaf]
    assert _config(module, {key: same}).config_hash() == default  # the default, written out: same hash


def test_books_clean_timeout_reaches_the_cleaner(tmp_path: Path, cpu_clock) -> None:
    bad = tmp_path / "102.txt"  # an early release whose second "paragraph" is 150 K word characters:
    bad.write_text("This is the February 1992 Project Gutenberg release of: Stones by A. Writer\n\n"  # minutes of regex
                   + "a" * 150_000 + "\n", encoding="utf-8")
    recipe = _config(books, {"clean_timeout_s": 0.5, "books_per_input": 1}).recipe()
    assert book_cleaner(recipe.settings).timeout_s == 0.5
    started, wall = cpu_clock(), time.perf_counter()
    records = list(recipe.read(InputSpec(str(bad), bad, bad.name)))
    assert [(type(r).__name__, getattr(r, "reason", None)) for r in records] == [("Drop", "cleaner_timeout")]
    assert "0.5 s" in records[0].detail  # the bound that fired is the configured one
    assert cpu_clock() - started < 10  # CPU of the tree: the default bound (30 s) would still be burning it
    assert time.perf_counter() - wall < 60


def test_epub_chapter_timeout_reaches_the_chapter_cleaner() -> None:
    settings = _config(science_books, {"epub.chapter_timeout_s": 2.5}).recipe().settings.epub
    assert settings.chapter_timeout_s == 2.5
    assert chapter_cleaner(settings).timeout_s == 2.5


def _medline(path: Path, abstract_words: int) -> Path:
    abstract = " ".join(f"word{i}" for i in range(abstract_words))
    record = ("<PubmedArticle><MedlineCitation><PMID Version=\"1\">7</PMID><Article><Journal><Title>J</Title>"
              f"</Journal><ArticleTitle>Title.</ArticleTitle><Abstract><AbstractText>{abstract}</AbstractText>"
              "</Abstract></Article></MedlineCitation></PubmedArticle>")
    path.write_bytes(gzip.compress(f"<PubmedArticleSet>{record}</PubmedArticleSet>".encode(), mtime=0))
    return path


def test_citation_bounds_reach_the_medline_reader(tmp_path: Path) -> None:
    path = _medline(tmp_path / "pubmed24n0001.xml.gz", 40_000)  # ~350 KB citation
    spec = InputSpec(str(path), path, path.name)
    inline = {"citation.inline_bytes": 1 << 20}  # parsed in this process: no helper to start
    kept = list(_config(pubmed, inline).abstracts_recipe().read(spec))
    assert [type(r) for r in kept] == [Document]
    dropped = list(_config(pubmed, {**inline, "citation.max_record_bytes": 100_000}).abstracts_recipe().read(spec))
    assert len(dropped) == 1 and isinstance(dropped[0], Drop) and dropped[0].reason == "record_too_large"
    assert dropped[0].record == f"{path.name}:record 1" and "100,000" in dropped[0].detail


def _pile(path: Path) -> Path:
    lines = [json.dumps({"text": text, "meta": {"pile_set_name": "Pile-CC"}}).encode()
             for text in ("a short line of the pile", "x " * 2000, "another short line")]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zstandard.ZstdCompressor().compress(b"".join(line + b"\n" for line in lines)))
    return path


def test_pile_max_line_bytes_reaches_the_source_reader(tmp_path: Path) -> None:
    shard = _pile(tmp_path / "00.jsonl.zst")
    spec = InputSpec(str(shard), shard, shard.name)
    assert [type(r) for r in PileRecipe().read(spec)] == [Document, Document, Document]
    records = list(PileRecipe(max_line_bytes=1000).read(spec))
    assert [getattr(r, "reason", None) for r in records] == [None, "record_too_large", None]
    assert isinstance(records[1], Drop) and records[1].record == "00.jsonl.zst:2"


@pytest.mark.prefect
def test_pile_max_line_bytes_reaches_the_index_flow(tmp_path: Path, prefect_api_url: str) -> None:
    shard = _pile(tmp_path / "pile" / "00.jsonl.zst")
    index_dir = tmp_path / "index"
    args = ["--inputs", str(shard), "--index", str(index_dir), "--runner", "thread",
            "--set", "pile_max_line_bytes=1000"]
    index = pile_index.run(pile_index.parse_args(args))
    assert index.documents == 2 and index.parts[0]["drops"] == {"record_too_large": 1}
    part = index.parts[0]
    key = {"shard": shard.name, "size": shard.stat().st_size}
    assert part_marker(index_dir, part["part"], {**key, "max_line_bytes": 1000}, index.layouts).read() is not None
    default = {**key, "max_line_bytes": 256 << 20}
    assert part_marker(index_dir, part["part"], default, index.layouts).read() is None  # not reused at another bound
