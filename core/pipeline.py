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
import hashlib
import json
import logging
import shutil
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from core.atomic import atomic_path, sha256_file, write_json_atomic
from core.document import Document, InputSpec
from core.exact import exact_hash
from core.layout import docs_dir, duplicates_path, slug, staging_dir, state_path
from core.manifest import InputRecord
from core.shards import ShardLimits, ShardWriter, read_documents
from core.steps import Record, Step, StepStats, run_steps
from core.version import __version__

log = logging.getLogger(__name__)

HASH_SCHEMA = pa.schema([pa.field("ordinal", pa.int64()), pa.field("hash", pa.binary(32))])
DEDUP_STEP = "dedup_exact"
DEDUP_REASON = "duplicate_exact"


class SourceRecipe(Protocol):
    """What a source module provides to the pipeline."""

    name: str

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

    def marker_key(self) -> dict[str, str]:
        """Fields a resume marker must match to be trusted."""
        return {"config_hash": self.config_hash, "version": __version__}


def scope_hash(keys: Sequence[str], config_hash: str) -> str:
    """Identity of a run's dedup scope: the set of inputs deduplicated together."""
    payload = json.dumps({"keys": sorted(keys), "config": config_hash})
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


# -- resume markers -------------------------------------------------------------------------
def load_marker(path: Path, expect: dict[str, Any]) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if any(marker.get(k) != v for k, v in expect.items()):
        return None
    return marker


def files_intact(out: Path, shard_dicts: Sequence[dict[str, Any]]) -> bool:
    return all((out / s["path"]).exists() and (out / s["path"]).stat().st_size == s["bytes"] for s in shard_dicts)


def load_done(spec: InputSpec, ctx: RunContext, scope: str) -> InputRecord | None:
    """The finished record of an input, if its done marker is valid for this run."""
    if not spec.path.exists():
        return None
    expect = {**ctx.marker_key(), "scope": scope, "fingerprint": spec.fingerprint()}
    marker = load_marker(state_path(ctx.out, ctx.source, spec.key, "done"), expect)
    if marker is None or not files_intact(ctx.out, marker["record"]["shards"]):
        return None
    return InputRecord.from_dict(marker["record"])


# -- phase 1: stage -------------------------------------------------------------------------
class _HashWriter:
    """Streams (ordinal, sha256) rows of staged documents to ``hashes.parquet``."""

    def __init__(self, path: Path, batch: int = 10_000) -> None:
        self._cm = atomic_path(path)
        self._writer = pq.ParquetWriter(self._cm.__enter__(), HASH_SCHEMA, compression="zstd")
        self._ordinals: list[int] = []
        self._hashes: list[bytes] = []
        self._batch = batch

    def add(self, ordinal: int, digest: bytes) -> None:
        self._ordinals.append(ordinal)
        self._hashes.append(digest)
        if len(self._ordinals) >= self._batch:
            self._flush()

    def _flush(self) -> None:
        table = pa.table({"ordinal": self._ordinals, "hash": self._hashes}, schema=HASH_SCHEMA)
        self._writer.write_table(table)
        self._ordinals, self._hashes = [], []

    def close(self) -> None:
        self._flush()
        self._writer.close()
        self._cm.__exit__(None, None, None)


def _default_dedup_key(doc: Document) -> bytes:
    """SHA256 of the normalized text (a recipe may define its own ``dedup_key(doc)``)."""
    return exact_hash(doc.text)


def stage_input(recipe: SourceRecipe, spec: InputSpec, ctx: RunContext) -> InputRecord:
    """Phase 1 for one input: read, clean, filter, write staging shards and dedup keys.

    An unexpected error (unreadable file, a bug) does not propagate: the input is recorded as
    ``failed`` with the error naming the file, and the rest of the run goes on.
    """
    if not spec.path.exists():
        return InputRecord(input_key=spec.key, source=ctx.source, location=spec.location, language=None,
                           config_hash=ctx.config_hash, status="failed", error=f"{spec.location}: not found")
    marker_path = state_path(ctx.out, ctx.source, spec.key, "stage")
    expect = {**ctx.marker_key(), "fingerprint": spec.fingerprint()}
    marker = load_marker(marker_path, expect)
    if marker is not None and files_intact(ctx.out, marker["staged"]):
        return InputRecord.from_dict(marker["record"])

    started = time.perf_counter()
    try:
        language = recipe.input_language(spec)
    except Exception:  # the reader reports what is wrong with the file, per record
        language = None
    record = InputRecord(
        input_key=spec.key, source=ctx.source, location=spec.location, language=language,
        config_hash=ctx.config_hash, size=spec.path.stat().st_size if spec.path.is_file() else None,
    )
    stage = staging_dir(ctx.out, ctx.source, spec.key)
    shutil.rmtree(stage, ignore_errors=True)
    stats = StepStats()
    dedup_key = getattr(recipe, "dedup_key", None) or _default_dedup_key
    writer = ShardWriter(ctx.out, stage, "part", ctx.source, language, limits=ctx.limits)
    hashes = _HashWriter(stage / "hashes.parquet")
    try:
        kept = run_steps(recipe.read(spec), recipe.steps(), stats, f"{ctx.source}_reader", language)
        for ordinal, doc in enumerate(kept):
            writer.write(doc)
            hashes.add(ordinal, dedup_key(doc))
        staged = [s.to_dict() for s in writer.close()]
        hashes.close()
        record.sha256 = sha256_file(spec.path) if spec.path.is_file() else None
    except Exception as exc:  # one input's failure must not end the run
        writer.abort()
        shutil.rmtree(stage, ignore_errors=True)
        log.exception("input %s failed", spec.location)
        record.status = "failed"
        record.error = f"{spec.location}: {type(exc).__name__}: {exc}"
        record.records_in = stats.records_in
        record.seconds = time.perf_counter() - started
        return record

    record.records_in = stats.records_in
    record.docs_kept = stats.kept
    record.drops = [
        {"step": step, "reason": reason, "language": lang or None, "count": count}
        for (step, reason, lang), count in sorted(stats.drops.items())
    ]
    record.errors = stats.errors
    record.status = "partial" if any(d["reason"] == "truncated_input" for d in record.drops) else "done"
    record.seconds = time.perf_counter() - started
    write_json_atomic(marker_path, {**expect, "record": record.to_dict(), "staged": staged})
    return record


# -- phase 2: run-wide exact duplicates ----------------------------------------------------
def find_exact_duplicates(ctx: RunContext, keys: Sequence[str], memory_limit: str = "2GB") -> dict[str, int]:
    """Write the run's duplicate list; return the number of duplicates per input key.

    DuckDB does the grouping out of core, so the number of documents is not bounded by memory.
    Within a group of equal hashes the first document in (input key, record order) is kept,
    so the kept set does not depend on how many workers ran or in which order they finished.
    """
    target = duplicates_path(ctx.out, ctx.source)
    files = [(key, staging_dir(ctx.out, ctx.source, key) / "hashes.parquet") for key in sorted(keys)]
    files = [(key, path) for key, path in files if path.exists()]
    with atomic_path(target) as tmp:
        con = duckdb.connect()
        try:
            con.execute(f"SET memory_limit='{memory_limit}'")
            con.execute(f"SET temp_directory='{(ctx.out / '_staging' / 'duckdb_tmp').as_posix()}'")
            con.execute("CREATE TEMP TABLE ranks (input_key VARCHAR, rank INTEGER, file VARCHAR)")
            if files:
                con.executemany("INSERT INTO ranks VALUES (?, ?, ?)",
                                [[key, rank, str(path)] for rank, (key, path) in enumerate(files)])
            source_sql = (
                "SELECT r.input_key, r.rank, h.ordinal, h.hash FROM read_parquet(?, filename=true) h "
                "JOIN ranks r ON h.filename = r.file"
                if files else
                "SELECT ''::VARCHAR AS input_key, 0 AS rank, 0::BIGINT AS ordinal, ''::BLOB AS hash WHERE false"
            )
            params = [[str(path) for _, path in files]] if files else []
            con.execute(
                f"COPY (SELECT input_key, ordinal FROM ({source_sql}) "
                "QUALIFY row_number() OVER (PARTITION BY hash ORDER BY rank, ordinal) > 1 "
                f"ORDER BY input_key, ordinal) TO '{tmp.as_posix()}' (FORMAT parquet)",
                params,
            )
        finally:
            con.close()
    counts = pq.read_table(target, columns=["input_key"]).column("input_key").to_pylist()
    return dict(Counter(counts))


def _duplicate_ordinals(ctx: RunContext, key: str) -> set[int]:
    path = duplicates_path(ctx.out, ctx.source)
    if not path.exists():
        return set()
    table = pq.read_table(path, columns=["ordinal"], filters=[("input_key", "=", key)])
    return set(table.column("ordinal").to_pylist())


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
            writer = ShardWriter(
                self.ctx.out, docs_dir(self.ctx.out, self.ctx.source, partition), self.prefix,
                self.ctx.source, language=doc.language if partition == doc.language else None,
                limits=self.ctx.limits, file_metadata={"config_hash": self.ctx.config_hash},
            )
            self.writers[partition] = writer
        writer.write(doc)

    def close(self) -> list[dict[str, Any]]:
        shards = []
        for partition in sorted(self.writers):
            shards.extend(s.to_dict() for s in self.writers[partition].close())
        return shards

    def abort(self) -> None:
        for writer in self.writers.values():
            writer.abort()


def _remove_previous_output(ctx: RunContext, key: str) -> None:
    """Delete the final shards a previous run wrote for this input (they may be more)."""
    old = load_marker(state_path(ctx.out, ctx.source, key, "done"), {})
    for shard in (old or {}).get("record", {}).get("shards", []):
        (ctx.out / shard["path"]).unlink(missing_ok=True)


def finalize_input(
    recipe: SourceRecipe, spec: InputSpec, ctx: RunContext, scope: str, staged: InputRecord
) -> InputRecord:
    """Phase 3 for one input: write its staged documents minus run-wide duplicates to ``docs/``."""
    if staged.status == "failed":
        return staged
    done = load_done(spec, ctx, scope)
    if done is not None:
        return done
    _remove_previous_output(ctx, spec.key)
    duplicates = _duplicate_ordinals(ctx, spec.key)
    dup_counts: Counter[str] = Counter()
    writer = PartitionedWriter(ctx, prefix=slug(spec.key))
    stage = staging_dir(ctx.out, ctx.source, spec.key)
    try:
        ordinal = 0
        for part in sorted(stage.glob("part-*.parquet")):
            for doc in read_documents(part):
                if ordinal in duplicates:
                    dup_counts[doc.language or staged.language or ""] += 1
                else:
                    writer.write(recipe.partition(doc), doc)
                ordinal += 1
        shards = writer.close()
    except Exception:
        writer.abort()
        raise
    record = InputRecord.from_dict(staged.to_dict())
    record.shards = [{**s, "inputs": [spec.key]} for s in shards]
    record.docs_kept = staged.docs_kept - sum(dup_counts.values())
    record.drops = staged.drops + [
        {"step": DEDUP_STEP, "reason": DEDUP_REASON, "language": lang or None, "count": n}
        for lang, n in sorted(dup_counts.items())
    ]
    expect = {**ctx.marker_key(), "scope": scope, "fingerprint": spec.fingerprint()}
    write_json_atomic(state_path(ctx.out, ctx.source, spec.key, "done"), {**expect, "record": record.to_dict()})
    return record


def clean_staging(ctx: RunContext, keys: Sequence[str]) -> None:
    """Remove staging shards and stage markers once every input is finalized."""
    for key in keys:
        shutil.rmtree(staging_dir(ctx.out, ctx.source, key), ignore_errors=True)
        state_path(ctx.out, ctx.source, key, "stage").unlink(missing_ok=True)
    duplicates_path(ctx.out, ctx.source).unlink(missing_ok=True)
    for directory in (ctx.out / "_staging" / ctx.source, ctx.out / "_staging" / "duckdb_tmp", ctx.out / "_staging"):
        with contextlib.suppress(OSError):
            directory.rmdir()  # only when empty: other sources may still be staging

