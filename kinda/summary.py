"""Human-readable manifest summary: documents, bytes and drops by reason, per source and language."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.manifest import Manifest

#: Document shards counted once: a ``docs/`` shard whose documents were also written to class
#: shards (``labeled/``, which name it in ``inputs``) is left out; after a label run with
#: ``release_docs`` it is gone from ``shards`` anyway (moved to ``released``).
COUNTED_SHARDS = """
counted AS (
    SELECT * FROM shards s
    WHERE NOT (starts_with(s.path, 'docs/') AND EXISTS (
        SELECT 1 FROM shards l WHERE starts_with(l.path, 'labeled/') AND list_contains(l.inputs, s.path)))
)"""
SHARDS_SQL = f"""
WITH {COUNTED_SHARDS}
SELECT source, coalesce(language, '-') AS language, count(*) AS shards, sum(docs) AS docs,
       sum(text_bytes) AS text_bytes, sum(bytes) AS shard_bytes
FROM counted GROUP BY ALL ORDER BY source, language
"""
#: Directories of an output root whose Parquet files are the finished corpus's documents.
CORPUS_DIRS = ("docs", "labeled")
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


def storage(manifest: Manifest, out: Path) -> dict[str, Any]:
    """Bytes of document shards on disk vs. one copy of the kept documents, and their ratio.

    ``on_disk`` is what ``docs/`` and ``labeled/`` hold (every ``.parquet`` file, recorded or
    not); ``one_copy`` is the recorded size of each document's shard counted once. A ratio near
    1.0 means each document is stored once; 2.0 means the corpus is stored twice.
    """
    on_disk = sum(p.stat().st_size for top in CORPUS_DIRS for p in (out / top).rglob("*.parquet") if p.is_file())
    _, rows = manifest.query(f"WITH {COUNTED_SHARDS} SELECT coalesce(sum(bytes), 0), coalesce(sum(docs), 0) "
                             "FROM counted WHERE starts_with(path, 'docs/') OR starts_with(path, 'labeled/')")
    one_copy, docs = int(rows[0][0]), int(rows[0][1])
    return {"documents": docs, "one_copy_bytes": one_copy, "on_disk_bytes": on_disk,
            "ratio": round(on_disk / one_copy, 3) if one_copy else None}


def format_storage(numbers: dict[str, Any]) -> str:
    """One line for :func:`storage`."""
    ratio = f"{numbers['ratio']:.3f}x" if numbers["ratio"] is not None else "-"
    return (f"Storage: {numbers['documents']:,} documents; {numbers['on_disk_bytes']:,} bytes of document shards "
            f"on disk (docs/ + labeled/) for {numbers['one_copy_bytes']:,} bytes of one copy: {ratio}")


def format_summary(manifest: Manifest) -> str:
    """The three tables of ``kinda manifest summary``."""
    parts = []
    for title, sql in (("Shards", SHARDS_SQL), ("Inputs (latest run of each)", INPUTS_SQL),
                       ("Drops by reason", DROPS_SQL)):
        columns, rows = manifest.query(sql)
        parts.append(f"{title}\n{format_table(columns, rows) if rows else '(none)'}")
    return "\n\n".join(parts)
