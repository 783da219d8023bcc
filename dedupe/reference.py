"""An incremental, traceable reference index (the Pile v1) and matching documents against it.

Layout of an index directory (every file written atomically; nothing in Python objects)::

    index.json                              parameters (MinHash, layouts, signature bits) and the parts added so far
    parts/<part>.json                       one finished part (core.markers.Marker): its record, every file's size
    docs/<part>.parquet                     ref, line, shard, pile_set_name, hash (SHA256 of normalized text)
    signatures/<part>.u16                   raw signatures, low 16 bits of each value, row i = ref (part_no << 32) + i
    bands/<BxR>/band=NN/<part>.parquet      band keys (key, doc) for every configured layout

*Incremental*: adding Pile shards later creates new parts (numbered after the existing ones);
nothing already indexed is rewritten, and a shard already in the index (same name, size and
SHA256) is skipped. *Traceable*: a reference number ``ref`` decodes to its part, and the part's
docs table gives the Pile shard file name and 1-based line, so every match can be checked by hand.
Documents are numbered sparsely (``part_no << 32``) so parts can be built in parallel before
anyone knows how many documents the others hold.

The same part format (:class:`PartBuilder`) holds the documents being deduplicated, numbered
densely from 0 so the union-find arrays stay small.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.arrow_columns import arrow_table
from core.atomic import AtomicOutput, atomic_path, sha256_file, write_json_atomic
from core.document import Drop
from core.exact import exact_hashes, non_ascii_chars
from core.layout import slug
from core.markers import Marker
from core.pile_format import MAX_LINE_BYTES, PileLine, iter_pile
from dedupe.lsh import (
    BandKeyWriter,
    BandLayout,
    JoinSettings,
    SignaturePart,
    SignatureStore,
    SignatureWriter,
    band_dir,
    band_pairs_against,
    merge_pairs,
    verify_pairs,
    write_verified,
)
from dedupe.minhash import MinHashConfig, MinHasher, is_empty
from dedupe.shingles import NORMALIZATION, encode_texts

INDEX_META = "index.json"
#: 2: shingles of NFKC, case-folded text with Unicode punctuation as separators
#: (:data:`dedupe.shingles.NORMALIZATION`); format 1's signatures are of lowered text only, and
#: comparing the two would miss every pair that differs in typography, so a format 1 index is refused.
INDEX_FORMAT = 2
#: Bits per signature value a new index keeps. Verification is all the index needs signatures
#: for, and the low 16 bits estimate Jaccard as well (see dedupe.lsh.verify_pairs) in half the
#: disk: 256 instead of 512 bytes per document. An index without the setting keeps 32 (older ones).
INDEX_SIGNATURE_BITS = 16
PART_SHIFT = 32
REFERENCE_SCHEMA = pa.schema([
    pa.field("doc", pa.int64()), pa.field("line", pa.int64()), pa.field("shard", pa.string()),
    pa.field("pile_set_name", pa.string()), pa.field("hash", pa.binary(32)), pa.field("empty", pa.bool_()),
])
BATCH_DOCS = 1024


# -- one part: documents, signatures and band keys, streamed ----------------------------------
class PartBuilder:
    """Stream documents of one part: signatures, exact hashes, band keys and a docs table.

    ``columns`` are extra per-document fields (line, shard, id, ...) stored in the docs table
    beside ``doc`` (the global number), ``hash`` and ``empty`` (no shingle: kept out of LSH).
    """

    def __init__(self, root: Path, part: str, first: int, hasher: MinHasher,
                 layouts: Sequence[BandLayout], schema: pa.Schema, signature_bits: int = 32) -> None:
        self.root, self.part, self.first, self.hasher, self.schema = root, part, first, hasher, schema
        self.signature_bits = signature_bits
        self.count = 0
        self.empty = 0
        self._sigs = SignatureWriter(signature_path(root, part, signature_bits), signature_bits)
        self._bands = [BandKeyWriter(root / "bands", layout, part) for layout in layouts]
        self._docs_out = AtomicOutput(root / "docs" / f"{part}.parquet")
        # The SHA256 column never repeats within a part: a dictionary for it is built only to be dropped.
        dictionary = [name for name in schema.names if name != "hash"]
        self._docs = pq.ParquetWriter(self._docs_out.path, schema, compression="zstd", use_dictionary=dictionary)

    def add(self, texts: Sequence[str], columns: dict[str, list[Any]], encoded: Sequence[bytes] | None = None) -> None:
        """Add a batch of documents (texts plus their extra columns; ``encoded``: the texts as UTF-8 if known)."""
        if not texts:
            return
        encoded = encode_texts(texts) if encoded is None else encoded  # once, for signatures and exact hashes
        others = [non_ascii_chars(text, raw) for text, raw in zip(texts, encoded, strict=True)]
        signatures = self.hasher.signatures(texts, encoded, others)
        docs = np.arange(self.first + self.count, self.first + self.count + len(texts), dtype=np.int64)
        empty = is_empty(signatures)
        self._sigs.write(signatures)
        for bands in self._bands:
            bands.write(signatures, docs)
        table = {"doc": docs, "hash": exact_hashes(texts, encoded, others), "empty": empty, **columns}
        self._docs.write_table(arrow_table(table, self.schema))
        self.count += len(texts)
        self.empty += int(empty.sum())

    def close(self) -> dict[str, Any]:
        """Finish every file; return the part's description."""
        self._sigs.close()
        for bands in self._bands:
            bands.close()
        self._docs.close()
        self._docs_out.commit()
        record = {"part": self.part, "first": self.first, "count": self.count, "empty": self.empty,
                  "num_perm": self.hasher.config.num_perm}
        if self.signature_bits != 32:
            record["signature_bits"] = self.signature_bits
        return record

    def outputs(self) -> list[dict[str, Any]]:
        """The part's files (``path`` relative to the root, ``bytes``) once closed: what its marker names.

        The docs table carries the part's document count, so the marker also promises them.
        """
        files = [signature_path(self.root, self.part, self.signature_bits), self.root / "docs" / f"{self.part}.parquet"]
        files += [band_dir(self.root / "bands", bands.layout, band) / f"{self.part}.parquet"
                  for bands in self._bands for band in range(bands.layout.bands)]
        described = [{"path": f.relative_to(self.root).as_posix(), "bytes": f.stat().st_size} for f in files]
        described[1]["docs"] = self.count
        return described

    def abort(self) -> None:
        """Remove the temporary files after an error."""
        self._sigs.abort()
        for bands in self._bands:
            bands.abort()
        self._docs.close()
        self._docs_out.abort()


def signature_path(root: Path, part: str, bits: int) -> Path:
    """Where a part's signatures are: ``signatures/<part>.u32`` (whole values) or ``.u16`` (low halves)."""
    return root / "signatures" / f"{part}.u{bits}"


def signature_parts(root: Path, parts: Iterable[dict[str, Any]]) -> SignatureStore:
    """The signatures of a set of parts under ``root``."""
    stored = []
    for p in parts:
        bits = int(p.get("signature_bits", 32))
        stored.append(SignaturePart(signature_path(root, p["part"], bits), int(p["first"]), int(p["count"]),
                                    int(p["num_perm"]), bits))
    return SignatureStore(stored)


# -- the reference index ---------------------------------------------------------------------
@dataclass
class ReferenceIndex:
    """Handle on an index directory; :meth:`open` or :meth:`create` it, the flow alone commits parts."""

    root: Path
    minhash: MinHashConfig
    layouts: list[BandLayout]
    parts: list[dict[str, Any]] = field(default_factory=list)
    signature_bits: int = 32

    @classmethod
    def open(cls, root: Path) -> ReferenceIndex:
        """Open an existing index (raises FileNotFoundError when there is none)."""
        meta = json.loads((Path(root) / INDEX_META).read_text(encoding="utf-8"))
        if meta.get("format") != INDEX_FORMAT:
            raise ValueError(f"{root}: index format {meta.get('format')} (this version reads format {INDEX_FORMAT}: "
                             f"shingles of {NORMALIZATION} text); rebuild the index into a new folder with "
                             "python -m flows.pile_index")
        layouts = [BandLayout(int(b), int(r), float(t)) for b, r, t in meta["layouts"]]
        return cls(Path(root), MinHashConfig.from_dict(meta["minhash"]), layouts, meta["parts"],
                   int(meta.get("signature_bits", 32)))

    @classmethod
    def open_or_create(cls, root: Path, minhash: MinHashConfig, layouts: Sequence[BandLayout]) -> ReferenceIndex:
        """Open the index at ``root``, checking it was built with the same parameters, or start one."""
        if (Path(root) / INDEX_META).exists():
            index = cls.open(root)
            if index.minhash != minhash:
                raise ValueError(f"{root} was built with {index.minhash.to_dict()}, not {minhash.to_dict()}")
            missing = {lay.name for lay in layouts} - {lay.name for lay in index.layouts}
            if missing:
                raise ValueError(f"{root} has no band keys for layouts {sorted(missing)}; build a new index")
            return index
        index = cls(Path(root), minhash, list(layouts), signature_bits=INDEX_SIGNATURE_BITS)
        index.commit([])
        return index

    def commit(self, new_parts: Sequence[dict[str, Any]]) -> None:
        """Add finished parts and rewrite ``index.json`` atomically (the single writer does this)."""
        known = {p["part"] for p in self.parts}
        self.parts = sorted([*self.parts, *(p for p in new_parts if p["part"] not in known)],
                            key=lambda p: p["part_no"])
        write_json_atomic(self.root / INDEX_META, {
            "format": INDEX_FORMAT, "minhash": self.minhash.to_dict(),
            "layouts": [[lay.bands, lay.rows, lay.threshold] for lay in self.layouts],
            "signature_bits": self.signature_bits,
            "parts": self.parts, "documents": sum(p["count"] for p in self.parts),
        })

    def plan(self, shards: Sequence[Path]) -> list[tuple[Path, int, str]]:
        """``(shard, part_no, part name)`` for each shard not in the index yet, in a stable order."""
        seen = {(p["shard"], p["size"]) for p in self.parts}
        next_no = max((p["part_no"] for p in self.parts), default=-1) + 1
        planned = []
        for shard in sorted(shards, key=lambda s: (s.name, str(s))):
            if (shard.name, shard.stat().st_size) in seen:
                continue
            planned.append((shard, next_no, f"{next_no:05d}-{slug(shard.name)}"))
            seen.add((shard.name, shard.stat().st_size))
            next_no += 1
        return planned

    @property
    def documents(self) -> int:
        """Number of indexed reference documents."""
        return sum(int(p["count"]) for p in self.parts)

    def store(self) -> SignatureStore:
        """All reference signatures."""
        return signature_parts(self.root, self.parts)

    def layout(self, name: str) -> BandLayout:
        """One of the index's layouts by name (``"9x13"``) or threshold (``"0.8"``)."""
        for layout in self.layouts:
            if name in (layout.name, str(layout.threshold)):
                return layout
        raise KeyError(f"index {self.root} has no layout {name!r}: {[lay.name for lay in self.layouts]}")

    def docs_files(self) -> list[str]:
        """The docs tables of every committed part."""
        return [(self.root / "docs" / f"{p['part']}.parquet").as_posix() for p in self.parts]


def part_marker(root: Path, part: str, key: dict[str, Any], layouts: Sequence[BandLayout]) -> Marker:
    """The completion marker of one part (``parts/<part>.json``), valid for its input ``key`` and layouts.

    It names every file of the part (signatures, docs table, each band's keys) with its size, so a
    part whose files were deleted or cut is built again instead of being reused.
    """
    return Marker(root / "parts" / f"{part}.json", {**key, "layouts": [layout.name for layout in layouts],
                                                    "normalization": NORMALIZATION})


def _finished_part(marker: Marker, root: Path) -> dict[str, Any] | None:
    done = marker.load(root)
    return None if done is None else dict(done["record"])


def _finish_part(marker: Marker, builder: PartBuilder, record: dict[str, Any]) -> dict[str, Any]:
    marker.write({"record": record}, outputs=builder.outputs(), promised_docs=builder.count)
    return record


def index_pile_shard(shard: Path, root: Path, part_no: int, part: str, minhash: MinHashConfig,
                     layouts: Sequence[BandLayout], max_line_bytes: int = MAX_LINE_BYTES,
                     signature_bits: int = INDEX_SIGNATURE_BITS) -> dict[str, Any]:
    """Index one Pile shard as one part; resumable (a finished part with the same input is reused).

    ``signature_bits``: the index's (:attr:`ReferenceIndex.signature_bits`); part of the marker's
    key when not 32, so a part of another width is never reused.

    Bad lines are counted by reason in the part's record, never raised; a line longer than
    ``max_line_bytes`` is a ``record_too_large`` drop. The bound is in the part's marker key, so a
    finished part is reused only under the bound it was built with (a part finished by an
    interrupted run before the bound was configurable is built once more; committed shards are
    never re-read).
    """
    size = shard.stat().st_size
    key: dict[str, Any] = {"shard": shard.name, "size": size, "max_line_bytes": max_line_bytes}
    if signature_bits != 32:
        key["signature_bits"] = signature_bits
    marker = part_marker(root, part, key, layouts)
    done = _finished_part(marker, root)
    if done is not None:
        return done
    started = time.perf_counter()
    builder = PartBuilder(root, part, part_no << PART_SHIFT, MinHasher(minhash), layouts, REFERENCE_SCHEMA,
                          signature_bits)
    drops: Counter[str] = Counter()
    errors: list[dict[str, str]] = []
    lines = 0
    texts: list[str] = []
    encoded: list[bytes] = []
    columns: dict[str, list[Any]] = {"line": [], "shard": [], "pile_set_name": []}
    try:
        for item in iter_pile(shard, max_line_bytes=max_line_bytes):
            lines += 1
            if isinstance(item, Drop):
                drops[item.reason] += 1
                if item.is_error and len(errors) < 100:
                    errors.append({"reason": item.reason, "record": item.record, "detail": item.detail})
                continue
            _append(texts, columns, item)
            encoded.append(item.utf8)
            if len(texts) >= BATCH_DOCS:
                builder.add(texts, columns, encoded)
                texts, encoded, columns = [], [], {"line": [], "shard": [], "pile_set_name": []}
        builder.add(texts, columns, encoded)
        record = builder.close()
    except Exception:
        builder.abort()
        raise
    # the shard by its name (what plan() keys on, with size and sha256), never by the path it was given
    # as: a local folder would land in the released index files and make their bytes depend on it
    record.update({"part_no": part_no, "shard": shard.name, "size": size,
                   "sha256": sha256_file(shard), "lines": lines, "drops": dict(sorted(drops.items())),
                   "errors": errors, "seconds": round(time.perf_counter() - started, 3)})
    return _finish_part(marker, builder, record)


def _append(texts: list[str], columns: dict[str, list[Any]], item: PileLine) -> None:
    texts.append(item.text)
    columns["line"].append(item.line)
    columns["shard"].append(item.shard)
    columns["pile_set_name"].append(item.pile_set_name)


# -- matching against the index ---------------------------------------------------------------
REFERENCE_MATCH_SCHEMA = pa.schema([
    pa.field("doc", pa.int64()), pa.field("ref", pa.int64()), pa.field("kind", pa.string()),
    pa.field("jaccard", pa.float32()),
])


def reference_band_pairs(query_root: Path, index: ReferenceIndex, layout: BandLayout, band: int,
                         work: Path, settings: JoinSettings) -> Path:
    """Candidate (query doc, reference doc) pairs of one band (one task per band in the flow)."""
    target = work / "reference" / layout.name / f"pairs-band{band:02d}.parquet"
    references = band_dir(index.root / "bands", layout, band)
    band_pairs_against(band_dir(query_root / "bands", layout, band),
                       [references / f"{p['part']}.parquet" for p in index.parts],
                       target, settings)
    return target


def best_reference_matches(query_root: Path, query_parts: Sequence[dict[str, Any]], index: ReferenceIndex,
                           layout: BandLayout, pair_files: Sequence[Path], work: Path,
                           settings: JoinSettings) -> Path:
    """Exact and verified near matches, one per query document (exact first, then highest Jaccard, then lowest ref)."""
    out = work / "reference"
    merged = out / layout.name / "candidates.parquet"
    merge_pairs(pair_files, merged, settings)
    verified = out / layout.name / "verified.parquet"
    write_verified(verify_pairs(merged, signature_parts(query_root, query_parts), index.store(),
                                layout.threshold), verified)
    target = out / "matches.parquet"
    query_docs = json.dumps([(query_root / "docs" / f"{p['part']}.parquet").as_posix() for p in query_parts])
    con = settings.connect()
    try:
        ref_docs = json.dumps(index.docs_files())
        with atomic_path(target) as tmp:
            con.execute(f"""
                COPY (
                  WITH exact AS (
                    SELECT q.doc, min(r.doc) AS ref FROM read_parquet({query_docs}) q
                    JOIN read_parquet({ref_docs}) r ON q.hash = r.hash GROUP BY q.doc),
                  near AS (SELECT a AS doc, b AS ref, jaccard FROM read_parquet('{verified.as_posix()}')),
                  candidates AS (
                    SELECT doc, ref, 'exact' AS kind, 1.0::FLOAT AS jaccard, 0 AS rank FROM exact
                    UNION ALL SELECT doc, ref, 'near', jaccard, 1 FROM near)
                  SELECT doc, ref, kind, jaccard FROM candidates
                  QUALIFY row_number() OVER (PARTITION BY doc ORDER BY rank, jaccard DESC, ref) = 1
                  ORDER BY doc
                ) TO '{tmp.as_posix()}' (FORMAT parquet, COMPRESSION zstd)""")
    finally:
        con.close()
    return target


def reference_addresses(index: ReferenceIndex, refs: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Shard, line and Pile subset of some reference documents (for explanations)."""
    if not refs or not index.parts:
        return {}
    import duckdb

    con = duckdb.connect()
    try:
        rows = con.execute(
            f"SELECT doc, shard, line, pile_set_name FROM read_parquet({json.dumps(index.docs_files())}) "
            "WHERE doc IN (SELECT unnest(?))", [list(map(int, refs))]
        ).fetchall()
    finally:
        con.close()
    return {int(d): {"shard": s, "line": int(line), "pile_set_name": p} for d, s, line, p in rows}


# -- the documents being deduplicated ---------------------------------------------------------
DOCUMENT_SCHEMA = pa.schema([
    pa.field("doc", pa.int64()), pa.field("id", pa.string()), pa.field("source", pa.string()),
    pa.field("shard", pa.string()), pa.field("row", pa.int64()), pa.field("hash", pa.binary(32)),
    pa.field("empty", pa.bool_()),
])


def sign_document_shard(out: Path, shard: str, root: Path, part: str, first: int, minhash: MinHashConfig,
                        layouts: Sequence[BandLayout]) -> dict[str, Any]:
    """Signatures, exact hashes and band keys of one final document shard (``shard`` relative to ``out``).

    Documents are numbered densely from ``first`` in shard row order; resumable like the index parts.
    """
    path = out / shard
    size = path.stat().st_size
    marker = part_marker(root, part, {"shard": shard, "size": size, "first": first}, layouts)
    done = _finished_part(marker, root)
    if done is not None:
        return done
    builder = PartBuilder(root, part, first, MinHasher(minhash), layouts, DOCUMENT_SCHEMA)
    row = 0
    try:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_DOCS, columns=["id", "text", "source"]):
            texts = batch.column("text").to_pylist()
            builder.add(texts, {"id": batch.column("id").to_pylist(), "source": batch.column("source").to_pylist(),
                                "shard": [shard] * len(texts), "row": list(range(row, row + len(texts)))})
            row += len(texts)
        record = builder.close()
    except Exception:
        builder.abort()
        raise
    record.update({"shard": shard, "size": size})
    return _finish_part(marker, builder, record)
