"""``kinda filters preview``: what a threshold over the signals would leave out, before it is applied.

    kinda filters preview --out data --set gopher.words_min=80
    kinda filters preview --out data --config configs/g2.yaml --set fineweb.short_line_ratio_max=0.5

The filters are the label stage's (``labels.filters`` of ``configs/labels.yaml``, then of the
dataset file given with ``--config``), each ``--set group.param=value`` on top. The counts come from
the manifest's ``signals`` view with SQL (one row per staged document), per source: documents,
how many the filters would leave out, per rule, and a few example ids. Nothing is written; apply
it with ``python -m flows.llama ... --stages labels,tokenize --set labels.filters.<group>.<param>=v``
(labels and tokens only: no source runs again).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kinda.command import KindaError, open_manifest

EXAMPLES = 3


def configured_filters(config: Path | None) -> dict[str, Any]:
    """``labels.yaml``'s filters with a dataset file's ``labels.filters`` over them."""
    from core.config import deep_merge, load_layered, stage_yaml

    filters = dict(stage_yaml("labels.yaml").get("filters") or {})
    if config is not None:
        section = (load_layered(config).get("labels") or {}).get("filters") or {}
        filters = deep_merge(filters, section)
    return filters


def preview_sql(rules: Any) -> str:
    """One query: per source, documents, those failing any rule, per rule, and example ids."""
    fails = [rule.sql_fails() for rule in rules]
    per_rule = ", ".join(f"count(*) FILTER (WHERE {cond}) AS \"{rule.name}\"" for rule, cond in zip(rules, fails, strict=True))
    any_fail = " OR ".join(f"({cond})" for cond in fails)
    return (f"SELECT source, count(*) AS documents, count(*) FILTER (WHERE {any_fail}) AS left_out, {per_rule}, "
            f"list(DISTINCT id ORDER BY id) FILTER (WHERE {any_fail})[1:{EXAMPLES}] AS examples "
            "FROM signals GROUP BY source ORDER BY source")


def cmd_preview(args: argparse.Namespace) -> int:
    """Print what the filters would leave out, per source."""
    from core.report import format_table
    from dedupe.signal_filters import parse_filters, set_threshold

    filters = configured_filters(args.config)
    try:
        for assignment in args.set or []:
            filters = set_threshold(filters, assignment)
        rules = parse_filters(filters)
    except ValueError as exc:
        raise KindaError(str(exc), 2) from None
    if not rules:
        raise KindaError("no filters configured or given: name one with --set group.param=value "
                         "(gopher.words_min=80)", 2)
    columns, rows = open_manifest(args).query(preview_sql(rules))
    print("rules: " + ", ".join(f"{r.name} (keep {r.signal} {r.op} {r.value:g})" for r in rules))
    print(format_table(columns, [[", ".join(v) if isinstance(v, list) else v for v in row] for row in rows])
          if rows else "(no signals: run a source flow first)")
    return 0


def register(subparsers: Any) -> None:
    """Add ``kinda filters preview`` to the ``kinda`` command."""
    filters = subparsers.add_parser("filters", help="thresholds over the quality signals")
    sub = filters.add_subparsers(dest="filters_command", required=True)
    preview = sub.add_parser("preview", help="what a threshold would leave out, per source, before it is applied")
    preview.add_argument("--set", action="append", metavar="GROUP.PARAM=VALUE",
                         help="a threshold over the configured ones (repeatable): gopher.words_min=80")
    preview.add_argument("--config", type=Path, help="a dataset file whose labels.filters apply (configs/g2.yaml)")
    preview.set_defaults(func=cmd_preview)
