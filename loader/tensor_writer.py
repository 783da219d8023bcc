"""Data tensors: tokenized document shards that training reads with a memory map.

For each document shard (Parquet) one task writes, per split (``train`` and a 0.1% ``holdout``):

```
<out>/<split>/<source>/<partition>/<stem>.tokens     token ids, little-endian uint16 or uint32
<out>/<split>/<source>/<partition>/<stem>.docs.npy   int64 document offsets (docs + 1 entries)
<out>/_state/<source>/<partition>/<stem>.json        the shard's record (resume marker)
<out>/metadata.json                                  every shard, checksums, tokenizer, counts
<out>/tokenizer.json                                 the tokenizer actually used
```

Each document is followed by the EOS token, so document ``i`` is
``tokens[offsets[i]:offsets[i + 1]]`` and ends with EOS; windows that cross a boundary still
see where one document ended. The holdout split is decided by a hash of the document id, so it
is the same on every run, for any number of workers and any shard layout.

The format is deliberately plain (a raw array and a ``.npy`` index: numpy, torch, C and any HTTP
server handle it); :func:`export_megatron` writes Megatron-LM / GPT-NeoX ``.bin/.idx`` from it.
Nothing here imports Prefect: ``tasks/tokenization.py`` wraps :func:`tokenize_shard` in a task.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
import shutil
import struct
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from core.atomic import atomic_path, sha256_file, write_json_atomic
from core.markers import OUTPUTS, PROMISED_DOCS, Marker, outputs_intact, promise_kept
from core.shards import shard_metadata
from core.tokenizer import LoadedTokenizer, encode_texts, load_tokenizer
from core.version import __version__
from loader.safe_paths import UnsafePathError, check_metadata_paths, inside

FORMAT = "kinda-tensors"
FORMAT_VERSION = 1
METADATA_NAME = "metadata.json"
TOKENIZER_NAME = "tokenizer.json"
SPLITS = ("train", "holdout")
TOKENS_SUFFIX = ".tokens"
DOCS_SUFFIX = ".docs.npy"
#: Directories of an output root that hold document shards, in the order they are searched.
SHARD_DIRS = ("labeled", "docs")


class TensorFormatError(ValueError):
    """A tensor file, its index or its metadata is inconsistent; the message names the file."""


# -- choices that define the output ---------------------------------------------------------
def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocab <= 65,536), else uint32: half the bytes for most vocabs."""
    return np.dtype("<u2") if vocab_size <= 1 << 16 else np.dtype("<u4")


def in_holdout(doc_id: str, fraction: float) -> bool:
    """Deterministic holdout membership from a hash of the document id (not its position)."""
    if fraction <= 0:
        return False
    digest = hashlib.sha256(b"kinda-holdout\x00" + doc_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") < int(fraction * 2**64)


@dataclass(frozen=True)
class TokenizeSettings:
    """Everything that decides a tensor's bytes; picklable so worker processes get a copy."""

    tokenizer: str
    split_digits: bool = True
    split_mode: str = "sequence"
    eos_token: str | None = None
    holdout_fraction: float = 0.001
    batch_docs: int = 256
    #: ``<work>``/``</work>``: None (legacy, nothing recorded), ``"text"`` (encoded by the existing
    #: vocabulary; tokens unchanged, recorded in metadata.json) or ``"added"`` (two new ids after
    #: the last one; see :func:`core.tokenizer.add_work_tokens`).
    work_tokens: str | None = None

    def load(self) -> LoadedTokenizer:
        """The tokenizer, loaded once per worker process."""
        return _cached_tokenizer(self.tokenizer, self.split_digits, self.split_mode, self.eos_token,
                                 self.work_tokens)

    def output_fields(self) -> dict[str, Any]:
        """Fields that change output bytes (``batch_docs`` does not; ``work_tokens="text"`` neither)."""
        fields = {"split_digits": self.split_digits, "split_mode": self.split_mode,
                  "eos_token": self.eos_token, "holdout_fraction": self.holdout_fraction}
        if self.work_tokens == "added":
            fields["work_tokens"] = self.work_tokens
        return fields


def released_source(source: str) -> str:
    """Where the tokenizer came from, as ``metadata.json`` records it: a hub name as given, a local
    file or folder by its name only.

    The set holds the tokenizer itself (``file``) and its hash; the path the run was given would
    make the same tokens give other metadata bytes from another folder, and put the user's
    folders in released data.
    """
    return Path(source).name if Path(source).exists() else source


@functools.lru_cache(maxsize=4)
def _cached_tokenizer(source: str, split_digits: bool, split_mode: str, eos: str | None,
                      work_tokens: str | None = None) -> LoadedTokenizer:
    return load_tokenizer(source, split_digits=split_digits, split_mode=split_mode, eos_token=eos,  # type: ignore[arg-type]
                          work_tokens=work_tokens)  # type: ignore[arg-type]


# -- which shards -----------------------------------------------------------------------------
@dataclass(frozen=True)
class InputShard:
    """A document shard to tokenize: its path relative to the data root, source and labels."""

    rel_path: str
    source: str
    language: str | None
    labels: tuple[str, ...]

    @property
    def stem(self) -> str:
        return Path(self.rel_path).stem


def _normalize_label(label: str) -> str:
    return label.upper().replace(".", "")


def find_input_shards(
    data_root: Path, labels: Sequence[str] = (), sources: Sequence[str] = ()
) -> list[InputShard]:
    """Document shards under ``labeled/`` (else ``docs/``) carrying every label asked for.

    Labels are compared loosely (``G3`` = ``G.3`` = ``g3``), read from the shard's own metadata
    (``kinda.labels``) so a tensor run needs nothing but the files.
    """
    wanted = {_normalize_label(x) for x in labels}
    found: list[InputShard] = []
    for top in SHARD_DIRS:
        base = data_root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.parquet")):
            meta = shard_metadata(path)
            shard_labels = tuple(json.loads(meta.get("labels", "[]") or "[]"))
            source = meta.get("source") or path.relative_to(base).parts[0]
            if sources and source not in sources:
                continue
            if wanted and not wanted <= {_normalize_label(x) for x in shard_labels}:
                continue
            found.append(InputShard(path.relative_to(data_root).as_posix(), source,
                                    meta.get("language") or None, shard_labels))
        if found:
            break
    return found


# -- one shard ------------------------------------------------------------------------------
@dataclass
class _SplitWriter:
    """Streams one split's tokens to ``.tokens`` (hashing as it goes) and keeps the offsets."""

    tokens_path: Path
    dtype: np.dtype
    offsets: list[int] = field(default_factory=lambda: [0])
    _handle: Any = None
    _cm: Any = None
    _sha: Any = field(default_factory=hashlib.sha256)

    def write(self, flat: np.ndarray, lengths: Iterable[int]) -> None:
        if self._handle is None:
            self._cm = atomic_path(self.tokens_path)
            self._handle = open(self._cm.__enter__(), "wb")  # noqa: SIM115 (closed in finish/abort)
        data = flat.astype(self.dtype, copy=False).tobytes()
        self._handle.write(data)
        self._sha.update(data)
        last = self.offsets[-1]
        for length in lengths:
            last += length
            self.offsets.append(last)

    def finish(self) -> dict[str, Any] | None:
        """Close and rename the token file, write the index; None when the split got no document."""
        if self._handle is None:
            return None
        self._handle.close()
        self._cm.__exit__(None, None, None)
        docs_path = self.tokens_path.with_name(self.tokens_path.name[: -len(TOKENS_SUFFIX)] + DOCS_SUFFIX)
        with atomic_path(docs_path) as tmp, open(tmp, "wb") as handle:
            np.save(handle, np.asarray(self.offsets, dtype=np.int64))
        return {"tokens": self.offsets[-1], "docs": len(self.offsets) - 1,
                "tokens_sha256": self._sha.hexdigest(), "docs_sha256": sha256_file(docs_path),
                "tokens_bytes": self.tokens_path.stat().st_size, "docs_bytes": docs_path.stat().st_size}

    def abort(self) -> None:
        if self._handle is not None:
            self._handle.close()
            with contextlib.suppress(RuntimeError):
                self._cm.__exit__(RuntimeError, RuntimeError("aborted"), None)


def split_paths(out: Path, split: str, shard: InputShard) -> tuple[Path, Path]:
    """Where a shard's tensor files for ``split`` go: the shard's own sub-path under ``<split>/``."""
    base = out / split / Path(*Path(shard.rel_path).parts[1:-1])
    return base / f"{shard.stem}{TOKENS_SUFFIX}", base / f"{shard.stem}{DOCS_SUFFIX}"


def marker_path(out: Path, shard: InputShard) -> Path:
    """The shard's resume marker (its finished record)."""
    return out / "_state" / Path(shard.rel_path).with_suffix(".json")


def _encode_batches(
    path: Path, settings: TokenizeSettings, loaded: LoadedTokenizer
) -> Iterator[tuple[list[str], list[list[int]]]]:
    parquet = pq.ParquetFile(path)
    for batch in parquet.iter_batches(batch_size=settings.batch_docs, columns=["id", "text"]):
        ids = batch.column(0).to_pylist()
        yield ids, encode_texts(loaded.tokenizer, batch.column(1).to_pylist())


def _flatten(encoded: list[list[int]], eos: int) -> tuple[np.ndarray, list[int]]:
    flat: list[int] = []
    lengths: list[int] = []
    for ids in encoded:
        flat.extend(ids)
        flat.append(eos)
        lengths.append(len(ids) + 1)
    return np.asarray(flat, dtype=np.int64), lengths


def split_outputs(splits: dict[str, Any], out: Path) -> list[dict[str, Any]]:
    """The files a record's splits name, as marker outputs (``path``, ``bytes``; ``docs`` on the tokens).

    Every path goes through :func:`loader.safe_paths.inside` (:class:`UnsafePathError` when one
    would leave ``out``): a marker is data, and its paths are checked before any file is touched.
    """
    outputs = []
    for split in SPLITS:
        info = splits.get(split)
        if info is None:
            continue
        for key, extra in (("tokens_path", {"docs": info["docs"]}), ("docs_path", {})):
            inside(out, info[key], key)
            outputs.append({"path": info[key], "bytes": info[key.replace("_path", "_bytes")], **extra})
    return outputs


def finished_record(marker: Marker, out: Path) -> dict[str, Any] | None:
    """The job's record when its marker is valid: key matches, paths inside ``out``, files intact.

    :meth:`core.markers.Marker.load`'s checks, with the inside-root check first: the outputs must be
    exactly the files the record's splits name (so a split path edited alone is not trusted), each
    inside ``out``, before their sizes are read. The record comes back as a fresh run returns it.
    """
    payload = marker.read()
    if payload is None or payload.get("status") != "done":
        return None
    try:
        if split_outputs(payload.get("splits", {}), out) != payload.get(OUTPUTS):
            return None
    except (UnsafePathError, KeyError, TypeError, AttributeError):
        return None
    if not outputs_intact(out, payload[OUTPUTS]) or not promise_kept(payload):
        return None
    return {key: value for key, value in payload.items() if key not in (OUTPUTS, PROMISED_DOCS)}


def finish_record(marker: Marker, record: dict[str, Any], out: Path) -> None:
    """Write the marker of a finished job: its record, its files and the documents they hold."""
    splits = record["splits"]
    marker.write(record, outputs=split_outputs(splits, out),
                 promised_docs=sum(int(info["docs"]) for info in splits.values()))


@dataclass(frozen=True)
class WrittenTensors:
    """What :func:`write_tensors` wrote: per split its files' record, documents in and empty."""

    splits: dict[str, dict[str, Any]]
    docs_in: int
    docs_empty: int


def write_tensors(
    batches: Iterable[tuple[Sequence[str], list[list[int]]]], tokens_paths: dict[str, Path], out: Path,
    loaded: LoadedTokenizer, holdout_fraction: float,
) -> WrittenTensors:
    """Stream ``(holdout keys, token ids)`` batches into each split's ``.tokens`` + ``.docs.npy``.

    The one writer of tensor files, shared by our own shards (key: the document id) and external
    datasets (key: their id column, or file and row), so both give the same format and the same
    holdout rule. A document without tokens is skipped and counted. On any error every partial
    file is removed before the exception propagates: a file exists complete or not at all.
    """
    dtype = token_dtype(loaded.vocab_size)
    writers = {split: _SplitWriter(tokens_paths[split], dtype) for split in SPLITS}
    docs_in = docs_empty = 0
    splits: dict[str, dict[str, Any]] = {}
    try:
        for keys, encoded in batches:
            holdout = [in_holdout(key, holdout_fraction) for key in keys]
            docs_in += len(keys)
            for split, keep in (("train", False), ("holdout", True)):
                chosen = [enc for enc, h in zip(encoded, holdout, strict=True) if h is keep and enc]
                if chosen:
                    flat, lengths = _flatten(chosen, loaded.eos_id)
                    writers[split].write(flat, lengths)
            docs_empty += sum(1 for enc in encoded if not enc)
        for split, writer in writers.items():
            info = writer.finish()
            if info is not None:
                tokens_path = writer.tokens_path
                docs_path = tokens_path.with_name(tokens_path.name[: -len(TOKENS_SUFFIX)] + DOCS_SUFFIX)
                splits[split] = {**info, "tokens_path": tokens_path.relative_to(out).as_posix(),
                                 "docs_path": docs_path.relative_to(out).as_posix()}
    except BaseException:
        for writer in writers.values():
            writer.abort()
        raise
    return WrittenTensors(splits, docs_in, docs_empty)


def tokenize_shard(data_root: Path, shard: InputShard, out: Path, settings: TokenizeSettings) -> dict[str, Any]:
    """Tokenize one document shard into train/holdout tensors; return its record (JSON-able).

    Re-runs skip a shard whose marker matches its checksum, the tokenizer hash and settings
    and whose files are intact. A shard that cannot be read is not raised: its record says
    ``failed`` with an error naming the file and the row batch, and no partial file is left.
    """
    started = time.perf_counter()
    loaded = settings.load()
    source_path = data_root / shard.rel_path
    expect = {"input": shard.rel_path, "input_sha256": sha256_file(source_path),
              "tokenizer_hash": loaded.hash, "settings": settings.output_fields(), "version": __version__}
    marker = Marker(marker_path(out, shard), expect)
    done = finished_record(marker, out)
    if done is not None:
        return done
    dtype = token_dtype(loaded.vocab_size)
    record: dict[str, Any] = {**expect, "source": shard.source, "language": shard.language,
                              "labels": list(shard.labels), "dtype": dtype.str, "status": "done",
                              "error": None, "docs_in": 0, "docs_empty": 0, "splits": {}}
    try:
        paths = {split: split_paths(out, split, shard)[0] for split in SPLITS}
        written = write_tensors(_encode_batches(source_path, settings, loaded), paths, out, loaded,
                                settings.holdout_fraction)
        record.update(splits=written.splits, docs_in=written.docs_in, docs_empty=written.docs_empty)
    except Exception as exc:  # a corrupt shard must not end the run
        record.update(status="failed", error=f"{source_path}: {type(exc).__name__}: {exc}", splits={})
        record["seconds"] = time.perf_counter() - started
        return record
    record["seconds"] = round(time.perf_counter() - started, 3)
    finish_record(marker, record, out)
    return record


# -- the whole tensor set -------------------------------------------------------------------
def library_versions() -> dict[str, str]:
    """Versions of what shaped the bytes, for ``metadata.json``."""
    versions = {"kinda-llama": __version__}
    for name in ("tokenizers", "numpy", "pyarrow"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "unknown"
    return versions


def write_metadata(
    out: Path, records: Sequence[dict[str, Any]], settings: TokenizeSettings, labels: Sequence[str] = (),
    extra: dict[str, Any] | None = None, shard_keys: Sequence[str] = (),
) -> dict[str, Any]:
    """Write ``metadata.json`` and ``tokenizer.json`` for the finished shards; return the metadata.

    Shards are listed in path order so the file, and every loader's order, is deterministic.
    ``extra`` adds top-level keys and ``shard_keys`` copies more of each record into its shard
    entry (external datasets record their drops and host share there); readers ignore both.
    """
    loaded = settings.load()
    done = sorted((r for r in records if r.get("status") == "done"), key=lambda r: r["input"])
    totals = {split: {"tokens": sum(r["splits"].get(split, {}).get("tokens", 0) for r in done),
                      "docs": sum(r["splits"].get(split, {}).get("docs", 0) for r in done)} for split in SPLITS}
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "dtype": token_dtype(loaded.vocab_size).str,
        "tokenizer": {**loaded.describe(), "source": released_source(loaded.source), "file": TOKENIZER_NAME},
        "settings": settings.output_fields(),
        "labels": sorted(set(labels)),
        "libraries": library_versions(),
        "totals": totals,
        "shards": [
            {"input": r["input"], "input_sha256": r["input_sha256"], "source": r["source"],
             "language": r["language"], "labels": r["labels"], "splits": r["splits"],
             **{key: r[key] for key in shard_keys if key in r}}
            for r in done
        ],
        **(extra or {}),
    }
    write_json_atomic(out / TOKENIZER_NAME, loaded.config)
    write_json_atomic(out / METADATA_NAME, metadata)
    return metadata


def read_metadata(root: Path) -> dict[str, Any]:
    """Load and check a tensor set's ``metadata.json``."""
    path = Path(root) / METADATA_NAME
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise TensorFormatError(f"{path}: no metadata.json (not a tensor set)") from exc
    except json.JSONDecodeError as exc:
        raise TensorFormatError(f"{path}: unreadable metadata ({exc})") from exc
    if metadata.get("format") != FORMAT or metadata.get("format_version") != FORMAT_VERSION:
        raise TensorFormatError(f"{path}: format {metadata.get('format')!r} v{metadata.get('format_version')} "
                                f"is not {FORMAT} v{FORMAT_VERSION}")
    check_metadata_paths(metadata, Path(root), str(path))  # every file it names stays inside root
    return metadata


def open_tokens(tokens_path: Path, docs_path: Path, dtype: str) -> tuple[np.memmap, np.ndarray]:
    """Memory-map a token file and load its offsets; refuse a file whose size disagrees with its index."""
    offsets = np.load(docs_path, mmap_mode=None)
    if offsets.ndim != 1 or offsets.dtype != np.int64 or len(offsets) < 2 or offsets[0] != 0 \
            or np.any(np.diff(offsets) <= 0):
        raise TensorFormatError(f"{docs_path}: not a valid document index")
    itemsize = np.dtype(dtype).itemsize
    size = tokens_path.stat().st_size
    if size != int(offsets[-1]) * itemsize:
        raise TensorFormatError(f"{tokens_path}: {size} bytes but its index {docs_path.name} says "
                                f"{int(offsets[-1])} tokens x {itemsize} bytes = {int(offsets[-1]) * itemsize}")
    return np.memmap(tokens_path, dtype=np.dtype(dtype), mode="r"), offsets


# -- Megatron export ------------------------------------------------------------------------
MEGATRON_MAGIC = b"MMIDIDX\x00\x00"
#: Megatron-LM ``DType`` codes (megatron/core/datasets/indexed_dataset.py).
MEGATRON_DTYPE_CODES = {"<u2": 8, "<i4": 4, "<i8": 5, "|u1": 1}


#: Why an empty split has no Megatron pair (recorded in metadata.json's ``megatron``).
EMPTY_SPLIT_NOTE = ("no documents in this split: megatron-core cannot map an empty .bin "
                    "(ValueError: cannot mmap an empty file), so no pair is written")


def export_megatron(root: Path, prefix: Path, split: str = "train",
                    sources: Sequence[str] = ()) -> dict[str, Any] | None:
    """Write ``<prefix>.bin`` / ``<prefix>.idx`` (Megatron ``MMapIndexedDataset``) from a tensor set.

    One sequence per document (EOS included), one Megatron document per sequence. uint32 tensors
    are written as int32, the widest type Megatron's readers accept (ids stay below 2**31). A
    split without documents (a 0.1% holdout of a small sample) writes nothing, removes a pair an
    earlier run left, and returns None: a 0-byte ``.bin`` is a pair megatron-core cannot open.
    """
    metadata = read_metadata(root)
    dtype = np.dtype(metadata["dtype"])
    out_dtype = dtype if dtype.str in MEGATRON_DTYPE_CODES else np.dtype("<i4")
    lengths: list[np.ndarray] = []
    bin_path, idx_path = Path(f"{prefix}.bin"), Path(f"{prefix}.idx")
    chosen = [info for shard in metadata["shards"] if (info := shard["splits"].get(split)) is not None
              and (not sources or shard["source"] in sources) and int(info["docs"]) > 0]
    if not chosen:
        bin_path.unlink(missing_ok=True)
        idx_path.unlink(missing_ok=True)
        return None
    with atomic_path(bin_path) as tmp, open(tmp, "wb") as handle:
        for info in chosen:
            tokens, offsets = open_tokens(root / info["tokens_path"], root / info["docs_path"], dtype.str)
            if out_dtype == dtype:
                with open(root / info["tokens_path"], "rb") as src:
                    shutil.copyfileobj(src, handle, 1 << 22)
            else:
                handle.write(np.asarray(tokens).astype(out_dtype).tobytes())
            lengths.append(np.diff(offsets))
    sizes = np.concatenate(lengths).astype(np.int32) if lengths else np.zeros(0, np.int32)
    pointers = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1].astype(np.int64) * out_dtype.itemsize, out=pointers[1:])
    doc_idx = np.arange(len(sizes) + 1, dtype=np.int64)
    with atomic_path(idx_path) as tmp, open(tmp, "wb") as handle:
        handle.write(MEGATRON_MAGIC)
        handle.write(struct.pack("<Q", 1))
        handle.write(struct.pack("<B", MEGATRON_DTYPE_CODES[out_dtype.str]))
        handle.write(struct.pack("<Q", len(sizes)))
        handle.write(struct.pack("<Q", len(doc_idx)))
        handle.write(sizes.tobytes())
        handle.write(pointers.tobytes())
        handle.write(doc_idx.tobytes())
    return {"bin": str(bin_path), "idx": str(idx_path), "sequences": len(sizes), "tokens": int(sizes.sum())}


def export_megatron_splits(root: Path, directory: Path) -> dict[str, dict[str, Any]]:
    """Export every split to ``<directory>/<split>_text_document``; return what metadata.json
    records per split: the prefix (relative to ``root``) with its counts, or why it was skipped."""
    notes: dict[str, dict[str, Any]] = {}
    for split in SPLITS:
        prefix = directory / f"{split}_text_document"
        result = export_megatron(root, prefix, split)
        where = prefix.relative_to(root).as_posix() if prefix.is_relative_to(root) else str(prefix)
        notes[split] = {"skipped": EMPTY_SPLIT_NOTE} if result is None else {
            "prefix": where, "sequences": result["sequences"], "tokens": result["tokens"]}
    return notes


def read_megatron_index(idx_path: Path) -> dict[str, Any]:
    """Parse a Megatron ``.idx`` (to verify an export without Megatron installed)."""
    data = Path(idx_path).read_bytes()
    if data[:9] != MEGATRON_MAGIC:
        raise TensorFormatError(f"{idx_path}: not a Megatron MMIDIDX index")
    version, code, count, doc_count = struct.unpack_from("<QBQQ", data, 9)
    codes = {v: k for k, v in MEGATRON_DTYPE_CODES.items()}
    pos = 9 + 8 + 1 + 8 + 8
    sizes = np.frombuffer(data, np.int32, count, pos)
    pos += sizes.nbytes
    pointers = np.frombuffer(data, np.int64, count, pos)
    pos += pointers.nbytes
    doc_idx = np.frombuffer(data, np.int64, doc_count, pos)
    return {"version": version, "dtype": codes[code], "sizes": sizes, "pointers": pointers, "doc_idx": doc_idx}
