"""A JSON line nested deeper than the interpreter's stack is one drop in every JSON-lines reader.

``json.loads`` raises ``RecursionError`` (not ``ValueError``) on such a line; a reader that
caught only decoding errors failed its whole file on it. Each reader gets a real file of its
format with the deep line between two good ones: the deep line is one drop naming it, its
neighbours are kept.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from core.document import Document, Drop, InputSpec
from core.pile_format import PileLine, iter_pile
from flows.quality_classifier import read_texts
from sources.c4 import read_c4_json
from sources.github import GithubRecipe
from sources.reddit import RedditRecipe
from sources.samples.dialogue import write_ndjson_zst
from sources.samples.stack_code import stack_table
from sources.stack_code import StackCodeRecipe

#: Far past Python's recursion limit, well under every reader's line-size bound.
DEEP = 100_000


def deep(obj: dict) -> bytes:
    """``obj`` as JSON with a ``nest`` field of DEEP nested arrays."""
    head = json.dumps(obj)[:-1].encode()
    return head + b', "nest": ' + b"[" * DEEP + b"]" * DEEP + b"}"


def split(records: list) -> tuple[list[Document], list[Drop]]:
    return [r for r in records if isinstance(r, Document)], [r for r in records if isinstance(r, Drop)]


def test_c4(tmp_path: Path) -> None:
    path = tmp_path / "c4-train.00000-of-01024.json.gz"
    lines = [json.dumps({"text": "first page"}).encode(), deep({"text": "deep"}),
             json.dumps({"text": "last page"}).encode()]
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n", mtime=0))
    docs, drops = split(list(read_c4_json(path, str(path))))
    assert [(d.reason, d.record) for d in drops] == [("malformed_json", f"{path}: line 2")]
    assert [d.text for d in docs] == ["first page", "last page"]


def test_github_bigquery_rows(tmp_path: Path) -> None:
    row = {"repo_name": "acme/tools", "license": "mit", "content": "def f():\n    return 1\n"}
    path = tmp_path / "github-rows.jsonl"
    lines = [json.dumps({**row, "path": "a.py"}).encode(), deep({**row, "path": "b.py"}),
             json.dumps({**row, "path": "c.py"}).encode()]
    path.write_bytes(b"\n".join(lines) + b"\n")
    docs, drops = split(list(GithubRecipe().read(InputSpec(str(path), path, path.name))))
    assert [(d.reason, d.record) for d in drops] == [("malformed_json", f"{path}: line 2")]
    assert len(docs) == 2


def test_stack_code_through_the_shared_row_reader(tmp_path: Path) -> None:
    rows = stack_table().slice(0, 3).to_pylist()
    path = tmp_path / "the-stack.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in [json.dumps(rows[0]).encode(), deep(rows[1]),
                                                         json.dumps(rows[2]).encode()]))
    docs, drops = split(list(StackCodeRecipe().read(InputSpec(str(path), path, path.name))))
    assert [d.reason for d in drops] == ["malformed_json"] and "line 2" in drops[0].record
    assert len(docs) == 2


def test_reddit(tmp_path: Path) -> None:
    """The bad line sends its block down the line-by-line path, where ``json.loads`` meets the deep one."""
    path = tmp_path / "RC_2006-04.zst"
    first = {"id": "a", "parent_id": "t3_L", "link_id": "t3_L", "body": "first", "author": "u", "score": 3}
    last = {"id": "b", "parent_id": "t1_a", "link_id": "t3_L", "body": "last", "author": "v", "score": 3}
    middle = {"id": "x", "parent_id": "t1_a", "link_id": "t3_L", "body": "deep", "score": 3}
    write_ndjson_zst(path, [first], extra_lines=[b"{not json", deep(middle), json.dumps(last).encode()])
    docs, drops = split(list(RedditRecipe().read(InputSpec(str(path), path, path.name))))
    assert [(d.reason, d.record) for d in drops] == [("malformed_json", f"{path}: line {n}") for n in (2, 3)]
    assert [d.text for d in docs] == ["A: first\n\nB: last"]


def test_pile_shard(tmp_path: Path) -> None:
    """orjson refuses the deep line; the standard library's second reading meets it."""
    path = tmp_path / "00.jsonl"
    lines = [json.dumps({"text": "first"}).encode(), deep({"text": "deep"}), json.dumps({"text": "last"}).encode()]
    path.write_bytes(b"\n".join(lines) + b"\n")
    records = list(iter_pile(path))
    assert [(r.reason, r.record) for r in records if isinstance(r, Drop)] == [("bad_json", "00.jsonl:2")]
    assert [r.text for r in records if isinstance(r, PileLine)] == ["first", "last"]


def test_quality_classifier_pages(tmp_path: Path) -> None:
    """The classifier's training pages skip the deep line (it failed the whole file before)."""
    path = tmp_path / "pages.jsonl"
    lines = [json.dumps({"text": "first page"}).encode(), deep({"text": "deep page"}),
             json.dumps({"text": "last page"}).encode()]
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert read_texts(str(path), min_chars=1) == ["first page", "last page"]
