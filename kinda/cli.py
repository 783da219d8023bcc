"""The ``kinda`` command: inspect and verify the manifest (and, from other modules, dedup/report).

``kinda manifest summary|sql|verify`` work on ``<out>/manifest.duckdb`` (``--out``, default
``data``) or an explicit ``--manifest`` file, read-only, so they are safe while a flow runs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from core.manifest import MANIFEST_NAME, Manifest
from kinda.summary import format_summary, format_table

#: Optional sub-command modules, each with ``register(subparsers)``; absent ones are skipped.
PLUGIN_MODULES = ("kinda.cli_dedup", "kinda.cli_report", "kinda.cli_tensors")


def _manifest(args: argparse.Namespace) -> Manifest:
    return Manifest(args.manifest) if args.manifest else Manifest(Path(args.out) / MANIFEST_NAME)


def cmd_summary(args: argparse.Namespace) -> int:
    """Print documents, bytes and drops per source and language."""
    print(format_summary(_manifest(args)))
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    """Run one read-only SQL query and print the result."""
    columns, rows = _manifest(args).query(args.query)
    if args.json:
        print(json.dumps([dict(zip(columns, row, strict=True)) for row in rows], default=str, indent=1))
    else:
        print(format_table(columns, rows))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Re-hash every shard; non-zero exit when one is missing or corrupt."""
    manifest = _manifest(args)
    root = Path(args.out) if not args.manifest else Path(args.manifest).parent
    problems = manifest.verify(root)
    _, rows = manifest.query("SELECT count(*) FROM shards")
    for problem in problems:
        print(f"{problem['problem']}: {problem['path']}")
    print(f"{rows[0][0] - len(problems)} of {rows[0][0]} shards ok")
    return 1 if problems else 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with plugin sub-commands registered."""
    parser = argparse.ArgumentParser(prog="kinda", description=__doc__)
    parser.add_argument("--out", default="data", help="output root holding manifest.duckdb (default: data)")
    parser.add_argument("--manifest", help="explicit manifest file")
    commands = parser.add_subparsers(dest="command", required=True)
    manifest = commands.add_parser("manifest", help="query and verify the manifest")
    sub = manifest.add_subparsers(dest="manifest_command", required=True)
    sub.add_parser("summary", help="documents, bytes, drops by reason").set_defaults(func=cmd_summary)
    sql = sub.add_parser("sql", help="run a SQL query (tables: runs, inputs, shards, drops, errors)")
    sql.add_argument("query")
    sql.add_argument("--json", action="store_true", help="print rows as JSON")
    sql.set_defaults(func=cmd_sql)
    sub.add_parser("verify", help="re-hash shards, report missing or corrupt ones").set_defaults(func=cmd_verify)
    for name in PLUGIN_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``kinda`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except FileNotFoundError as exc:
        print(f"kinda: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
