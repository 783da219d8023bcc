"""What every ``kinda`` sub-command shares: the one-line error, and opening the manifest read-only.

Its own module, below :mod:`kinda.cli` and the sub-command modules (``kinda.cli_*``), so the
command imports its sub-commands for real and none of them imports the command back.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import duckdb

from core.manifest import MANIFEST_NAME, Manifest


class KindaError(Exception):
    """An error the user can act on: printed as one line, with its exit status, no traceback."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


#: Where a command looks for the output root when neither ``--out`` nor ``--manifest`` is given, in order:
#: the current folder (a user inside an output root, wherever it is), then ``data/`` (the README's root).
DEFAULT_ROOTS = (Path("."), Path("data"))


def manifest_path(args: argparse.Namespace) -> Path:
    """The manifest the command reads: ``--manifest``, else ``<--out>/manifest.duckdb``, else the first of
    :data:`DEFAULT_ROOTS` that holds one (``data/manifest.duckdb`` when none does: the error names all)."""
    if args.manifest:
        return Path(args.manifest)
    if args.out is not None:
        return Path(args.out) / MANIFEST_NAME
    found = [root / MANIFEST_NAME for root in DEFAULT_ROOTS if (root / MANIFEST_NAME).is_file()]
    return found[0] if found else DEFAULT_ROOTS[-1] / MANIFEST_NAME


def output_root(args: argparse.Namespace) -> Path:
    """The output root the command reads: the folder of its manifest (see :func:`manifest_path`)."""
    return manifest_path(args).parent


def _not_found(args: argparse.Namespace, path: Path) -> str:
    """Why no manifest was found, naming every place looked in."""
    if args.manifest:
        return f"no manifest at {path}"
    if args.out is not None:
        return f"no manifest at {path} (give the output root with --out, or the file with --manifest)"
    looked = " or ".join(f"{(root / MANIFEST_NAME).as_posix()}" for root in DEFAULT_ROOTS)
    return (f"no manifest found: looked for {looked} in {Path.cwd()} "
            "(give the output root with --out, or the file with --manifest)")


def open_manifest(args: argparse.Namespace) -> Manifest:
    """The manifest, checked once so a missing or damaged file is one line, not retries and a traceback.

    :class:`core.manifest.Manifest` retries while a file is locked by a writing flow, which is
    right for a lock but wrong for a file that is not a DuckDB database at all (retrying cannot
    fix it); this one read-only open tells the two apart before any retry.
    """
    path = manifest_path(args)
    if not path.is_file():
        raise KindaError(_not_found(args, path))
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():  # a flow is writing: the Manifest's own retries wait for it
            return Manifest(path)
        raise KindaError(f"{path} is not a readable manifest ({first_line(exc)}); "
                         "restore it from a backup or re-run the flows into a fresh --out", 1) from exc
    try:
        con.execute("SELECT count(*) FROM information_schema.tables").fetchall()
    except duckdb.Error as exc:
        raise KindaError(f"{path} is damaged ({first_line(exc)}); restore it from a backup or re-run "
                         "the flows into a fresh --out", 1) from exc
    finally:
        con.close()
    return Manifest(path)


def check_writable_folder(folder: Path, what: str) -> None:
    """Raise a usage error (exit 2) naming ``folder`` when a file cannot be created in it.

    Checked before any work, as the flows check ``--out``: a read-only or full folder found only
    when the file is written ended the command with exit 1, as if the output root were damaged.
    A real probe file, not :func:`os.access`, which says yes to root on a read-only mount's
    permission bits and knows nothing of quotas.
    """
    try:
        fd, probe = tempfile.mkstemp(prefix=".kinda-write-check-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise KindaError(f"{what}: {exc.strerror or type(exc).__name__}: {folder}") from None


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (DuckDB's carry a multi-line hint)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
