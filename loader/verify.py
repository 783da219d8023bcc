"""Verify a local tensor set against its own ``metadata.json``: sizes, SHA256, indexes, token ids.

Opening a set checks sizes and token ids (cheap, every time), not checksums: hashing every file
on each start of training would cost minutes on a large set. :func:`verify_tensor_set` is the
full check to run after copying a set, before a long job, or when a file is suspected
(``kinda tensors verify DIR``). Remote sets need none: each remote file is hashed on download.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.atomic import sha256_file
from loader.remote import is_remote
from loader.safe_paths import PATH_KEYS, UnsafePathError, inside
from loader.tensor_writer import TensorFormatError, open_tokens, read_metadata
from loader.tensors import check_token_ids, id_bound


@dataclass
class VerifyReport:
    """What was checked and every problem found (one line each, naming the file)."""

    location: str
    files: int = 0
    bytes: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _check_file(root: Path, info: dict, key: str, report: VerifyReport, checksums: bool) -> Path | None:
    """Size and (optionally) SHA256 of one file named in a split entry; its path when intact."""
    kind = key[: -len("_path")]
    try:
        path = inside(root, info.get(key), key)
    except UnsafePathError as exc:
        report.problems.append(str(exc))
        return None
    if not path.is_file():
        report.problems.append(f"{path}: missing")
        return None
    size, expected_size = path.stat().st_size, info.get(f"{kind}_bytes")
    report.files += 1
    report.bytes += size
    if size != expected_size:
        report.problems.append(f"{path}: {size} bytes, metadata.json says {expected_size}")
        return None
    if checksums and sha256_file(path) != info.get(f"{kind}_sha256"):
        report.problems.append(f"{path}: SHA256 differs from metadata.json ({kind}_sha256)")
        return None
    return path


def verify_tensor_set(location: str | Path, splits: Sequence[str] | None = None, checksums: bool = True,
                      check_ids: bool = True) -> VerifyReport:
    """Check every file of a local tensor set; never raises for a bad file (it is a problem line).

    ``splits``: only these (default: all). ``checksums``: compare each file's SHA256 with the
    metadata. ``check_ids``: open each token file with its index (sizes, offsets, counts) and
    check every id against the vocabulary size. A set whose ``metadata.json`` is unreadable or
    names a path outside the set raises :class:`TensorFormatError` / ``UnsafePathError``.
    """
    if is_remote(location):
        raise ValueError(f"{location}: verify checks local tensor sets (remote files are verified on download)")
    root = Path(location)
    metadata = read_metadata(root)
    report = VerifyReport(str(location))
    bound = id_bound(metadata, root)
    for shard in metadata["shards"]:
        for split, info in shard["splits"].items():
            if splits is not None and split not in splits:
                continue
            tokens_path, docs_path = (_check_file(root, info, key, report, checksums) for key in PATH_KEYS)
            if not check_ids or tokens_path is None or docs_path is None:
                continue
            try:
                tokens, offsets = open_tokens(tokens_path, docs_path, metadata["dtype"])
                if len(tokens) != info.get("tokens") or len(offsets) - 1 != info.get("docs"):
                    raise TensorFormatError(f"{tokens_path}: {len(tokens)} tokens / {len(offsets) - 1} documents, "
                                            f"metadata.json says {info.get('tokens')} / {info.get('docs')}")
                check_token_ids(tokens, bound, tokens_path)
            except (TensorFormatError, OSError, ValueError) as exc:
                report.problems.append(str(exc))
    return report
