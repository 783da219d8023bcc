"""README.md and docs/*.md run as written: every ```bash and ```python block, against the offline sample.

A README drifts from the code silently (the loader snippet once failed on anything the quick
start produced, ``kinda`` refused ``--out`` after the sub-command, a query counted documents
twice), so this test is the README's reader, and the docs' (three docs snippets once failed as
written: a tensor path the sample never writes, a mixture over another output, a chart command
without its extra). Each fenced ``bash``/``python`` block runs unless the line right above it says
why not, as ``<!-- no-run: the reason -->`` (real dumps, a server, the network, the test suite
itself); a marker without a reason fails. A block that starts with a command (``python -m``,
``kinda``, ``prefect``...) must be fenced as ``bash``/``python``, so no command hides from this
test in an untagged fence.

The sample output is built once per module by the README's own build line
(``python -m flows.llama --sample --out data/``, plus ``--sample-pages 40`` to keep it short),
run in a fresh working folder where ``data/`` is that output and ``configs/`` the repository's,
so every block runs with its own relative paths and nothing is substituted; the docs' blocks run
in the same folder, on the same build. The README's set-up (``. .venv/bin/activate``) is this
interpreter's ``bin/`` first on ``PATH``. A block fails the test on a non-zero exit. Runtime:
about 3.5 minutes on a loaded 2-core machine (the build ~1.5 min, dominated by Prefect start-ups;
the blocks ~2 min), so it is marked ``prefect``. The build is also ``make demo``'s main job, so it
and every block run under the offline guard (:mod:`tests.offline_guard`), checked last.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.offline_guard import attempts, guarded_env, user_env

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: Every Markdown file whose blocks run: the README, then the docs.
DOCUMENTS = [README, *sorted((REPO / "docs").glob("*.md"))]
#: The README's line that builds the sample output; the fixture runs it, the blocks skip it.
BUILD = "python -m flows.llama --sample --out data/"
SAMPLE_PAGES = ["--sample-pages", "40"]
FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*(no-run)\s*(?::\s*(.*?))?\s*-->\s*$")
#: The first line of a block that is a command, whatever its fence says.
COMMAND = re.compile(r"^(python3? -m |python3? \S+\.py|kinda |prefect |docker|make |pip |srun |sbatch )")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a document: its file, language, first line number, text and marker."""

    path: Path
    lang: str
    line: int
    text: str
    no_run: str | None  # the reason, when the block is not run

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}:{self.lang}"


def read_blocks(path: Path, langs: tuple[str, ...] = ("bash", "python")) -> list[Block]:
    """Every block fenced as one of ``langs``, with the ``no-run`` marker of the line right above it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
        if opened.group(1) in langs:
            marker = MARKER.match(lines[i - 1]) if i else None
            reason = (marker.group(2) or "") if marker else None
            blocks.append(Block(path, opened.group(1), i + 1, "\n".join(lines[i + 1:end]) + "\n", reason))
        i = end + 1
    return blocks


BLOCKS = [block for document in DOCUMENTS for block in read_blocks(document)]
RUNNABLE = [b for b in BLOCKS if b.no_run is None]


def test_every_block_runs_or_says_why() -> None:
    assert len([b for b in RUNNABLE if b.path == README]) >= 4, [b.name for b in BLOCKS]
    assert len([b for b in RUNNABLE if b.path != README]) >= 5, [b.name for b in BLOCKS]
    for block in BLOCKS:
        assert block.no_run is None or len(block.no_run) >= 10, f"{block.name}: no-run needs its reason"
    builds = [b for b in RUNNABLE if b.path == README and b.lang == "bash" and BUILD in b.text.splitlines()[0]]
    assert len(builds) == 1, f"one runnable block of README.md must start with {BUILD!r}"


def test_commands_are_fenced_as_code() -> None:
    """A command in an untagged fence would never run here: it must say bash/python (and no-run why)."""
    untagged = [b for document in DOCUMENTS for b in read_blocks(document, ("",))]
    hidden = [b.name for b in untagged if COMMAND.match(b.text.lstrip())]
    assert not hidden, f"fence these as ```bash (with a no-run marker if they cannot run offline): {hidden}"


def readme_env(home: Path) -> dict[str, str]:
    """A user's shell after ``. .venv/bin/activate``: this interpreter's bin/ first, none of the suite's
    Prefect settings (the defaults come from the code), caches in the test's folder, and the offline
    guard on (:mod:`tests.offline_guard`: every connection beyond loopback is refused and logged)."""
    bindir = str(Path(sys.executable).parent)
    env = {**user_env(home, dict(os.environ)), "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           "VIRTUAL_ENV": str(Path(bindir).parent), "HF_HOME": str(home / "hf-home")}
    return guarded_env(home, env)[0]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``data/`` (the sample output, built by the README's line) and ``configs/``."""
    work = tmp_path_factory.mktemp("readme")
    (work / "configs").symlink_to(REPO / "configs", target_is_directory=True)
    build = subprocess.run([*BUILD.split(), *SAMPLE_PAGES], cwd=work, env=readme_env(work),
                           capture_output=True, text=True, timeout=600, check=False)
    assert build.returncode == 0, (build.stdout + build.stderr)[-4000:]
    assert (work / "data" / "manifest.duckdb").is_file()
    return work


def commands(block: Block) -> str:
    """The block's text as it runs: the build line is the fixture's (already done)."""
    lines = block.text.splitlines()
    if block.lang == "bash" and lines and BUILD in lines[0]:
        lines = lines[1:]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.name for b in RUNNABLE])
def test_block_runs_as_written(block: Block, workdir: Path) -> None:
    if block.lang == "bash":
        argv = ["bash", "-euo", "pipefail", "-c", commands(block)]
    else:  # a file of its own in a folder of its own: its name shadows no module the block imports
        script = workdir / "blocks" / f"{block.path.stem}_block_{block.line}.py"
        script.parent.mkdir(exist_ok=True)
        script.write_text(commands(block), encoding="utf-8")
        argv = [sys.executable, str(script)]
    before = len(attempts(workdir / "net.log"))
    done = subprocess.run(argv, cwd=workdir, env=readme_env(workdir), capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, f"{block.name} exited {done.returncode}:\n{(done.stdout + done.stderr)[-4000:]}"
    refused = attempts(workdir / "net.log")[before:]
    assert refused == [], f"{block.name} tried to reach the network: {refused[:5]}"


@pytest.mark.parametrize("argv", [["manifest", "summary", "--out", "data"], ["--out", "data", "manifest", "summary"]],
                         ids=["out-after", "out-before"])
def test_kinda_takes_out_in_either_place(argv: list[str], workdir: Path) -> None:
    """``--out`` before or after the sub-command: the summary of the sample output.

    Run from the parent folder, where the default ``data`` does not exist: only ``--out`` finds it.
    """
    absolute = [str(workdir / "data") if a == "data" else a for a in argv]
    done = subprocess.run(["kinda", *absolute], cwd=workdir.parent, env=readme_env(workdir), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert re.search(r"wikipedia\s+en\s+1\s+\d+", done.stdout), done.stdout


def test_the_main_job_and_every_block_ran_offline(workdir: Path) -> None:
    """``make demo``'s job (the README's build: every LLaMA source, the Pile index, dedup, labels and
    tokens) and every block after it, with no connection beyond loopback in any process they started."""
    labeled = workdir / "data" / "labeled" / "llama"
    assert {p.relative_to(labeled).parts[0] for p in labeled.rglob("*.parquet")} == {
        "commoncrawl", "c4", "github", "wikipedia", "books", "arxiv", "stackexchange"}
    assert list((workdir / "data" / "tensors" / "g1").rglob("*.tokens"))
    refused = attempts(workdir / "net.log")
    assert refused == [], f"outbound attempts: {refused[:5]}"
