"""A small offline sample of the-stack and codeparrot/github-code exports, in their real layouts.

Written with pyarrow (the-stack: zstd Parquet, ``list<string>`` licences, ``ext`` without the
dot, git blob ids in ``hexsha``; github-code: snappy Parquet, lower-case licence keys, ``size``
as int32) plus a JSON-lines export, so ``flows.stack_code`` and ``flows.llama --sample`` run
without a download. The rows exercise every drop reason a real export meets: a copyleft
licence, a row without licence, a language outside the whitelist, a licence file, a minified
line, and the same file in both exports (one copy survives the run-wide dedup).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from core.atomic import atomic_path
from sources.stack_code import git_blob_sha1

PY_TOKENIZE = '''"""Split text into words and count them."""

from collections import Counter


def words(text: str) -> list[str]:
    """Lower-cased words of ``text``, punctuation removed."""
    cleaned = "".join(ch if ch.isalnum() else " " for ch in text)
    return cleaned.lower().split()


def top_words(text: str, n: int = 10) -> list[tuple[str, int]]:
    """The ``n`` most common words with their counts."""
    return Counter(words(text)).most_common(n)
'''

PY_HEADER = '''# Copyright 2021 The Sample Authors.
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.

import json
from pathlib import Path


def load_config(path: Path) -> dict:
    """Read a JSON configuration file and return its mapping."""
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
'''

SHELL = '''#!/usr/bin/env bash
# Build the documentation and copy it to the site folder.
set -euo pipefail
make -C docs html
rsync -a docs/_build/html/ site/
'''

MAKEFILE = '''SPHINXBUILD ?= sphinx-build
SOURCEDIR = source
BUILDDIR = build

html:
\t$(SPHINXBUILD) -b html "$(SOURCEDIR)" "$(BUILDDIR)/html"

clean:
\trm -rf "$(BUILDDIR)"
'''

JAVA = '''package sample.core;

/** Checks that the external tools a pipeline needs are installed. */
public class DependencyChecker {
    public static boolean isInstalled(String className) {
        try {
            Class.forName(className);
            return true;
        } catch (ClassNotFoundException error) {
            return false;
        }
    }
}
'''

YAML = '''name: tests
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pip install -e . && pytest
'''

MINIFIED = "var a=" + ",".join(str(i) for i in range(600)) + ";\n"
MIT_TEXT = "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\n"

#: (repo, path, ext, stack lang, github-code language, licences, content)
FILES: list[tuple[str, str, str, str, str, list[str], str]] = [
    ("sample/textkit", "textkit/tokenize.py", "py", "Python", "Python", ["MIT"], PY_TOKENIZE),
    ("sample/textkit", "textkit/config.py", "py", "Python", "Python", ["MIT"], PY_HEADER),
    ("sample/textkit", "scripts/build_docs.sh", "sh", "Shell", "Shell", ["MIT"], SHELL),
    ("sample/textkit", "docs/Makefile", "Makefile", "Makefile", "Makefile", ["MIT"], MAKEFILE),
    ("sample/textkit", ".github/workflows/tests.yml", "yml", "YAML", "YAML", ["MIT"], YAML),
    ("sample/textkit", "LICENSE.md", "md", "Markdown", "Markdown", ["MIT"], MIT_TEXT),
    ("sample/minified", "dist/app.min.js", "js", "JavaScript", "JavaScript", ["Apache-2.0"], MINIFIED),
    ("sample/copyleft", "src/sample/core/DependencyChecker.java", "java", "Java", "Java", ["LGPL-3.0"], JAVA),
    ("sample/unlicensed", "tools/words.py", "py", "Python", "Python", [], PY_TOKENIZE.replace("10", "5")),
]


def _stack_rows() -> dict[str, list[Any]]:
    columns: dict[str, list[Any]] = {name: [] for name in (
        "hexsha", "size", "ext", "lang", "content", "avg_line_length", "max_line_length", "alphanum_fraction")}
    for kind in ("stars", "issues", "forks"):
        for what in ("repo_path", "repo_name", "repo_head_hexsha", "repo_licenses", "count"):
            columns[f"max_{kind}_{what}"] = []
    for repo, path, ext, lang, _, licenses, content in FILES:
        data = content.encode("utf-8")
        lines = content.splitlines() or [""]
        columns["hexsha"].append(git_blob_sha1(data))
        columns["size"].append(len(data))
        columns["ext"].append(ext)
        columns["lang"].append(lang)
        columns["content"].append(content)
        columns["avg_line_length"].append(len(content) / len(lines))
        columns["max_line_length"].append(max(len(line) for line in lines))
        columns["alphanum_fraction"].append(sum(ch.isalnum() for ch in content) / max(1, len(content)))
        for kind in ("stars", "issues", "forks"):
            columns[f"max_{kind}_repo_path"].append(path)
            columns[f"max_{kind}_repo_name"].append(repo)
            columns[f"max_{kind}_repo_head_hexsha"].append("0" * 40)
            columns[f"max_{kind}_repo_licenses"].append(licenses)
            columns[f"max_{kind}_count"].append(None)
    return columns


def stack_table() -> pa.Table:
    """The sample rows in the-stack v1's column layout and types."""
    columns = _stack_rows()
    types = {"size": pa.int64(), "max_line_length": pa.int64(), "avg_line_length": pa.float64(),
             "alphanum_fraction": pa.float64()}
    fields = []
    for name in columns:
        if name.endswith("_licenses"):
            fields.append(pa.field(name, pa.list_(pa.string())))
        elif name.endswith("_count"):
            fields.append(pa.field(name, pa.int64()))
        else:
            fields.append(pa.field(name, types.get(name, pa.string())))
    return pa.table(columns, schema=pa.schema(fields))


def github_code_table() -> pa.Table:
    """The sample rows in codeparrot/github-code's layout (one lower-case licence key per row)."""
    rows = [(content, repo, path, language, licenses[0].lower() if licenses else None, len(content.encode()))
            for repo, path, _, _, language, licenses, content in FILES]
    names = ["code", "repo_name", "path", "language", "license", "size"]
    schema = pa.schema([*(pa.field(n, pa.string()) for n in names[:-1]), pa.field("size", pa.int32())])
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)}, schema=schema)


def write_sample_inputs(directory: Path) -> list[str]:
    """Write the sample exports into ``directory``; return their paths (sorted)."""
    directory.mkdir(parents=True, exist_ok=True)
    stack = directory / "the-stack-sample.parquet"
    with atomic_path(stack) as tmp:
        pq.write_table(stack_table(), tmp, compression="zstd", row_group_size=4)
    github_code = directory / "github-code-sample.parquet"
    with atomic_path(github_code) as tmp:
        pq.write_table(github_code_table(), tmp, compression="snappy")
    jsonl = directory / "github-code-sample.jsonl.gz"
    lines = [json.dumps(row, sort_keys=True) for row in github_code_table().slice(0, 3).to_pylist()]
    lines.append('{"code": "print(1)", "repo_name": "sample/broken", "path": "x.py"')  # cut-off line
    with atomic_path(jsonl) as tmp, gzip.GzipFile(tmp, "wb", mtime=0) as handle:
        handle.write(("\n".join(lines) + "\n").encode("utf-8"))
    return sorted(str(p) for p in (stack, github_code, jsonl))
