"""Paths read from data stay inside their root: one check for every path a tensor set names.

A ``metadata.json`` (local, or downloaded from any server) names the files of its set. Joined to
a directory as they are, an absolute path or one with ``..`` would read, or for a remote set
*write*, outside that directory: a hostile server once overwrote a file outside the cache this
way. Every such path goes through :func:`inside`, and a set with one bad path is refused as a
whole before any file is opened or downloaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

#: Keys of a split entry in ``metadata.json`` (and of a resume marker) that hold relative paths.
PATH_KEYS = ("tokens_path", "docs_path")


class UnsafePathError(ValueError):
    """A path read from data would leave its root (absolute, ``..``, a drive, a symlink out)."""


def _lexical_problem(rel_path: object) -> str | None:
    """Why ``rel_path`` is not a plain relative POSIX path, or None when it is."""
    if not isinstance(rel_path, str) or not rel_path:
        return "not a non-empty string"
    if "\x00" in rel_path or "\\" in rel_path:
        return "contains a NUL byte or a backslash"
    pure = PurePosixPath(rel_path)
    if pure.is_absolute() or PureWindowsPath(rel_path).drive:
        return "is absolute"
    if ".." in pure.parts:
        return "contains '..'"
    return None


def inside(root: Path, rel_path: object, what: str = "path") -> Path:
    """``root / rel_path``, refused (:class:`UnsafePathError`) unless it stays inside ``root``.

    Checked twice: lexically (no absolute path, no ``..``, no drive or backslash) and after
    resolving symlinks that already exist, so a link planted inside the root cannot lead out.
    """
    problem = _lexical_problem(rel_path)
    if problem is None:
        target = Path(root) / str(rel_path)
        if not target.resolve().is_relative_to(Path(root).resolve()):
            problem = "resolves outside the root through a symlink"
        else:
            return target
    raise UnsafePathError(f"{what} {rel_path!r} {problem}: it would leave {root}")


def metadata_paths(metadata: dict[str, Any]) -> Iterator[tuple[str, object]]:
    """(description, path) of every file path a tensor set's metadata names."""
    shards = metadata.get("shards")
    if not isinstance(shards, list):
        yield "'shards' (not a list)", None
        return
    for number, shard in enumerate(shards):
        splits = shard.get("splits") if isinstance(shard, dict) else None
        if not isinstance(splits, dict):
            yield f"shard {number} 'splits' (not a mapping)", None
            continue
        for split, info in splits.items():
            for key in PATH_KEYS:
                value = info.get(key) if isinstance(info, dict) else None
                yield f"shard {shard.get('input', number)!s} {split}.{key}", value
    tokenizer = metadata.get("tokenizer")
    if isinstance(tokenizer, dict) and "file" in tokenizer:
        yield "tokenizer.file", tokenizer["file"]


def check_metadata_paths(metadata: dict[str, Any], root: Path, label: str) -> None:
    """Refuse the whole set (one :class:`UnsafePathError` naming ``label``) if any path leaves ``root``."""
    for what, rel_path in metadata_paths(metadata):
        try:
            inside(root, rel_path, what)
        except UnsafePathError as exc:
            raise UnsafePathError(f"{label}: {exc}; the tensor set is refused") from None
