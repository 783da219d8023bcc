"""The one record that travels between stages, and the record of one that did not make it.

A :class:`Document` is immutable: later stages (dedup, labels, scores) write new shards or side
tables rather than edit documents, so a new threshold costs a re-mix, not a re-parse.
A :class:`Drop` stands for an input record that was not kept, with a machine-readable reason;
readers and steps yield them instead of raising, so one bad record never ends a run and every
input record is accounted for as kept or dropped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: BCP-47's "undetermined": the language of documents whose language nobody determined (no language
#: ID, or one that named none) and of records dropped before theirs was known. Their shards live under
#: ``docs/<source>/und/`` and record ``und`` as their language, in the Parquet metadata and the
#: manifest alike; NULL in the manifest is kept for "no one language: each document has its own".
UNDETERMINED = "und"
#: BCP-47's "multiple languages": how reports spell a manifest language of NULL, an input (a WARC,
#: a Reddit month) or a shard under a folder that is no language (a GSM8K variant) whose documents
#: each carry their own.
MULTIPLE = "mul"


def make_doc_id(source: str, local_id: str) -> str:
    """Return a stable id for a document from its source and the source's own id.

    The id is readable enough to tell sources apart (``wikipedia-…``) and, being a hash of
    both parts, is the same on every run and every machine, so matches and labels recorded
    against it stay valid when a corpus is rebuilt.
    """
    digest = hashlib.sha256(f"{source}\x00{local_id}".encode()).hexdigest()
    return f"{source}-{digest[:24]}"


@dataclass(frozen=True, slots=True)
class Document:
    """A document: stable ``id``, cleaned ``text``, ``source`` name and free-form ``meta``.

    ``meta`` holds url, title, language, timestamp and source-specific fields; it is stored as
    a JSON string in shards so that every source shares one Parquet schema.
    """

    id: str
    text: str
    source: str
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def language(self) -> str | None:
        """The document's language code, if its source knows it."""
        value = self.meta.get("language")
        return str(value) if value is not None else None

    def meta_json(self) -> str:
        """Serialize ``meta`` canonically (sorted keys) so shard bytes are reproducible."""
        return json.dumps(self.meta, sort_keys=True, ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True)
class Drop:
    """An input record that was not kept.

    ``reason`` is a short stable key (``redirect``, ``invalid_utf8``, ``duplicate_exact``) that
    the manifest counts; ``record`` names the record inside its file (page title and id, WARC
    record id, line number) so a user can find it; ``detail`` carries an error message when
    the drop came from bad input rather than a filter decision.
    """

    reason: str
    record: str
    detail: str = ""
    language: str | None = None

    @property
    def is_error(self) -> bool:
        """True when the record was dropped because it could not be read, not by a filter."""
        return bool(self.detail)


@dataclass(frozen=True)
class InputSpec:
    """One input of a run: where the user said it is, the local file to read, its unique key."""

    location: str
    path: Path
    key: str

    def fingerprint(self) -> dict[str, int]:
        """Cheap identity of the local file (size, mtime) for resume checks."""
        stat = self.path.stat()
        return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
