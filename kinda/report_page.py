"""``kinda report --html``: one self-contained page (inline SVG and CSS, no script, no network).

What the page must show at a glance, learned from the first pages: with one bar scale for every
source, Wikipedia's hundreds of documents made every other source a sliver, so the aggregate
charts use a log scale (labelled, with a tick per power of ten) and each source gets a funnel of
its own, scaled to that source: records read, kept by the source's filters, left after dedup, in
each label, then tokens. Counts name their unit in the singular for one ("1 document"), and a
tensor root is named once per table, relative to the output root when inside it, not on every row.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.report import format_storage, tensor_root_name

MATCHES_TITLE = "Dedup matches (duplicates dropped; reference matches: in G1, not in G3)"
#: Funnel steps before the labels and tensor roots (which come from the data), with their captions.
FUNNEL_STEPS = {"read": "read", "kept": "kept by the source", "after_dedup": "after dedup"}
BAR = "#3b6ea5"
TOKENS_BAR = "#6a9a3b"
STYLE = ("body{font-family:sans-serif;margin:2em;color:#222;max-width:1100px}table{border-collapse:collapse;margin:1em 0}"
         "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
         "h2{margin-top:1.5em}.funnels{display:flex;flex-wrap:wrap;gap:1em}"
         ".funnel{border:1px solid #ddd;padding:.5em}.funnel h3{margin:.2em 0;font-size:1em}.note{color:#555}")


def plural(count: float, unit: str) -> str:
    """``1 document``, ``2 documents``, ``1,234 tokens``: the unit names the count."""
    whole = round(count)
    return f"{whole:,} {unit if whole == 1 else unit + 's'}"


def chart_series(tables: dict[str, list[dict[str, Any]]], out: Path | None = None) -> dict[str, list[tuple[str, float]]]:
    """What the charts show: documents and tokens per source/label, drops per source/reason.

    Token bars name their tensor root only when there are several (relative to ``out`` when inside it).
    """
    docs = [(f"{r['source']} · {r['label']}", float(r["docs"] or 0)) for r in tables["sources"]]
    several = len({r["tensor_root"] for r in tables["tokens"]}) > 1
    tokens = [(f"{_root(r['tensor_root'], out) + ' · ' if several else ''}{r['source']} · {r['labels'] or '-'} · "
               f"{r['split']}", float(r["tokens"] or 0)) for r in tables["tokens"]]
    drops = [(f"{r['source']} · {r['reason']}", float(r["count"])) for r in tables["drops"]]
    return {"documents": docs, "tokens": tokens, "drops": drops}


def _root(root: str, out: Path | None) -> str:
    return tensor_root_name(root, out) if out is not None else Path(root).name


# -- charts -----------------------------------------------------------------------------------
def log_bars_svg(items: Sequence[tuple[str, float]], unit: str, width: int = 760) -> str:
    """Horizontal bars on a log10 scale (1 to the next power of ten above the largest value), with a
    labelled tick per power of ten: a source of 7 documents and one of 700 are both readable."""
    if not items:
        return "<p>(none)</p>"
    row, label_w, value_w, axis_h = 22, 230, 130, 18
    decades = max(1, math.ceil(math.log10(max(max(v for _, v in items), 1) + 1)))
    plot_w = width - label_w - value_w

    def x(value: float) -> float:
        return label_w + plot_w * math.log10(1 + max(value, 0)) / decades

    height = row * len(items) + axis_h + 4
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{html.escape(unit)}s per row, log scale">']
    for power in range(decades + 1):  # ticks at 1, 10, 100, ... (x(10**p - 1): the scale is log10(1 + v))
        tick = x(10**power - 1)
        parts.append(f'<line x1="{tick:.1f}" y1="0" x2="{tick:.1f}" y2="{row * len(items)}" stroke="#ddd"/>'
                     f'<text x="{tick:.1f}" y="{row * len(items) + 14}" font-size="10" text-anchor="middle" '
                     f'fill="#555">{10**power - 1 if power == 0 else f"{10**power:,}"}</text>')
    for i, (label, value) in enumerate(items):
        y = i * row + 2
        end = max(x(value), label_w + 1.0)
        parts.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="12">{html.escape(label)}</text>'
                     f'<rect x="{label_w}" y="{y + 3}" width="{end - label_w:.1f}" height="{row - 6}" fill="{BAR}"/>'
                     f'<text x="{end + 4:.1f}" y="{y + 15}" font-size="12">{html.escape(plural(value, unit))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def funnel_svg(row: dict[str, Any], steps: list[tuple[str, str]], tokens: list[str], width: int = 330) -> str:
    """One source's funnel: a bar per step, linear and scaled to what the source read, with its count.

    ``steps``: (column, caption) of the document steps; ``tokens``: the columns of token counts
    (another unit: written, not drawn against documents). A step that did not run shows ``-``.
    """
    line, label_w = 20, 120
    top = max([float(row.get(c) or 0) for c, _ in steps] + [1.0])
    lines = [*steps, *[(c, c.removeprefix("tokens ")) for c in tokens]]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{line * len(lines) + 4}" role="img" '
             f'aria-label="{html.escape(str(row["source"]))}: documents from input to tokens">']
    for i, (column, caption) in enumerate(lines):
        y, value = i * line + 2, row.get(column)
        is_tokens = column in tokens
        text = "-" if value is None else plural(value, "token" if is_tokens else "document")
        parts.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end" font-size="11">{html.escape(caption)}</text>')
        bar = 0.0 if value is None or is_tokens else (width - label_w - 95) * float(value) / top
        if bar > 0:
            parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{max(bar, 1.0):.1f}" height="{line - 6}" fill="{BAR}"/>')
        colour = f' fill="{TOKENS_BAR}"' if is_tokens else ""
        parts.append(f'<text x="{label_w + bar + 4:.1f}" y="{y + 14}" font-size="11"{colour}>{html.escape(text)}</text>')
    parts.append("</svg>")
    return "".join(parts)


# -- tables and the page ----------------------------------------------------------------------
def html_table(rows: list[dict[str, Any]], leave_out: Sequence[str] = ()) -> str:
    """Rows as a table (numbers with thousands separators); ``leave_out``: columns said elsewhere."""
    if not rows:
        return "<p>(none)</p>"
    columns = [c for c in rows[0] if c not in leave_out]
    head = "".join(f"<th>{html.escape(str(c).replace('_', ' '))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(row[c])}</td>" for c in columns) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return html.escape(f"{value:,}" if isinstance(value, int) else str(value))


def funnel_section(rows: list[dict[str, Any]]) -> str:
    """The per-source funnels (one chart per source, each to its own scale) and their table."""
    if not rows:
        return "<p>(none)</p>"
    tokens = [c for c in rows[0] if c.startswith("tokens ")]
    steps = [(c, FUNNEL_STEPS.get(c, f"label {c}")) for c in rows[0] if c != "source" and c not in tokens]
    charts = "".join(f'<div class="funnel"><h3>{html.escape(str(r["source"]))}</h3>{funnel_svg(r, steps, tokens)}</div>'
                     for r in rows)
    note = ("<p class=\"note\">Each source to its own scale (bars: documents; tokens written beside). "
            "read: records the source's reader yielded; kept: after the source's filters and its own dedup; "
            "after dedup: minus the duplicates dedup dropped across sources; then documents per label.</p>")
    return f'{note}<div class="funnels">{charts}</div>{html_table(rows)}'


def tokens_section(rows: list[dict[str, Any]], out: Path) -> str:
    """Tokens per tensor root: the root named once (relative to ``out`` when inside it), then its rows."""
    if not rows:
        return "<p>(none)</p>"
    parts = []
    for root in dict.fromkeys(r["tensor_root"] for r in rows):
        mine = [r for r in rows if r["tensor_root"] == root]
        parts.append(f"<h3>tensor root <code>{html.escape(tensor_root_name(root, out))}</code></h3>"
                     + html_table(mine, leave_out=("tensor_root",)))
    return "".join(parts)


def render_html(tables: dict[str, list[dict[str, Any]]], title: str, out: Path) -> str:
    """One self-contained page: where it is, the per-source funnels, log-scaled charts, then the tables."""
    series = chart_series(tables, out)
    log_note = '<p class="note">Log scale: each grid line is ten times the one before.</p>'
    sections = [
        ("Per source: read, kept, after dedup, per label, tokens", funnel_section(tables.get("funnel", []))),
        ("Documents per source and label", log_note + log_bars_svg(series["documents"], "document")
         + html_table(tables["sources"])),
        ("Tokens per source, label and split", log_note + log_bars_svg(series["tokens"], "token")
         + tokens_section(tables["tokens"], out)),
        ("Drop reasons per source", log_note + log_bars_svg(series["drops"], "document")
         + html_table(tables["drops"])),
        (MATCHES_TITLE, html_table(tables.get("matches", []))),
    ]
    body = f"<p>Output root: <code>{html.escape(str(out))}</code></p>"
    body += "".join(f"<h2>{html.escape(name)}</h2>{content}" for name, content in sections)
    body += "".join(f"<h2>Storage</h2><p>{html.escape(format_storage(row))}</p>" for row in tables.get("storage", []))
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>\n")
