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
from pathlib import Path
from typing import Any

from core.atomic import atomic_path
from core.report import format_storage, format_table, report_tables
from kinda.command import KindaError, check_writable_folder, open_manifest
from kinda.report_page import MATCHES_TITLE, chart_series, render_html


# -- text -------------------------------------------------------------------------------------
def format_text(tables: dict[str, list[dict[str, Any]]]) -> str:
    """Plain tables, as ``kinda manifest summary`` prints them."""
    parts = []
    for title, key in (("Per source: read, kept, after dedup, per label, tokens", "funnel"),
                       ("Documents per source and label", "sources"), ("Drop reasons", "drops"),
                       (MATCHES_TITLE, "matches"), ("Tokens (tensor sets)", "tokens")):
        rows = tables.get(key, [])
        body = format_table(list(rows[0]), [list(r.values()) for r in rows]) if rows else "(none)"
        parts.append(f"{title}\n{body}")
    parts.extend(format_storage(row) for row in tables.get("storage", []))
    return "\n\n".join(parts)


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
    out = manifest.path.parent
    tables = report_tables(manifest, out)
    title = f"kinda-llama report: {out}"
    if args.html:  # the output root said once, in the page (the title shows in the browser's tab)
        with atomic_path(Path(args.html)) as tmp:
            tmp.write_text(render_html(tables, "kinda-llama report", out), encoding="utf-8")
        print(f"wrote {args.html}")
    elif args.png:
        render_png(tables, Path(args.png), title)
        print(f"wrote {args.png}")
    else:
        print(format_text(tables))
        print(format_contamination(contamination_rows(out)))
    return 0


# -- decontamination (issue 32) ------------------------------------------------------------------
def contamination_rows(out: Path) -> list[dict[str, Any]]:
    """Documents marked by ``flows.decontaminate``, per source and benchmark, from its attribute files
    (``attributes/decontamination/<source>/...``; the label stage leaves them out of every set)."""
    files = sorted((out / "attributes" / "decontamination").rglob("*.parquet"))
    if not files:
        return []
    import duckdb

    listed = ", ".join("'" + f.as_posix().replace("'", "''") + "'" for f in files)
    con = duckdb.connect()
    try:
        rows = con.execute(
            "SELECT regexp_extract(filename, 'decontamination/([^/]+)/', 1) AS source, benchmark, "
            "count(DISTINCT id) AS documents, count(DISTINCT item) AS items "
            f"FROM read_parquet([{listed}], filename=true) GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    finally:
        con.close()
    return [{"source": r[0], "benchmark": r[1], "documents": r[2], "items": r[3]} for r in rows]


def format_contamination(rows: list[dict[str, Any]]) -> str:
    """The decontamination table of the text report (``(none)`` when no evaluation set was checked)."""
    body = format_table(list(rows[0]), [list(r.values()) for r in rows]) if rows else "(none)"
    return f"\nContaminated documents (sharing an n-gram, 13 words by default, with an evaluation item)\n{body}"


def register(subparsers: Any) -> None:
    """Add ``kinda report`` (called by :func:`kinda.cli.build_parser`)."""
    parser = subparsers.add_parser("report", help="documents/tokens per source and label, drop reasons (text, HTML, PNG)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--html", metavar="FILE", help="write a self-contained HTML page")
    target.add_argument("--png", metavar="FILE", help="write a PNG (needs matplotlib)")
    parser.set_defaults(func=cmd_report)
