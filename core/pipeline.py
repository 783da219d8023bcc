"""Running one source over its inputs: stage each input, dedup across the run, finalize.

The three phases map onto Prefect tasks (one per input file, never per document), but the
logic lives here, free of Prefect:

1. :func:`stage_input` reads one input through the source's reader and steps, writes the kept
   documents to staging shards and their exact-dedup keys to ``hashes.parquet``;
2. :func:`find_exact_duplicates` finds, across every input of the run, the documents whose
   normalized text was seen before (first occurrence wins, in input-key then record order);
3. :func:`finalize_input` copies each input's staged documents, minus its duplicates, into the
   final shards under ``docs/``, partitioned by language.

Each phase writes a resume marker (JSON, atomically) holding the :class:`InputRecord`; a re-run
skips inputs whose marker matches the config hash, recipe version and input fingerprint, and
produces byte-identical shards, because nothing run- or time-dependent goes into them.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.arrow_columns import arrow_rows, arrow_table
from core.atomic import AtomicOutput, atomic_path, sha256_file
from core.digest import json_hash
from core.document import UNDETERMINED, Document, InputSpec
from core.drop_list import DropListWalk
from core.exact import exact_hash
from core.layout import (
    docs_dir,
    drops_attribute_path,
    duplicates_path,
    signals_attribute_path,
    slug,
    staging_dir,
    state_path,
)
from core.manifest import InputRecord
from core.markers import Marker
from core.shards import ShardLimits, ShardWriter, read_documents
from core.steps import MAX_ERROR_EXAMPLES, Record, Step, StepStats, chain_step_rows, run_steps
from core.version import __version__

log = logging.getLogger(__name__)

HASH_SCHEMA = pa.schema([
    pa.field("ordinal", pa.int64()), pa.field("id", pa.string()), pa.field("hash", pa.binary(32)),
])
#: The run's drop list: which staged documents finalize leaves out, and why. The reason and the
#: document it matched travel with each row, so a phase that adds drops (book near-dedup) never
#: has to relabel another phase's counts afterwards.
DROP_SCHEMA = pa.schema([
    pa.field("input_key", pa.string()), pa.field("ordinal", pa.int64()), pa.field("id", pa.string()),
    pa.field("step", pa.string()), pa.field("reason", pa.string()), pa.field("matched_id", pa.string()),
    pa.field("detail", pa.string()),
])
DEDUP_STEP = "dedup_exact"
DEDUP_REASON = "duplicate_exact"


class SourceRecipe(Protocol):
    """What a source module provides to the pipeline.

    ``name`` is read-only (a property): the pipeline only reads it, so a frozen dataclass, a
    plain class attribute and a writable field all satisfy the protocol.
    """

    @property
    def name(self) -> str:
        """The source the documents are recorded under (``docs/<name>/``, the manifest)."""

    def input_language(self, spec: InputSpec) -> str | None:
        """The language of a whole input, when the input says (a Wikipedia dump does)."""

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Yield a Document per usable record and a Drop per unusable one; never raise for one bad record."""

    def steps(self) -> Sequence[Step]:
        """The filters and transforms applied after reading."""

    def partition(self, doc: Document) -> str:
        """The directory a kept document's final shard goes to (normally its language)."""


@dataclass(frozen=True)
class RunContext:
    """What every phase needs to know about the run; small and picklable."""

    out: Path
    source: str
    config_hash: str
    limits: ShardLimits
    recipe_name: str
    #: DuckDB's memory for the run-wide exact dedup; beyond it DuckDB spills to :attr:`spill_folder`.
    exact_dedup_memory: str = "2GB"
    #: Where DuckDB spills (default ``<out>/_staging/duckdb_tmp``): a fast local disk with room.
    spill_dir: Path | None = None
    #: Replace e-mail and IP addresses by placeholders, after the recipe's steps (core.filters.pii).
    redact_pii: bool = False

    @property
    def spill_folder(self) -> Path:
        """The folder DuckDB spills to beyond its memory limit."""
        return self.spill_dir or (self.out / "_staging" / "duckdb_tmp")

    def marker_key(self) -> dict[str, str]:
        """Fields a resume marker must match to be trusted."""
        return {"config_hash": self.config_hash, "version": __version__}


def scope_hash(keys: Sequence[str], config_hash: str) -> str:
    """Identity of a run's dedup scope: the set of inputs deduplicated together."""
    return json_hash({"keys": sorted(keys), "config": config_hash}, compact=False, sort_keys=False)


# -- resume markers -------------------------------------------------------------------------
def stage_marker(spec: InputSpec, ctx: RunContext) -> Marker:
    """Phase 1's completion marker for one input."""
    key = {**ctx.marker_key(), "fingerprint": spec.fingerprint()}
    return Marker(state_path(ctx.out, ctx.source, spec.key, "stage"), key)


def done_marker(spec: InputSpec, ctx: RunContext, scope: str) -> Marker:
    """Phase 3's completion marker for one input, valid for one dedup scope."""
    key = {**ctx.marker_key(), "scope": scope, "fingerprint": spec.fingerprint()}
    return Marker(state_path(ctx.out, ctx.source, spec.key, "done"), key)


def _recorded(spec: InputSpec, marker: Marker, out: Path) -> InputRecord | None:
    """The record a valid marker holds for an input whose file is still there."""
    if not spec.path.exists():
        return None
    finished = marker.load(out)
    return None if finished is None else InputRecord.from_dict(finished["record"])


def load_staged(spec: InputSpec, ctx: RunContext) -> InputRecord | None:
    """The staged record of an input, if its stage marker is valid (checked without a task)."""
    return _recorded(spec, stage_marker(spec, ctx), ctx.out)


def load_done(spec: InputSpec, ctx: RunContext, scope: str) -> InputRecord | None:
    """The finished record of an input, if its done marker is valid for this run."""
    return _recorded(spec, done_marker(spec, ctx, scope), ctx.out)


# -- phase 1: stage -------------------------------------------------------------------------
class DocumentSink(Protocol):
    """Something written beside a phase's shards for each kept document (dedup keys, unit hashes)."""

    def add(self, ordinal: int, doc: Document) -> None:
        """Record the ``ordinal``-th kept document."""

    def close(self) -> list[dict[str, Any]]:
        """Finish; return the files written as outputs (``{"path", "bytes"}``, relative to the root)."""

    def abort(self) -> None:
        """Discard what was written after an error."""


class _ParquetSink:
    """A sink that streams batches of rows into one Parquet file, committed atomically on close."""

    def __init__(self, root: Path, path: Path, schema: pa.Schema) -> None:
        self._root = root
        self._output = AtomicOutput(path)
        self._writer = pq.ParquetWriter(self._output.path, schema, compression="zstd")

    def _flush(self) -> None:
        """Write the rows gathered since the last flush."""
        raise NotImplementedError

    def close(self) -> list[dict[str, Any]]:
        self._flush()
        self._writer.close()
        path = self._output.commit()
        return [{"path": path.relative_to(self._root).as_posix(), "bytes": path.stat().st_size}]

    def abort(self) -> None:
        self._writer.close()
        self._output.abort()


class HashSink(_ParquetSink):
    """Streams (ordinal, id, dedup key) rows of staged documents to ``hashes.parquet``."""

    def __init__(self, root: Path, path: Path, key: Callable[[Document], bytes], batch: int = 10_000) -> None:
        super().__init__(root, path, HASH_SCHEMA)
        self._key = key
        self._rows: dict[str, list[Any]] = {"ordinal": [], "id": [], "hash": []}
        self._batch = batch

    def add(self, ordinal: int, doc: Document) -> None:
        self._rows["ordinal"].append(ordinal)
        self._rows["id"].append(doc.id)
        self._rows["hash"].append(self._key(doc))
        if len(self._rows["ordinal"]) >= self._batch:
            self._flush()

    def _flush(self) -> None:
        self._writer.write_table(arrow_table(self._rows, HASH_SCHEMA))
        self._rows = {"ordinal": [], "id": [], "hash": []}


#: Documents per signals batch: one compiled pass and one row group of the signals attribute each.
SIGNAL_BATCH = 512


class SignalSink(_ParquetSink):
    """Streams the quality signals of staged documents to their attributes file (a row per document).

    Computed here, from the text the stage already holds, so signals never need a second read of
    a source; batched, so the compiled word pass (:mod:`core.filters.signals`) runs once per
    ``batch`` documents. The kernel's module is imported on first use: a flow's ``--help`` does
    not load numba.
    """

    def __init__(self, root: Path, path: Path, batch: int = SIGNAL_BATCH) -> None:
        from core.filters.signal_schema import SIGNAL_SCHEMA

        super().__init__(root, path, SIGNAL_SCHEMA)
        self._ids: list[str] = []
        self._texts: list[str] = []
        self._batch = batch

    def add(self, ordinal: int, doc: Document) -> None:
        self._ids.append(doc.id)
        self._texts.append(doc.text)
        if len(self._ids) >= self._batch:
            self._flush()

    def _flush(self) -> None:
        from core.filters.signals import signals_table

        if self._ids:
            self._writer.write_table(signals_table(self._ids, self._texts))
        self._ids, self._texts = [], []


def _default_dedup_key(doc: Document) -> bytes:
    """SHA256 of the normalized text (a recipe may define its own ``dedup_key(doc)``)."""
    return exact_hash(doc.text)


@dataclass(frozen=True)
class InputPhase:
    """One pass over one input: read, run steps, write shards plus sinks, mark it finished.

    Staging is one (sink: exact-dedup keys); Common Crawl's extraction is another (sink: line
    hashes). Both get the same guarantees from :func:`run_input_phase`: a valid marker skips
    the work, an error marks the input ``failed`` naming the file and the run goes on, and the
    marker names every output so a later run can tell they are intact.
    """

    directory: Path
    marker: Marker
    read: Callable[[], Iterator[Record]]
    steps: Sequence[Step]
    sinks: Callable[[], Sequence[DocumentSink]]
    language: str | None = None
    #: Record the input file's SHA256. A range task of a split input leaves it to the range that
    #: starts the file: every range hashing the whole file hashed a 22 GB dump once per range.
    hash_input: bool = True


def missing_input(spec: InputSpec, ctx: RunContext) -> InputRecord:
    """The record of an input whose file is gone: failed, naming it."""
    return InputRecord(input_key=spec.key, source=ctx.source, location=spec.location, language=None,
                       config_hash=ctx.config_hash, status="failed", error=f"{spec.location}: not found")


def run_input_phase(phase: InputPhase, spec: InputSpec, ctx: RunContext) -> InputRecord:
    """Run ``phase`` over one input (see :class:`InputPhase`); never raises for a bad input."""
    finished = phase.marker.load(ctx.out)
    if finished is not None:
        return InputRecord.from_dict(finished["record"])
    started = time.perf_counter()
    record = InputRecord(
        input_key=spec.key, source=ctx.source, location=spec.location, language=phase.language,
        config_hash=ctx.config_hash, size=spec.path.stat().st_size if spec.path.is_file() else None,
    )
    shutil.rmtree(phase.directory, ignore_errors=True)
    stats = StepStats()
    writer = ShardWriter(ctx.out, phase.directory, "part", ctx.source, phase.language, limits=ctx.limits)
    sinks = list(phase.sinks())
    try:
        kept = run_steps(phase.read(), phase.steps, stats, f"{ctx.source}_reader", phase.language)
        for ordinal, doc in enumerate(kept):
            writer.write(doc)
            for sink in sinks:
                sink.add(ordinal, doc)
        outputs = [s.to_dict() for s in writer.close()]
        for sink in sinks:
            outputs.extend(sink.close())
        record.sha256 = sha256_file(spec.path) if phase.hash_input and spec.path.is_file() else None
    except Exception as exc:  # one input's failure must not end the run
        writer.abort()
        for sink in sinks:
            sink.abort()
        shutil.rmtree(phase.directory, ignore_errors=True)
        log.exception("input %s failed", spec.location)
        record.status, record.error = "failed", f"{spec.location}: {type(exc).__name__}: {exc}"
        record.records_in, record.seconds = stats.records_in, time.perf_counter() - started
        record.steps = stats.step_rows()
        return record
    record.records_in, record.docs_kept = stats.records_in, stats.kept
    record.drops = stats.drop_rows()
    record.steps = stats.step_rows()
    record.errors = stats.errors
    record.status = "partial" if any(d["reason"] == "truncated_input" for d in record.drops) else "done"
    record.seconds = time.perf_counter() - started
    phase.marker.write({"record": record.to_dict()}, outputs=outputs, promised_docs=record.docs_kept)
    return record


def _input_language(recipe: SourceRecipe, spec: InputSpec) -> str | None:
    try:
        return recipe.input_language(spec)
    except Exception:  # the reader reports what is wrong with the file, per record
        return None


def _stage_steps(recipe: SourceRecipe, ctx: RunContext) -> list[Step]:
    """The recipe's steps, then PII redaction where the run asks for it."""
    steps = list(recipe.steps())
    if ctx.redact_pii:
        from core.filters.pii import RedactPII

        steps.append(RedactPII())
    return steps


def stage_input(recipe: SourceRecipe, spec: InputSpec, ctx: RunContext, hash_input: bool = True) -> InputRecord:
    """Phase 1 for one input: read, clean, filter, write staging shards and dedup keys.

    ``hash_input=False`` (the ranges of a split input but its first) skips hashing the file.

    An unexpected error (unreadable file, a bug) does not propagate: the input is recorded as
    ``failed`` with the error naming the file, and the rest of the run goes on.
    """
    if not spec.path.exists():
        return missing_input(spec, ctx)
    directory = staging_dir(ctx.out, ctx.source, spec.key)
    key = getattr(recipe, "dedup_key", None) or _default_dedup_key
    phase = InputPhase(
        directory=directory, marker=stage_marker(spec, ctx), read=lambda: recipe.read(spec), steps=_stage_steps(recipe, ctx),
        sinks=lambda: [HashSink(ctx.out, directory / "hashes.parquet", key),
                       SignalSink(ctx.out, signals_attribute_path(ctx.out, ctx.source, spec.key))],
        language=_input_language(recipe, spec), hash_input=hash_input,
    )
    return run_input_phase(phase, spec, ctx)


# -- phase 2: run-wide exact duplicates ----------------------------------------------------
_EMPTY_HASHES = (
    "SELECT ''::VARCHAR AS input_key, 0 AS rank, 0::BIGINT AS ordinal, ''::VARCHAR AS id, ''::BLOB AS hash "
    "WHERE false"
)


def find_exact_duplicates(ctx: RunContext, keys: Sequence[str]) -> dict[str, int]:
    """Write the run's drop list (exact duplicates); return the number of duplicates per input key.

    DuckDB does the grouping out of core, so the number of documents is not bounded by memory.
    Within a group of equal hashes the first document in (input key, record order) is kept,
    so the kept set does not depend on how many workers ran or in which order they finished.
    Each row names the kept document it duplicates (``matched_id``). DuckDB holds at most
    ``ctx.exact_dedup_memory`` and spills the rest to ``ctx.spill_folder``; the result is the same.
    """
    target = duplicates_path(ctx.out, ctx.source)
    files = [(key, staging_dir(ctx.out, ctx.source, key) / "hashes.parquet") for key in sorted(keys)]
    files = [(key, path) for key, path in files if path.exists()]
    with atomic_path(target) as tmp:
        con = duckdb.connect()
        try:
            con.execute(f"SET memory_limit='{ctx.exact_dedup_memory}'")
            con.execute(f"SET temp_directory='{ctx.spill_folder.as_posix()}'")
            con.execute("CREATE TEMP TABLE ranks (input_key VARCHAR, rank INTEGER, file VARCHAR)")
            if files:
                con.executemany("INSERT INTO ranks VALUES (?, ?, ?)",
                                [[key, rank, str(path)] for rank, (key, path) in enumerate(files)])
            source_sql = (
                "SELECT r.input_key, r.rank, h.ordinal, h.id, h.hash FROM read_parquet(?, filename=true) h "
                "JOIN ranks r ON h.filename = r.file"
                if files else _EMPTY_HASHES
            )
            params = [[str(path) for _, path in files]] if files else []
            con.execute(
                f"COPY (SELECT input_key, ordinal, id, '{DEDUP_STEP}' AS step, '{DEDUP_REASON}' AS reason, "
                "first_value(id) OVER w AS matched_id, NULL::VARCHAR AS detail "
                f"FROM ({source_sql}) WINDOW w AS (PARTITION BY hash ORDER BY rank, ordinal) "
                "QUALIFY row_number() OVER w > 1 "
                f"ORDER BY input_key, ordinal) TO '{tmp.as_posix()}' (FORMAT parquet)",
                params,
            )
        finally:
            con.close()
    # ParquetFile, not pq.read_table: that goes through pyarrow.dataset, which imports pandas (~0.25 CPU-s)
    with pq.ParquetFile(target) as drops:
        counts = pc.value_counts(drops.read(columns=["input_key"]).column("input_key"))
    return {str(row["values"]): int(row["counts"]) for row in counts.to_pylist()}


def _rows(path: Path) -> list[dict[str, Any]]:
    """A Parquet file's rows (through ParquetFile: pq.read_table would import pandas, see above)."""
    with pq.ParquetFile(path) as parquet:
        return parquet.read().to_pylist()


def add_drops(ctx: RunContext, rows: Sequence[dict[str, Any]]) -> int:
    """Add rows (DROP_SCHEMA fields) to the run's drop list before finalize; return rows added.

    A phase after exact dedup (book near-dedup) says here which documents to leave out and why;
    a document already on the list keeps its first reason. The list stays sorted, so it is
    byte-identical on a re-run.
    """
    path = duplicates_path(ctx.out, ctx.source)
    existing = _rows(path) if path.exists() else []
    seen = {(r["input_key"], r["ordinal"]) for r in existing}
    added = [{name: row.get(name) for name in DROP_SCHEMA.names} for row in rows
             if (row["input_key"], row["ordinal"]) not in seen]
    merged = sorted(existing + added, key=lambda r: (r["input_key"], r["ordinal"]))
    with atomic_path(path) as tmp:
        pq.write_table(arrow_rows(merged, DROP_SCHEMA), tmp)
    return len(added)


# -- phase 3: finalize ----------------------------------------------------------------------
class PartitionedWriter:
    """One ShardWriter per partition (language), opened on first use."""

    def __init__(self, ctx: RunContext, prefix: str) -> None:
        self.ctx = ctx
        self.prefix = prefix
        self.writers: dict[str, ShardWriter] = {}

    def write(self, partition: str, doc: Document) -> None:
        writer = self.writers.get(partition)
        if writer is None:
            language = doc.language or UNDETERMINED  # the und folder is the language of documents without one
            writer = ShardWriter(
                self.ctx.out, docs_dir(self.ctx.out, self.ctx.source, partition), self.prefix,
                self.ctx.source, language=language if partition == language else None,
                limits=self.ctx.limits, file_metadata={"config_hash": self.ctx.config_hash},
            )
            self.writers[partition] = writer
        writer.write(doc)

    def close(self) -> list[dict[str, Any]]:
        shards: list[dict[str, Any]] = []
        for partition in sorted(self.writers):
            shards.extend(s.to_dict() for s in self.writers[partition].close())
        return shards

    def abort(self) -> None:
        for writer in self.writers.values():
            writer.abort()


def _remove_previous_output(ctx: RunContext, key: str) -> None:
    """Delete the final shards a previous run wrote for this input (they may be more)."""
    old = Marker(state_path(ctx.out, ctx.source, key, "done")).read()
    for shard in (old or {}).get("record", {}).get("shards", []):
        (ctx.out / shard["path"]).unlink(missing_ok=True)


def finalize_input(
    recipe: SourceRecipe, spec: InputSpec, ctx: RunContext, scope: str, staged: InputRecord
) -> InputRecord:
    """Phase 3 for one input: write its staged documents minus the run's drop list to ``docs/``."""
    if staged.status in ("failed", "skipped"):
        return staged
    done = load_done(spec, ctx, scope)
    if done is not None:
        return done
    _remove_previous_output(ctx, spec.key)
    drops = DropListWalk(duplicates_path(ctx.out, ctx.source), spec.key,
                         drops_attribute_path(ctx.out, ctx.source, spec.key), DROP_SCHEMA,
                         examples=MAX_ERROR_EXAMPLES - len(staged.errors))
    writer = PartitionedWriter(ctx, prefix=slug(spec.key))
    stage = staging_dir(ctx.out, ctx.source, spec.key)
    try:
        ordinal = 0
        for part in sorted(stage.glob("part-*.parquet")):
            for doc in read_documents(part):
                if drops.pending == ordinal:
                    drops.take(doc.language or staged.language or "")
                else:
                    writer.write(recipe.partition(doc), doc)
                ordinal += 1
        shards = writer.close()
        drops.finish()
    except Exception:
        writer.abort()
        drops.abort()
        raise
    record = InputRecord.from_dict(staged.to_dict())
    record.shards = [{**s, "inputs": [spec.key]} for s in shards]
    record.docs_kept = staged.docs_kept - drops.rows
    record.drops = staged.drops + drops.drop_counts()
    record.errors = staged.errors + drops.examples
    done_marker(spec, ctx, scope).write({"record": record.to_dict()}, outputs=record.shards,
                                        promised_docs=record.docs_kept)
    return record


def finish_skipped(spec: InputSpec, ctx: RunContext, scope: str, record: InputRecord) -> None:
    """Phase 3 for an input a phase skipped (a site outside the top N): its done marker, holding its record.

    Without it a re-run of the same inputs never found them all finished and redid the run. Shards
    an earlier run wrote for the input (kept then, under another config) are removed first, as
    :func:`finalize_input` does: the marker that named them is replaced, and they are no output
    of this run.
    """
    if load_done(spec, ctx, scope) is not None:
        return
    _remove_previous_output(ctx, spec.key)
    done_marker(spec, ctx, scope).write({"record": record.to_dict()})


def clean_staging(ctx: RunContext, keys: Sequence[str]) -> None:
    """Remove staging shards and stage markers once every input is finalized."""
    for key in keys:
        shutil.rmtree(staging_dir(ctx.out, ctx.source, key), ignore_errors=True)
        state_path(ctx.out, ctx.source, key, "stage").unlink(missing_ok=True)
    duplicates_path(ctx.out, ctx.source).unlink(missing_ok=True)
    for directory in (ctx.out / "_staging" / ctx.source, ctx.out / "_staging" / "duckdb_tmp", ctx.out / "_staging"):
        with contextlib.suppress(OSError):
            directory.rmdir()  # only when empty: other sources may still be staging



def merge_records(before: InputRecord, staged: InputRecord) -> InputRecord:
    """One record per input from a phase before staging and the stage/finalize record.

    The earlier phase read the input (its ``records_in`` counts every raw record) and dropped
    some; staging saw only what it kept. Drops and errors add up, so the manifest still says
    ``records_in == kept + dropped`` for the input as a whole.
    """
    merged = InputRecord.from_dict(staged.to_dict())
    merged.records_in = before.records_in
    merged.drops = before.drops + staged.drops
    merged.steps = chain_step_rows(before.steps, staged.steps)
    merged.errors = (before.errors + staged.errors)[:MAX_ERROR_EXAMPLES]
    merged.seconds = before.seconds + staged.seconds
    merged.sha256 = before.sha256 or staged.sha256
    if staged.status == "done" and before.status == "partial":
        merged.status = "partial"
    return merged
