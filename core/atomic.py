"""Atomic file writes: write beside the target under a temporary name, then rename.

A crash leaves either the old file, the new file, or a ``*.tmp`` that the next run ignores and
overwrites; never a half-written file under the final name that a resume would trust.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TMP_SUFFIX = ".tmp"


def tmp_path_for(path: Path) -> Path:
    """The temporary name a file is written under before it is renamed into place."""
    return path.with_name(path.name + TMP_SUFFIX)


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path to write; on success fsync and rename it to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_for(path)
    try:
        yield tmp
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write ``payload`` as canonical JSON (sorted keys) atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(payload, sort_keys=True, indent=1, ensure_ascii=False), encoding="utf-8")


def sha256_file(path: Path, chunk_size: int = 1 << 20) -> str:
    """Return the hex SHA256 of a file, read in chunks (constant memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()
