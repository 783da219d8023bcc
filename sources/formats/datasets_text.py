"""External text datasets (Parquet, JSONL, JSONL.gz/.zst) -> batches of (holdout key, text).

Users bring datasets we did not build (a Hugging Face dataset's ``data/*.parquet``, a folder of
``*.jsonl.zst``): a text column, maybe an id column, thousands of files. This module finds the
files, assigns them to hosts and streams each one in bounded batches (a Parquet file by record
batches within its row groups, a JSONL file by line), so memory stays flat whatever the file
size. Nothing here tokenizes or writes: ``tasks/tokenize_external.py`` feeds the batches to
:func:`loader.tensor_writer.write_tensors`.

What identifies a document, and so decides the 0.1% holdout, is its id column when given, else
``<file>#<row>`` with the file's path *relative to the pattern's base* (``ds/`` for
``ds/**/*.parquet``): the same on every host and mount point. Host assignment hashes the same
relative path, so it survives adding hosts' mounts in other places and re-running one host alone.

Bad input is a counted drop with a reason and the record named (``file#row``), never an
exception: a row whose strings are not UTF-8 (``invalid_utf8``), a null or non-string text, a
row without the column, a file without the column, a line that is not JSON, an oversized line
or text, each row of a Parquet row group that cannot be decoded (``corrupt_row_group``; the
file's other groups are read). A file that cannot be read on (truncated compression, an
unreadable footer) raises, and the caller fails that one file.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import itertools
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import pyarrow as pa

from core.compressed import open_binary
from sources.formats.rows import Oversized, RowError, json_rows, open_parquet, parquet_file_rows

Format = Literal["parquet", "jsonl"]
#: Suffixes read as JSON Lines; each may carry .gz or .zst (and .bz2/.xz: core.compressed).
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
COMPRESSIONS = ("", ".gz", ".zst", ".bz2", ".xz")
GLOB_CHARS = "*?["
#: Examples kept per drop reason (the counts are exact; the examples say where to look).
EXAMPLES_PER_REASON = 5


class DatasetInputError(ValueError):
    """The inputs cannot be laid out (two files with one relative path, a path leaving its base)."""


@dataclass(frozen=True)
class DatasetFile:
    """One input file: where to read it, and its stable path relative to its pattern's base."""

    location: str
    rel: str
    fmt: Format

    @property
    def is_remote(self) -> bool:
        return "://" in self.location


@dataclass(frozen=True)
class ReadOptions:
    """How rows become texts; picklable (sent to every worker)."""

    text_column: str = "text"
    id_column: str | None = None
    batch_rows: int = 256
    #: A longer text is dropped (``text-too-large``): bounds the time and memory of one record.
    max_text_chars: int = 32 * 1024 * 1024
    #: A longer JSON line is dropped (``line-too-large``) without being held in memory whole.
    max_line_bytes: int = 128 * 1024 * 1024


@dataclass
class DropLog:
    """Counted drops by reason, with a few named examples per reason."""

    counts: Counter[str] = field(default_factory=Counter)
    examples: list[dict[str, str]] = field(default_factory=list)

    def drop(self, reason: str, record: str, detail: str = "", count: int = 1) -> None:
        """Count ``count`` records dropped for ``reason``; keep the first few as named examples."""
        self.counts[reason] += count
        if sum(1 for e in self.examples if e["reason"] == reason) < EXAMPLES_PER_REASON:
            self.examples.append({"step": "read", "reason": reason, "record": record, "detail": detail[:500]})

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_drops(self) -> list[dict[str, Any]]:
        """Rows for the manifest's ``drops`` table (sorted: deterministic records)."""
        return [{"step": "read", "reason": r, "count": n} for r, n in sorted(self.counts.items())]


@dataclass
class TextBatch:
    """Up to ``batch_rows`` kept documents: holdout keys and texts, aligned."""

    keys: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)


# -- which files ----------------------------------------------------------------------------
def file_format(name: str) -> Format | None:
    """``parquet``, ``jsonl`` or None (not a dataset file) from the file name."""
    lower = name.lower()
    if lower.endswith(".parquet"):
        return "parquet"
    for comp in COMPRESSIONS:
        if any(lower.endswith(suffix + comp) for suffix in JSONL_SUFFIXES):
            return "jsonl"
    return None


def pattern_base(pattern: str) -> str:
    """The part of a pattern before its first glob character, cut at a ``/``: what paths are relative to."""
    cut = min((i for i, ch in enumerate(pattern) if ch in GLOB_CHARS), default=None)
    if cut is None:
        return pattern.rstrip("/") if not os.path.isfile(pattern) else os.path.dirname(pattern)
    return pattern[:cut].rsplit("/", 1)[0] if "/" in pattern[:cut] else ""


def _remote_paths(pattern: str) -> list[str]:
    """``hf://``, ``s3://``, ``https://``... through fsspec (needs network and the protocol's package)."""
    try:
        import fsspec
    except ImportError as exc:  # pragma: no cover - fsspec ships with the project
        raise DatasetInputError(f"{pattern}: remote paths need fsspec (pip install fsspec huggingface_hub)") from exc
    _fs, _, paths = fsspec.get_fs_token_paths(pattern)
    protocol = pattern.split("://", 1)[0]
    return sorted(f"{protocol}://{p}" if "://" not in p else p for p in paths)


def expand_inputs(patterns: list[str]) -> list[DatasetFile]:
    """Every dataset file the patterns match, sorted by relative path; collisions are an error.

    A pattern is a local glob (``**`` recursive), a folder (every dataset file below it), a file,
    or an fsspec URL (``hf://datasets/org/name/data/*.parquet``).
    """
    found: dict[str, DatasetFile] = {}
    for pattern in patterns:
        base = pattern_base(pattern)
        if "://" in pattern:
            paths = _remote_paths(pattern)
        elif os.path.isdir(pattern):
            paths = sorted(str(p) for p in Path(pattern).rglob("*") if p.is_file())
        else:
            paths = sorted(glob.glob(pattern, recursive=True))
        for path in paths:
            fmt = file_format(path)
            if fmt is None or ("://" not in path and not os.path.isfile(path)):
                continue
            rel = _relative(path, base)
            other = found.get(rel)
            if other is not None and other.location != path:
                raise DatasetInputError(f"{path} and {other.location} have the same relative path {rel!r}; "
                                        "give patterns whose base folders differ in what follows them")
            found[rel] = DatasetFile(path, rel, fmt)
    return [found[rel] for rel in sorted(found)]


def _relative(path: str, base: str) -> str:
    if "://" in path:
        rel = path.split("://", 1)[1][len(base.split("://", 1)[-1]):].lstrip("/")
    else:
        rel = os.path.relpath(path, base or ".")
    rel = rel.replace(os.sep, "/")
    if not rel or rel.startswith("/") or ".." in rel.split("/"):
        raise DatasetInputError(f"{path}: its path relative to {base!r} leaves the base ({rel!r})")
    return rel


def host_of(rel: str, host_count: int) -> int:
    """The host (0-based) that tokenizes a file: a hash of its relative path, modulo the host count.

    A hash, not a position in a listing: adding or removing other files never moves a file to
    another host, and any host can list its own share without seeing the others'.
    """
    if host_count <= 1:
        return 0
    digest = hashlib.sha256(b"kinda-host\x00" + rel.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") % host_count


def host_share(files: list[DatasetFile], host_count: int, host_index: int) -> list[DatasetFile]:
    """The files of one host."""
    if not 0 <= host_index < max(host_count, 1):
        raise DatasetInputError(f"host index {host_index} is not in 0..{max(host_count, 1) - 1}")
    return [f for f in files if host_of(f.rel, host_count) == host_index]


def dataset_share(patterns: list[str], host_count: int, host_index: int) -> tuple[list[DatasetFile], list[DatasetFile]]:
    """Every file the patterns match and this host's share of them; patterns matching nothing are an error.

    A bad pattern or host index stops the run before any task starts, as a plain ``ValueError``
    with the reason only (the flow's failure message, no chained traceback).
    """
    try:
        files = expand_inputs(patterns)
        mine = host_share(files, host_count, host_index)
    except DatasetInputError as exc:
        raise ValueError(str(exc)) from None
    if not files:
        raise ValueError(f"no Parquet or JSONL files match {patterns}")
    return files, mine


def file_fingerprint(file: DatasetFile) -> str:
    """What decides whether a finished file is still current: the SHA256 of a local file's bytes."""
    if not file.is_remote:
        digest = hashlib.sha256()
        with open(file.location, "rb") as handle:
            while chunk := handle.read(1 << 22):
                digest.update(chunk)
        return digest.hexdigest()
    import fsspec

    fs, _, (path,) = fsspec.get_fs_token_paths(file.location)
    return "ukey:" + str(fs.ukey(path))


# -- reading --------------------------------------------------------------------------------
def read_texts(file: DatasetFile, opts: ReadOptions, log: DropLog) -> Iterator[TextBatch]:
    """Kept documents of one file in batches; every other record is counted in ``log``."""
    if file.fmt == "parquet":
        yield from _read_parquet(file, opts, log)
    else:
        yield from _read_jsonl(file, opts, log)


def _open(file: DatasetFile) -> IO[bytes]:
    if not file.is_remote:
        return open_binary(Path(file.location))
    import fsspec

    return fsspec.open(file.location, "rb", compression="infer").open()


def _is_text_type(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind)
                or getattr(pa.types, "is_string_view", lambda _: False)(kind))


def _read_parquet(file: DatasetFile, opts: ReadOptions, log: DropLog) -> Iterator[TextBatch]:
    with contextlib.ExitStack() as stack:
        parquet = open_parquet(stack.enter_context(_open(file)) if file.is_remote else file.location,
                               (opts.text_column,))
        stack.callback(parquet.close)
        rows = parquet.metadata.num_rows
        names = parquet.schema_arrow.names
        where = f"{file.rel}#0-{max(rows - 1, 0)}"
        for column in (opts.text_column, opts.id_column):
            if column is not None and column not in names:
                if rows:
                    log.drop(f"missing-column:{column}", where, f"columns are {names[:20]}", rows)
                return
        if not _is_text_type(parquet.schema_arrow.field(opts.text_column).type):
            if rows:
                log.drop("text-not-string", where, f"column {opts.text_column!r} is "
                         f"{parquet.schema_arrow.field(opts.text_column).type}", rows)
            return
        columns = [opts.text_column] + ([opts.id_column] if opts.id_column else [])
        # a UTF-8 character is at most 4 bytes: a value over this is over max_text_chars too
        sized = {opts.text_column: 4 * opts.max_text_chars}
        group_ends = set(itertools.accumulate(parquet.metadata.row_group(g).num_rows
                                              for g in range(parquet.metadata.num_row_groups)))
        batch = TextBatch()
        # row by row over the groups (a corrupt group is one drop per row, the next group is read);
        # a batch never spans two groups
        for row, item in enumerate(parquet_file_rows(parquet, columns, opts.batch_rows, sized)):
            if isinstance(item, RowError):
                log.drop(item.reason, f"{file.rel}#{row}", item.detail)
            else:
                _keep(file, row, item.get(opts.id_column) if opts.id_column else None, item[opts.text_column],
                      opts, log, batch)
            if batch.keys and (len(batch.keys) >= opts.batch_rows or row + 1 in group_ends):
                yield batch
                batch = TextBatch()


def _keep(file: DatasetFile, row: int, doc_id: Any, text: Any, opts: ReadOptions, log: DropLog,
          batch: TextBatch) -> None:
    """Add one record to ``batch``, or count why not."""
    record = f"{file.rel}#{row}"
    if text is None:
        log.drop("null-text", record)
    elif isinstance(text, Oversized):
        log.drop("text-too-large", record, f"{text.nbytes} bytes > {opts.max_text_chars} characters")
    elif not isinstance(text, str):
        log.drop("text-not-string", record, f"{type(text).__name__}")
    elif not text:
        log.drop("empty-text", record)
    elif len(text) > opts.max_text_chars:
        log.drop("text-too-large", record, f"{len(text)} characters > {opts.max_text_chars}")
    elif opts.id_column and doc_id is None:
        log.drop("null-id", record)
    else:
        batch.keys.append(str(doc_id) if opts.id_column else record)
        batch.texts.append(text)


_MISSING = object()


#: The shared row reader's errors, in this module's vocabulary (``docs/loader.md``).
_JSON_REASONS = {"too_large": "line-too-large", "malformed_json": "bad-json", "not_object": "not-object"}


def _read_jsonl(file: DatasetFile, opts: ReadOptions, log: DropLog) -> Iterator[TextBatch]:
    batch = TextBatch()
    with _open(file) as handle:
        for row, obj in enumerate(json_rows(handle, opts.max_line_bytes)):
            record = f"{file.rel}#{row}"
            if obj is None:
                log.drop("blank-line", record)
                continue
            if isinstance(obj, RowError):
                log.drop(_JSON_REASONS[obj.reason], record, obj.detail)
                continue
            text = obj.get(opts.text_column, _MISSING)
            doc_id = obj.get(opts.id_column) if opts.id_column else None
            if text is _MISSING:
                log.drop(f"missing-column:{opts.text_column}", record)
                continue
            _keep(file, row, doc_id, text, opts, log, batch)
            if len(batch.keys) >= opts.batch_rows:
                yield batch
                batch = TextBatch()
    if batch.keys:
        yield batch
