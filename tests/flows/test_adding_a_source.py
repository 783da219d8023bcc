"""docs/adding-a-source.md, followed word for word: its source added to a copy of the repository.

The copy holds the checkout's files (tracked, and new ones not ignored; ~5 MB). Every block of the
guide marked ``<!-- file: PATH -->`` is written to PATH, every ``diff`` block is applied with
``git apply``, and nothing else is touched. Then, in the copy: ruff and mypy on what the guide
wrote, ``kinda deployments --check``, the registry and layout tests and the guide's own test, the
generic flow's command line, and the source through the parent flow (``flows.llama`` with
``configs/g2.yaml`` as the guide left it, its sources stage on a real ``.jsonl.zst`` file, then
dedup and labels): its documents kept or dropped for the guide's reasons and labeled G2 only.
When the guide and the code disagree, this test fails and says where.

Not ``--sample``: the guide's source has no sample writer, so a sample run sets it to null; the
run names the source alone (``--sources``) to stay cheap, the other G.2 sources being tested by
tests/flows/test_llama_g2_sample.py. About 60 s on two quiet cores (mypy and the subprocesses).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from core.manifest import Manifest
from tests.time_limits import timeout_for

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "adding-a-source.md"
FENCE = re.compile(r"^```(\w*)\s*$")
FILE_MARKER = re.compile(r"^<!--\s*file:\s*(\S+)\s*-->\s*$")
BIN = Path(sys.executable).parent


def guide_blocks(text: str) -> tuple[dict[str, str], list[str]]:
    """The guide's files (PATH -> text, from the blocks marked ``file:`` one or two lines above
    their fence) and its ``diff`` blocks, in order."""
    lines = text.splitlines()
    files: dict[str, str] = {}
    diffs: list[str] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened or not opened.group(1):
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        body = "\n".join(lines[i + 1:end]) + "\n"
        marker = next((m for k in (i - 1, i - 2) if k >= 0 and (m := FILE_MARKER.match(lines[k]))), None)
        if opened.group(1) == "diff":
            diffs.append(body)
        elif marker:
            files[marker.group(1)] = body
        i = end + 1
    return files, diffs


def copy_checkout(target: Path) -> None:
    """The checkout's tracked and new (not ignored) files, as they are on disk, into ``target``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: int = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def pages(path: Path) -> Path:
    """A real .jsonl.zst of five lines: two kept pages (one also a copy), one few upvotes, one short, one bad."""
    page = "Volunteers repaired the footbridge over the river in two weekends, and the town paid for the wood. "
    rows = [{"text": page * 3, "meta": {"url": "https://a.example/bridge", "reddit_scores": [4]}},
            {"text": page * 3, "meta": {"url": "https://b.example/copy", "reddit_scores": [12]}},
            {"text": "The second page says something else entirely about trains. " * 5,
             "meta": {"url": "https://c.example/trains", "reddit_scores": [3, 1]}},
            {"text": page * 3 + "More.", "meta": {"url": "https://d.example/few", "reddit_scores": [2]}},
            {"text": "Short.", "meta": {"url": "https://e.example/short", "reddit_scores": [50]}}]
    lines = [json.dumps(r) for r in rows] + ["{broken"]
    path.parent.mkdir(parents=True)
    path.write_bytes(zstandard.ZstdCompressor().compress(("\n".join(lines) + "\n").encode()))
    return path


@pytest.mark.prefect
@timeout_for(1200)  # its subprocesses' limits: ~80 CPU-s in all, minutes of wall on a loaded machine
def test_the_guides_source_in_a_copy_of_the_repository(prefect_api_url: str, tmp_path: Path) -> None:
    if not (REPO / ".git").exists():
        pytest.skip("needs the git checkout (the copy is made from its file list)")
    copy = tmp_path / "repo"
    copy_checkout(copy)
    files, diffs = guide_blocks(GUIDE.read_text(encoding="utf-8"))
    assert {"sources/openwebtext2.py", "configs/openwebtext2.yaml", "tests/sources/test_openwebtext2.py"} <= set(files)
    assert not [p for p in files if (copy / p).exists()], "the guide's new files must be new"
    for name, text in files.items():
        (copy / name).write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(copy), "PREFECT_API_URL": prefect_api_url, "PYTHONDONTWRITEBYTECODE": "1"}
    for diff in diffs:
        applied = subprocess.run(["git", "apply", "--verbose", "-"], cwd=copy, input=diff, capture_output=True, text=True)
        assert applied.returncode == 0, f"the guide's diff does not apply:\n{diff}\n{applied.stderr}"
    python_files = [p for p in files if p.endswith(".py")] + ["flows/registry.py"]

    run([str(BIN / "ruff"), "check", *python_files, "tests/flows/test_silent_inputs.py"], copy, env)
    cache = tmp_path / "mypy"
    if (REPO / ".mypy_cache").is_dir():  # the checkout's cache: mypy re-reads only what changed (~40 CPU-s less)
        shutil.copytree(REPO / ".mypy_cache", cache)
    # the guide's files and the registry; the modules they import are analysed, their errors are theirs
    run([str(BIN / "mypy"), "--follow-imports=silent", "--cache-dir", str(cache), *python_files], copy, env)
    run([sys.executable, "-m", "kinda.cli", "deployments", "--check"], copy, env)
    run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/flows/test_registry.py",
         "tests/test_layout_rules.py", "tests/sources/test_openwebtext2.py"], copy, env)

    listed = run([sys.executable, "-m", "flows.source", "--help"], copy, env).stdout
    assert "sources run here: openwebtext2" in listed
    own = run([sys.executable, "-m", "flows.source", "openwebtext2", "--help"], copy, env).stdout
    assert "--inputs" in own and "configs/openwebtext2.yaml" in own

    data = pages(tmp_path / "raw" / "owt2-2020-01.jsonl.zst")
    out = tmp_path / "data"
    run([sys.executable, "-m", "flows.llama", "--config", "configs/g2.yaml", "--out", str(out), "--runner", "sequential",
         "--sources", "openwebtext2", "--stages", "sources,dedup,labels",
         "--set", f"sources.openwebtext2.inputs=['{data}']"], copy, env, timeout=600)
    manifest = Manifest.for_output(out)
    assert manifest.query("SELECT records_in, docs_kept FROM inputs WHERE source = 'openwebtext2'")[1] == [(6, 2)]
    _, drops = manifest.query("SELECT reason, sum(count)::INT FROM latest_drops WHERE source = 'openwebtext2' "
                              "GROUP BY 1 ORDER BY 1")
    assert drops == [("duplicate_exact", 1), ("few_upvotes", 1), ("malformed_json", 1), ("too_short", 1)]
    _, labels = manifest.query("SELECT DISTINCT list_contains(labels, 'G2'), list_contains(labels, 'G1') FROM shards "
                               "WHERE source = 'openwebtext2' AND starts_with(path, 'labeled/')")
    assert labels == [(True, False)]  # an extension (its spec's kind): G2 only
