"""Paragraph (line) dedup across a group of inputs, in bounded memory (cc_net's main cleaning step).

cc_net removes every line whose normalized form was already seen in its group of shards; most
of what goes is boilerplate (menus, cookie banners, footers). The same machinery serves C4's
sentence-span dedup: the unit is anything the caller hashes, in a fixed order.

Three steps, each cheap to resume:

1. per input, :class:`UnitHashWriter` appends one uint64 hash per unit (line) to ``<name>.u64``
   and the number of units per document to ``<name>.counts`` (raw little-endian arrays, 8 and
   4 bytes per entry; written under a temporary name and renamed);
2. per group, :func:`mark_duplicates` finds every unit whose hash occurred earlier in the group
   (inputs in the given order, then document, then unit order) and writes a 0/1 byte per unit
   to ``<name>.dup``;
3. per input again, :class:`DuplicateMasks` hands each document its slice of the mask.

Memory bound: step 2 splits the group's hashes into ``B`` buckets by ``hash % B`` and handles one
bucket at a time, with ``B = ceil(units * BYTES_PER_UNIT / memory_bytes)``; a bucket's working
set is its hashes, their positions and the sort's scratch, about ``BYTES_PER_UNIT`` bytes per
unit. Each input's hash file is memory-mapped and scanned once per bucket, and masks are
memory-mapped files, so neither the group's size nor its number of inputs is limited by RAM
(the largest single input needs about 9 bytes per unit for a bucket's selection).
No Python objects per line: arrays only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash

from core.atomic import AtomicOutput

#: Peak bytes per unit of one bucket in :func:`mark_duplicates` (hash, position, sort scratch).
BYTES_PER_UNIT = 48
HASH_DTYPE = np.dtype("<u8")
COUNT_DTYPE = np.dtype("<u4")
MASK_DTYPE = np.dtype("u1")


def hash_units(units: Iterable[str]) -> np.ndarray:
    """64-bit xxh3 hashes of ``units`` (already normalized), as a uint64 array."""
    intdigest = xxhash.xxh3_64_intdigest
    return np.fromiter((intdigest(unit.encode("utf-8")) for unit in units), dtype=HASH_DTYPE)


@dataclass(frozen=True)
class UnitFiles:
    """The three files of one input: hashes, units per document, duplicate mask."""

    stem: Path

    @property
    def hashes(self) -> Path:
        return self.stem.with_name(self.stem.name + ".u64")

    @property
    def counts(self) -> Path:
        return self.stem.with_name(self.stem.name + ".counts")

    @property
    def mask(self) -> Path:
        return self.stem.with_name(self.stem.name + ".dup")


class UnitHashWriter:
    """Appends each document's unit hashes to an input's files; renamed into place by :meth:`close`."""

    def __init__(self, files: UnitFiles) -> None:
        self.files = files
        self._hash_out = AtomicOutput(files.hashes)
        self._count_out = AtomicOutput(files.counts)
        self._hash_fh = open(self._hash_out.path, "wb")  # noqa: SIM115 - closed in close/abort
        self._count_fh = open(self._count_out.path, "wb")  # noqa: SIM115
        self.units = 0
        self.documents = 0

    def add(self, hashes: np.ndarray) -> None:
        """Record one document's hashes (in unit order)."""
        self._hash_fh.write(np.ascontiguousarray(hashes, dtype=HASH_DTYPE).tobytes())
        self._count_fh.write(np.array([len(hashes)], dtype=COUNT_DTYPE).tobytes())
        self.units += len(hashes)
        self.documents += 1

    def close(self) -> None:
        """Finish both files."""
        self._hash_fh.close()
        self._count_fh.close()
        self._hash_out.commit()
        self._count_out.commit()

    def abort(self) -> None:
        """Discard both temporary files."""
        self._hash_fh.close()
        self._count_fh.close()
        self._hash_out.abort()
        self._count_out.abort()


def _map(path: Path, dtype: np.dtype) -> np.ndarray:
    """Memory-map a raw array file (an empty file gives an empty array)."""
    if path.stat().st_size == 0:
        return np.empty(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r")


@dataclass(frozen=True)
class DedupStats:
    """What :func:`mark_duplicates` found in one group."""

    units: int
    duplicates: int
    buckets: int


def mark_duplicates(inputs: Sequence[UnitFiles], memory_bytes: int) -> DedupStats:
    """Write each input's duplicate mask: 1 where the unit's hash occurred earlier in the group.

    "Earlier" is the order of ``inputs``, then unit order inside each input, so the result does
    not depend on how many workers produced the hash files or in which order.
    """
    arrays = [_map(files.hashes, HASH_DTYPE) for files in inputs]
    offsets = np.concatenate([[0], np.cumsum([len(a) for a in arrays], dtype=np.int64)])
    total = int(offsets[-1])
    buckets = max(1, math.ceil(total * BYTES_PER_UNIT / max(memory_bytes, 1)))
    masks = [np.zeros(len(a), dtype=MASK_DTYPE) if len(a) == 0 else None for a in arrays]
    outputs = [AtomicOutput(files.mask) for files in inputs]
    tmp_paths = [o.path for o in outputs]
    try:
        for index, array in enumerate(arrays):
            if len(array):
                masks[index] = np.memmap(tmp_paths[index], dtype=MASK_DTYPE, mode="w+", shape=(len(array),))
            else:
                tmp_paths[index].write_bytes(b"")
        duplicates = sum(_mark_bucket(arrays, offsets, masks, bucket, buckets) for bucket in range(buckets))
        for mask in masks:
            if isinstance(mask, np.memmap):
                mask.flush()
        del masks
        for output in outputs:
            output.commit()
    except BaseException:
        for output in outputs:
            output.abort()
        raise
    return DedupStats(units=total, duplicates=duplicates, buckets=buckets)


def _mark_bucket(
    arrays: Sequence[np.ndarray], offsets: np.ndarray, masks: Sequence[np.ndarray | None], bucket: int,
    buckets: int,
) -> int:
    """Mark the duplicates among the hashes with ``hash % buckets == bucket``; return how many."""
    hashes, positions = [], []
    for index, array in enumerate(arrays):
        if not len(array):
            continue
        if buckets == 1:
            selected = np.arange(len(array), dtype=np.int64)
            hashes.append(np.asarray(array))
        else:
            selected = np.flatnonzero(array % np.uint64(buckets) == bucket)
            hashes.append(array[selected])
        positions.append(selected + offsets[index])
    if not hashes:
        return 0
    all_hashes = np.concatenate(hashes)
    all_positions = np.concatenate(positions)
    del hashes, positions
    # np.unique with return_index sorts stably, so the index is each hash's first position
    _, first = np.unique(all_hashes, return_index=True)
    is_duplicate = np.ones(len(all_hashes), dtype=bool)
    is_duplicate[first] = False
    duplicate_positions = all_positions[is_duplicate]
    owners = np.searchsorted(offsets, duplicate_positions, side="right") - 1
    for index in np.unique(owners):
        mask = masks[index]
        assert mask is not None
        mask[duplicate_positions[owners == index] - offsets[index]] = 1
    return len(duplicate_positions)


class DuplicateMasks:
    """Reads an input's mask back, one document's slice at a time, in the order it was written."""

    def __init__(self, files: UnitFiles) -> None:
        self.files = files
        self._counts = _map(files.counts, COUNT_DTYPE)
        self._mask = _map(files.mask, MASK_DTYPE)
        hashes_size = files.hashes.stat().st_size // HASH_DTYPE.itemsize
        if len(self._mask) != hashes_size or int(self._counts.sum(dtype=np.int64)) != len(self._mask):
            raise ValueError(f"{files.stem}: mask, hashes and counts disagree (stale or partial files)")

    def __len__(self) -> int:
        return len(self._counts)

    def __iter__(self) -> Iterator[np.ndarray]:
        start = 0
        for count in self._counts:
            end = start + int(count)
            yield np.asarray(self._mask[start:end], dtype=bool)
            start = end


def keep_unmarked(units: Sequence[str], mask: np.ndarray) -> list[str]:
    """The units whose mask entry is 0; raises if the lengths differ (the text changed since hashing)."""
    if len(units) != len(mask):
        raise ValueError(f"{len(units)} units but a mask of {len(mask)}: text changed after hashing")
    return [unit for unit, duplicate in zip(units, mask.tolist(), strict=True) if not duplicate]
