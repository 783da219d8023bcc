"""``kinda report``: documents and tokens per source and label, and drop reasons, as text, HTML or PNG.

    kinda --out data report                      # text tables
    kinda --out data report --html report.html   # one self-contained file (tables + SVG bars), no network
    kinda --out data report --png report.png     # three bar charts (needs matplotlib)

Everything comes from the manifest, read-only, so a report can be taken while a flow runs. Each
document is counted once (a ``docs/`` shard whose documents are also in ``labeled/`` class shards
is not counted again), and the last line compares the bytes of document shards on disk with one
copy of the kept documents: about 1.00x when every document is stored once.
"""

from __future__ import annotations

import argparse
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.atomic import atomic_path
from core.report import format_storage, format_table, report_tables
from kinda.command import KindaError, check_writable_folder, open_manifest

MATCHES_TITLE = "Dedup matches (duplicates dropped; reference matches: in G1, not in G3)"


# -- text -------------------------------------------------------------------------------------
def format_text(tables: dict[str, list[dict[str, Any]]]) -> str:
    """Plain tables, as ``kinda manifest summary`` prints them."""
    parts = []
    for title, key in (("Documents per source and label", "sources"), ("Drop reasons", "drops"),
                       (MATCHES_TITLE, "matches"), ("Tokens (tensor sets)", "tokens")):
        rows = tables.get(key, [])
        body = format_table(list(rows[0]), [list(r.values()) for r in rows]) if rows else "(none)"
        parts.append(f"{title}\n{body}")
    parts.extend(format_storage(row) for row in tables.get("storage", []))
    return "\n\n".join(parts)


# -- HTML -------------------------------------------------------------------------------------
def _bar_svg(items: Sequence[tuple[str, float]], unit: str, width: int = 640) -> str:
    """Horizontal bars as inline SVG: no script, no external file, renders offline."""
    if not items:
        return "<p>(none)</p>"
    top = max(v for _, v in items) or 1
    row, label_w = 22, 220
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{row * len(items) + 4}" '
             f'role="img" aria-label="{html.escape(unit)}">']
    for i, (label, value) in enumerate(items):
        y = i * row + 2
        bar = max(1.0, (width - label_w - 90) * value / top)
        parts.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="12">{html.escape(label)}</text>'
                     f'<rect x="{label_w}" y="{y + 3}" width="{bar:.1f}" height="{row - 6}" fill="#3b6ea5"/>'
                     f'<text x="{label_w + bar + 4:.1f}" y="{y + 15}" font-size="12">{value:,.0f} {html.escape(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _html_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p>(none)</p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{'' if v is None else html.escape(f'{v:,}' if isinstance(v, int) else str(v))}</td>"
                                    for v in row.values()) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def chart_series(tables: dict[str, list[dict[str, Any]]]) -> dict[str, list[tuple[str, float]]]:
    """What the charts show: documents and tokens per source/label, drops per source/reason."""
    docs = [(f"{r['source']} · {r['label']}", float(r["docs"] or 0)) for r in tables["sources"]]
    several = len({r["tensor_root"] for r in tables["tokens"]}) > 1
    tokens = [(f"{Path(r['tensor_root']).name + ' · ' if several else ''}{r['source']} · {r['labels'] or '-'} · "
               f"{r['split']}", float(r["tokens"] or 0)) for r in tables["tokens"]]
    drops = [(f"{r['source']} · {r['reason']}", float(r["count"])) for r in tables["drops"]]
    return {"documents": docs, "tokens": tokens, "drops": drops}


def render_html(tables: dict[str, list[dict[str, Any]]], title: str) -> str:
    """One self-contained page: three charts, then the tables they come from."""
    series = chart_series(tables)
    style = ("body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
             "h2{margin-top:1.5em}")
    sections = [
        ("Documents per source and label", _bar_svg(series["documents"], "docs"), tables["sources"]),
        ("Tokens per source, label and split", _bar_svg(series["tokens"], "tokens"), tables["tokens"]),
        ("Drop reasons per source", _bar_svg(series["drops"], "dropped"), tables["drops"]),
        (MATCHES_TITLE, "", tables.get("matches", [])),
    ]
    body = "".join(f"<h2>{html.escape(name)}</h2>{chart}{_html_table(rows)}" for name, chart, rows in sections)
    body += "".join(f"<h2>Storage</h2><p>{html.escape(format_storage(row))}</p>" for row in tables.get("storage", []))
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>\n")


# -- PNG --------------------------------------------------------------------------------------
def render_png(tables: dict[str, list[dict[str, Any]]], target: Path, title: str) -> None:
    """Three horizontal bar charts in one PNG (matplotlib, Agg backend: no display needed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        # kinda-llama is installed from its source tree, not from PyPI: name both ways that work
        raise KindaError("--png needs matplotlib: pip install matplotlib (or, in the source tree, "
                         "pip install -e '.[report]'); --html needs nothing") from exc
    series = chart_series(tables)
    heights = [max(1, len(v)) for v in series.values()]
    fig, axes = plt.subplots(3, 1, figsize=(10, 2 + 0.3 * sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=True)
    for ax, (name, items) in zip(axes, series.items(), strict=True):
        labels = [label for label, _ in items] or ["(none)"]
        values = [value for _, value in items] or [0]
        ax.barh(labels[::-1], values[::-1], color="#3b6ea5")
        ax.set_title(name)
        ax.ticklabel_format(axis="x", style="plain")
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)


# -- command ----------------------------------------------------------------------------------
def check_report_target(target: Path) -> None:
    """Refuse a report file whose folder does not exist or is not a folder (as ``cp``/``tee`` do).

    Creating the folders would hide a typo in the path: the report lands somewhere unexpected.
    """
    folder = target.parent
    if target.is_dir():
        raise KindaError(f"cannot write the report to {target}: it is a folder (name a file in it)")
    if not folder.is_dir():
        reason = "not a folder" if folder.exists() else "no such folder"
        raise KindaError(f"cannot write the report to {target}: {reason}: {folder}")
    check_writable_folder(folder, f"cannot write the report to {target}")


def cmd_report(args: argparse.Namespace) -> int:
    """Write the report as text (stdout), HTML or PNG."""
    target = args.html or args.png
    if target:
        check_report_target(Path(target))
    manifest = open_manifest(args)
    tables = report_tables(manifest, manifest.path.parent)
    title = f"kinda-llama report: {manifest.path.parent}"
    if args.html:
        with atomic_path(Path(args.html)) as tmp:
            tmp.write_text(render_html(tables, title), encoding="utf-8")
        print(f"wrote {args.html}")
    elif args.png:
        render_png(tables, Path(args.png), title)
        print(f"wrote {args.png}")
    else:
        print(format_text(tables))
    return 0


def register(subparsers: Any) -> None:
    """Add ``kinda report`` (called by :func:`kinda.cli.build_parser`)."""
    parser = subparsers.add_parser("report", help="documents/tokens per source and label, drop reasons (text, HTML, PNG)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--html", metavar="FILE", help="write a self-contained HTML page")
    target.add_argument("--png", metavar="FILE", help="write a PNG (needs matplotlib)")
    parser.set_defaults(func=cmd_report)
