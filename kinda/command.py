"""What every ``kinda`` sub-command shares: the one-line error, and opening the manifest read-only.

Its own module, below :mod:`kinda.cli` and the sub-command modules (``kinda.cli_*``), so the
command imports its sub-commands for real and none of them imports the command back.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb

from core.manifest import MANIFEST_NAME, Manifest


class KindaError(Exception):
    """An error the user can act on: printed as one line, with its exit status, no traceback."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def manifest_path(args: argparse.Namespace) -> Path:
    """The manifest the command reads: ``--manifest``, else ``<--out>/manifest.duckdb``."""
    return Path(args.manifest) if args.manifest else Path(args.out) / MANIFEST_NAME


def open_manifest(args: argparse.Namespace) -> Manifest:
    """The manifest, checked once so a missing or damaged file is one line, not retries and a traceback.

    :class:`core.manifest.Manifest` retries while a file is locked by a writing flow, which is
    right for a lock but wrong for a file that is not a DuckDB database at all (retrying cannot
    fix it); this one read-only open tells the two apart before any retry.
    """
    path = manifest_path(args)
    if not path.is_file():
        hint = "" if args.manifest else " (give the output root with --out, or the file with --manifest)"
        raise KindaError(f"no manifest at {path}{hint}")
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


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (DuckDB's carry a multi-line hint)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
