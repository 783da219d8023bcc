"""One giant input staged as several range tasks, joined back into that input's staging.

Why: an input is the unit of a task, so one 22 GB dump is one core's work for days however
large the cluster. A source whose files can be cut (a multistream bz2 dump with its index: see
:mod:`sources.formats.wikipedia_multistream`) stages each byte range as its own input, keyed
``<input key>#<start>-<end>`` so every range has its own resume marker. :func:`join_ranges`
then lays the ranges' staged shards end to end as the staging of the input itself (hard links,
no copy), renumbers their dedup keys, sums their counts, and writes the input's stage marker.
From there the run goes on as if the input had been staged by one task: exact dedup ranks the
same documents in the same order and finalize writes the same shards, byte for byte.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core import pipeline
from core.atomic import AtomicOutput
from core.document import InputSpec
from core.layout import signals_attribute_path, staging_dir, state_path
from core.manifest import InputRecord
from core.steps import MAX_ERROR_EXAMPLES, sum_step_rows


@dataclass(frozen=True)
class RangeInput:
    """One range task of an input: its spec (range key) and what staging it recorded."""

    spec: InputSpec
    record: InputRecord


def range_spec(spec: InputSpec, key: str) -> InputSpec:
    """The input of one range task: same file, the range's key, a location naming the range."""
    suffix = key[len(spec.key):]
    return InputSpec(location=f"{spec.location}{suffix}", path=spec.path, key=key)


def merge_drops(records: Sequence[InputRecord]) -> list[dict[str, Any]]:
    """Drop counts of the ranges summed per (step, reason, language), sorted as staging sorts them."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for record in records:
        for drop in record.drops:
            counts[(drop["step"], drop["reason"], drop["language"] or "")] += int(drop["count"])
    return [{"step": step, "reason": reason, "language": lang or None, "count": count}
            for (step, reason, lang), count in sorted(counts.items())]


def _link(source: Path, target: Path) -> None:
    """Hard-link a staged shard into place (a copy where the file system cannot link)."""
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _join_hashes(ctx: pipeline.RunContext, ranges: Sequence[RangeInput], target: Path) -> dict[str, Any]:
    """The ranges' dedup keys as one ``hashes.parquet``, ordinals counted across the whole input."""
    output = AtomicOutput(target)
    writer = pq.ParquetWriter(output.path, pipeline.HASH_SCHEMA, compression="zstd")
    try:
        offset = 0
        for part in ranges:
            table = pq.read_table(staging_dir(ctx.out, ctx.source, part.spec.key) / "hashes.parquet",
                                  schema=pipeline.HASH_SCHEMA)
            ordinals = pc.add(table.column("ordinal"), pa.scalar(offset, pa.int64()))
            writer.write_table(table.set_column(0, "ordinal", ordinals))
            offset += part.record.docs_kept
    except BaseException:
        writer.close()
        output.abort()
        raise
    writer.close()
    path = output.commit()
    return {"path": path.relative_to(ctx.out).as_posix(), "bytes": path.stat().st_size}


def _join_signals(ctx: pipeline.RunContext, spec: InputSpec, ranges: Sequence[RangeInput]) -> dict[str, Any]:
    """The ranges' signal rows as the input's one signals attribute, in file order (as a whole staging writes it)."""
    from core.filters.signal_schema import SIGNAL_SCHEMA

    target = signals_attribute_path(ctx.out, ctx.source, spec.key)
    table = pa.concat_tables([pq.read_table(signals_attribute_path(ctx.out, ctx.source, part.spec.key),
                                            schema=SIGNAL_SCHEMA) for part in ranges])
    with AtomicOutput(target) as output:
        writer = pq.ParquetWriter(output, SIGNAL_SCHEMA, compression="zstd")
        try:  # row groups of the stage's batch size: the bytes of a whole input's staging
            writer.write_table(table, row_group_size=pipeline.SIGNAL_BATCH)
        finally:
            writer.close()
    return {"path": target.relative_to(ctx.out).as_posix(), "bytes": target.stat().st_size}


def joined_record(spec: InputSpec, ranges: Sequence[RangeInput]) -> InputRecord:
    """The input's record from its ranges' records: counts and drops summed, status the worst.

    The file's SHA256 comes from the first range, the one task that hashed the whole file.
    """
    records = [part.record for part in ranges]
    first = records[0]
    failed = [r for r in records if r.status == "failed"]
    status = "failed" if failed else "partial" if any(r.status == "partial" for r in records) else "done"
    return InputRecord(
        input_key=spec.key, source=first.source, location=spec.location, language=first.language,
        config_hash=first.config_hash, size=first.size, sha256=first.sha256, status=status,
        error="; ".join(r.error or "" for r in failed) or None,
        records_in=sum(r.records_in for r in records), docs_kept=sum(r.docs_kept for r in records),
        seconds=sum(r.seconds for r in records), drops=merge_drops(records),
        errors=[e for r in records for e in r.errors][:MAX_ERROR_EXAMPLES],
        steps=sum_step_rows(r.steps for r in records),
    )


def join_ranges(ctx: pipeline.RunContext, spec: InputSpec, ranges: Sequence[RangeInput]) -> InputRecord:
    """Make the staged ranges (in file order) the staging of ``spec``; return its record.

    A failed range fails the input (it is not staged; the error names the range). Otherwise
    the input's staging directory gets the ranges' shards in order, ``part-000000.parquet``
    onwards (finalize reads them sorted), and the input's stage marker names them, so a later
    run trusts it exactly as it trusts a one-task staging.
    """
    record = joined_record(spec, ranges)
    if record.status == "failed":
        return record
    directory = staging_dir(ctx.out, ctx.source, spec.key)
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    outputs: list[dict[str, Any]] = []
    number = 0
    for part in ranges:
        source_dir = staging_dir(ctx.out, ctx.source, part.spec.key)
        for shard in sorted(source_dir.glob("part-*.parquet")):
            target = directory / f"part-{number:06d}.parquet"
            _link(shard, target)
            outputs.append({"path": target.relative_to(ctx.out).as_posix(), "bytes": target.stat().st_size,
                            "docs": pq.ParquetFile(target).metadata.num_rows})
            number += 1
    outputs.append(_join_hashes(ctx, ranges, directory / "hashes.parquet"))
    outputs.append(_join_signals(ctx, spec, ranges))
    pipeline.stage_marker(spec, ctx).write({"record": record.to_dict()}, outputs=outputs,
                                           promised_docs=record.docs_kept)
    return record


def remove_ranges(ctx: pipeline.RunContext, keys: Sequence[str]) -> None:
    """Delete the range stagings and range stage markers of ``keys`` (the inputs are finalized)."""
    for key in keys:
        pattern = f"{staging_dir(ctx.out, ctx.source, key).name}_*"  # slug of "<key>#<start>-<end>"
        for directory in staging_dir(ctx.out, ctx.source, key).parent.glob(pattern):
            shutil.rmtree(directory, ignore_errors=True)
        state = state_path(ctx.out, ctx.source, key, "stage")
        for marker in state.parent.glob(f"{state.name.removesuffix('.stage.json')}_*.stage.json"):
            with contextlib.suppress(OSError):
                marker.unlink()
        signals = signals_attribute_path(ctx.out, ctx.source, key)
        for attribute in signals.parent.glob(f"{signals.name.removesuffix('.signals.parquet')}_*.signals.parquet"):
            with contextlib.suppress(OSError):
                attribute.unlink()
