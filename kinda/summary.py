"""Human-readable manifest summary: documents, bytes and drops by reason, per source and language."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.manifest import Manifest

SHARDS_SQL = """
SELECT source, coalesce(language, '-') AS language, count(*) AS shards, sum(docs) AS docs,
       sum(text_bytes) AS text_bytes, sum(bytes) AS shard_bytes, sum(tokens) AS tokens
FROM shards GROUP BY ALL ORDER BY source, language
"""
INPUTS_SQL = """
SELECT source, coalesce(language, '-') AS language, count(*) AS inputs, sum(records_in) AS records_in,
       sum(docs_kept) AS kept, sum(docs_dropped) AS dropped,
       count(*) FILTER (WHERE status <> 'done') AS not_done
FROM latest_inputs GROUP BY ALL ORDER BY source, language
"""
DROPS_SQL = """
SELECT source, coalesce(language, '-') AS language, step, reason, sum(count) AS count
FROM latest_drops GROUP BY ALL ORDER BY source, language, count DESC
"""


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Plain fixed-width text table."""
    cells = [[str(c) for c in columns]] + [["" if v is None else f"{v:,}" if isinstance(v, int) else str(v)
                                            for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_summary(manifest: Manifest) -> str:
    """The three tables of ``kinda manifest summary``."""
    parts = []
    for title, sql in (("Shards", SHARDS_SQL), ("Inputs (latest run of each)", INPUTS_SQL),
                       ("Drops by reason", DROPS_SQL)):
        columns, rows = manifest.query(sql)
        parts.append(f"{title}\n{format_table(columns, rows) if rows else '(none)'}")
    return "\n\n".join(parts)
