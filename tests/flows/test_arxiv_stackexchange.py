"""End to end: the arXiv and StackExchange flows on a real Prefect API, plus their command lines."""

from __future__ import annotations

import gzip
import hashlib
import html
import io
import tarfile
from pathlib import Path

import pytest

from core.manifest import Manifest
from core.shards import read_documents
from flows.arxiv import ArxivConfig
from flows.arxiv import parse_args as arxiv_args
from flows.arxiv import run as run_arxiv
from flows.stackexchange import StackExchangeConfig
from flows.stackexchange import parse_args as stackexchange_args
from flows.stackexchange import run as run_stackexchange
from tests.fixed import write_7z


def shard_hashes(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs").rglob("*.parquet"))}


def documents(out: Path, source: str) -> list:
    return [doc for path in sorted((out / "docs" / source).rglob("*.parquet")) for doc in read_documents(path)]


# -- arXiv ----------------------------------------------------------------------------------
def tar_bytes(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_600_000_000
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def paper(topic: str) -> bytes:
    main = (f"\\documentclass{{article}}\n\\newcommand{{\\topic}}{{{topic}}}\n\\begin{{document}}\n"
            f"\\section{{Intro}} We study \\topic. % note\n\\bibliography{{r}}\n\\end{{document}}\n").encode()
    return gzip.compress(tar_bytes([("main.tex", main)]), mtime=0)


def test_arxiv_flow_end_to_end_with_resume(tmp_path: Path, prefect_api_url: str) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "arXiv_src_2301_001.tar").write_bytes(tar_bytes([
        ("2301/2301.00001.gz", paper("graphs")), ("2301/2301.00002.gz", paper("groups")),
        ("2301/2301.00003.pdf", b"%PDF"), ("2301/2301.00004.gz", b"not gzip"),
    ]))
    (src / "arXiv_src_2301_002.tar").write_bytes(tar_bytes([
        ("2301/2301.00005.gz", paper("graphs")),  # same text as 2301.00001: a run-wide exact duplicate
        ("2301/2301.00006.gz", gzip.compress(tar_bytes([("x.tex", b"\\section{A}")]), mtime=0)),
    ]))
    (src / "arXiv_src_2301_003.tar").write_bytes(tar_bytes([("2301/2301.00007.gz", paper("rings"))])[:700])
    out = tmp_path / "out"
    config = ArxivConfig(inputs=[str(src / "*.tar")], out=out, runner="thread", workers=2, progress=False)
    summary = run_arxiv(config)
    assert not summary.failed and summary.kept == 3
    texts = sorted(d.text for d in documents(out, "arxiv"))
    assert texts == ["\\section{A}", "\\section{Intro} We study graphs.", "\\section{Intro} We study groups."]
    manifest = Manifest.for_output(out)
    _, drops = manifest.query("SELECT reason, sum(count)::INT FROM drops GROUP BY reason ORDER BY reason")
    # the cut paper is counted once, as the end of readable data (truncated_input), not twice
    assert dict(drops) == {"duplicate_exact": 1, "not_gzip": 1, "pdf_only": 1, "truncated_input": 1}
    _, errors = manifest.query("SELECT record FROM errors WHERE reason = 'not_gzip'")
    assert errors[0][0].endswith("arXiv_src_2301_001.tar: 2301/2301.00004.gz")
    _, statuses = manifest.query("SELECT input_key, status FROM inputs ORDER BY input_key")
    assert [s for _, s in statuses] == ["done", "done", "partial"]
    first = shard_hashes(out)
    again = run_arxiv(config)
    assert again.kept == 3 and shard_hashes(out) == first


# -- StackExchange --------------------------------------------------------------------------
def posts(site_questions: int, start: int = 1) -> bytes:
    rows = []
    for q in range(start, start + site_questions):
        rows.append(f'  <row Id="{q * 10}" PostTypeId="1" Score="{q}" Title="Question {q}" '
                    f'Body="{html.escape("<p>Body " + str(q) + "</p>")}" Tags="&lt;t&gt;" />\n')
        for a, score in enumerate((2, 11, 3), start=1):
            rows.append(f'  <row Id="{q * 10 + a}" PostTypeId="2" ParentId="{q * 10}" Score="{score}" '
                        f'Body="{html.escape("<p>Answer " + str(score) + "</p>")}" />\n')
    return ('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "".join(rows) + "</posts>\n").encode()


def seven_zip(path: Path, files: dict[str, bytes]) -> None:
    write_7z(path, files)


def test_stackexchange_flow_top_sites_and_skips(tmp_path: Path, prefect_api_url: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    seven_zip(dumps / "big.stackexchange.com.7z", {"Posts.xml": posts(5), "Users.xml": b"<users/>"})
    seven_zip(dumps / "mid.stackexchange.com.7z", {"Posts.xml": posts(3, start=100)})
    seven_zip(dumps / "small.stackexchange.com.7z", {"Posts.xml": posts(1, start=200)})
    seven_zip(dumps / "meta.stackexchange.com.7z", {"Posts.xml": posts(9, start=300)})
    seven_zip(dumps / "stackoverflow.com-Users.7z", {"Users.xml": b"<users/>"})
    broken = dumps / "broken.stackexchange.com.7z"
    seven_zip(broken, {"Posts.xml": posts(50, start=400)})
    broken.write_bytes(broken.read_bytes()[:300])
    out = tmp_path / "out"
    config = StackExchangeConfig(inputs=[str(dumps / "*.7z")], out=out, top_sites=2, runner="thread", workers=2,
                                 progress=False, memory_limit="256MB")
    summary = run_stackexchange(config)
    assert summary.kept == 8 and not summary.failed
    docs = documents(out, "stackexchange")
    assert sorted({d.meta["site"] for d in docs}) == ["big.stackexchange.com", "mid.stackexchange.com"]
    assert all(d.meta["answer_scores"] == [11, 3, 2] for d in docs)
    assert docs[0].text.split("\n\n")[1] == "A: Answer 11"
    manifest = Manifest.for_output(out)
    _, rows = manifest.query("SELECT input_key, status, error FROM inputs ORDER BY input_key")
    status = {key: (state, (error or "").split(":")[0]) for key, state, error in rows}
    assert status == {
        "big.stackexchange.com.7z": ("done", ""), "mid.stackexchange.com.7z": ("done", ""),
        "small.stackexchange.com.7z": ("skipped", "not_in_top_sites"),
        "meta.stackexchange.com.7z": ("skipped", "meta_site"),
        "stackoverflow.com-Users.7z": ("skipped", "not_posts_table"),
        # cut to 300 bytes: a truncated dump ranks by its readable rows (none here), never fails the run
        "broken.stackexchange.com.7z": ("skipped", "not_in_top_sites"),
    }
    assert (out / "_state" / "stackexchange" / "big.stackexchange.com.7z.size-posts.json").exists()
    first = shard_hashes(out)
    caplog.clear()
    again = run_stackexchange(config)
    assert again.kept == 8 and shard_hashes(out) == first
    # the skipped sites hold done markers too, so the re-run takes the nothing-to-do shortcut
    # (no ranking, no staging) and records the same outcome for every input
    assert "all 6 inputs already finished for this config; nothing to do" in caplog.text
    _, rerun_rows = manifest.query("SELECT input_key, status, error FROM latest_inputs ORDER BY input_key")
    assert rerun_rows == rows


# -- command lines (no server) ----------------------------------------------------------------
def test_arxiv_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = arxiv_args(["--inputs", "a/*.tar", "--inputs", "b.gz", "--cut-appendix", "--out", str(tmp_path),
                         "--set", "latex.max_macro_depth=3"])
    assert config.inputs == ["a/*.tar", "b.gz"] and config.latex.cut_appendix and config.latex.max_macro_depth == 3
    assert config.recipe().latex.cut_appendix and config.recipe().limits.max_tex_bytes == 8 * 1024 * 1024
    other = arxiv_args(["--inputs", "c/*.tar", "--out", str(tmp_path), "--set", "latex.max_macro_depth=3",
                        "--set", "latex.cut_appendix=true"])
    assert other.config_hash() == config.config_hash()  # which inputs are read is not part of the hash
    assert arxiv_args(["--inputs", "x"]).config_hash() != config.config_hash()
    with pytest.raises(SystemExit) as exited:  # a bad --set is one line and exit code 2, not a traceback
        arxiv_args(["--inputs", "x", "--set", "latex.bogus=1"])
    assert exited.value.code == 2
    assert "latex.bogus: Extra inputs are not permitted" in capsys.readouterr().err


def test_stackexchange_command_line(tmp_path: Path) -> None:
    config = stackexchange_args(["--inputs", "se/*.7z", "--top-sites", "5", "--rank-by", "bytes",
                                 "--scratch-dir", str(tmp_path), "--out", str(tmp_path)])
    assert (config.top_sites, config.rank_by, config.scratch_dir) == (5, "bytes", tmp_path)
    defaults = stackexchange_args(["--inputs", "se/*.7z"])
    assert defaults.top_sites == 28 and defaults.rank_by == "posts" and not defaults.include_meta
    moved = stackexchange_args(["--inputs", "se/*.7z", "--scratch-dir", "/elsewhere", "--set", "memory_limit=4GB"])
    assert moved.config_hash() == defaults.config_hash()
