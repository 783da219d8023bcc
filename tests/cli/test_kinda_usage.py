"""``kinda`` on a newcomer's mistakes (issue 34): a typo in a sub-command, a read-only report folder, a
manifest in the current folder, and ``dedup explain``'s wording.

Each case runs ``kinda`` as a user does (in this process through :func:`kinda.cli.main`, or in its
own process where the exit status and stderr are the point) on a real output root: a real shard
recorded in a real manifest, real ``matches`` rows, a real books' near-duplicate table.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from core.arrow_columns import arrow_rows
from core.document import Document
from core.manifest import MATCHES_SQL, Manifest
from core.pipeline import DROP_SCHEMA
from core.shards import ShardWriter
from dedupe.near_books import NearMatch, drop_rows, write_matches
from kinda.cli import main

REPO = Path(__file__).resolve().parents[2]


def make_root(out: Path, ids: tuple[str, ...] = ("d0", "d1", "d2")) -> Path:
    """An output root with one real shard of ``ids`` recorded in its manifest."""
    with ShardWriter(out, out / "docs" / "wiki" / "en", "input", "wiki", "en") as writer:
        for i, doc_id in enumerate(ids):
            writer.write(Document(doc_id, f"text number {i} " * 20, "wiki", {"language": "en"}))
    Manifest.for_output(out).record_shards("run-1", [s.to_dict() for s in writer.finished], "cfg", "wiki", "test")
    return out


def kinda(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """``kinda`` in its own process, with this checkout first on the path."""
    return subprocess.run([sys.executable, "-m", "kinda.cli", *argv], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO)})


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The stderr of an argparse usage error (exit 2) of ``kinda argv``."""
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


# -- a typo is answered with the usage of the sub-command it was typed in ------------------------
@pytest.mark.parametrize(("argv", "prog"), [
    (["report", "--hmtl", "x.html"], "kinda report"),
    (["--out", "data", "report", "--html", "x.html", "--pgn", "y.png"], "kinda report"),
    (["manifest", "sql", "SELECT 1", "extra"], "kinda manifest sql"),
    (["manifest", "--verbose", "summary"], "kinda manifest"),
    (["dedup", "explain", "doc-1", "doc-2"], "kinda dedup explain"),
    (["tensors", "verify", "tensors/g1", "--quick"], "kinda tensors verify"),
    (["--verbose", "report"], "kinda"),  # before any sub-command: kinda's own
])
def test_a_typo_prints_the_usage_of_its_subcommand(argv: list[str], prog: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(capsys, *argv)
    lines = err.strip().splitlines()
    assert lines[0].startswith(f"usage: {prog} [-h]"), err
    typo = next(a for a in argv if a in ("--hmtl", "--pgn", "extra", "--verbose", "doc-2", "--quick"))
    assert lines[-1].startswith(f"{prog}: error: unrecognized arguments: {typo}"), err


def test_a_known_abbreviation_is_no_typo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = make_root(tmp_path / "data")
    assert main(["--out", str(out), "report", "--htm", str(tmp_path / "r.html")]) == 0  # argparse's prefix match
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!doctype html>")
    assert capsys.readouterr().err == ""


# -- a report into a folder that cannot be written: exit 2, one line naming the folder ------------
@pytest.fixture()
def read_only_folder(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder no file can be created in, and the error text the system gives for it.

    Root writes through permission bits, so for root it is a read-only tmpfs (EROFS), a real
    read-only mount; for anyone else a folder without write permission (EACCES).
    """
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder, "Permission denied"
        folder.chmod(0o755)
        return
    if shutil.which("mount") is None:
        pytest.skip("no mount command for a read-only tmpfs")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield folder, "Read-only file system"
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.parametrize("option", ["--html", "--png"])
def test_report_into_a_read_only_folder_exits_2_naming_it(tmp_path: Path, read_only_folder: tuple[Path, str],
                                                          option: str) -> None:
    folder, reason = read_only_folder
    out = make_root(tmp_path / "data")
    target = folder / "report.out"
    done = kinda("--out", str(out), "report", option, str(target))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"kinda: cannot write the report to {target}: {reason}: {folder}"]
    assert list(folder.iterdir()) == []  # not even the probe is left


# -- the manifest of the current folder, then data/, then an error naming both -------------------
def _roots(capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(["manifest", "sql", "SELECT 'docs=' || sum(docs) AS n FROM shards"])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_manifest_sql_finds_the_manifest_of_the_current_folder_first(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    here = make_root(tmp_path / "run-7", ("h0", "h1"))  # an --out folder not called data: 2 documents
    make_root(here / "data", ("i0", "i1", "i2"))  # a data/ inside it must not win over the folder itself
    make_root(tmp_path / "data", ("d0",))
    monkeypatch.chdir(here)
    status, out, err = _roots(capsys)
    assert status == 0 and "docs=2" in out and err == "", (out, err)
    monkeypatch.chdir(tmp_path)  # no manifest here: data/ is next
    status, out, err = _roots(capsys)
    assert status == 0 and "docs=1" in out and err == "", (out, err)
    assert main(["manifest", "summary"]) == 0 and "wiki" in capsys.readouterr().out
    assert main(["--out", str(here), "manifest", "summary"]) == 0  # --out still wins over both
    assert main(["manifest", "verify"]) == 0 and "problem" not in capsys.readouterr().out.lower()

    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    status, out, err = _roots(capsys)
    assert status == 2 and out == ""
    assert err.strip().splitlines() == [
        f"kinda: no manifest found: looked for manifest.duckdb or data/manifest.duckdb in {empty} "
        "(give the output root with --out, or the file with --manifest)"]


def test_dedup_explain_reads_the_current_folder_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    here = make_root(tmp_path / "run-7", ("h0",))
    monkeypatch.chdir(here)
    assert main(["dedup", "explain", "h0"]) == 0
    assert capsys.readouterr().out.startswith("h0: kept, in no labeled set (docs/wiki/en/")


# -- dedup explain: one spelling of each measure, every line a sentence ---------------------------
def _matches(out: Path, rows: list[list[object]]) -> None:
    Manifest.for_output(out).write([(MATCHES_SQL, [], False),
                                    ("INSERT INTO matches VALUES (" + ", ".join("?" * 13) + ")", rows, True)])


@pytest.fixture()
def explained_root(tmp_path: Path) -> Path:
    """A root where documents were dropped by a source run (books: Jaccard and containment) and by
    flows.dedup (exact, near), one near duplicate matching the reference too, one kept reference match."""
    out = make_root(tmp_path / "data", ("keep", "ref-kept", "w-near"))
    index = str(tmp_path / "pile-index")
    shard = "docs/wiki/en/input-00000.parquet"
    _matches(out, [
        ["r1", "w-exact", "wiki", shard, "duplicate_exact", "keep", None, None, None, None, 1.0, 0.8, "b9r13"],
        ["r1", "w-near", "wiki", shard, "duplicate_near", "keep", None, None, None, None, 0.8671875, 0.8, "b9r13"],
        ["r1", "w-near", "wiki", shard, "reference_near", None, index, "00.jsonl.zst", 4, "Wikipedia (en)",
         0.90625, 0.8, "b9r13"],
        ["r1", "ref-kept", "wiki", shard, "reference_exact", None, index, "00.jsonl.zst", 7, "Wikipedia (en)",
         1.0, 0.8, "b9r13"],
    ])
    books = [NearMatch("b.txt", 3, "book-j", "Copy", "en", "a.txt", 1, "book-kept", "Original", 0.9123, "jaccard"),
             NearMatch("c.txt", 0, "book-c", "Part", "en", "a.txt", 1, "book-kept", "Original", 0.95, "containment")]
    write_matches(out, "books", books)
    attributes = out / "attributes" / "books"
    pq.write_table(arrow_rows(drop_rows(books), DROP_SCHEMA), attributes / "b.txt.drops.parquet")
    return out


def explain_text(out: Path, doc_id: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["--out", str(out), "dedup", "explain", doc_id]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def test_dedup_explain_spells_each_measure_one_way_and_says_what_a_match_means(
        explained_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = {doc: explain_text(explained_root, doc, capsys)
            for doc in ("book-j", "book-c", "w-exact", "w-near", "ref-kept", "keep")}
    assert "book-j: dropped as near duplicate of book-kept (by its source run, Jaccard 0.912)" in text["book-j"]
    assert "book-c: dropped as near duplicate of book-kept (by its source run, containment 0.950)" in text["book-c"]
    assert "w-exact: dropped as exact duplicate of keep (by flows.dedup, threshold 0.8)" in text["w-exact"]
    assert "w-near: dropped as near duplicate of keep (by flows.dedup, estimated Jaccard 0.867, threshold 0.8)" \
        in text["w-near"]
    assert (f"w-near: matched reference document 00.jsonl.zst:4 (Wikipedia (en), near copy, estimated Jaccard "
            f"0.906) of {explained_root.parent / 'pile-index'}, not what decides its fate: it is dropped as a "
            "duplicate (above)") in text["w-near"]
    assert (f"ref-kept: matched reference document 00.jsonl.zst:7 (Wikipedia (en), exact copy) of "
            f"{explained_root.parent / 'pile-index'}, so it is left out of G3") in text["ref-kept"]
    assert "keep: kept as the representative of 2 duplicate(s)" in text["keep"]
    everything = "".join(text.values())
    assert set(re.findall(r"[Jj]accard", everything)) == {"Jaccard"}  # one spelling
    for line in everything.splitlines():  # a sentence, never a bare status word after a colon
        assert not re.search(r": \w+$", line), line
