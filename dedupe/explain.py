"""Dedup decisions and their explanations: clusters, attributes beside the shards, the ``matches`` table.

Documents are never edited. A dedup run ends with, for every document shard
``docs/<source>/<part>/<name>.parquet``, an attribute shard
``attributes/dedup/<source>/<part>/<name>.parquet`` with one row per document, in the same order:

=================== ===========================================================================
``id``              the document id
``cluster``         id of the cluster's representative (the document kept; itself if unique)
``duplicate_of``    the representative, when this document is an exact/near duplicate of it
``duplicate_kind``  ``exact`` (same normalized text) or ``near`` (MinHash LSH, verified)
``duplicate_jaccard`` estimated Jaccard to the representative
``reference_kind``  ``exact`` or ``near`` when the document matches the reference (the Pile)
``reference_shard`` / ``reference_line`` / ``reference_set``: where the matching Pile document is
``reference_jaccard`` estimated Jaccard of that match (1.0 for exact)
=================== ===========================================================================

and one ``matches`` row in the manifest per duplicate and per reference match, so
``kinda dedup explain <doc-id>`` (and any SQL) can answer "why was this dropped / left out of G.3".
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.atomic import atomic_path
from core.manifest import MATCHES_SQL, Manifest, Statement, final_wait_s
from dedupe.lsh import JoinSettings, SignatureStore
from dedupe.unionfind import UnionFind

ROOTS_SCHEMA = pa.schema([pa.field("doc", pa.int64()), pa.field("root", pa.int64()), pa.field("jaccard", pa.float32())])
ATTRIBUTE_COLUMNS = (
    "id", "cluster", "duplicate_of", "duplicate_kind", "duplicate_jaccard", "reference_kind",
    "reference_shard", "reference_line", "reference_set", "reference_jaccard",
)


def _one_row(cursor: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    """The single row of an aggregate query (DuckDB types ``fetchone`` as optional)."""
    row = cursor.fetchone()
    if row is None:
        raise RuntimeError("an aggregate query returned no row")
    return row


def attributes_path(out: Path, shard: str) -> Path:
    """Attribute shard beside a document shard (``docs/a/b.parquet`` -> ``attributes/dedup/a/b.parquet``)."""
    relative = Path(shard)
    if relative.parts and relative.parts[0] == "docs":
        relative = Path(*relative.parts[1:])
    return out / "attributes" / "dedup" / relative


def _files(root: Path, parts: Sequence[dict[str, Any]]) -> str:
    return json.dumps([(root / "docs" / f"{p['part']}.parquet").as_posix() for p in parts])


def exact_edges(root: Path, parts: Sequence[dict[str, Any]], target: Path, settings: JoinSettings,
                across_sources: bool) -> int:
    """Edges (first, other) between documents with the same normalized-text hash, written to ``target``."""
    group = "hash" if across_sources else "source, hash"
    con = settings.connect()
    try:
        with atomic_path(target) as tmp:
            con.execute(f"""
                COPY (SELECT min(doc) OVER (PARTITION BY {group}) AS a, doc AS b
                      FROM read_parquet({_files(root, parts)})
                      QUALIFY a < b ORDER BY a, b) TO '{tmp.as_posix()}' (FORMAT parquet)""")
        return int(_one_row(con.execute(f"SELECT count(*) FROM '{target.as_posix()}'"))[0])
    finally:
        con.close()


def _source_of(parts: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    firsts = np.array([int(p["first"]) for p in parts], dtype=np.int64)
    names = sorted({p["source"] for p in parts})
    ids = np.array([names.index(p["source"]) for p in parts], dtype=np.int64)
    return firsts, ids


def cluster_documents(parts: Sequence[dict[str, Any]], store: SignatureStore, edge_files: Sequence[Path],
                      target: Path, across_sources: bool, batch: int = 262_144) -> dict[str, int]:
    """Union-find over exact and verified near edges; write (doc, root, jaccard to root) rows.

    Without ``across_sources`` an edge between two sources is ignored, so each source is
    deduplicated on its own. Returns counts: documents, clusters, duplicates.
    """
    total = sum(int(p["count"]) for p in parts)
    forest = UnionFind(total)
    firsts, source_ids = _source_of(parts)
    for path in edge_files:
        if not path.exists():
            continue
        for record_batch in pq.ParquetFile(path).iter_batches(batch_size=batch, columns=["a", "b"]):
            a = record_batch.column("a").to_numpy()
            b = record_batch.column("b").to_numpy()
            if not across_sources:
                same = (source_ids[np.searchsorted(firsts, a, side="right") - 1]
                        == source_ids[np.searchsorted(firsts, b, side="right") - 1])
                a, b = a[same], b[same]
            forest.union_pairs(a, b)
    return write_roots(forest.roots(), store, target, batch)


def write_roots(roots: np.ndarray, store: SignatureStore, target: Path, batch: int = 262_144) -> dict[str, int]:
    """Write ``roots.parquet``: one ``(doc, root, jaccard)`` row per document whose root is not itself.

    Both clustering rules (:func:`cluster_documents`, :func:`dedupe.priority.priority_roots`) end
    here, so the file every later step reads has one writer; the Jaccard is estimated from the
    stored signatures, batch by batch, so memory stays bounded by ``batch`` rows. Returns counts:
    documents, clusters, duplicates.
    """
    total = len(roots)
    duplicates = np.flatnonzero(roots != np.arange(total))
    with atomic_path(target) as tmp:
        writer = pq.ParquetWriter(tmp, ROOTS_SCHEMA, compression="zstd")
        try:
            for lo in range(0, len(duplicates), batch):
                docs = duplicates[lo : lo + batch]
                agree = np.count_nonzero(store.gather(docs) == store.gather(roots[docs]), axis=1)
                jaccard = (agree / store.num_perm).astype(np.float32)
                writer.write_table(pa.table({"doc": docs, "root": roots[docs], "jaccard": jaccard}, schema=ROOTS_SCHEMA))
        finally:
            writer.close()
    return {"documents": total, "clusters": int(total - len(duplicates)), "duplicates": len(duplicates)}


#: Documents decided per DuckDB query in :func:`write_decisions`: the query's memory is this many rows.
DECISION_BATCH_DOCS = 250_000


def write_decisions(root: Path, parts: Sequence[dict[str, Any]], roots: Path, reference_matches: Path | None,
                    reference_docs: Sequence[str], target: Path, settings: JoinSettings,
                    batch_docs: int = DECISION_BATCH_DOCS) -> None:
    """One row per document: its cluster, duplicate status and reference match, as a Parquet table.

    One query over every document (joined with every document again for its root's id, then sorted)
    ran out of DuckDB's 1 GB at 2.5 M documents (the 1 GB-per-source cost run). Now, in linear work
    and bounded memory: (1) each duplicate's root id and hash, and each reference match's Pile
    position, are looked up once, by a join that spills, and written partitioned by batch of
    documents (no global sort); (2) each batch of ``batch_docs`` documents (whole parts, in document
    order) is joined with its own partitions and sorted alone.
    """
    ordered = sorted(parts, key=lambda p: int(p["first"]))
    batches = _batches(ordered, batch_docs)
    lookups = target.with_name(target.name + ".lookups")
    con = settings.connect()
    try:
        con.register("batches", _ranges(batches))
        _partition_lookups(con, root, parts, roots, reference_matches, reference_docs, lookups)
        with atomic_path(target) as tmp:
            writer: pq.ParquetWriter | None = None
            try:
                for number, batch in enumerate(batches or [ordered]):
                    table = _arrow_table(con.sql(_decisions_sql(root, batch, lookups, number)))
                    if writer is None:
                        writer = pq.ParquetWriter(tmp, table.schema, compression="zstd")
                    writer.write_table(table.cast(writer.schema))
            finally:
                if writer is not None:
                    writer.close()
    finally:
        con.close()
        shutil.rmtree(lookups, ignore_errors=True)


def _ranges(batches: Sequence[Sequence[dict[str, Any]]]) -> pa.Table:
    """Each batch's document range ``[lo, hi)`` (its parts are consecutive in document order)."""
    lo = [int(b[0]["first"]) for b in batches]
    hi = [int(b[-1]["first"]) + int(b[-1]["count"]) for b in batches]
    return pa.table({"batch": pa.array(range(len(batches)), pa.int64()), "lo": pa.array(lo, pa.int64()),
                     "hi": pa.array(hi, pa.int64())})


def _partition_lookups(con: duckdb.DuckDBPyConnection, root: Path, parts: Sequence[dict[str, Any]], roots: Path,
                       reference_matches: Path | None, reference_docs: Sequence[str], lookups: Path) -> None:
    """``lookups/dup/batch=N/``: (doc, jaccard, root_id, root_hash) of each duplicate; ``lookups/ref/batch=N/``:
    (doc, kind, jaccard, shard, line, pile_set_name) of each reference match; by the batch holding ``doc``."""
    shutil.rmtree(lookups, ignore_errors=True)
    lookups.mkdir(parents=True)
    everyone = _files(root, parts)
    con.execute(f"""
        COPY (SELECT b.batch, x.doc, x.jaccard, r.id AS root_id, r.hash AS root_hash
              FROM read_parquet('{roots.as_posix()}') x
              JOIN (SELECT doc, id, hash FROM read_parquet({everyone})) r ON r.doc = x.root
              JOIN batches b ON x.doc >= b.lo AND x.doc < b.hi)
        TO '{(lookups / "dup").as_posix()}' (FORMAT parquet, PARTITION_BY (batch))""")
    if reference_matches is None or not reference_docs:
        return
    con.execute(f"""
        COPY (SELECT b.batch, m.doc, m.kind, m.jaccard, r.shard, r.line, r.pile_set_name
              FROM read_parquet('{reference_matches.as_posix()}') m
              LEFT JOIN (SELECT doc, shard, line, pile_set_name FROM read_parquet({json.dumps(list(reference_docs))}))
                r ON r.doc = m.ref
              JOIN batches b ON m.doc >= b.lo AND m.doc < b.hi)
        TO '{(lookups / "ref").as_posix()}' (FORMAT parquet, PARTITION_BY (batch))""")


def _partition(lookups: Path, kind: str, number: int, empty: str) -> str:
    """The rows of batch ``number`` from ``lookups/<kind>``, or ``empty`` (a batch with none has no folder)."""
    folder = lookups / kind / f"batch={number}"
    if not any(folder.glob("*.parquet")):
        return empty
    return f"SELECT * EXCLUDE (batch) FROM read_parquet('{(folder / '*.parquet').as_posix()}', hive_partitioning = true)"


def _decisions_sql(root: Path, batch: Sequence[dict[str, Any]], lookups: Path, number: int) -> str:
    """The decision rows of ``batch``'s documents, in document order."""
    dup = _partition(lookups, "dup", number, "SELECT NULL::BIGINT AS doc, NULL::FLOAT AS jaccard, "
                     "NULL::VARCHAR AS root_id, NULL::BLOB AS root_hash WHERE false")
    ref = _partition(lookups, "ref", number, "SELECT NULL::BIGINT AS doc, NULL::VARCHAR AS kind, NULL::FLOAT AS "
                     "jaccard, NULL::VARCHAR AS shard, NULL::BIGINT AS line, NULL::VARCHAR AS pile_set_name WHERE false")
    return f"""
        WITH d AS (SELECT doc, shard, row, source, id, hash FROM read_parquet({_files(root, batch)})),
             x AS ({dup}), m AS ({ref})
        SELECT d.doc, d.shard, d.row, d.source, d.id, coalesce(x.root_id, d.id) AS cluster,
          x.root_id AS duplicate_of,
          CASE WHEN x.root_id IS NULL THEN NULL WHEN x.root_hash = d.hash THEN 'exact' ELSE 'near' END
            AS duplicate_kind,
          x.jaccard::DOUBLE AS duplicate_jaccard,
          m.kind AS reference_kind, m.shard AS reference_shard, m.line::BIGINT AS reference_line,
          m.pile_set_name AS reference_set, m.jaccard::DOUBLE AS reference_jaccard
        FROM d
        LEFT JOIN x ON x.doc = d.doc
        LEFT JOIN m ON m.doc = d.doc
        ORDER BY d.doc"""


def _arrow_table(relation: duckdb.DuckDBPyRelation) -> pa.Table:
    """A query's rows as an Arrow table (``to_arrow_table`` in DuckDB 2, ``fetch_arrow_table`` in 1.x)."""
    fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
    return fetch()


def _batches(parts: Sequence[dict[str, Any]], batch_docs: int) -> list[list[dict[str, Any]]]:
    """Consecutive runs of ``parts`` holding at most ``batch_docs`` documents (a larger part alone)."""
    batches: list[list[dict[str, Any]]] = []
    size = 0
    for part in parts:
        count = int(part["count"])
        if not batches or size + count > batch_docs:
            batches.append([])
            size = 0
        batches[-1].append(part)
        size += count
    return batches


def write_attributes(decisions: Path, out: Path, shard: str) -> dict[str, Any]:
    """The attribute shard of one document shard, rows in the shard's order."""
    target = attributes_path(out, shard)
    con = duckdb.connect()
    try:
        cols = ", ".join(ATTRIBUTE_COLUMNS)
        with atomic_path(target) as tmp:
            con.execute(
                f"COPY (SELECT {cols} FROM read_parquet('{decisions.as_posix()}') WHERE shard = ? ORDER BY row) "
                f"TO '{tmp.as_posix()}' (FORMAT parquet, COMPRESSION zstd)", [shard])
        duplicates, reference = _one_row(con.execute(
            f"SELECT count(duplicate_of), count(reference_kind) FROM '{target.as_posix()}'"))
    finally:
        con.close()
    return {"shard": shard, "attributes": target.relative_to(out).as_posix(),
            "duplicates": int(duplicates), "reference_matches": int(reference)}


#: The ``matches`` rows of a run's decisions (a Parquet of its decided documents), in table order.
_MATCH_ROWS = """
    WITH d AS (SELECT * FROM read_parquet('{path}') WHERE list_contains(?, shard))
    SELECT ?, id, source, shard, 'duplicate_' || duplicate_kind, duplicate_of, NULL, NULL, NULL, NULL,
           duplicate_jaccard, ?, ? FROM d WHERE duplicate_of IS NOT NULL
    UNION ALL
    SELECT ?, id, source, shard, 'reference_' || reference_kind, NULL, ?, reference_shard, reference_line,
           reference_set, reference_jaccard, ?, ? FROM d WHERE reference_kind IS NOT NULL
"""


def record_matches(manifest: Manifest, run_id: str, decisions: Path, reference_index: str | None,
                   threshold: float, layout: str, shards: Sequence[str]) -> bool:
    """Replace the ``matches`` rows of the decided ``shards`` by this run's (the flow process calls this).

    Documents of other shards in ``decisions`` (stored copies a run compares but does not decide)
    keep the rows of the run that decided them. The rows go in straight from the Parquet file when
    the manifest is free; while a reader holds it, they are read out here and queued with the
    manifest's other writes (the file is in the run's work folder, gone before the queue is
    applied), so a reader never fails the run. True when written, False when queued.
    """
    decided = list(shards)
    select = _MATCH_ROWS.format(path=decisions.as_posix())
    params = [decided, run_id, threshold, layout, run_id, reference_index, threshold, layout]
    replace: list[Statement] = [(MATCHES_SQL, [], False),
                                ("DELETE FROM matches WHERE list_contains(?, shard)", [decided], False)]
    if manifest.try_write([*replace, (f"INSERT INTO matches {select}", params, False)], final_wait_s()):
        return True
    with duckdb.connect() as con:
        rows = [list(row) for row in con.execute(select, params).fetchall()]
    insert = "INSERT INTO matches VALUES (" + ", ".join("?" * 13) + ")"
    return manifest.write([*replace, (insert, rows, True)])


# -- kinda dedup explain ----------------------------------------------------------------------
def _query(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    cursor = con.execute(sql, list(params))
    columns = [d[0] for d in cursor.description] if cursor.description else []
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def _inside(out: Path, rel_path: str) -> Path | None:
    """A shard path read from the manifest, only if it stays inside the output root."""
    target = (out / rel_path).resolve()
    return target if target.is_relative_to(out.resolve()) and target.is_file() else None


def _source_drops(out: Path, doc_id: str) -> list[dict[str, Any]]:
    """Why a source run left ``doc_id`` out after staging, from ``attributes/<source>/<input>.drops.parquet``.

    The pipeline writes the reason and the kept document it matched (``matched_id``) beside the
    shards; books' run-level ``near_duplicates.parquet`` (score and mode) is read as well.
    """
    attributes = out / "attributes"
    drops = sorted(p.as_posix() for p in attributes.glob("*/*.drops.parquet"))
    near = sorted(p.as_posix() for p in attributes.glob("*/near_duplicates.parquet"))
    con = duckdb.connect()
    try:
        rows = _query(con, "SELECT id, reason, matched_id AS kept_id, detail, NULL::DOUBLE AS score, NULL AS mode "
                           "FROM read_parquet(?, union_by_name=true) WHERE id = ? ORDER BY reason, kept_id",
                      [drops, doc_id]) if drops else []
        scores = _query(con, "SELECT matched_id AS kept_id, score, mode FROM read_parquet(?) WHERE doc_id = ?",
                        [near, doc_id]) if near else []
    finally:
        con.close()
    for score in scores:
        row = next((r for r in rows if r["kept_id"] == score["kept_id"]), None)
        if row is None:
            rows.append({"id": doc_id, "reason": "near_duplicate", "kept_id": score["kept_id"], "detail": None,
                         "score": score["score"], "mode": score["mode"]})
        else:
            row.update(score=score["score"], mode=score["mode"])
    return rows


def _stored_in(out: Path, shards: Sequence[dict[str, Any]], doc_id: str) -> list[dict[str, Any]]:
    """The shards (of those given) whose ``id`` column holds ``doc_id``, with their labels."""
    by_path = {str(_inside(out, s["path"])): s for s in shards if _inside(out, s["path"]) is not None}
    if not by_path:
        return []
    con = duckdb.connect()
    try:
        names = _query(con, "SELECT DISTINCT filename FROM read_parquet(?, filename=true) WHERE id = ? ORDER BY 1",
                       [sorted(by_path), doc_id])
    finally:
        con.close()
    found = []
    for row in names:
        shard = by_path[row["filename"]]
        parts = Path(shard["path"]).parts
        cls = parts[1] if parts[0] == "labeled" and len(parts) > 1 else None
        found.append({"path": shard["path"], "class": cls, "labels": list(shard["labels"] or [])})
    return found


def _exclusion(con: duckdb.DuckDBPyConnection, references: Sequence[dict[str, Any]],
               stored: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Why a document that matched the reference is stored nowhere, when ``flows.label`` left it out.

    The label run released the document's ``docs/`` shard (``released`` table) without putting the
    document in a class shard; the run's ``reference_excludes`` (its recorded config) tells whether
    the match is the reason (``reference_excluded``: e.g. stack_code found in the Pile's Github).
    """
    if stored or not references:
        return None
    match = references[0]
    released = _query(con, "SELECT r.path, r.run_id, c.config FROM released r LEFT JOIN runs c USING (run_id) "
                            "WHERE r.path = ?", [match["shard"]])
    if not released:
        return None
    config = json.loads(released[0]["config"] or "{}")
    subsets = list((config.get("reference_excludes") or {}).get(match["source"]) or [])
    excluded = match["reference_set"] in subsets
    return {"reason": "reference_excluded" if excluded else "not_labeled", "shard": match["shard"],
            "source": match["source"], "reference_set": match["reference_set"], "subsets": subsets,
            "label_run": released[0]["run_id"]}


def explain(out: Path, doc_id: str, manifest_path: Path | None = None) -> dict[str, Any]:
    """Everything the output root knows about one document's fate (read-only).

    Looks in the source runs' duplicate records (:mod:`core.duplicates`, books' near
    duplicates), the ``matches`` table of ``flows.dedup``, the shards that hold documents and the
    label runs' releases; ``verdict`` is ``duplicate``, ``excluded`` (left out of every set for its
    reference match: ``labels.reference_excludes``), ``kept``, ``matched`` (a reference match, the
    document in no shard for another reason) or ``unknown`` (no trace of the id anywhere).
    """
    out = Path(out)
    manifest_path = manifest_path or out / "manifest.duckdb"
    dropped = _source_drops(out, doc_id)
    con = duckdb.connect(str(manifest_path), read_only=True)
    try:
        tables = {row[0] for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        matches = _query(con, "SELECT * FROM matches WHERE doc_id = ? ORDER BY kind", [doc_id]) if "matches" in tables else []
        members = (con.execute("SELECT count(*) FROM matches WHERE matched_doc_id = ?", [doc_id]).fetchone()
                   if "matches" in tables else None)
        shards = _query(con, "SELECT path, labels FROM shards WHERE starts_with(path, 'docs/') "
                             "OR starts_with(path, 'labeled/') ORDER BY path", [])
        dedup_runs = _one_row(con.execute("SELECT count(*) FROM runs WHERE flow = 'dedup'"))[0]
        stored = _stored_in(out, shards, doc_id)
        references = [m for m in matches if m["kind"].startswith("reference_")]
        # a duplicate is stored nowhere because it is a duplicate: its reference match does not say why
        duplicated = bool(dropped) or any(m["kind"].startswith("duplicate_") for m in matches)
        exclusion = _exclusion(con, references, stored) if "released" in tables and not duplicated else None
    finally:
        con.close()
    duplicate = [m for m in matches if m["kind"].startswith("duplicate_")]
    verdict = ("duplicate" if dropped or duplicate else "kept" if stored
               else "excluded" if exclusion and exclusion["reason"] == "reference_excluded"
               else "matched" if references else "unknown")
    return {
        "doc_id": doc_id, "verdict": verdict, "source_duplicates": dropped,
        "duplicates": duplicate, "references": references, "exclusion": exclusion,
        "stored_in": stored, "duplicates_pointing_here": int(members[0]) if members else 0,
        "dedup_run": bool(dedup_runs),
    }


def _jaccard(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "?"


#: How a measure is named in the answer: one spelling whatever the table stored (books write ``jaccard``).
MEASURES = {"jaccard": "Jaccard", "containment": "containment"}


def _source_score(row: dict[str, Any]) -> str:
    """A source run's score of a dropped document (books: Jaccard or containment to the kept book).

    Not called estimated: books score pairs near the threshold on their exact shingle sets.
    """
    if row.get("score") is not None:
        measure = MEASURES.get(str(row.get("mode") or "jaccard").lower(), str(row.get("mode")))
        return f", {measure} {_jaccard(row['score'])}"
    return f": {row['detail']}" if row.get("detail") else ""


def _reference_line(doc: str, match: dict[str, Any], verdict: str) -> str:
    """One reference match and what it means for the document, said in full (never a bare word)."""
    kind = match["kind"].removeprefix("reference_")
    how = "exact copy" if kind == "exact" else f"near copy, estimated Jaccard {_jaccard(match['jaccard'])}"
    fate = {
        "excluded": "so it is excluded (below)",
        "matched": "and it is stored in no shard",
        "duplicate": "not what decides its fate: it is dropped as a duplicate (above)",
    }.get(verdict, "so it is left out of G3")
    return (f"{doc}: matched reference document {match['reference_shard']}:{match['reference_line']} "
            f"({match['reference_set'] or '?'}, {how}) of {match['reference_index']}, {fate}")


def format_explanation(result: dict[str, Any]) -> str:
    """The answer as a few lines: unknown, duplicate of which document, reference match, or kept with labels."""
    doc = result["doc_id"]
    if result["verdict"] == "unknown":
        return f"{doc}: unknown id (in no shard, no duplicate record and no dedup match of this output root)"
    lines = []
    for row in result["source_duplicates"]:
        kind = "exact" if row["reason"] == "duplicate_exact" else "near" if "near" in row["reason"] else None
        what = f"{kind} duplicate" if kind else row["reason"]
        target = f" of {row['kept_id']}" if row["kept_id"] else ""
        lines.append(f"{doc}: dropped as {what}{target} (by its source run{_source_score(row)})")
    for match in result["duplicates"]:
        kind = match["kind"].removeprefix("duplicate_")
        score = f", estimated Jaccard {_jaccard(match['jaccard'])}" if kind == "near" else ""
        lines.append(f"{doc}: dropped as {kind} duplicate of {match['matched_doc_id']} (by flows.dedup{score}, "
                     f"threshold {match['threshold']})")
    lines += [_reference_line(doc, match, result["verdict"]) for match in result["references"]]
    lines += _exclusion_lines(doc, result.get("exclusion"))
    for place in result["stored_in"]:
        if place["class"]:
            lines.append(f"{doc}: kept in class {place['class']}, labels {' '.join(place['labels']) or '(none)'} "
                         f"({place['path']})")
        else:
            lines.append(f"{doc}: kept, in no labeled set ({place['path']}: flows.label not run, or its source is in neither list)")
    if result["duplicates_pointing_here"]:
        lines.append(f"{doc}: kept as the representative of {result['duplicates_pointing_here']} duplicate(s)")
    return "\n".join(lines)


def _exclusion_lines(doc: str, exclusion: dict[str, Any] | None) -> list[str]:
    """The label stage's part of the answer for a document it left out of every set."""
    if exclusion is None:
        return []
    gone = f"{exclusion['shard']} was released by label run {exclusion['label_run']}: the document is stored nowhere"
    if exclusion["reason"] == "reference_excluded":
        return [f"{doc}: excluded from every set (reference_excluded: labels.reference_excludes leaves "
                f"{exclusion['source']} documents found in the reference's {exclusion['reference_set']} out); {gone}"]
    return [f"{doc}: stored nowhere: {exclusion['shard']} was released by label run {exclusion['label_run']} "
            f"without it, though its reference set {exclusion['reference_set']} is not in that run's "
            f"reference_excludes for {exclusion['source']} ({exclusion['subsets']})"]
