"""Tokenize one file of an external dataset (Parquet / JSONL) into train/holdout data tensors.

The same format and holdout rule as our own shards (:func:`loader.tensor_writer.write_tensors`),
fed by :mod:`sources.formats.datasets_text`. One Prefect task per file: Prefect costs milliseconds per
task run, a file costs seconds to minutes. Resume is by marker, as for shards: a file whose
marker matches its SHA256, the tokenizer hash and every setting that shapes the bytes, and
whose tensor files are intact, is skipped; a killed run leaves no marker and no partial file
(every file is written under a temporary name and renamed), so a re-run writes the same bytes.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from core.markers import Marker
from core.tokenizer import encode_texts
from core.version import __version__
from loader.tensor_writer import (
    SPLITS,
    TOKENS_SUFFIX,
    TokenizeSettings,
    finish_record,
    finished_record,
    token_dtype,
    write_tensors,
)
from sources.formats.datasets_text import DatasetFile, DropLog, ReadOptions, file_fingerprint, read_texts


@dataclass(frozen=True)
class ExternalJob:
    """What every file's task needs (picklable): where to write, under which source, how to read."""

    out: Path
    source: str
    settings: TokenizeSettings
    read: ReadOptions
    language: str | None = None
    labels: tuple[str, ...] = ()

    def read_fields(self) -> dict[str, Any]:
        """Reading settings that change which documents are kept (``batch_rows`` does not)."""
        return {"text_column": self.read.text_column, "id_column": self.read.id_column,
                "max_text_chars": self.read.max_text_chars, "max_line_bytes": self.read.max_line_bytes}


def _stem(rel: str) -> str:
    """``a/b.jsonl.zst`` -> ``a/b``, ``a/b.parquet`` -> ``a/b``: the dataset suffixes, not dots in names."""
    name = rel
    for suffix in (".gz", ".zst", ".bz2", ".xz"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    for suffix in (".parquet", ".jsonl", ".ndjson", ".json"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def tensor_paths(out: Path, source: str, rel: str) -> dict[str, Path]:
    """``<out>/<split>/<source>/<rel without suffix>.tokens`` for each split."""
    return {split: out / split / source / f"{_stem(rel)}{TOKENS_SUFFIX}" for split in SPLITS}


def marker_path(out: Path, source: str, rel: str) -> Path:
    """The file's resume marker (its finished record)."""
    return out / "_state" / source / f"{rel}.json"


def tokenize_file(file: DatasetFile, job: ExternalJob) -> dict[str, Any]:
    """Tokenize one dataset file; return its record (JSON-able), also when the file is unreadable.

    ``records_in = docs_kept + dropped``: every row or line is kept or counted under a reason
    (``drops``), a few named examples in ``drop_examples``. A file that cannot be read to the end
    is ``failed`` with an error naming it, and leaves no tensor file.
    """
    started = time.perf_counter()
    loaded = job.settings.load()
    out = job.out
    expect = {"input": file.rel, "input_sha256": file_fingerprint(file), "tokenizer_hash": loaded.hash,
              "settings": job.settings.output_fields(), "read": job.read_fields(), "source": job.source,
              "version": __version__}
    marker = Marker(marker_path(out, job.source, file.rel), expect)
    done = finished_record(marker, out)
    if done is not None:
        return done
    record: dict[str, Any] = {**expect, "location": file.location, "language": job.language,
                              "labels": list(job.labels), "dtype": token_dtype(loaded.vocab_size).str,
                              "status": "done", "error": None, "records_in": 0, "docs_kept": 0,
                              "drops": [], "drop_examples": [], "splits": {}}
    log = DropLog()
    batches = ((batch.keys, encode_texts(loaded.tokenizer, batch.texts)) for batch in read_texts(file, job.read, log))
    try:
        written = write_tensors(batches, tensor_paths(out, job.source, file.rel), out, loaded,
                                job.settings.holdout_fraction)
    except Exception as exc:  # an unreadable file fails alone; the run goes on
        record.update(status="failed", error=f"{file.location}: {type(exc).__name__}: {exc}",
                      seconds=round(time.perf_counter() - started, 3))
        return record
    if written.docs_empty:
        log.drop("no-tokens", file.rel, "the tokenizer gave no token", written.docs_empty)
    record.update(splits=written.splits, records_in=written.docs_in - written.docs_empty + log.total,
                  docs_kept=written.docs_in - written.docs_empty, drops=log.as_drops(), drop_examples=log.examples,
                  seconds=round(time.perf_counter() - started, 3))
    finish_record(marker, record, out)
    return record


@task(name="tokenize-file", cache_policy=NO_CACHE, task_run_name="tokenize {file.rel}")
def tokenize_file_task(file: DatasetFile, job: ExternalJob) -> dict[str, Any]:
    """One dataset file -> its train/holdout tensors (see :func:`tokenize_file`)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one process per core, one thread each
    return tokenize_file(file, job)
