"""Document shards: zstd Parquet files any tool can read (pyarrow, DuckDB, HF ``datasets``).

Schema: ``id``, ``text``, ``source`` (strings) and ``meta`` (a JSON string, so every source
shares one schema and shards of different sources can be read as one table). Shard-level facts
(source, labels, config hash) go into the Parquet key-value metadata as well as the manifest.
Nothing time- or run-dependent is written into a shard, so the same input and config always
give byte-identical files, which is what makes resume and verification simple.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from core.arrow_columns import arrow_table
from core.atomic import AtomicOutput, sha256_file
from core.document import Document

SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("meta", pa.string(), nullable=False),
    ]
)

#: Key prefix for our entries in the Parquet file metadata.
META_PREFIX = "kinda."


@dataclass(frozen=True)
class ShardLimits:
    """When to start a new shard (whichever bound is hit first), and row group bounds.

    Row groups are bounded in bytes as well as documents so that the writer's memory does not
    depend on how long documents are (a row group is buffered in memory before it is written).
    """

    max_docs: int = 100_000
    max_bytes: int = 256 * 1024 * 1024
    row_group_docs: int = 2_000
    row_group_bytes: int = 16 * 1024 * 1024
    compression_level: int = 3


@dataclass
class ShardInfo:
    """What the manifest records about one finished shard."""

    path: str
    source: str
    language: str | None
    docs: int
    text_bytes: int
    bytes: int
    sha256: str
    labels: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict, for JSON resume markers and manifest rows."""
        return asdict(self)


def documents_to_table(docs: Sequence[Document]) -> pa.Table:
    """Convert documents to an Arrow table in the shard schema."""
    return arrow_table(
        {
            "id": [d.id for d in docs],
            "text": [d.text for d in docs],
            "source": [d.source for d in docs],
            "meta": [d.meta_json() for d in docs],
        },
        SCHEMA,
    )


class ShardWriter:
    """Write documents to size-bounded shards ``<directory>/<prefix>-00000.parquet``, ...

    Each shard is written under a ``.tmp`` name and renamed when closed, so a crash never
    leaves a truncated file under a final name. ``root`` is the output root: shard paths in
    :class:`ShardInfo` are relative to it, so an output directory can be moved or synced.
    """

    def __init__(
        self,
        root: Path,
        directory: Path,
        prefix: str,
        source: str,
        language: str | None = None,
        labels: Sequence[str] = (),
        limits: ShardLimits | None = None,
        file_metadata: Mapping[str, str] | None = None,
    ) -> None:
        self.root = root
        self.directory = directory
        self.prefix = prefix
        self.source = source
        self.language = language
        self.labels = list(labels)
        self.limits = limits or ShardLimits()
        self.file_metadata = dict(file_metadata or {})
        self.finished: list[ShardInfo] = []
        self._buffer: list[Document] = []
        self._buffer_bytes = 0
        self._writer: pq.ParquetWriter | None = None
        self._tmp_cm: Any = None
        self._path: Path | None = None
        self._docs = 0
        self._text_bytes = 0

    def _schema_with_metadata(self) -> pa.Schema:
        meta = {
            f"{META_PREFIX}source": self.source,
            f"{META_PREFIX}language": self.language or "",
            f"{META_PREFIX}labels": json.dumps(self.labels),
        }
        meta.update({f"{META_PREFIX}{k}": v for k, v in sorted(self.file_metadata.items())})
        return SCHEMA.with_metadata(meta)

    def _open(self) -> None:
        index = len(self.finished)
        self._path = self.directory / f"{self.prefix}-{index:05d}.parquet"
        self._output = AtomicOutput(self._path)
        self._writer = pq.ParquetWriter(
            self._output.path,
            self._schema_with_metadata(),
            compression="zstd",
            compression_level=self.limits.compression_level,
            write_statistics=["id"],
        )
        self._docs = 0
        self._text_bytes = 0

    def write(self, doc: Document) -> None:
        """Add one document; flush a row group or roll to a new shard when a bound is hit."""
        if self._writer is None:
            self._open()
        self._buffer.append(doc)
        size = len(doc.text.encode("utf-8"))
        self._docs += 1
        self._text_bytes += size
        self._buffer_bytes += size
        if len(self._buffer) >= self.limits.row_group_docs or self._buffer_bytes >= self.limits.row_group_bytes:
            self._flush()
        if self._docs >= self.limits.max_docs or self._text_bytes >= self.limits.max_bytes:
            self._close_shard()

    def write_all(self, docs: Iterable[Document]) -> None:
        """Write every document of an iterable."""
        for doc in docs:
            self.write(doc)

    def _flush(self) -> None:
        if self._buffer and self._writer is not None:
            self._writer.write_table(documents_to_table(self._buffer))
            self._buffer = []
            self._buffer_bytes = 0

    def _close_shard(self) -> None:
        if self._writer is None or self._path is None:
            return
        self._flush()
        self._writer.close()
        self._output.commit()
        self.finished.append(
            ShardInfo(
                path=self._path.relative_to(self.root).as_posix(),
                source=self.source,
                language=self.language,
                docs=self._docs,
                text_bytes=self._text_bytes,
                bytes=self._path.stat().st_size,
                sha256=sha256_file(self._path),
                labels=list(self.labels),
            )
        )
        self._writer = None
        self._path = None

    def close(self) -> list[ShardInfo]:
        """Finish the open shard (if any) and return every shard written."""
        self._close_shard()
        return self.finished

    def abort(self) -> None:
        """Discard the open shard's temporary file after an error."""
        if self._writer is not None:
            self._writer.close()
            self._output.abort()
            self._writer = None

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def read_documents(path: Path, batch_size: int = 1_000) -> Iterator[Document]:
    """Stream documents back from a shard, one row group batch at a time."""
    parquet = pq.ParquetFile(path)
    for batch in parquet.iter_batches(batch_size=batch_size):
        columns = batch.to_pydict()
        for doc_id, text, source, meta in zip(
            columns["id"], columns["text"], columns["source"], columns["meta"], strict=True
        ):
            yield Document(id=doc_id, text=text, source=source, meta=json.loads(meta))


def shard_metadata(path: Path) -> dict[str, str]:
    """Return our key-value metadata of a shard, without the ``kinda.`` prefix."""
    raw = pq.read_schema(path).metadata or {}
    return {
        k.decode()[len(META_PREFIX) :]: v.decode()
        for k, v in raw.items()
        if k.decode().startswith(META_PREFIX)
    }
