"""The GitHub sample writers: real git clones read back with git, their BigQuery export with gzip +
json, and what flows.github does with either."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from core.manifest import Manifest
from flows.github import GithubConfig
from flows.github import run as run_github
from sources.samples import github, github_files

#: What both inputs must give: 15 files kept, and these drops (see sources/samples/github.py).
DROPS = {"extension_not_allowed": 5, "skipped_license_file": 3, "license_gpl-3.0": 2, "license_none": 2,
         "max_line_length": 2, "duplicate_exact": 1}


def _git(root: str | Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return github.write_sample_repos(tmp_path_factory.mktemp("clones"))


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    (path,) = github.write_sample_inputs(tmp_path_factory.mktemp("export"))
    return Path(path)


def test_clones_are_git_repositories_with_fixed_history(repos: list[str], tmp_path: Path) -> None:
    assert [Path(r).relative_to(Path(r).parents[1]).as_posix() for r in repos] == sorted(r.name for r in github.REPOS)
    again = github.write_sample_repos(tmp_path)
    for first, second in zip(repos, again, strict=True):
        log = _git(first, "log", "--format=%H %an %aI %s")
        assert log == _git(second, "log", "--format=%H %an %aI %s") and len(log.splitlines()) == 2
        assert _git(first, "status", "--porcelain") == ""  # everything committed
        assert _git(first, "remote", "get-url", "origin").strip().startswith("https://github.com/sample-owner/")
    textkit = next(r for r in repos if r.endswith("textkit"))
    files = _git(textkit, "ls-files", "-s").splitlines()
    modes = {line.split("\t")[1]: line.split()[0] for line in files}
    assert modes["scripts/release.sh"] == "100755" and modes["textkit/stats.py"] == "100644"
    assert "LICENSE" in modes and "static/vendor/jquery-3.6.0.min.js" in modes
    assert "Permission is hereby granted" in (Path(textkit) / "LICENSE").read_text()


def test_export_rows_match_the_clones(repos: list[str], export: Path, tmp_path: Path) -> None:
    assert export.read_bytes() == Path(github.write_sample_inputs(tmp_path)[0]).read_bytes()
    assert export.read_bytes()[4:8] == b"\0\0\0\0"
    with gzip.open(export, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    by_repo = {Path(r).relative_to(Path(r).parents[1]).as_posix(): r for r in repos}
    assert len(rows) == sum(len(_git(root, "ls-files").splitlines()) for root in repos) == 30
    for row in rows:
        root = by_repo[row["repo_name"]]
        mode, blob = _git(root, "ls-tree", "HEAD", "--", row["path"]).split()[::2]
        assert (row["id"], row["mode"], row["ref"]) == (blob, int(mode, 8), "refs/heads/main")
        data = (Path(root) / row["path"]).read_bytes()
        assert row["size"] == len(data)
        assert row["binary"] == (row["path"] == "docs/logo.png")
        assert row["content"] == (None if row["binary"] else data.decode("utf-8"))
    licences = {row["repo_name"]: row["license"] for row in rows}
    assert licences == {"sample-owner/textkit": "mit", "sample-owner/rivergauge": "bsd-3-clause",
                        "sample-owner/tidewatch": "apache-2.0", "sample-owner/tac": "gpl-3.0",
                        "sample-owner/levels-scraper": None}


def test_planted_files(export: Path) -> None:
    with gzip.open(export, "rt", encoding="utf-8") as handle:
        content = {(r["repo_name"], r["path"]): r["content"] for r in map(json.loads, handle)}
    original = content[("sample-owner/textkit", "textkit/tokenize.py")]
    vendored = content[("sample-owner/rivergauge", "third_party/textkit/tokenize.py")]
    assert original != vendored and original == github_files.TOKENIZE_HEADER + vendored
    for path in ("static/vendor/jquery-3.6.0.min.js", "textkit/textkit_pb2.py"):
        assert max(len(line) for line in content[("sample-owner/textkit", path)].splitlines()) > 1000


@pytest.mark.parametrize("route", ["repos", "inputs"])
def test_flow_keeps_and_drops_the_same_from_clones_and_export(route: str, repos: list[str], export: Path,
                                                               tmp_path: Path, prefect_api_url: str) -> None:
    inputs = {"repos": repos} if route == "repos" else {"inputs": [str(export)]}
    summary = run_github(GithubConfig(**inputs, out=tmp_path, runner="thread", workers=2, progress=False))
    assert summary.kept == 15 and not summary.failed
    manifest = Manifest.for_output(tmp_path)
    assert dict(manifest.query("SELECT reason, sum(count) FROM drops GROUP BY reason")[1]) == DROPS
    languages = {row[0] for row in manifest.query("SELECT DISTINCT language FROM shards")[1]}
    assert languages == {"c", "dockerfile", "go", "javascript", "makefile", "markdown", "python", "rust", "shell"}
