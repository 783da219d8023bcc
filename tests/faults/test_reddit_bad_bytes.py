"""Fault injection, Reddit: a comment body that is not UTF-8 costs that comment, not the month.

Issue 24 item 2: pyarrow's JSON reader passed the raw bytes ``\\xff\\xfe`` of one body into the
scratch Parquet, DuckDB refused the file (``Invalid string encoding``) and the whole month failed
with 0 records. The inputs are real Pushshift-shaped ``RC_2005-12.zst`` files written with
``zstandard``, read by ``python -m flows.dialogue`` as a user runs it. The longer month also
checks issue 24 item 6's Reddit part: the scratch folder lives under ``--out`` (never the system
temp folder, here a test folder given as ``TMPDIR``), what a killed run left there is swept,
and nothing of it is left once the run ends.
Runtime: ~20-40 s on a loaded 2-core machine (two flow processes on the session's Prefect API).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import zstandard

from core.manifest import Manifest

pytestmark = pytest.mark.prefect
REPO = Path(__file__).resolve().parents[2]
BAD_BODY = b'"\xff\xfe"'  # raw bytes in the JSON text: not UTF-8
SURROGATE_BODY = b'"half an emoji \\ud83d"'  # valid JSON whose string has a lone surrogate


def comment_line(comment: str, thread: str, parent: str, created: int, body: bytes | None = None) -> bytes:
    """One Pushshift comment line; ``body`` (JSON bytes) replaces a plain one."""
    row = {"id": comment, "link_id": f"t3_{thread}", "parent_id": parent, "author": f"user_{comment}",
           "body": f"Comment {comment} on thread {thread}: the archive has the ship's log.", "score": 3, "created_utc": created, "subreddit": "AskHistorians"}
    text = json.dumps(row).encode()
    return text.replace(json.dumps(row["body"]).encode(), body) if body is not None else text


def write_month(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(b"".join(line + b"\n" for line in lines)))


def run_dialogue(month: Path, out: Path, api: str, tmpdir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m flows.dialogue`` as a user runs it, with ``TMPDIR`` pointing at ``tmpdir``."""
    tmpdir.mkdir(exist_ok=True)
    env = {**os.environ, "PREFECT_API_URL": api, "TMPDIR": str(tmpdir)}
    return subprocess.run(
        [sys.executable, "-m", "flows.dialogue", "--inputs", str(month), "--out", str(out),
         "--runner", "sequential", *extra],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def kept_dialogues(out: Path) -> set[str]:
    rows = [row for shard in (out / "docs").rglob("*.parquet") for row in pq.read_table(shard).to_pylist()]
    return {json.loads(row["meta"])["dialogue_id"] for row in rows}


def errors(out: Path) -> list[tuple[str, str]]:
    _, rows = Manifest.for_output(out).query("SELECT reason, record FROM errors ORDER BY record")
    return [(reason, record) for reason, record in rows]


def drop_counts(out: Path) -> dict[str, int]:
    _, rows = Manifest.for_output(out).query("SELECT reason, sum(count) FROM latest_drops GROUP BY reason")
    return {reason: int(count) for reason, count in rows}


def latest_input(out: Path) -> tuple[str, int, int, int]:
    _, rows = Manifest.for_output(out).query(
        "SELECT status, records_in, docs_kept, docs_dropped FROM latest_inputs")
    assert len(rows) == 1, rows
    status, records_in, kept, dropped = rows[0]
    return status, records_in, kept, dropped


def test_two_line_month_drops_the_bad_body_and_keeps_the_other(prefect_api_url: str, tmp_path: Path) -> None:
    month = tmp_path / "RC_2005-12.zst"
    write_month(month, [comment_line("c1", "x", "t3_x", 1), comment_line("c2", "x", "t1_c1", 2, BAD_BODY)])
    out = tmp_path / "out"
    done = run_dialogue(month, out, prefect_api_url, tmp_path / "tmp", "--set", "min_turns=1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert kept_dialogues(out) == {"t3_x/t1_c1"}
    assert errors(out) == [("invalid_utf8", f"{month}: line 2 (t1_c2 in t3_x)")]
    assert drop_counts(out) == {"invalid_utf8": 1}
    assert latest_input(out) == ("done", 2, 1, 1)


def test_longer_month_keeps_every_other_comment_and_leaves_no_scratch(prefect_api_url: str, tmp_path: Path) -> None:
    """40 two-comment threads; thread 10's reply is raw ``\\xff\\xfe``, thread 30's a lone surrogate."""
    lines, expected = [], set()
    for n in range(40):
        body = BAD_BODY if n == 10 else SURROGATE_BODY if n == 30 else None
        lines += [comment_line(f"r{n}", f"t{n}", f"t3_t{n}", 10 * n), comment_line(f"c{n}", f"t{n}", f"t1_r{n}", 10 * n + 1, body)]
        if body is None:
            expected.add(f"t3_t{n}/t1_c{n}")
    month = tmp_path / "RC_2005-12.zst"
    write_month(month, lines)
    out, tmpdir = tmp_path / "out", tmp_path / "tmp"
    crashed = out / "_staging" / "reddit_scratch" / "reddit-killed"  # what a kill -9 mid-month leaves
    crashed.mkdir(parents=True)
    (crashed / "comments.parquet").write_bytes(b"PAR1 cut off")

    done = run_dialogue(month, out, prefect_api_url, tmpdir)

    assert done.returncode == 0, done.stderr[-3000:]
    assert kept_dialogues(out) == expected
    dropped = errors(out)
    assert [r for r in dropped if r[0] == "invalid_utf8"] == [
        ("invalid_utf8", f"{month}: line 22 (t1_c10 in t3_t10)"),
        ("invalid_utf8", f"{month}: line 62 (t1_c30 in t3_t30)"),
    ]
    assert drop_counts(out) == {"invalid_utf8": 2, "too_few_turns": 2}  # the bad replies' roots, alone
    assert latest_input(out) == ("done", 42, 38, 4)  # records: 38 conversations + 2 bad comments + 2 lone roots
    assert list(tmpdir.iterdir()) == []
    assert not (out / "_staging").exists()
