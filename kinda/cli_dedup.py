"""``kinda dedup explain <doc-id>``: why a document was dropped, matched the reference, or kept with which labels.

Registered into ``kinda`` by :func:`register`; reads the output root read-only (safe while a flow
runs). Exit 0 with the answer; exit 1 with one line when the id is nowhere in the output root.
"""

from __future__ import annotations

import argparse
import json

from kinda.command import KindaError, open_manifest, output_root


def cmd_explain(args: argparse.Namespace) -> int:
    """Print what the output root records about one document."""
    # pyarrow and numpy: imported by this command, not by kinda --help
    from dedupe.explain import explain, format_explanation

    manifest = open_manifest(args)
    out = output_root(args)
    result = explain(out, args.doc_id, manifest.path)
    if result["verdict"] == "unknown":
        raise KindaError(format_explanation(result).replace(" of this output root", f" under {out}"), 1)
    print(json.dumps(result, default=str, indent=1) if args.json else format_explanation(result))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``dedup explain`` to the ``kinda`` command."""
    dedup = subparsers.add_parser("dedup", help="explain dedup decisions")
    sub = dedup.add_subparsers(dest="dedup_command", required=True)
    explain_parser = sub.add_parser("explain", help="why a document was dropped, left out of G3, or kept")
    explain_parser.add_argument("doc_id")
    explain_parser.add_argument("--json", action="store_true", help="print everything found as JSON")
    explain_parser.set_defaults(func=cmd_explain)

