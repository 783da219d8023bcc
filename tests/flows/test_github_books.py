"""End to end: the books flow (with near-dedup) and the GitHub flow (clones + rows) on a real Prefect API."""

from __future__ import annotations

import hashlib
import json
import shutil
import sysconfig
from pathlib import Path

import pytest

from core.manifest import Manifest
from flows.books import BooksConfig, write_input_lists
from flows.books import run as run_books
from flows.github import GithubConfig
from flows.github import run as run_github
from tests.fixed import gzip_text

pytestmark = pytest.mark.prefect

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MIT = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this software.\n"
       "The above copyright notice and this permission notice shall be included in all copies.\n")
WORDS = ["the", "river", "ran", "quiet", "under", "willows", "while", "an", "old", "angler", "watched", "his", "line", "drift", "past", "the", "reeds"]


def pg_book(title: str, body: str) -> str:
    return (f"The Project Gutenberg EBook of {title}\r\n\r\nTitle: {title}\r\n\r\nLanguage: English\r\n\r\n"
            f"*** START OF THIS PROJECT GUTENBERG EBOOK {title.upper()} ***\r\n\r\n{body}\r\n"
            f"*** END OF THIS PROJECT GUTENBERG EBOOK {title.upper()} ***\r\nlicence text\r\n")


def body(seed: int, paragraphs: int = 120) -> str:
    import random

    rng = random.Random(seed)
    return "\r\n\r\n".join(" ".join(rng.choice(WORDS) for _ in range(50)) for _ in range(paragraphs))


def shard_hashes(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs").rglob("*.parquet"))}


def test_books_flow_near_dedup_and_resume(tmp_path: Path, prefect_api_url: str) -> None:
    books = tmp_path / "books"
    books.mkdir()
    original = body(1)
    near = "\r\n\r\n".join(p for i, p in enumerate(original.split("\r\n\r\n")) if i % 40)
    (books / "1.txt").write_text(pg_book("First", original), encoding="utf-8")
    (books / "2.txt").write_bytes(pg_book("Second", body(2)).encode("latin-1"))
    (books / "3.txt").write_text(pg_book("First Again", near), encoding="utf-8")
    (books / "4.txt").write_text("an index file, not a book\n")
    (books / "5.txt.gz").write_bytes(b"not gzip")
    out = tmp_path / "out"
    config = BooksConfig(inputs=[str(books / "*")], out=out, runner="thread", workers=2, books_per_input=2,
                         progress=False, min_chars=100)
    summary = run_books(config)
    assert summary.kept == 2 and not summary.failed
    manifest = Manifest.for_output(out)
    _, drops = manifest.query("SELECT reason, sum(count) FROM drops GROUP BY reason ORDER BY reason")
    assert dict(drops) == {"near_duplicate": 1, "no_pg_header": 1, "truncated_input": 1}
    _, errors = manifest.query("SELECT record, detail FROM errors WHERE reason = 'near_duplicate'")
    record, detail = errors[0]
    assert record.startswith("books-") and detail.startswith("First Again matched ") and "(First," in detail
    assert (out / "attributes" / "books" / "near_duplicates.parquet").exists()
    first = shard_hashes(out)
    again = run_books(config)  # resume: everything finished, same records, same bytes
    assert again.kept == 2 and shard_hashes(out) == first
    assert sorted(r.docs_dropped for r in again.records) == sorted(r.docs_dropped for r in summary.records)


def test_github_flow_clones_and_rows(tmp_path: Path, prefect_api_url: str) -> None:
    clones = tmp_path / "clones"
    for name, licence in (("mitrepo", MIT), ("gplrepo", "GNU GENERAL PUBLIC LICENSE\nVersion 3\n")):
        root = clones / name
        shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
        (root / "LICENSE").write_text(licence)
        (root / "json" / "data.py").write_bytes(b"\x00\x01binary")
    copy = (STDLIB / "json" / "scanner.py").read_text(encoding="utf-8")
    rows = tmp_path / "bq.jsonl.gz"
    with gzip_text(rows) as handle:
        handle.write(json.dumps({"repo_name": "o/fork", "path": "scanner.py", "license": "apache-2.0",
                                 "content": "# Copyright 2024 Fork\n" + copy}) + "\n")
    (tmp_path / "junk.jsonl.gz").write_bytes(b"not gzip")
    out = tmp_path / "out"
    config = GithubConfig(repos=[str(clones / "*")], inputs=[str(tmp_path / "*.jsonl.gz")], out=out,
                          runner="thread", workers=2, progress=False)
    summary = run_github(config)
    py_files = len([p for p in (STDLIB / "json").glob("*.py")])
    # the fork's scanner.py equals the clone's once its copyright header is removed: exact duplicate
    assert summary.kept == py_files
    _, drops = Manifest.for_output(out).query("SELECT reason, sum(count) FROM drops GROUP BY reason")
    counts = dict(drops)
    assert counts["license_gpl-3.0"] >= py_files and counts["binary"] == 1 and counts["duplicate_exact"] == 1
    assert counts["truncated_input"] == 1
    assert (out / "docs" / "github" / "python").is_dir()


def test_input_lists_are_stable(tmp_path: Path) -> None:
    files = [tmp_path / f"{i}.txt" for i in range(5)]
    for path in files:
        path.write_text("x")
    payload = lambda chunk: {"files": [str(p) for p in chunk]}  # noqa: E731
    first = write_input_lists(tmp_path / "lists", "books", ".books.json", files, 2, payload)
    mtimes = [Path(p).stat().st_mtime_ns for p in first]
    assert write_input_lists(tmp_path / "lists", "books", ".books.json", files, 2, payload) == first
    assert [Path(p).stat().st_mtime_ns for p in first] == mtimes and len(first) == 3
