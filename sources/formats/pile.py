"""The Pile (v1): stream ``*.jsonl.zst`` shards, one ``{"text", "meta": {"pile_set_name"}}`` per line.

The Pile is our dedup *reference* (G.3 = LLaMA minus the Pile), so what matters most is that
every reference document keeps a stable, human-checkable address: the shard's file name and the
1-based line number inside the decompressed shard. A match found months later can be checked
with ``zstdcat 00.jsonl.zst | sed -n 123p``.

Reading is streamed (zstd frame by frame, one line at a time) and never raises for one bad line:
non-UTF-8 bytes, invalid JSON, a missing or non-string ``text``, and empty text each become a
counted :class:`~core.document.Drop` naming shard and line; a truncated or corrupt ``.zst``
ends the shard with one ``truncated_input`` drop after everything readable was yielded.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from core.document import Document, InputSpec, make_doc_id
from core.layout import slug
from core.pile_format import MAX_LINE_BYTES, UNKNOWN_SET, PileLine, iter_pile
from core.steps import Record, Step

SOURCE = "pile"


def pile_document(line: PileLine) -> Document:
    """A Pile line as a pipeline Document (used when the Pile is processed as a source)."""
    return Document(
        id=make_doc_id(SOURCE, line.address),
        text=line.text,
        source=SOURCE,
        meta={"pile_set_name": line.pile_set_name, "shard": line.shard, "line": line.line},
    )


@dataclass(frozen=True)
class PileRecipe:
    """The Pile as a :class:`core.pipeline.SourceRecipe` (e.g. as an extension source of G.2)."""

    name: str = SOURCE
    #: A longer line is a ``record_too_large`` drop, skipped unread (the size bound of one record).
    max_line_bytes: int = MAX_LINE_BYTES

    def input_language(self, spec: InputSpec) -> str | None:
        """The Pile is mostly English but mixes code and other languages: no single language."""
        return None

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Yield the shard's documents and drops."""
        for item in iter_pile(spec.path, spec.path.name, self.max_line_bytes):
            yield pile_document(item) if isinstance(item, PileLine) else item

    def steps(self) -> Sequence[Step]:
        """None: the Pile was already filtered by its authors."""
        return []

    def partition(self, doc: Document) -> str:
        """One directory per Pile subset (``Pile-CC``, ``ArXiv``, ...)."""
        return slug(str(doc.meta.get("pile_set_name", UNKNOWN_SET)))
