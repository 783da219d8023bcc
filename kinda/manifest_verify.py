"""``kinda manifest verify``: the shards are intact, and they hold the documents the manifest kept.

Re-hashing shards (:meth:`core.manifest.Manifest.verify`) cannot see the failure issue 11 found:
two runs into one ``--out`` left inputs recorded with 1,080 kept documents and *no* shard rows,
so "0 of 0 shards ok" passed. The manifest makes two independent claims: each input's
``docs_kept`` (``inputs``, the latest run of each input) and each shard's ``docs`` (``shards``).
This module checks both against what is on disk:

* each recorded Parquet shard holds exactly the rows its ``shards`` row says (footer metadata, no
  data pages read, so it costs one small read per shard);
* for each input, the final shards it wrote (``docs/<source>/<part>/<input>-NNNNN.parquet``, named
  by the shard row's ``inputs``) hold ``docs_kept`` documents. A shard the label stage *released*
  (its documents moved to ``labeled/`` class shards, :mod:`core.released`) counts with the
  documents it held when released; its class shards are checked like every other shard;
* no Parquet file under ``docs/`` or ``labeled/`` is missing from the manifest (documents that
  training would read but no count includes).

Every problem is one line naming the shard, or the source and input; the command exits 1 when
there is any. Run it when no flow is writing into the root: a flow writes its shards before it
records them, so a check taken mid-run can report gaps that the run's end closes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from core.layout import slug
from core.manifest import Manifest

#: Top-level directories whose Parquet files are corpus documents recorded in ``shards``.
DOCUMENT_DIRS = ("docs", "labeled")
#: A final shard's file name: ``<slug of the input key>-<5-digit index>.parquet`` (core.shards).
_SHARD_NAME = re.compile(r"^(?P<input>.+)-\d{5}\.parquet$")


@dataclass
class CountReport:
    """What the count check compared, and one line per disagreement."""

    inputs: int = 0
    inputs_ok: int = 0
    documents: int = 0
    problems: list[str] = field(default_factory=list)


def parquet_rows(path: Path) -> int | None:
    """Rows of a Parquet file from its footer; None when the file is absent or not Parquet."""
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except (OSError, ValueError, pa.ArrowException):
        return None


def _tables(manifest: Manifest) -> set[str]:
    _, rows = manifest.query("SELECT table_name FROM information_schema.tables")
    return {str(name) for (name,) in rows}


def _shard_rows(manifest: Manifest, root: Path, report: CountReport) -> dict[str, int]:
    """Rows on disk of every recorded Parquet shard (0 when unreadable); a line per disagreement."""
    _, rows = manifest.query("SELECT path, docs FROM shards WHERE ends_with(path, '.parquet') ORDER BY path")
    held: dict[str, int] = {}
    for rel_path, recorded in rows:
        target = root / rel_path
        count = parquet_rows(target)
        if count is None:
            if target.exists():  # a missing file is already reported by the checksum pass
                report.problems.append(f"unreadable: {rel_path}: not a readable Parquet file")
            held[rel_path] = 0
            continue
        held[rel_path] = count
        if count != recorded:
            report.problems.append(f"rows: {rel_path} holds {count:,} documents, the manifest says {recorded:,}")
    return held


def _released_docs(manifest: Manifest) -> dict[tuple[str, str], int]:
    """Documents of released ``docs/`` shards by (source, input slug), from the ``released`` table."""
    if "released" not in _tables(manifest):
        return {}
    _, rows = manifest.query("SELECT path, source, docs FROM released")
    found: dict[tuple[str, str], int] = defaultdict(int)
    for rel_path, source, docs in rows:
        match = _SHARD_NAME.match(Path(rel_path).name)
        if match is not None:
            found[(str(source), match["input"])] += int(docs)
    return found


def _input_docs(manifest: Manifest, held: dict[str, int]) -> dict[tuple[str, str], int]:
    """Documents on disk per (source, input key): the rows of the ``docs/`` shards naming the input."""
    _, rows = manifest.query("SELECT path, source, inputs FROM shards WHERE starts_with(path, 'docs/')")
    found: dict[tuple[str, str], int] = defaultdict(int)
    for rel_path, source, inputs in rows:
        for key in inputs:
            found[(str(source), str(key))] += held.get(rel_path, 0)
    return found


def _unrecorded(manifest: Manifest, root: Path) -> list[str]:
    """One line per Parquet file under the document directories that no ``shards`` row names."""
    _, rows = manifest.query("SELECT path FROM shards")
    recorded = {str(path) for (path,) in rows}
    lines = []
    for top in DOCUMENT_DIRS:
        for path in sorted((root / top).rglob("*.parquet")) if (root / top).is_dir() else []:
            rel_path = path.relative_to(root).as_posix()
            if rel_path not in recorded:
                count = parquet_rows(path)
                what = f"{count:,} documents" if count is not None else "unreadable"
                lines.append(f"unrecorded: {rel_path} ({what}) is on disk but not in the manifest")
    return lines


def check_counts(manifest: Manifest, root: Path) -> CountReport:
    """Compare the manifest's kept counts and shard rows with the shards on disk (module docstring)."""
    report = CountReport()
    held = _shard_rows(manifest, root, report)
    on_disk = _input_docs(manifest, held)
    released = _released_docs(manifest)
    _, inputs = manifest.query("SELECT source, input_key, docs_kept FROM latest_inputs ORDER BY source, input_key")
    for source, key, kept in inputs:
        report.inputs += 1
        found = on_disk.get((source, key), 0) + released.get((source, slug(key)), 0)
        if found == kept:
            report.inputs_ok += 1
            report.documents += found
        else:
            report.problems.append(f"gap: source {source}, input {key}: the manifest kept {kept:,} documents, "
                                   f"its shards on disk hold {found:,}")
    report.problems.extend(_unrecorded(manifest, root))
    return report


def verify_lines(manifest: Manifest, root: Path) -> tuple[list[str], list[str]]:
    """(problem lines, summary lines) of the whole check: checksums, then counts."""
    hashed = manifest.verify(root)
    _, rows = manifest.query("SELECT count(*) FROM shards")
    shards = int(rows[0][0])
    counts = check_counts(manifest, root)
    problems = [f"{p['problem']}: {p['path']}" for p in hashed] + counts.problems
    summary = [f"{shards - len(hashed)} of {shards} shards ok",
               f"{counts.inputs_ok} of {counts.inputs} inputs ok: {counts.documents:,} documents kept on disk, "
               "as the manifest says"]
    return problems, summary
