"""Reddit: thread rebuilding checked against a plain reference walk, filters, bad input, reply forests."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from core.document import Document, Drop, InputSpec
from sources.reddit import (
    ROW_SCHEMA,
    RedditFilters,
    RedditReader,
    chunk_records,
    clean_body,
    label_speakers,
    zstd_chunks,
)
from sources.samples.dialogue import write_ndjson_zst

REAL = "dialogue/reddit/RC_2005-12.zst"
ALL_PATHS = {"max_paths_per_root": 0}


def read(path: Path, **kwargs: Any) -> tuple[list[Document], list[Drop]]:
    window = kwargs.pop("max_window_log", 31)
    reader = RedditReader(InputSpec(str(path), path, path.name), RedditFilters(**kwargs), max_window_log=window)
    records = list(reader)
    return [r for r in records if isinstance(r, Document)], [r for r in records if isinstance(r, Drop)]


def plain_lines(path: Path) -> list[dict[str, Any]]:
    with open(path, "rb") as handle:
        data = zstandard.ZstdDecompressor(max_window_size=2**31).stream_reader(handle).read()
    return [json.loads(line) for line in data.splitlines()]


def reference_paths(comments: list[dict[str, Any]], min_score: int, max_depth: int) -> set[tuple[str, ...]]:
    """The plainest walk: children by parent, recursion from each top-level comment."""
    children: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in comments:
        children[c["parent_id"]].append(c)

    def ok(c: dict[str, Any], depth: int) -> bool:
        bot = c["author"] == "AutoModerator" or re.search(r"(?:[-_][Bb]ot|Bot|BOT)$|^[Bb]ot[-_]", c["author"])
        return (c["body"].strip() not in ("[deleted]", "[removed]", "") and not bot and c["score"] >= min_score
                and depth <= max_depth)

    paths: set[tuple[str, ...]] = set()

    def walk(c: dict[str, Any], above: tuple[str, ...], depth: int) -> None:
        path = (*above, c["id"])
        good = [k for k in children["t1_" + c["id"]] if ok(k, depth + 1)]
        if not good and len(path) >= 2:
            paths.add(path)
        for k in good:
            walk(k, path, depth + 1)

    for c in comments:
        if c["parent_id"] == c["link_id"] and ok(c, 1):
            walk(c, (), 1)
    return paths


@pytest.mark.parametrize(("min_score", "max_depth"), [(1, 12), (-100, 3), (2, 12)])
def test_real_threads_match_reference_walk(realdata: Path, min_score: int, max_depth: int) -> None:
    path = realdata / REAL
    docs, drops = read(path, min_score=min_score, max_depth=max_depth, **ALL_PATHS)
    expected = reference_paths(plain_lines(path), min_score, max_depth)
    assert {tuple(d.meta["comment_ids"]) for d in docs} == expected and expected
    assert all(d.meta["turns"] <= max_depth and min(d.meta["scores"]) >= min_score for d in docs)
    in_paths = {cid for d in docs for cid in d.meta["comment_ids"]}
    one_turn = [d for d in drops if d.reason == "too_few_turns"]
    comment_drops = [d for d in drops if d.reason != "too_few_turns"]
    assert len(in_paths) + len(one_turn) + len(comment_drops) == 1075  # every comment accounted once


def test_real_file_drops_and_text(realdata: Path) -> None:
    path = realdata / REAL
    comments = {c["id"]: c for c in plain_lines(path)}
    docs, drops = read(path)
    reasons = {d.reason for d in drops}
    assert {"deleted_body", "removed_body", "low_score", "missing_parent", "too_few_turns"} <= reasons
    assert all(d.record.startswith(f"{path}: ") for d in drops)
    escaped = [d for d in docs if any("&gt;" in comments[c]["body"] or "&amp;" in comments[c]["body"]
                                      for c in d.meta["comment_ids"])]
    assert escaped  # the real file has quotes and escaped links inside kept conversations
    for doc in docs:
        blocks = doc.text.split("\n\n")
        assert blocks[0].startswith("A: ")
        for cid, speaker in zip(doc.meta["comment_ids"], doc.meta["speakers"], strict=True):
            body = clean_body(comments[cid]["body"])
            assert f"{speaker}: {body}" in doc.text
            lines = [line.rstrip() for line in html.unescape(comments[cid]["body"]).replace("\r\n", "\n").split("\n")]
            assert body == re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    for doc in escaped:
        assert "&gt;" not in doc.text and "&amp;" not in doc.text
    quoted = [d for d in escaped if "\n> " in d.text or ": > " in d.text]
    assert quoted  # markdown quote markers come back as '>'


def test_subreddit_lists_on_real_file(realdata: Path) -> None:
    path = realdata / REAL
    docs, drops = read(path, subreddits_allow=("programming",))
    assert not docs and len(drops) == 1075 and {d.reason for d in drops} == {"subreddit_not_allowed"}
    docs, drops = read(path, subreddits_deny=("Reddit.com",))
    assert not docs and {d.reason for d in drops} == {"subreddit_denied"}
    docs, _ = read(path, subreddits_allow=("REDDIT.COM",))
    assert docs


def test_truncated_zst_keeps_what_was_readable(realdata: Path, tmp_path: Path) -> None:
    data = (realdata / REAL).read_bytes()
    cut = tmp_path / "RC_2005-12.zst"
    cut.write_bytes(data[: len(data) * 2 // 3])
    decoded = zstandard.ZstdDecompressor(max_window_size=2**31).decompressobj().decompress(cut.read_bytes())
    complete = decoded.count(b"\n")
    docs, drops = read(cut, **ALL_PATHS)
    truncated = [d for d in drops if d.reason == "truncated_input"]
    assert len(truncated) == 1 and truncated[0].is_error and "incomplete" in truncated[0].detail
    in_paths = {cid for d in docs for cid in d.meta["comment_ids"]}
    counted = len(in_paths) + sum(1 for d in drops if d.reason != "truncated_input")
    assert 0 < complete < 1075 and counted == complete


def test_older_bz2_and_xz_dumps(realdata: Path, tmp_path: Path) -> None:
    import bz2
    import lzma

    raw = b"".join(json.dumps(c).encode() + b"\n" for c in plain_lines(realdata / REAL))
    expected, _ = read(realdata / REAL)
    (tmp_path / "RC_2005-12.xz").write_bytes(lzma.compress(raw))
    docs, _ = read(tmp_path / "RC_2005-12.xz")
    assert [d.text for d in docs] == [d.text for d in expected]
    (tmp_path / "RC_2005-12.bz2").write_bytes(bz2.compress(raw)[:-100])
    docs, drops = read(tmp_path / "RC_2005-12.bz2")
    assert [d.reason for d in drops if d.is_error] == ["truncated_input"]


def test_window_over_the_limit_is_a_counted_drop(realdata: Path) -> None:
    docs, drops = read(realdata / REAL, max_window_log=20)
    assert not docs and [d.reason for d in drops] == ["zstd_window_too_large"]
    with pytest.raises(ValueError, match="limit"):
        list(zstd_chunks(realdata / REAL, 1 << 20))


def comment(cid: str, parent: str, body: str = "text", author: str = "u", score: int = 2, link: str = "L") -> dict:
    return {"id": cid, "parent_id": parent, "link_id": f"t3_{link}", "body": body, "author": author,
            "score": score, "created_utc": 100 + len(cid), "subreddit": "test"}


def test_malformed_lines_bots_and_entities(tmp_path: Path) -> None:
    path = tmp_path / "RC_2006-02.zst"
    rows = [comment("a", "t3_L", "Q &amp; A &gt; all"), comment("b", "t1_a", "reply"),
            comment("c", "t1_a", "x", author="AutoModerator"), comment("d", "t1_a", "y", author="helper_bot"),
            comment("e", "t1_a", "Done.\n\n*I am a bot, and this action was performed automatically.*"),
            comment("f", "t1_b", "[removed]"), comment("g", "t1_f", "orphaned by removal")]
    write_ndjson_zst(path, rows, extra_lines=[b"{not json", b"[1, 2]", b'{"id": "h", "body": "no parent"}',
                                              b"", json.dumps(comment("i", "t1_b", "last", author="v")).encode()])
    docs, drops = read(path)
    by_reason = defaultdict(list)
    for drop in drops:
        by_reason[drop.reason].append(drop.record)
    assert len(by_reason["bot"]) == 3 and by_reason["removed_body"] and by_reason["ancestor_filtered"]
    assert by_reason["malformed_json"] == [f"{path}: line 8"]
    assert len(by_reason["malformed_record"]) == 2
    assert [d.text for d in docs] == ["A: Q & A > all\n\nA: reply\n\nB: last"]
    assert docs[0].meta["speakers"] == ["A", "A", "B"]


def test_a_score_outside_int64_is_one_malformed_record(tmp_path: Path) -> None:
    """Scores and times go into int64 columns: 1e30, 10**20 or Infinity drop their own line only."""
    path = tmp_path / "RC_2006-03.zst"
    rows = [comment("a", "t3_L", "first"), comment("b", "t1_a", "second")]
    bad = [b'{"id": "x", "parent_id": "t1_a", "link_id": "t3_L", "body": "b", "score": 99999999999999999999}',
           b'{"id": "y", "parent_id": "t1_a", "link_id": "t3_L", "body": "b", "score": 1e30}',
           b'{"id": "z", "parent_id": "t1_a", "link_id": "t3_L", "body": "b", "created_utc": Infinity}',
           json.dumps(comment("c", "t1_b", "third")).encode()]
    write_ndjson_zst(path, rows, extra_lines=bad)
    docs, drops = read(path)
    assert sorted(d.record for d in drops if d.reason == "malformed_record") == [f"{path}: line {n}" for n in (3, 4, 5)]
    assert [d.text for d in docs] == ["A: first\n\nA: second\n\nA: third"]


def test_overlong_line_is_skipped_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sources.reddit as reddit

    monkeypatch.setattr(reddit, "MAX_LINE_BYTES", 2_000)
    path = tmp_path / "RC_2006-03.zst"
    rows = [comment("a", "t3_L", "first"), comment("b", "t1_a", "x" * 5_000), comment("c", "t1_a", "second")]
    write_ndjson_zst(path, rows)
    docs, drops = read(path)
    assert [(d.reason, d.record) for d in drops if d.is_error] == [("line_too_long", f"{path}: line 2")]
    assert [d.meta["comment_ids"] for d in docs] == [["a", "c"]]


def test_speaker_labels() -> None:
    assert label_speakers(["x", "y", "x", "[deleted]", "[deleted]", "z"]) == ["A", "B", "A", "C", "D", "E"]


# -- random reply forests ------------------------------------------------------------------------
@st.composite
def forests(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 30))
    rows = []
    for i in range(count):
        kind = draw(st.sampled_from(["top", "earlier", "any", "missing"]))
        if kind == "top" or (kind == "earlier" and i == 0):
            parent = "t3_L"
        elif kind == "earlier":
            parent = f"t1_n{draw(st.integers(0, i - 1))}"
        elif kind == "any":  # may point forward or at itself: cycles
            parent = f"t1_n{draw(st.integers(0, count - 1))}"
        else:
            parent = "t1_gone"
        rows.append({"link": "L", "kind": 1, "id": f"n{i}", "parent": parent, "author": f"u{i % 3}",
                     "body": draw(st.sampled_from(["ok", "fine", "[deleted]"])), "score": draw(st.integers(-1, 3)),
                     "created": i, "subreddit": "s", "line": i + 1})
    return rows


def reference_forest(rows: list[dict[str, Any]], filters: RedditFilters) -> tuple[set[tuple[str, ...]], dict[str, str]]:
    parent = {r["id"]: (None if r["parent"] == "t3_L" else r["parent"][3:]) for r in rows}
    row = {r["id"]: r for r in rows}
    orphan: dict[str, str] = {}
    for node in parent:
        seen, cur = [], node
        while cur is not None and cur in parent and cur not in seen:
            seen.append(cur)
            cur = parent[cur]
        if cur is not None:
            orphan[node] = "reply_cycle" if cur in parent else "missing_parent"
    paths: set[tuple[str, ...]] = set()

    def good(n: str, depth: int) -> bool:
        r = row[n]
        return depth <= filters.max_depth and filters.comment_reason(r["author"], r["body"], r["score"], 1) is None

    def walk(n: str, above: tuple[str, ...]) -> None:
        path = (*above, n)
        kids = [k for k in parent if parent[k] == n and good(k, len(path) + 1)]
        if not kids and len(path) >= filters.min_turns:
            paths.add(path)
        for k in kids:
            walk(k, path)

    for n, p in parent.items():
        if p is None and good(n, 1):
            walk(n, ())
    return paths, orphan


def forest_records(rows: list[dict[str, Any]], filters: RedditFilters) -> tuple[list[Document], list[Drop]]:
    """The records of one thread's rows, sorted as DuckDB hands them to the reader."""
    ordered = sorted(rows, key=lambda r: (r["kind"], r["created"], r["id"], r["line"]))
    records = list(chunk_records(pa.Table.from_pylist(ordered, schema=ROW_SCHEMA), "f", filters))
    return [r for r in records if isinstance(r, Document)], [r for r in records if isinstance(r, Drop)]


@settings(max_examples=150, deadline=None)
@given(forests(), st.integers(1, 4))
def test_forests_match_reference(rows: list[dict[str, Any]], max_depth: int) -> None:
    filters = RedditFilters(min_score=0, min_turns=2, max_depth=max_depth, max_paths_per_root=0)
    docs, drops = forest_records(rows, filters)
    expected_paths, orphans = reference_forest(rows, filters)
    assert {tuple(d.meta["comment_ids"]) for d in docs} == expected_paths
    one_turn = {re.search(r"path to t1_(\w+) ", d.record).group(1) for d in drops if d.reason == "too_few_turns"}
    dropped = {re.search(r"\(t1_(\w+) in t3_L\)", d.record).group(1): d.reason for d in drops
               if d.reason != "too_few_turns"}
    assert len(dropped) + len(one_turn) == len(drops)  # a comment is dropped at most once
    assert {k: v for k, v in dropped.items() if v in ("reply_cycle", "missing_parent")} == orphans
    in_paths = {c for d in docs for c in d.meta["comment_ids"]} | one_turn
    assert in_paths.isdisjoint(dropped) and in_paths | set(dropped) == {r["id"] for r in rows}


def test_clean_body_is_bounded_and_readable() -> None:
    assert clean_body("a&amp;amp;b &lt;3\r\n\r\n\r\n\r\n&#x200B;\r\n* item  \r\n") == "a&amp;b <3\n\n* item"
    big = "&gt; " * 5000
    assert clean_body(big).startswith("> >")


def test_reader_does_not_import_pandas(tmp_path: Path) -> None:
    """pandas costs ~6% of a month's CPU when a stray ``pa.array``/``to_numpy`` pulls it in (issue 23)."""
    path = tmp_path / "RC_2006-04.zst"
    write_ndjson_zst(path, [comment("a", "t3_L", "question"), comment("b", "t1_a", "answer", author="v"),
                            comment("c", "t1_b", "[deleted]"), comment("d", "t3_M", "alone")])
    script = ("import sys\nfrom pathlib import Path\nfrom core.document import Document, InputSpec\n"
              "from sources.reddit import RedditReader\n"
              f"path = Path({str(path)!r})\n"
              "records = list(RedditReader(InputSpec(str(path), path, path.name)))\n"
              "print(sum(isinstance(r, Document) for r in records), len(records), 'pandas' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.split() == ["1", "3", "False"]  # a conversation, [deleted], a lone comment
