"""End to end: the dialogue flow over every corpus's sample (written in the real formats) on a real Prefect API."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from core.manifest import Manifest
from core.shards import read_documents
from flows.dialogue import DialogueConfig, parse_args
from flows.dialogue import run as run_dialogue
from sources.samples.dialogue import write_sample_inputs

pytestmark = pytest.mark.prefect


def shard_hashes(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs").rglob("*.parquet"))}


def test_dialogue_flow_all_corpora_with_resume(tmp_path: Path, prefect_api_url: str) -> None:
    inputs = write_sample_inputs(tmp_path / "in")
    out = tmp_path / "out"
    config = DialogueConfig(inputs=inputs, out=out, runner="thread", workers=2, progress=False)
    summary = run_dialogue(config)
    assert not summary.failed and len(summary.records) == len(inputs)  # one task (record) per input file
    for record in summary.records:
        assert record.records_in == record.docs_kept + record.docs_dropped, record.input_key

    docs = [d for p in sorted((out / "docs" / "dialogue").rglob("*.parquet")) for d in read_documents(p)]
    corpora = Counter(d.meta["corpus"] for d in docs)
    assert set(corpora) == {"reddit", "ubuntu", "dailydialog"}
    assert corpora["dailydialog"] == 3 and corpora["ubuntu"] == 4
    for doc in docs:  # the one turn format: a labelled block per turn, as many as meta says
        blocks = [b for b in doc.text.split("\n\n") if b[:1].isupper() or b.startswith("?: ")]
        assert doc.text.startswith(f"{doc.meta['speakers'][0]}: ")
        assert len(blocks) >= doc.meta["turns"] and doc.meta["turns"] >= 2
    reddit = {d.meta["dialogue_id"]: d for d in docs if d.meta["corpus"] == "reddit"}
    assert reddit["t3_uw0/t1_zz4"].text.endswith("B: > rendered\n\nNo, it's escaped.\n\nA: Thanks & cheers!")
    assert reddit["t3_uw0/t1_zz4"].meta["subreddit"] == "programming"

    manifest = Manifest.for_output(out)
    _, rows = manifest.query("SELECT reason, sum(count) FROM drops GROUP BY reason")
    drops = dict(rows)
    for reason in ("bot", "missing_parent", "reply_cycle", "malformed_json", "deleted_body", "submissions_file",
                   "annotation_member"):
        assert drops.get(reason, 0) >= 1, reason
    _, errors = manifest.query("SELECT record FROM errors WHERE reason = 'malformed_json'")
    assert errors and "RC_2006-01.zst: line" in errors[0][0]

    first = shard_hashes(out)
    again = run_dialogue(config)  # resume: nothing re-read, identical shards
    assert again.kept == summary.kept and shard_hashes(out) == first


def test_dialogue_cli_flags(tmp_path: Path) -> None:
    config = parse_args(["--inputs", "a.zst", "--inputs", "b.zip", "--subreddits", "AskScience,history",
                         "--min-score", "3", "--out", str(tmp_path)])
    assert config.inputs == ["a.zst", "b.zip"] and config.subreddits_allow == ["AskScience", "history"]
    recipe = config.recipe()
    assert recipe.reddit.min_score == 3 and recipe.reddit.subreddit_reason("askscience") is None
    assert recipe.reddit.subreddit_reason("pics") == "subreddit_not_allowed"
