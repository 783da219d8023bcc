"""What the manifest says, as tables: the summary (documents, bytes, drops per source and language)
and the report's tables (documents and tokens per source and label, drop reasons, dedup matches).

These are queries and plain-text formatting of :class:`core.manifest.Manifest`, below every
caller: the ``kinda`` command prints them (``manifest summary``, ``report``) and the flows print
them after a run, so a flow never imports the command (the top floor) to say what it wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.document import MULTIPLE, UNDETERMINED
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
#: A manifest language of NULL is an input or shard whose documents each carry their own language
#: (BCP-47 ``mul``); ``und`` is stored as itself (documents whose language nobody determined).
SHARDS_SQL = f"""
WITH {COUNTED_SHARDS}
SELECT source, coalesce(language, '{MULTIPLE}') AS language, count(*) AS shards, sum(docs) AS docs,
       sum(text_bytes) AS text_bytes, sum(bytes) AS shard_bytes
FROM counted GROUP BY ALL ORDER BY source, language
"""
#: Directories of an output root whose Parquet files are the finished corpus's documents.
CORPUS_DIRS = ("docs", "labeled")
INPUTS_SQL = f"""
SELECT source, coalesce(language, '{MULTIPLE}') AS language, count(*) AS inputs, sum(records_in) AS records_in,
       sum(docs_kept) AS kept, sum(docs_dropped) AS dropped,
       count(*) FILTER (WHERE status <> 'done') AS not_done
FROM latest_inputs GROUP BY ALL ORDER BY source, language
"""
#: Drops are recorded ``und`` when neither the record nor its input had a language (NULL: an older manifest).
DROPS_SQL = f"""
SELECT source, coalesce(language, '{UNDETERMINED}') AS language, step, reason, sum(count) AS count
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


# -- the report's tables (``kinda report``, the parent flow's artifacts) -------------------------
#: Documents per source: all final documents (each once), then per label of the labeled shards.
SOURCES_SQL = f"""
WITH {COUNTED_SHARDS}, rows AS (
    SELECT source, 'all documents' AS label, 0 AS rank, docs, text_bytes
    FROM counted WHERE starts_with(path, 'docs/') OR starts_with(path, 'labeled/')
    UNION ALL
    SELECT source, label, 1 AS rank, docs, text_bytes
    FROM (SELECT *, unnest(labels) AS label FROM shards WHERE starts_with(path, 'labeled/'))
)
SELECT source, label, sum(docs)::BIGINT AS docs, sum(text_bytes)::BIGINT AS text_bytes
FROM rows GROUP BY source, label, rank ORDER BY source, rank, label
"""
REPORT_DROPS_SQL = """
SELECT source, reason, sum(count)::BIGINT AS count FROM latest_drops
GROUP BY ALL ORDER BY source, count DESC, reason
"""
#: What ``flows.dedup`` matched, per source and kind, naming the first documents (``kinda dedup explain`` says more):
#: ``reference_*`` rows are the LLaMA documents in G1 but not in G3 (class ``llama-in-ref``).
MATCHES_SQL = """
SELECT source, kind, count(*)::BIGINT AS docs,
       array_to_string(list_sort(list(doc_id))[1:3], ' ') || CASE WHEN count(*) > 3 THEN ' ...' ELSE '' END AS documents
FROM matches GROUP BY ALL ORDER BY source, kind
"""
#: Tokens belong to a tensor root (one corpus tokenized twice has two counts): one row per root,
#: source, split and label set, from the ``tensors`` table each tokenize run replaces for its root.
TENSORS_SQL = """
SELECT tensor_root, source, split, array_to_string(list_sort(labels), ' ') AS labels,
       sum(docs)::BIGINT AS docs, sum(tokens)::BIGINT AS tokens
FROM tensors GROUP BY ALL ORDER BY tensor_root, source, split, labels
"""


#: The funnel's steps, in order (columns of :func:`funnel`; labels and tensor roots follow ``after_dedup``).
FUNNEL_READ = "SELECT source, sum(records_in)::BIGINT, sum(docs_kept)::BIGINT FROM latest_inputs GROUP BY source"
#: Documents dropped as duplicates by ``flows.dedup``, each once (a re-run records the same documents again).
FUNNEL_DUPLICATES = ("SELECT source, count(DISTINCT doc_id)::BIGINT FROM matches "
                     "WHERE starts_with(kind, 'duplicate') GROUP BY source")
FUNNEL_LABELS = """
SELECT source, label, sum(docs)::BIGINT FROM (SELECT source, docs, unnest(labels) AS label FROM shards
WHERE starts_with(path, 'labeled/')) GROUP BY ALL ORDER BY label
"""
FUNNEL_TOKENS = "SELECT tensor_root, source, sum(tokens)::BIGINT FROM tensors GROUP BY ALL ORDER BY tensor_root"


def _rows(manifest: Manifest, sql: str) -> list[dict[str, Any]]:
    columns, rows = manifest.query(sql)
    return [dict(zip(columns, row, strict=True)) for row in rows]


def tensor_root_name(root: str, out: Path) -> str:
    """A tensor root as the report shows it: relative to the output root when inside it (``tensors/g1``)."""
    path = Path(root)
    try:
        return path.relative_to(out).as_posix()
    except ValueError:
        try:
            return path.resolve().relative_to(out.resolve()).as_posix()
        except (ValueError, OSError):
            return root


def funnel(manifest: Manifest, tables: set[str]) -> list[dict[str, Any]]:
    """Per source, the path of its documents: records read, kept by the source's filters, left after
    dedup (kept minus the duplicates ``flows.dedup`` dropped), in each label, and tokens per tensor root.

    ``None`` where a stage has not run (no dedup: no ``after_dedup``); a label or tensor root the
    source has none in is 0. One row per source that any of these tables names, sorted by name.
    """
    out = manifest.path.parent
    read = {src: (r, k) for src, r, k in manifest.query(FUNNEL_READ)[1]}
    duplicates = dict(manifest.query(FUNNEL_DUPLICATES)[1]) if "matches" in tables else None
    labels: dict[str, dict[str, int]] = {}
    for src, label, docs in manifest.query(FUNNEL_LABELS)[1]:
        labels.setdefault(label, {})[src] = int(docs)
    tokens: dict[str, dict[str, int]] = {}
    if "tensors" in tables:
        for root, src, count in manifest.query(FUNNEL_TOKENS)[1]:
            tokens.setdefault(f"tokens {tensor_root_name(root, out)}", {})[src] = int(count)
    sources = sorted(set(read) | {s for d in [*labels.values(), *tokens.values()] for s in d})
    rows = []
    for src in sources:
        got, kept = read.get(src, (None, None))
        after = None if duplicates is None or kept is None else int(kept) - int(duplicates.get(src, 0))
        row: dict[str, Any] = {"source": src, "read": got, "kept": kept, "after_dedup": after}
        row |= {label: by_source.get(src, 0) for label, by_source in labels.items()}
        row |= {root: by_source.get(src, 0) for root, by_source in tokens.items()}
        rows.append(row)
    return rows


def report_tables(manifest: Manifest, out: Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """The report's tables (``tokens``, per tensor root, is empty until a tokenize run wrote one;
    ``funnel``: per source, read -> kept -> after dedup -> per label -> tokens, :func:`funnel`).

    With the output root, ``storage`` holds one row: bytes of document shards on disk against one
    copy of the kept documents (:func:`storage`).
    """
    _, present = manifest.query("SELECT table_name FROM information_schema.tables")
    tables = {name for (name,) in present}
    return {
        "funnel": funnel(manifest, tables),
        "sources": _rows(manifest, SOURCES_SQL),
        "drops": _rows(manifest, REPORT_DROPS_SQL),
        "matches": _rows(manifest, MATCHES_SQL) if "matches" in tables else [],
        "tokens": _rows(manifest, TENSORS_SQL) if "tensors" in tables else [],
        "storage": [storage(manifest, out)] if out is not None else [],
    }
