"""GitHub samples: real git repositories (made with ``git init`` and commits), and the BigQuery
export of the same files, the two inputs ``flows.github`` reads (``--repos``, ``--inputs``).

:func:`write_sample_repos` makes one working clone per repository under
``<directory>/<owner>/<name>``, with an ``origin`` remote on github.com (the flow names a
repository after it) and two commits made with fixed author, committer and dates, so the
commit ids are the same on every machine. :func:`write_sample_inputs` (the sample-writer
contract) writes ``github-repos-000000000000.jsonl.gz``: one row per file of each repository's
``HEAD`` (with git's blob id; it needs no git installed), in the layout of a BigQuery export
of ``bigquery-public-data.github_repos`` (files joined with contents and licenses, as RedPajama
exported it): ``repo_name, ref, path, mode, id`` (the git blob id), ``size, binary, copies,
license, content``. Its bytes are deterministic (sorted rows, gzip mtime 0).

Planted (file contents in :mod:`sources.samples.github_files`):

* ``sample-owner/textkit`` (MIT) and ``sample-owner/rivergauge`` (BSD-3-Clause) and
  ``sample-owner/tidewatch`` (Apache-2.0): kept, except their ``LICENSE`` files
  (``skipped_license_file``), files outside the extension whitelist (``.csv``, ``.gitignore``,
  ``.png``, ``go.mod``, ``Cargo.toml``: ``extension_not_allowed``), the vendored minified jQuery
  (``max_line_length``), the generated protobuf module (``max_line_length``), and
  ``rivergauge/third_party/textkit/tokenize.py``, a vendored copy of textkit's module without
  its copyright header: the same text once the header is removed (``duplicate_exact``);
* ``sample-owner/tac`` (GPL-3.0, in ``COPYING``): every file ``license_gpl-3.0``;
* ``sample-owner/levels-scraper`` (no licence file; no licence in the export): ``license_none``.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from core.atomic import atomic_path
from sources.samples import github_files as f
from sources.stack_code import git_blob_sha1

EXPORT = "github-repos-000000000000.jsonl.gz"
AUTHOR = ("Sample Owner", "owner@example.com")
DATES = ("2021-03-14T09:26:53+00:00", "2022-07-01T17:45:00+00:00")
#: BigQuery's ``files.mode`` is the git mode as an integer (0o100644 = 33188).
MODES = {"100644": 33188, "100755": 33261}


@dataclass(frozen=True)
class Repo:
    """A repository: its name, the licence BigQuery's ``licenses`` table gives, and two commits."""

    name: str
    license: str | None
    first: dict[str, str | bytes]
    second: dict[str, str | bytes]
    messages: tuple[str, str] = ("Initial commit", "Add tests and tooling")


REPOS = (
    Repo("sample-owner/textkit", "mit",
         {"LICENSE": f.MIT, "README.md": f.TEXTKIT_README, "textkit/__init__.py": f.INIT_PY,
          "textkit/tokenize.py": f.TOKENIZE_HEADER + f.TOKENIZE_PY, "textkit/stats.py": f.STATS_PY},
         {"src/wordfreq.c": f.WORDFREQ_C, "src/wordfreq.h": f.WORDFREQ_H, "scripts/release.sh": f.RELEASE_SH,
          "static/vendor/jquery-3.6.0.min.js": f.JQUERY_MIN, "textkit/textkit_pb2.py": f.PB2_PY,
          "data/stopwords.csv": f.STOPWORDS_CSV, ".gitignore": f.GITIGNORE, "docs/logo.png": f.PNG},
         ("Initial commit", "Add the C counter, release script and generated messages")),
    Repo("sample-owner/rivergauge", "bsd-3-clause",
         {"LICENSE": f.BSD3, "go.mod": f.GO_MOD, "cmd/rivergauge/main.go": f.MAIN_GO,
          "gauge/reading.go": f.READING_GO},
         {"web/chart.js": f.CHART_JS, "Dockerfile": f.DOCKERFILE, "Makefile": f.MAKEFILE,
          "third_party/textkit/tokenize.py": f.TOKENIZE_PY}),
    Repo("sample-owner/tidewatch", "apache-2.0",
         {"LICENSE": f.APACHE, "Cargo.toml": f.CARGO_TOML, "README.md": f.TIDE_README},
         {"src/lib.rs": f.LIB_RS, "src/tide.rs": f.TIDE_RS}),
    Repo("sample-owner/tac", "gpl-3.0", {"COPYING": f.GPL3}, {"src/main.c": f.GPL_MAIN_C}),
    Repo("sample-owner/levels-scraper", None, {"scraper.py": f.SCRAPER_PY}, {"README.md": "# levels-scraper\n"}),
)


def _git(root: Path, *args: str, date: str = DATES[0]) -> str:
    """Run git in ``root`` with no user or system configuration and a fixed identity and date."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1],
        "GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1], "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date, "LC_ALL": "C",
    }
    done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {root} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode("utf-8", errors="surrogateescape")


def _write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in sorted(files.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_bytes(content))
        if rel.endswith(".sh"):
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def make_repo(root: Path, repo: Repo) -> None:
    """Create the clone of ``repo`` at ``root`` (replacing what is there): two commits on ``main``."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    _git(root, "init", "--quiet")
    _git(root, "symbolic-ref", "HEAD", "refs/heads/main")  # git < 2.28 has no --initial-branch
    _git(root, "remote", "add", "origin", f"https://github.com/{repo.name}.git")
    for files, message, date in ((repo.first, repo.messages[0], DATES[0]), (repo.second, repo.messages[1], DATES[1])):
        _write_files(root, files)
        _git(root, "add", "--all", date=date)
        _git(root, "commit", "--quiet", "--no-gpg-sign", "-m", message, date=date)


def write_sample_repos(directory: Path) -> list[str]:
    """Make every sample repository under ``directory/<owner>/<name>``; return their roots, sorted."""
    roots = []
    for repo in REPOS:
        root = directory / repo.name
        make_repo(root, repo)
        roots.append(str(root))
    return sorted(roots)


def _bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def head_files(repo: Repo) -> dict[str, bytes]:
    """The files of the repository's ``HEAD``: the first commit's, updated by the second's."""
    return {path: _bytes(content) for path, content in {**repo.first, **repo.second}.items()}


def export_rows(repo: Repo) -> list[dict[str, object]]:
    """One BigQuery-export row per file of ``HEAD``, in path order (git's ``ls-tree`` order).

    Computed from the files, not from a clone, so the sample run needs no git: the blob id is
    git's (``git hash-object``), the mode git's as an integer; the tests check both against the
    clones :func:`write_sample_repos` makes.
    """
    rows: list[dict[str, object]] = []
    for path, data in sorted(head_files(repo).items(), key=lambda item: item[0].encode("utf-8")):
        binary = b"\0" in data[:8000]
        mode = "100755" if path.endswith(".sh") else "100644"
        rows.append({
            "repo_name": repo.name, "ref": "refs/heads/main", "path": path, "mode": MODES[mode],
            "id": git_blob_sha1(data), "size": len(data), "binary": binary, "copies": 1, "license": repo.license,
            "content": None if binary else data.decode("utf-8"),
        })
    return rows


def write_sample_inputs(directory: Path) -> list[str]:
    """Write the BigQuery export of the sample repositories into ``directory``; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    rows = [row for repo in sorted(REPOS, key=lambda r: r.name) for row in export_rows(repo)]
    target = directory / EXPORT
    data = "".join(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows)
    with atomic_path(target) as tmp, open(tmp, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as handle:
        handle.write(data.encode("utf-8"))
    return [str(target)]

