"""``kinda filters preview|apply``: what a threshold over the signals would leave out, then applying it.

    kinda filters preview --out data --set gopher.words_min=80
    kinda filters preview --out data --config configs/g2.yaml --set fineweb.short_line_ratio_max=0.5
    kinda filters apply --out data --set gopher.words_min=80

The filters are the label stage's (``labels.filters`` of ``configs/labels.yaml``, then of the
dataset file given with ``--config``), each ``--set group.param=value`` on top. The counts come from
the manifest's ``signals`` view with SQL (one row per staged document), per source: documents,
how many the filters would leave out, per rule, and a few example ids. Nothing is written.

``apply`` re-runs the label stage with those filters (the label config: ``configs/labels.yaml``,
the dataset file's whole ``labels`` section, the filters), through :func:`flows.label.relabel`:
the label flow's own code (``label_root``, ``label_shard``), run without Prefect and recorded in
the manifest as a ``label`` run, so its class shards are the flow's byte for byte. A re-label
is a CPU-second or so of work, and a Prefect flow run's fixed cost (Prefect's imports, its API
server, flow and task runs) is several: on the G.2 sample it was most of the re-label's CPU
(docs/curation.md). Tokens are not re-made (``python -m flows.llama ... --stages tokenize``); a
scheduled run uses the label flow (``python -m flows.label``, or a dataset run's ``labels`` stage).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kinda.command import KindaError, first_line, open_manifest

EXAMPLES = 3


def dataset_labels(config: Path | None) -> dict[str, Any]:
    """The ``labels`` section of a dataset file (``extends`` resolved); {} without one.

    A file that is not a dataset file (no ``dataset:`` key, such as the stage's own
    ``configs/labels.yaml``, read always) is refused: its keys would otherwise be ignored in silence."""
    from core.config import load_layered

    if config is None:
        return {}
    try:
        loaded = load_layered(config)
    except (OSError, ValueError) as exc:
        raise KindaError(f"--config {config}: {first_line(exc)}", 2) from None
    if "dataset" not in loaded:
        raise KindaError(f"--config {config}: not a dataset file (no 'dataset:' key); give one such as "
                         "configs/g2.yaml (configs/labels.yaml, the label stage's own file, is read always)", 2)
    return dict(loaded.get("labels") or {})


def configured_filters(config: Path | None) -> dict[str, Any]:
    """``labels.yaml``'s filters with a dataset file's ``labels.filters`` over them."""
    from core.config import deep_merge, stage_yaml

    filters = dict(stage_yaml("labels.yaml").get("filters") or {})
    return deep_merge(filters, dataset_labels(config).get("filters") or {})


def filters_with(config: Path | None, assignments: list[str] | None) -> dict[str, Any]:
    """The configured filters with each ``group.param=value`` on top (a bad one: exit 2)."""
    from dedupe.signal_filters import set_threshold

    filters = configured_filters(config)
    try:
        for assignment in assignments or []:
            filters = set_threshold(filters, assignment)
    except ValueError as exc:
        raise KindaError(str(exc), 2) from None
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
    from dedupe.signal_filters import parse_filters

    filters = filters_with(args.config, args.set)
    try:
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


def label_config(root: Path, config: Path | None, filters: dict[str, Any], workers: int | None) -> Any:
    """The label stage's config for ``root``: ``labels.yaml``, the dataset file's ``labels`` section, the filters."""
    from pydantic import ValidationError

    from core.config import deep_merge, stage_yaml
    from flows.label import LabelConfig
    from flows.runtime.cli import one_line

    section = dataset_labels(config)
    section["filters"] = filters
    overrides: dict[str, Any] = {"out": str(root)} | ({"workers": workers} if workers is not None else {})
    try:
        return LabelConfig.model_validate(deep_merge(deep_merge(stage_yaml("labels.yaml"), section), overrides))
    except (ValidationError, ValueError) as exc:
        raise KindaError(one_line(exc), 2) from None


def cmd_apply(args: argparse.Namespace) -> int:
    """Re-label the output root with the filters (see the module docstring); print the classes."""
    from core.lock import OutputLockedError
    from core.manifest import ManifestError
    from flows.label import relabel, report

    manifest = open_manifest(args)  # a root with no manifest has nothing to label: one line, exit 2
    config = label_config(manifest.path.parent, args.config, filters_with(args.config, args.set), args.workers)
    try:
        results = relabel(config)
    except OutputLockedError as exc:
        raise KindaError(str(exc), 2) from None
    except (ManifestError, OSError) as exc:
        raise KindaError(first_line(exc), 1) from None
    return report(results)


def register(subparsers: Any) -> None:
    """Add ``kinda filters preview`` and ``kinda filters apply`` to the ``kinda`` command."""
    filters = subparsers.add_parser("filters", help="thresholds over the quality signals")
    sub = filters.add_subparsers(dest="filters_command", required=True)
    preview = sub.add_parser("preview", help="what a threshold would leave out, per source, before it is applied")
    preview.add_argument("--set", action="append", metavar="GROUP.PARAM=VALUE",
                         help="a threshold over the configured ones (repeatable): gopher.words_min=80")
    preview.add_argument("--config", type=Path, help="a dataset file whose labels.filters apply (configs/g2.yaml)")
    preview.set_defaults(func=cmd_preview)
    apply = sub.add_parser("apply", help="re-label with the filters (no source runs again; recorded as a label run)")
    apply.add_argument("--set", action="append", metavar="GROUP.PARAM=VALUE",
                       help="a threshold over the configured ones (repeatable): gopher.words_min=80")
    apply.add_argument("--config", type=Path, help="a dataset file whose labels section applies (configs/g2.yaml)")
    apply.add_argument("--workers", type=int, help="worker processes for a large run (default: one per core; "
                                                   "a small run labels in this process)")
    apply.set_defaults(func=cmd_apply)
