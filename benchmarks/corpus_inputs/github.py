"""GitHub at scale: ``github-repos-NNNNNNNNNNNN.jsonl.gz`` in the BigQuery export layout.

The layout :mod:`sources.samples.github` writes (RedPajama's export of
``bigquery-public-data.github_repos``, contents joined with licences): one row per file,
``repo_name, ref, path, mode, id`` (git's blob id), ``size, binary, copies, license, content``,
numbered export files as BigQuery names them, gzip mtime 0.

Content: real source code, the Python standard library of the running interpreter (about 2,000
modules) plus the real the-stack/github-code files of ``realdata/code``; a file is a window of
whole lines of one real module (log-normal, median 3,000 characters, sigma 1.2, up to 200 KB:
GitHub file sizes are heavy-tailed; The Stack's median file is ~3 KB, Kocetkov et al. 2022,
figure 3), with a per-repository prefix on its identifiers' first definition line so windows of
one module in two repositories differ.

Duplicates: 20% of files are exact copies of a file of another repository (vendored code, forks:
Lopes et al. 2017, "DéjàVu: a map of code duplicates on GitHub", found most of GitHub's files to
be clones, 70% of them across projects at file-hash level; 20% is the conservative end after
RedPajama's own exact dedup of the export has not yet run). Licences: 10% of repositories GPL
and 10% without a licence (dropped by the flow's licence filter, as RedPajama did), the rest
MIT / Apache-2.0 / BSD-3-Clause.
"""

from __future__ import annotations

import gzip
import json
import random
import sysconfig
from functools import cache
from pathlib import Path

from sources.stack_code import git_blob_sha1

from ._text import SizedFiles, lognormal_chars, realdata

PER_FILE = 64_000_000
DUPLICATE_RATE = 0.20
LICENSES = ("mit", "mit", "apache-2.0", "apache-2.0", "bsd-3-clause", "mit", "apache-2.0", "bsd-3-clause",
            "gpl-3.0", None)


@cache
def modules() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(extension, lines) of each real source file: the standard library's modules, realdata's code."""
    found = []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.rglob("*.py")):
        if "site-packages" in path.parts or "test" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if len(text) > 400:
            found.append((".py", tuple(text.splitlines())))
    for name in ("github-code-format.DERIVED.parquet", "the-stack-format.DERIVED.parquet"):
        path = realdata("code", name)
        if path is None:
            continue
        import pyarrow.parquet as pq

        table = pq.read_table(path).to_pylist()
        for row in table:
            content, file = row.get("content") or row.get("code"), row.get("path") or row.get("max_stars_repo_path")
            if isinstance(content, str) and isinstance(file, str) and "." in file:
                found.append(("." + file.rsplit(".", 1)[1], tuple(content.splitlines())))
    return tuple(found)


def _window(rng: random.Random, repo: str) -> tuple[str, str]:
    ext, lines = rng.choice(modules())
    want = lognormal_chars(rng, 3000, 1.2, 300, 200_000)
    start = rng.randrange(len(lines))
    taken, size = [f"# part of {repo}" if ext == ".py" else f"// part of {repo}"], 0
    for line in lines[start:]:
        taken.append(line)
        size += len(line) + 1
        if size >= want:
            break
    return ext, "\n".join(taken) + "\n"


def _row(repo: str, license_: str | None, path: str, content: str) -> bytes:
    data = content.encode("utf-8")
    row = {"repo_name": repo, "ref": "refs/heads/main", "path": path, "mode": 33188, "id": git_blob_sha1(data),
           "size": len(data), "binary": False, "copies": 1, "license": license_, "content": content}
    return (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def write(directory: Path, size: int, seed: int = 0, per_file: int = PER_FILE) -> list[str]:
    """BigQuery export files of ``size`` bytes of gzip in all under ``directory``; their paths."""
    rng = random.Random(f"github/{seed}")
    directory.mkdir(parents=True, exist_ok=True)
    written, recent, repo_number = [], [], 0
    for number, budget in enumerate(SizedFiles(size, per_file).sizes()):
        target = directory / f"github-repos-{number:012d}.jsonl.gz"
        with open(target, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
            while raw.tell() < budget:
                repo = f"owner{repo_number % 997}/project-{repo_number}"
                license_ = LICENSES[rng.randrange(len(LICENSES))]
                repo_number += 1
                for file_number in range(max(1, int(rng.lognormvariate(2.3, 1.0)))):  # ~10 files a repository
                    if recent and rng.random() < DUPLICATE_RATE:
                        ext, content = rng.choice(recent)
                    else:
                        ext, content = _window(rng, repo)
                        recent = ([*recent, (ext, content)])[-2000:]
                    out.write(_row(repo, license_, f"src/module_{file_number}{ext}", content))
        written.append(str(target))
    return written
