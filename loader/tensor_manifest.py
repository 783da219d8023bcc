"""What a tokenize run records: its per-shard (or per-file) records as manifest rows and tables.

The tasks return plain records (:func:`loader.tensor_writer.tokenize_shard`, one per shard or
dataset file); only the flow process writes the manifest, in one short transaction per tensor
root. These helpers turn the records into the ``tensors`` rows (one per tensor file, keyed by
tensor root), the manifest input rows of a dataset's files and the run's per-source table.
Token counts live only in ``tensors``: a shard tokenized into two roots (another tokenizer,
another ``work_tokens``) has two counts, so none is written to ``shards.tokens`` (it was, and the
last run overwrote the first root's count in ``kinda report``, issue 25 item 7). No Prefect here: the flows in ``flows/tokenization.py`` call them.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path
from typing import Any

from core.manifest import InputRecord, Manifest

#: Record keys an external dataset's shard entries carry into metadata.json.
EXTERNAL_SHARD_KEYS = ("records_in", "docs_kept", "drops")


def all_done(records: list[dict[str, Any]]) -> bool:
    """Every shard or file finished (a run with one failed is ``partial``)."""
    return all(r["status"] == "done" for r in records)


def record_tensors(manifest: Manifest, out: Path, run_id: str, records: list[dict[str, Any]],
                   split_digits: bool) -> None:
    """Replace the ``tensors`` rows of the tensor root ``out`` (and of no other root).

    Replacing (not appending) keeps one row per tensor file however often a root is re-run;
    failed records write no row.
    """
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    rows = []
    for rec in records:
        if rec["status"] != "done":
            continue
        for split, info in sorted(rec["splits"].items()):
            rows.append([str(out), info["tokens_path"], rec["input"], split, rec["source"], rec["language"],
                         list(rec["labels"]), rec["tokenizer_hash"], split_digits, info["tokens"], info["docs"],
                         info["tokens_bytes"], info["tokens_sha256"], run_id, now])
    manifest.write([  # one transaction; queued while a reader holds the file (core.manifest)
        ("DELETE FROM tensors WHERE tensor_root = ?", [str(out)], False),
        ("INSERT INTO tensors VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows, True),
    ])


def source_table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per source: shards, failed ones, tokens per split and documents (the run's table artifact)."""
    rows: dict[str, dict[str, Any]] = defaultdict(lambda: {"shards": 0, "failed": 0, "train_tokens": 0,
                                                          "holdout_tokens": 0, "docs": 0})
    for rec in records:
        row = rows[rec["source"]]
        row["shards"] += 1
        row["failed"] += rec["status"] != "done"
        for split, info in rec["splits"].items():
            row[f"{split}_tokens"] += info["tokens"]
            row["docs"] += info["docs"]
    return [{"source": source, **rows[source]} for source in sorted(rows)]


def failed_inputs(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The failed files of a dataset run, by name, with their errors (metadata.json's ``failed``).

    The error names the file by its name in the dataset (``input``), not where this host read it
    (``location``, a local path or URL, also wherever the exception's own text repeats it): the
    manifest keeps the location; released metadata must not depend on it.
    """
    return sorted(({"input": r["input"], "error": _named(r["error"], r.get("location"), r["input"])}
                   for r in records if r["status"] != "done"), key=lambda f: f["input"])


def _named(error: str | None, location: str | None, name: str) -> str | None:
    """``error`` with ``location`` written as ``name``."""
    return error.replace(location, name) if error and location else error


def input_record(rec: dict[str, Any], source: str, language: str | None, config_hash: str) -> InputRecord:
    """A dataset file's record as a manifest input row, its drops by reason and a few named examples."""
    return InputRecord(input_key=f"{source}/{rec['input']}", source=source,
                       location=rec.get("location", rec["input"]), language=language,
                       config_hash=config_hash, sha256=rec.get("input_sha256"), status=rec["status"],
                       error=rec.get("error"), records_in=int(rec.get("records_in", 0)),
                       docs_kept=int(rec.get("docs_kept", 0)), seconds=float(rec.get("seconds", 0.0)),
                       drops=list(rec.get("drops", [])), errors=list(rec.get("drop_examples", [])))
