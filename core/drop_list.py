"""One input's rows of the run's drop list, walked beside its staged documents in bounded memory.

Why: finalize reads an input's staged documents in order and leaves out those on the drop list
(exact duplicates, near duplicates, Pile matches). The list is sorted by (input key, ordinal),
so it can be read a batch at a time in step with the documents: holding it whole (a Python
dict per row) took ~500 MB for a 2 GB dump with 440 K duplicates. On the way the rows are
written back beside the shards (``kinda dedup explain`` reads them), counted per (step, reason,
language), and the first ones with a detail are kept as error-table examples.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from core.atomic import AtomicOutput

_COLUMNS = ("ordinal", "step", "reason", "id", "detail")
_BATCH_ROWS = 65_536


class DropListWalk:
    """The drop rows of ``key`` from ``path`` (the run's list), in ordinal order, one batch held at a time.

    ``pending`` is the next dropped ordinal (None past the last); :meth:`take` counts it with the
    document's language and moves on. :meth:`finish` counts rows past the last document (their
    language unknown) and commits the rows to ``target``. A list out of ordinal order for the
    input is an error naming the file: it could not be walked in step.
    """

    def __init__(self, path: Path, key: str, target: Path, schema: pa.Schema, examples: int) -> None:
        self.path, self.key, self.schema = path, key, schema
        self.counts: Counter[tuple[str, str, str]] = Counter()
        self.examples: list[dict[str, str]] = []
        self.rows = 0
        self._room = max(0, examples)
        self._output = AtomicOutput(target)
        self._writer = pq.ParquetWriter(self._output.path, schema, compression="zstd")
        self._iter = self._read()
        self._next: tuple[Any, ...] | None = next(self._iter, None)

    @property
    def pending(self) -> int | None:
        return None if self._next is None else int(self._next[0])

    def _read(self) -> Iterator[tuple[Any, ...]]:
        if not self.path.exists():
            return
        import pyarrow.dataset as ds  # ~0.5 CPU-s with pandas: paid by the walk, not by every importer

        dataset = ds.dataset(self.path, format="parquet")
        batches = dataset.to_batches(columns=list(self.schema.names), filter=ds.field("input_key") == self.key,
                                     batch_size=_BATCH_ROWS, use_threads=False)
        previous = -1
        for batch in batches:
            table = pa.Table.from_batches([batch]).cast(self.schema)
            self._writer.write_table(table)
            for row in zip(*(table.column(name).to_pylist() for name in _COLUMNS), strict=True):
                if row[0] <= previous:
                    raise ValueError(f"{self.path}: the drop list of {self.key} is not in ordinal order "
                                     f"(ordinal {row[0]} after {previous})")
                previous = row[0]
                yield row

    def take(self, language: str) -> None:
        """Count the pending drop (its document's language given) and move to the next one."""
        assert self._next is not None
        _, step, reason, doc_id, detail = self._next
        self.rows += 1
        self.counts[(step, reason, language)] += 1
        if detail and len(self.examples) < self._room:
            self.examples.append({"step": step, "reason": reason, "record": doc_id, "detail": detail})
        self._next = next(self._iter, None)

    def finish(self) -> None:
        """Count the rest (no document: language unknown) and commit the rows beside the shards."""
        while self._next is not None:
            self.take("")
        self._writer.close()
        self._output.commit()

    def abort(self) -> None:
        self._writer.close()
        self._output.abort()

    def drop_counts(self) -> list[dict[str, Any]]:
        """Counts per (step, reason, language), sorted as the manifest lists them."""
        return [{"step": step, "reason": reason, "language": lang or None, "count": n}
                for (step, reason, lang), n in sorted(self.counts.items())]
