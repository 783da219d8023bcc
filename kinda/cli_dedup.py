"""``kinda dedup explain <doc-id>``: why a document was dropped as a duplicate or left out of G.3.

Registered into ``kinda`` by :func:`register`; reads the manifest read-only (safe while a flow runs).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from core.manifest import MANIFEST_NAME
from dedupe.explain import explain, format_explanation


def cmd_explain(args: argparse.Namespace) -> int:
    """Print the matches recorded for one document; exit 1 when the manifest is missing."""
    manifest = Path(args.manifest) if args.manifest else Path(args.dedup_out or args.out) / MANIFEST_NAME
    if not manifest.exists():
        print(f"no manifest at {manifest}")
        return 1
    result = explain(manifest, args.doc_id)
    print(json.dumps(result, default=str, indent=1) if args.json else format_explanation(result))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``dedup explain`` to the ``kinda`` command."""
    dedup = subparsers.add_parser("dedup", help="explain dedup decisions")
    sub = dedup.add_subparsers(dest="dedup_command", required=True)
    explain_parser = sub.add_parser("explain", help="why a document was dropped or left out of G.3")
    explain_parser.add_argument("doc_id")
    explain_parser.add_argument("--out", dest="dedup_out", help="output root holding manifest.duckdb")
    explain_parser.add_argument("--json", action="store_true", help="print the raw match rows as JSON")
    explain_parser.set_defaults(func=cmd_explain)
