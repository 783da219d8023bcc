"""The ``kinda`` command on the paths users take: one-line errors, ``| head``, ``--out`` anywhere."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.document import Document
from core.manifest import Manifest
from core.shards import ShardWriter
from kinda.cli import _subcommand_parsers, build_parser, main

KINDA = [sys.executable, "-m", "kinda.cli"]


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    """An output root with one real shard of three documents recorded in its manifest."""
    out = tmp_path / "data"
    with ShardWriter(out, out / "docs" / "wiki" / "en", "input", "wiki", "en") as writer:
        for i in range(3):
            writer.write(Document(f"d{i}", f"text number {i} " * 20, "wiki", {"language": "en"}))
    Manifest.for_output(out).record_shards("run-1", [s.to_dict() for s in writer.finished], "cfg", "wiki", "test")
    return out


def kinda(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the command as a user does, in its own process."""
    return subprocess.run([*KINDA, *argv], capture_output=True, text=True, timeout=60, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    """The command in this process (a traceback would surface as an exception and fail the test)."""
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_bad_sql_is_one_line_exit_2(root: Path, capsys) -> None:
    done = kinda("--out", str(root), "manifest", "sql", "SELECT no_such_column FROM shards")
    assert done.returncode == 2 and done.stdout == ""
    line = one_line(done.stderr)
    assert line.startswith("kinda: bad query:") and "no_such_column" in line
    status, out, err = run_main(capsys, "--out", str(root), "manifest", "sql", "SELEC 1")
    assert status == 2 and out == "" and "bad query" in one_line(err)
    status, out, err = run_main(capsys, "--out", str(root), "manifest", "sql", "SELECT * FROM no_such_table")
    assert status == 2 and "no_such_table" in one_line(err)


def test_pipe_closed_by_head_is_quiet(root: Path) -> None:
    command = " ".join([*KINDA, "--out", str(root), "manifest", "sql", "'SELECT range AS n FROM range(200000)'"])
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {command} | head -n 3"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.stdout.splitlines()[0].strip() == "n" and len(done.stdout.splitlines()) == 3
    assert done.stderr == ""  # no BrokenPipeError, no "Exception ignored" on exit
    assert done.returncode == 141  # as a tool killed by SIGPIPE, so pipefail scripts see the cut


SUBCOMMANDS = [
    ["manifest", "summary"],
    ["manifest", "sql", "SELECT count(*) AS n FROM shards"],
    ["manifest", "verify"],
    ["report"],
    ["dedup", "explain", "d1"],
]


@pytest.mark.parametrize("command", SUBCOMMANDS, ids=lambda c: " ".join(c[:2]))
def test_out_before_or_after_the_subcommand(root: Path, command: list[str], capsys) -> None:
    answers = []
    for argv in (["--out", str(root), *command], [*command, "--out", str(root)],
                 [command[0], "--out", str(root), *command[1:]] if len(command) > 1 else [*command, "--out", str(root)]):
        status = main(argv)
        captured = capsys.readouterr()
        answers.append((status, captured.out, captured.err))
    assert answers[0] == answers[1] == answers[2]
    assert answers[0][1] or answers[0][2]
    status = main([*command, "--out", str(root / "elsewhere")])  # after the subcommand it wins
    assert status == 2 and "elsewhere" in capsys.readouterr().err


def test_every_subcommand_takes_out_and_manifest() -> None:
    parser = build_parser()
    leaves = [p for p in _subcommand_parsers(parser)
              if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)]
    assert len(leaves) >= 5
    for leaf in leaves:
        options = {s for action in leaf._actions for s in action.option_strings}
        assert {"--out", "--manifest"} <= options, leaf.prog


def test_png_without_matplotlib_says_how_to_install(root: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    status = main(["--out", str(root), "report", "--png", str(tmp_path / "r.png")])
    line = one_line(capsys.readouterr().err)
    assert status == 2 and "matplotlib" in line and "pip install" in line
    assert not (tmp_path / "r.png").exists()


def test_missing_manifest_is_one_line(tmp_path: Path, capsys) -> None:
    status, _, err = run_main(capsys, "--out", str(tmp_path / "nothing"), "manifest", "summary")
    assert status == 2 and "no manifest at" in one_line(err)
    status, _, err = run_main(capsys, "report", "--manifest", str(tmp_path / "gone.duckdb"))
    assert status == 2 and "gone.duckdb" in one_line(err)


def test_corrupt_manifest_is_one_line_without_retries(root: Path, capsys) -> None:
    path = root / "manifest.duckdb"
    good = path.read_bytes()
    path.write_bytes(b"not a duckdb file at all " * 100)
    started = time.perf_counter()
    done = kinda("--out", str(root), "manifest", "summary")  # its own process: nothing printed at exit either
    corrupt = time.perf_counter() - started
    path.write_bytes(good)
    started = time.perf_counter()
    assert kinda("--out", str(root), "manifest", "summary").returncode == 0
    healthy = time.perf_counter() - started
    # no lock retries (their sleeps add ~40 s): compared with the same command on a good manifest
    # run just after it, so a loaded machine stretches both sides alike
    assert corrupt < 2 * healthy + 15, (corrupt, healthy)
    assert done.returncode == 1 and "not a readable manifest" in one_line(done.stderr)
    path.write_bytes(b"")
    status, _, err = run_main(capsys, "--out", str(root), "report")
    assert status == 1 and "manifest.duckdb" in one_line(err)

    scribbled = bytearray(good)  # 8 KB of noise inside a real manifest: DuckDB's block checksums catch it
    scribbled[12_288: 12_288 + 8192] = bytes(range(256)) * 32
    path.write_bytes(bytes(scribbled))
    for command in (["manifest", "summary"], ["manifest", "sql", "SELECT count(*) FROM shards"], ["report"]):
        status, _, err = run_main(capsys, "--out", str(root), *command)
        assert status == 1 and "manifest.duckdb" in one_line(err), command
