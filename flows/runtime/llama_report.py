"""What a parent-flow run shows: Prefect artifacts (stages, sources, totals, where things are) and
the stage table a command-line run prints.

Both read the run's summary and the manifest only, so what the UI shows and what the shell
prints cannot disagree.
"""

from __future__ import annotations

from pathlib import Path

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from core.manifest import Manifest
from flows.runtime.llama_stages import LlamaSummary


def publish(summary: LlamaSummary, dataset: str) -> None:
    """Tables of stages and sources, and where everything is."""
    from core.report import report_tables

    create_table_artifact([vars(s) | {"seconds": round(s.seconds, 2)} for s in summary.stages],
                          key="llama-stages", description=f"{dataset}: stages of this run")
    if summary.sources:
        create_table_artifact(list(summary.sources.values()), key="llama-sources",
                              description="Per source: inputs, kept, dropped by reason, bytes, throughput")
    out = Path(summary.out)
    manifest = Manifest.for_output(out)
    tables = report_tables(manifest) if manifest.path.exists() else {}
    if tables.get("sources"):
        create_table_artifact(tables["sources"], key="llama-totals",
                              description="Per source and label: documents, text bytes, tokens (from the manifest)")
    create_markdown_artifact(
        f"# {dataset}\n\n- output root: `{out}`\n- manifest: `{manifest.path}`\n"
        f"- report: `kinda --out {out} report --html report.html`\n"
        f"- query: `kinda --out {out} manifest summary`\n", key="llama-output")


def print_report(summary: LlamaSummary) -> int:
    """The stage table and where the report is."""
    from core.report import format_table

    rows = [(s.stage, s.status, f"{s.seconds:.1f}", "" if (rate := s.per_second()) is None else f"{rate:,.1f}",
             s.detail[:100]) for s in summary.stages]
    print(f"\n{summary.out}\n")
    print(format_table(["stage", "status", "seconds", "docs/s", "detail"], rows))
    print(f"\nreport: kinda --out {summary.out} report --html report.html")
    return 0
