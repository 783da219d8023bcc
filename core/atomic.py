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


class AtomicOutput:
    """One output file being written: write to :attr:`path`, then :meth:`commit` or :meth:`abort`.

    Long-lived writers (a shard writer, a hash stream) hold one of these for their whole life
    instead of driving a context manager's ``__enter__``/``__exit__`` by hand. As a context
    manager it commits on success and aborts on an exception.
    """

    def __init__(self, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        self.target = target
        self.path = tmp_path_for(target)
        self._finished = False

    def commit(self) -> Path:
        """fsync the temporary file and rename it onto the target; return the target."""
        if self._finished:
            raise RuntimeError(f"{self.target}: output already finished")
        try:
            with open(self.path, "rb") as handle:
                os.fsync(handle.fileno())
            os.replace(self.path, self.target)
        except BaseException:
            self.abort()
            raise
        self._finished = True
        return self.target

    def abort(self) -> None:
        """Remove the temporary file; the target keeps its previous content (or stays absent)."""
        self._finished = True
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path to write; on success fsync and rename it to ``path``."""
    with AtomicOutput(path) as tmp:
        yield tmp


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
