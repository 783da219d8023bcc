"""Locality-sensitive hashing over MinHash signatures, in memory or out of core.

A signature of ``num_perm`` values is cut into ``bands`` bands of ``rows`` values; two documents
become *candidates* when any band is equal, which happens with probability
``1 - (1 - J**rows)**bands`` for Jaccard similarity ``J``. Candidates are then *verified*: their
estimated Jaccard (the fraction of equal signature values) must reach the threshold, which
removes most of the false candidates that the band S-curve lets through.

Two ways to find candidates, same results:

* **In memory** (:class:`InMemoryLSH`), datasketch's ``MinHashLSH``: fine for small runs and
  tests, and the way to a shared Redis-backed index (:mod:`dedupe.redis_index`).
* **Out of core**: each shard's band keys go to Parquet files partitioned by band
  (``band=07/<shard>.parquet``: key, doc); one DuckDB self-join (or join against a reference
  index) per band finds equal keys, spilling to disk under a memory limit. Signatures stay in
  ``.npy`` files read through memory maps (:class:`SignatureStore`), so neither the index nor
  the signatures live in Python objects; memory is bounded by DuckDB's ``memory_limit`` plus one
  verification batch.

Band layouts (RECIPES.md, RedPajama-v2): Jaccard 0.7 -> 14 x 9, 0.8 -> 9 x 13, 0.9 -> 5 x 25.
They balance false positives against false negatives, so the S-curve midpoint sits a little
above the nominal threshold (``(1/bands)**(1/rows)``: 0.75, 0.84, 0.94); a recall-first layout
such as 16 x 8 finds nearly every pair at 0.8 at the cost of more candidates to verify.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.arrow_columns import arrow_table
from core.atomic import AtomicOutput, atomic_path
from dedupe.minhash import is_empty
from dedupe.shingles import fmix64_inplace

#: RedPajama-v2 layouts for 128 permutations: threshold -> (bands, rows).
BAND_LAYOUTS: dict[str, tuple[int, int]] = {"0.7": (14, 9), "0.8": (9, 13), "0.9": (5, 25)}
BAND_SCHEMA = pa.schema([pa.field("key", pa.uint64()), pa.field("doc", pa.int64())])
PAIR_SCHEMA = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.int64()), pa.field("jaccard", pa.float32())])
_BAND_SALT = 0x9E3779B97F4A7C15
#: Rows per row group of a band file. Each ``write_table`` costs a fixed ~0.2 ms; a group per
#: 1,024-document batch made ~1,000 of them per Pile shard, a fifth of the index build's CPU.
BAND_ROW_GROUP = 1 << 14
#: How band files are written. A key is a random 64-bit value: a dictionary never pays for it,
#: and Parquet's writer builds one anyway before it falls back, which cost more CPU and bytes
#: (336 -> 263 bytes per document for 28 bands) than the plain encoding.
BAND_PARQUET_OPTIONS: dict[str, object] = {"compression": "zstd", "use_dictionary": False}


@dataclass(frozen=True)
class BandLayout:
    """How a signature is cut into bands, and the estimated Jaccard a candidate must reach."""

    bands: int
    rows: int
    threshold: float

    @classmethod
    def named(cls, name: str, threshold: float | None = None) -> BandLayout:
        """A layout from :data:`BAND_LAYOUTS` (``"0.8"``) or written ``"16x8"``, verified at ``threshold``."""
        if name in BAND_LAYOUTS:
            bands, rows = BAND_LAYOUTS[name]
            return cls(bands, rows, float(name) if threshold is None else threshold)
        try:
            bands_text, rows_text = name.lower().split("x")
            bands, rows = int(bands_text), int(rows_text)
        except ValueError as exc:
            raise ValueError(f"unknown band layout {name!r}: use one of {sorted(BAND_LAYOUTS)} or BxR") from exc
        if threshold is None:
            raise ValueError(f"layout {name!r} needs an explicit threshold")
        return cls(bands, rows, threshold)

    @property
    def name(self) -> str:
        """``"9x13"``: names band-key directories, so layouts never mix."""
        return f"{self.bands}x{self.rows}"

    def check(self, num_perm: int) -> None:
        """Refuse a layout that needs more permutations than the signatures have."""
        if self.bands * self.rows > num_perm:
            raise ValueError(f"layout {self.name} needs {self.bands * self.rows} permutations, have {num_perm}")

    def candidate_probability(self, jaccard: float) -> float:
        """Probability that a pair with this Jaccard shares at least one band."""
        return 1.0 - (1.0 - jaccard**self.rows) ** self.bands


def band_keys(signatures: np.ndarray, layout: BandLayout) -> np.ndarray:
    """A ``(docs, bands)`` uint64 array: one 64-bit key per band, chained through fmix64.

    A 64-bit key instead of the band's raw bytes keeps band tables small and joins fast;
    a key collision only adds a candidate, which verification then rejects.

    Every band is chained at once, one row position at a time (``rows`` array steps over all
    bands instead of ``bands * rows`` steps over one column each: the same keys, ~10x fewer
    numpy calls on 1,024-document batches). The result is column-major, so one band's keys
    (``keys[:, band]``, what a band file holds) are contiguous.
    """
    layout.check(signatures.shape[1])
    used = signatures[:, : layout.bands * layout.rows].reshape(len(signatures), layout.bands, layout.rows)
    by_row = np.ascontiguousarray(used.transpose(2, 1, 0), dtype=np.uint64)  # (rows, bands, docs)
    salts = np.array([((band + 1) * _BAND_SALT) & 0xFFFFFFFFFFFFFFFF for band in range(layout.bands)], dtype=np.uint64)
    acc = np.repeat(salts[:, None], len(signatures), axis=1)  # (bands, docs)
    for row in by_row:
        acc ^= row
        fmix64_inplace(acc)
    return acc.T


# -- signatures on disk -----------------------------------------------------------------------
#: Bits kept per signature value: 32 (the whole value) or 16 (its low half; b-bit MinHash).
SIGNATURE_BITS = (32, 16)


def signature_dtype(bits: int) -> str:
    """The little-endian dtype of a signature file holding ``bits`` bits per value."""
    if bits not in SIGNATURE_BITS:
        raise ValueError(f"signatures keep 32 or 16 bits per value, not {bits}")
    return "<u4" if bits == 32 else "<u2"


@dataclass(frozen=True)
class SignaturePart:
    """A raw little-endian file of ``count`` signatures, global numbers ``first ..``.

    Raw files (not ``.npy``) can be written streaming, before the count is known, which a
    7-million-document Pile shard needs; the count lives in the part's metadata instead.
    ``bits``: 32 (uint32 values) or 16 (the values' low 16 bits, what the reference index keeps).
    """

    path: Path
    first: int
    count: int
    num_perm: int = 128
    bits: int = 32

    def open(self) -> np.ndarray:
        """A read-only memory map of the part, shape ``(count, num_perm)``."""
        dtype = signature_dtype(self.bits)
        if self.count == 0:
            return np.empty((0, self.num_perm), dtype=dtype)
        return np.memmap(self.path, dtype=dtype, mode="r", shape=(self.count, self.num_perm))


class SignatureStore:
    """Random access to signatures spread over part files, through short-lived memory maps.

    Global document numbers may be sparse (the reference index numbers part ``p`` from
    ``p << 32``), so parts are found by binary search over their first numbers.
    """

    def __init__(self, parts: Sequence[SignaturePart]) -> None:
        self.parts = sorted(parts, key=lambda p: p.first)
        self._firsts = np.array([p.first for p in self.parts], dtype=np.int64)
        self.num_perm = self.parts[0].num_perm if self.parts else 128
        #: bits every gathered value can be compared on (16 as soon as one part keeps only 16)
        self.bits = min((p.bits for p in self.parts), default=32)

    def gather(self, docs: np.ndarray) -> np.ndarray:
        """Signatures of the given global document numbers, in that order."""
        docs = np.asarray(docs, dtype=np.int64)
        out = np.empty((len(docs), self.num_perm), dtype=np.uint32)
        which = np.searchsorted(self._firsts, docs, side="right") - 1
        for part_index in np.unique(which):
            part = self.parts[int(part_index)]
            rows = np.flatnonzero(which == part_index)
            local = docs[rows] - part.first
            if part_index < 0 or local.min() < 0 or local.max() >= part.count:
                raise IndexError(f"document numbers out of range for {part.path}")
            mapped = part.open()
            order = np.argsort(local, kind="stable")  # sorted reads stay sequential on disk
            out[rows[order]] = mapped[local[order]]
            del mapped
        return out


class SignatureWriter:
    """Append signature blocks to a raw part file, atomically renamed on :meth:`close`.

    With ``bits=16`` each value is cut to its low 16 bits (numpy's wrapping cast) on the way out.
    """

    def __init__(self, path: Path, bits: int = 32) -> None:
        self._dtype = signature_dtype(bits)
        self._output = AtomicOutput(path)
        self._handle = open(self._output.path, "wb")  # noqa: SIM115 - closed in close/abort
        self.count = 0

    def write(self, signatures: np.ndarray) -> None:
        self._handle.write(np.ascontiguousarray(signatures).astype(self._dtype, copy=False).tobytes())
        self.count += len(signatures)

    def close(self) -> int:
        self._handle.close()
        self._output.commit()
        return self.count

    def abort(self) -> None:
        self._handle.close()
        self._output.abort()


def save_signatures(path: Path, signatures: np.ndarray) -> SignaturePart:
    """Write one block of signatures as a part starting at global number 0 (tests, small runs)."""
    writer = SignatureWriter(path)
    writer.write(signatures)
    return SignaturePart(path, 0, writer.close(), signatures.shape[1])


class BandKeyWriter:
    """Stream one part's band keys to ``root/<layout>/band=NN/<part>.parquet`` (one file per band).

    Blocks are gathered until :data:`BAND_ROW_GROUP` rows and written as one row group per band,
    so the files' bytes depend only on the blocks given, not on timing.
    """

    def __init__(self, root: Path, layout: BandLayout, part: str) -> None:
        self.layout = layout
        self._outputs = [AtomicOutput(band_dir(root, layout, band) / f"{part}.parquet") for band in range(layout.bands)]
        self._writers = [pq.ParquetWriter(o.path, BAND_SCHEMA, **BAND_PARQUET_OPTIONS)
                         for o in self._outputs]
        self._keys: list[np.ndarray] = []
        self._docs: list[np.ndarray] = []
        self._pending = 0
        self.rows = 0

    def write(self, signatures: np.ndarray, docs: np.ndarray) -> None:
        """Add a block; documents without shingles are left out (their all-max signatures all collide)."""
        keep = ~is_empty(signatures)
        if not keep.any():
            return
        self._keys.append(band_keys(signatures[keep], self.layout).T)  # (bands, docs): each band contiguous
        self._docs.append(np.asarray(docs, dtype=np.int64)[keep])
        kept = int(keep.sum())
        self._pending += kept
        self.rows += kept
        if self._pending >= BAND_ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        keys = np.concatenate(self._keys, axis=1) if len(self._keys) > 1 else self._keys[0]
        docs = np.concatenate(self._docs) if len(self._docs) > 1 else self._docs[0]
        for band, writer in enumerate(self._writers):
            writer.write_table(arrow_table({"key": keys[band], "doc": docs}, BAND_SCHEMA))
        self._keys, self._docs, self._pending = [], [], 0

    def close(self) -> int:
        self._flush()
        for writer, output in zip(self._writers, self._outputs, strict=True):
            writer.close()
            output.commit()
        return self.rows

    def abort(self) -> None:
        self._keys, self._docs, self._pending = [], [], 0
        for writer, output in zip(self._writers, self._outputs, strict=True):
            writer.close()
            output.abort()


def write_band_keys(signatures: np.ndarray, first_doc: int, layout: BandLayout, root: Path, part: str) -> int:
    """Write one block of signatures' band keys as a whole part; return the rows per band."""
    writer = BandKeyWriter(root, layout, part)
    writer.write(signatures, np.arange(first_doc, first_doc + len(signatures), dtype=np.int64))
    return writer.close()


def band_dir(root: Path, layout: BandLayout, band: int) -> Path:
    """Directory of one band's key files."""
    return root / layout.name / f"band={band:02d}"


# -- candidate pairs by DuckDB joins ---------------------------------------------------------
@dataclass(frozen=True)
class JoinSettings:
    """DuckDB limits for one join task; ``memory_limit`` is the stated memory bound per task."""

    memory_limit: str = "1GB"
    threads: int = 1
    temp_directory: Path | None = None
    max_bucket: int = 64

    def connect(self) -> duckdb.DuckDBPyConnection:
        con = duckdb.connect()
        con.execute(f"SET memory_limit='{self.memory_limit}'")
        con.execute(f"SET threads={int(self.threads)}")
        con.execute("SET preserve_insertion_order=false")
        if self.temp_directory is not None:
            self.temp_directory.mkdir(parents=True, exist_ok=True)
            con.execute(f"SET temp_directory='{self.temp_directory.as_posix()}'")
        return con


def _glob(directory: Path) -> str:
    return (directory / "*.parquet").as_posix()


def band_pairs_within(directory: Path, target: Path, settings: JoinSettings) -> int:
    """Candidate pairs ``a < b`` sharing a key in one band; write them to ``target``; return how many.

    A bucket bigger than ``max_bucket`` (boilerplate shared by thousands of documents) would
    give a quadratic number of pairs; it contributes star edges to its smallest member
    instead, which keeps the cluster connected at linear cost.
    """
    if not any(directory.glob("*.parquet")):
        return _write_empty_pairs(target)
    con = settings.connect()
    try:
        cap = int(settings.max_bucket)
        with atomic_path(target) as tmp:
            con.execute(
                f"""
                COPY (
                  WITH t AS (SELECT key, doc FROM read_parquet('{_glob(directory)}')),
                  g AS (SELECT key, count(*) AS n, min(doc) AS m FROM t GROUP BY key HAVING count(*) > 1)
                  SELECT DISTINCT x.doc AS a, y.doc AS b FROM t x JOIN g USING (key)
                    JOIN t y ON x.key = y.key AND x.doc < y.doc WHERE g.n <= {cap}
                  UNION
                  SELECT g.m AS a, t.doc AS b FROM t JOIN g USING (key) WHERE g.n > {cap} AND t.doc > g.m
                ) TO '{tmp.as_posix()}' (FORMAT parquet, COMPRESSION zstd)
                """
            )
        return parquet_rows(con, target)
    finally:
        con.close()


def band_pairs_against(query_dir: Path, reference_files: Sequence[Path], target: Path,
                       settings: JoinSettings) -> int:
    """Candidate pairs (query doc ``a``, reference doc ``b``) sharing a key in one band.

    ``reference_files`` are named one by one (the committed parts' files), not globbed: a build
    killed between writing a part's band files and committing the part leaves files whose
    documents have no signatures in the index yet (or, re-planned, share numbers with another part).
    """
    if not any(query_dir.glob("*.parquet")) or not reference_files:
        return _write_empty_pairs(target)
    references = json.dumps([p.as_posix() for p in reference_files])
    con = settings.connect()
    try:
        with atomic_path(target) as tmp:
            con.execute(
                f"""
                COPY (
                  SELECT DISTINCT q.doc AS a, r.doc AS b
                  FROM read_parquet('{_glob(query_dir)}') q JOIN read_parquet({references}) r
                  USING (key)
                ) TO '{tmp.as_posix()}' (FORMAT parquet, COMPRESSION zstd)
                """
            )
        return parquet_rows(con, target)
    finally:
        con.close()


def parquet_rows(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    """Rows of a Parquet file (from its footer), through an open DuckDB connection."""
    row = con.execute(f"SELECT count(*) FROM read_parquet('{path.as_posix()}')").fetchone()
    return int(row[0]) if row else 0


def _write_empty_pairs(target: Path) -> int:
    with atomic_path(target) as tmp:
        pq.write_table(pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.int64())}), tmp)
    return 0


def merge_pairs(pair_files: Sequence[Path], target: Path, settings: JoinSettings) -> int:
    """Union of the per-band candidate pairs, each pair once, sorted (deterministic order)."""
    files = [p.as_posix() for p in sorted(pair_files)]
    con = settings.connect()
    try:
        with atomic_path(target) as tmp:
            con.execute(
                f"COPY (SELECT DISTINCT a, b FROM read_parquet({json.dumps(files)}) ORDER BY a, b) "
                f"TO '{tmp.as_posix()}' (FORMAT parquet, COMPRESSION zstd)"
            )
        return parquet_rows(con, target)
    finally:
        con.close()


def verify_pairs(
    pairs: Path,
    left: SignatureStore,
    right: SignatureStore,
    threshold: float,
    batch: int = 65_536,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Yield ``(a, b, jaccard)`` batches of candidate pairs whose estimated Jaccard reaches ``threshold``.

    When either side keeps 16 bits per value (the reference index), both are compared on their
    low 16 bits: two different values agree by chance with probability 2**-16, so the estimate
    rises by at most (1 - J) / 65,536 on average (b-bit MinHash, Li and Koenig 2010), far below
    the 1/num_perm step of the estimate itself.
    """
    num_perm = left.num_perm
    mask = np.uint32(0xFFFF if min(left.bits, right.bits) == 16 else 0xFFFFFFFF)
    for record_batch in pq.ParquetFile(pairs).iter_batches(batch_size=batch, columns=["a", "b"]):
        a = record_batch.column("a").to_numpy()
        b = record_batch.column("b").to_numpy()
        if len(a) == 0:
            continue
        agree = np.count_nonzero((left.gather(a) & mask) == (right.gather(b) & mask), axis=1)
        jaccard = (agree / num_perm).astype(np.float32)
        keep = jaccard >= np.float32(threshold)
        yield a[keep], b[keep], jaccard[keep]


def write_verified(batches: Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]], target: Path) -> int:
    """Write verified pairs to Parquet; return how many."""
    total = 0
    with atomic_path(target) as tmp:
        writer = pq.ParquetWriter(tmp, PAIR_SCHEMA, compression="zstd")
        try:
            for a, b, jaccard in batches:
                writer.write_table(pa.table({"a": a, "b": b, "jaccard": jaccard}, schema=PAIR_SCHEMA))
                total += len(a)
        finally:
            writer.close()
    return total


# -- the in-memory path: datasketch ----------------------------------------------------------
class InMemoryLSH:
    """datasketch's ``MinHashLSH`` over our signatures (for small runs, tests, and Redis storage)."""

    def __init__(self, layout: BandLayout, num_perm: int = 128, seed: int = 1,
                 storage_config: dict | None = None, prepickle: bool | None = None) -> None:
        from datasketch import MinHashLSH

        layout.check(num_perm)
        self.layout = layout
        self.num_perm = num_perm
        self.seed = seed
        self.index = MinHashLSH(num_perm=num_perm, params=(layout.bands, layout.rows),
                                storage_config=storage_config, prepickle=prepickle)

    def _minhash(self, signature: np.ndarray):
        from datasketch import LeanMinHash

        return LeanMinHash(seed=self.seed, hashvalues=signature, scheme="affine32")

    def insert(self, key: str | int, signature: np.ndarray) -> None:
        """Add one document (documents without shingles are not indexed)."""
        if not is_empty(signature[None, :])[0]:
            self.index.insert(key, self._minhash(signature), check_duplication=False)

    def query(self, signature: np.ndarray) -> list:
        """Keys of indexed documents sharing at least one band with ``signature``."""
        if is_empty(signature[None, :])[0]:
            return []
        return list(self.index.query(self._minhash(signature)))


def in_memory_pairs(signatures: np.ndarray, layout: BandLayout, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All verified pairs ``a < b`` of a small set of signatures, via datasketch (the in-memory path)."""
    lsh = InMemoryLSH(layout, num_perm=signatures.shape[1], seed=seed)
    left: list[int] = []
    right: list[int] = []
    for doc, signature in enumerate(signatures):
        for other in lsh.query(signature):
            left.append(int(other))
            right.append(doc)
        lsh.insert(doc, signature)
    a = np.array(left, dtype=np.int64)
    b = np.array(right, dtype=np.int64)
    jaccard = np.mean(signatures[a] == signatures[b], axis=1).astype(np.float32) if len(a) else np.empty(0, np.float32)
    keep = jaccard >= np.float32(layout.threshold)
    order = np.lexsort((b[keep], a[keep]))
    return a[keep][order], b[keep][order], jaccard[keep][order]


def near_duplicate_pairs(
    band_root: Path, work: Path, store: SignatureStore, layout: BandLayout, settings: JoinSettings
) -> Path:
    """Sequential driver of the out-of-core path: per-band joins, merge, verify; returns verified pairs.

    The dedup flow runs the same three steps as Prefect tasks (one per band, then one merge and
    one verification); this function is what small runs and tests call.
    """
    pair_files = []
    for band in range(layout.bands):
        target = work / layout.name / f"pairs-band{band:02d}.parquet"
        band_pairs_within(band_dir(band_root, layout, band), target, settings)
        pair_files.append(target)
    merged = work / layout.name / "candidates.parquet"
    merge_pairs(pair_files, merged, settings)
    verified = work / layout.name / "verified.parquet"
    write_verified(verify_pairs(merged, store, store, layout.threshold), verified)
    return verified
