"""Book-level near-deduplication: drop a book that overlaps an earlier kept book by >= 90%.

The LLaMA paper removed books with more than 90% content overlap; RedPajama used SimHash on
character 6-grams (Hamming distance <= 5). Here a book is a set of word 5-gram shingles
(lower-cased, ``\\w+`` words), summarized by a 128-permutation MinHash (datasketch), and two
measures are offered:

* ``jaccard`` (default): |A ∩ B| / |A ∪ B| >= threshold, candidates from ``MinHashLSH``; the
  book that comes first in (input, record) order is kept.
* ``containment``: |A ∩ B| / |A| >= threshold, i.e. book A is (almost) entirely inside B (a
  novel inside a "Complete Works"), candidates from ``MinHashLSHEnsemble``; books are visited
  largest first, so the larger book is kept and the contained one dropped.

Candidates come from LSH at a lower threshold (0.7) and are verified with the MinHash estimate of the measure (containment estimated from
Jaccard and the two set sizes). Matching is greedy over a fixed order and only against books
already kept, so the result does not depend on workers or timing, and each dropped book
records the kept book it matched, with the score.

Pipeline files (all under the run's output root):
``_staging/<source>/<input>/minhash.parquet`` signatures of one staged input;
``attributes/<source>/near_duplicates.parquet`` every match of the run (kept after the run).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash
from datasketch import MinHash, MinHashLSH, MinHashLSHEnsemble

from core.atomic import atomic_path
from core.layout import duplicates_path, staging_dir
from core.shards import read_documents

NEAR_STEP = "dedup_near"
NEAR_REASON = "near_duplicate"
SCHEME = "affine32"
_WORD = re.compile(r"\w+")
_ROLL = np.uint64(1_000_003)
_BATCH = 16_384

Mode = Literal["jaccard", "containment"]


@dataclass(frozen=True)
class NearDupSettings:
    """How books are compared."""

    mode: Mode = "jaccard"
    threshold: float = 0.9
    #: LSH candidate threshold, below ``threshold`` on purpose: datasketch's banding for 0.9
    #: with 128 permutations (5 bands x 25 rows) finds a pair of Jaccard 0.92 only half the
    #: time; candidates from 0.7 (14 x 9) are then verified against ``threshold``.
    candidate_threshold: float = 0.7
    num_perm: int = 128
    ngram: int = 5
    seed: int = 1

    def fingerprint(self) -> str:
        """Identity of the signature parameters (signatures are recomputed when it changes)."""
        return json.dumps({"num_perm": self.num_perm, "ngram": self.ngram, "seed": self.seed}, sort_keys=True)


# -- signatures -----------------------------------------------------------------------------
def _identity(value: int) -> int:
    return value


def shingle_hashes(text: str, ngram: int = 5) -> np.ndarray:
    """Distinct 32-bit hashes of the word ``ngram``-grams of ``text`` (lower-cased ``\\w+`` words).

    Each word is hashed once (xxh32), and n-gram hashes are rolled from word hashes with
    numpy, so a 100k-word book costs about a hundred thousand small Python calls, not more.
    A text shorter than ``ngram`` words is one shingle of all its words.
    """
    words = _WORD.findall(text.lower())
    if not words:
        return np.empty(0, dtype=np.uint32)
    cache: dict[str, int] = {}
    hashed: list[int] = []
    for word in words:
        value = cache.get(word)
        if value is None:
            value = cache[word] = xxhash.xxh32_intdigest(word.encode("utf-8"))
        hashed.append(value)
    word_hashes = np.array(hashed, dtype=np.uint64)
    width = min(ngram, len(words))
    rolled = word_hashes[: len(words) - width + 1].copy()
    with np.errstate(over="ignore"):
        for offset in range(1, width):
            rolled = rolled * _ROLL + word_hashes[offset: len(words) - width + 1 + offset]
    folded = (rolled ^ (rolled >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
    return np.unique(folded.astype(np.uint32))


def signature(hashes: np.ndarray, settings: NearDupSettings) -> MinHash:
    """The MinHash of a set of shingle hashes (fed in batches to bound memory)."""
    minhash = MinHash(num_perm=settings.num_perm, seed=settings.seed, hashfunc=_identity, scheme=SCHEME)
    for start in range(0, len(hashes), _BATCH):
        minhash.update_batch(hashes[start: start + _BATCH].tolist())
    return minhash


def restore(values: bytes, settings: NearDupSettings) -> MinHash:
    """A MinHash from stored hash values."""
    hashvalues = np.frombuffer(values, dtype=np.uint32)
    return MinHash(num_perm=settings.num_perm, seed=settings.seed, hashvalues=hashvalues, scheme=SCHEME)


@dataclass(frozen=True)
class BookSignature:
    """One staged book, as near-dedup sees it."""

    input_key: str
    rank: int
    ordinal: int
    doc_id: str
    title: str | None
    language: str | None
    size: int
    values: bytes


SIGNATURE_SCHEMA = pa.schema([
    pa.field("ordinal", pa.int64()), pa.field("id", pa.string()), pa.field("title", pa.string()),
    pa.field("language", pa.string()), pa.field("size", pa.int64()), pa.field("values", pa.binary()),
])


def signatures_path(out: Path, source: str, key: str) -> Path:
    """Where one staged input's signatures go."""
    return staging_dir(out, source, key) / "minhash.parquet"


def write_signatures(out: Path, source: str, key: str, settings: NearDupSettings) -> int:
    """Compute the signature of every staged book of one input; return how many.

    Skipped when the file exists for the same signature parameters (resume). Exact duplicates
    are included here and left out at matching time, so the file stays valid when the run's
    set of inputs, and therefore its exact duplicates, changes.
    """
    target = signatures_path(out, source, key)
    if target.exists():
        meta = pq.read_schema(target).metadata or {}
        if meta.get(b"kinda.near_settings", b"").decode() == settings.fingerprint():
            return pq.ParquetFile(target).metadata.num_rows
    rows: dict[str, list[Any]] = {name: [] for name in SIGNATURE_SCHEMA.names}
    stage = staging_dir(out, source, key)
    ordinal = 0
    for part in sorted(stage.glob("part-*.parquet")):
        for doc in read_documents(part):
            hashes = shingle_hashes(doc.text, settings.ngram)
            rows["ordinal"].append(ordinal)
            rows["id"].append(doc.id)
            rows["title"].append(doc.meta.get("title"))
            rows["language"].append(doc.language)
            rows["size"].append(len(hashes))
            rows["values"].append(signature(hashes, settings).hashvalues.astype(np.uint32).tobytes())
            ordinal += 1
    schema = SIGNATURE_SCHEMA.with_metadata({"kinda.near_settings": settings.fingerprint()})
    with atomic_path(target) as tmp:
        pq.write_table(pa.table(rows, schema=schema), tmp, compression="zstd")
    return ordinal


def exact_duplicate_ordinals(out: Path, source: str) -> dict[str, set[int]]:
    """The run's exact duplicates per input key (from the pipeline's duplicate list)."""
    path = duplicates_path(out, source)
    found: dict[str, set[int]] = {}
    if path.exists():
        table = pq.read_table(path)
        for key, ordinal in zip(table.column("input_key").to_pylist(), table.column("ordinal").to_pylist(),
                                strict=True):
            found.setdefault(key, set()).add(ordinal)
    return found


def load_signatures(out: Path, source: str, keys: Sequence[str]) -> list[BookSignature]:
    """Signatures of the run's books in (input key, ordinal) order, minus exact duplicates."""
    exact = exact_duplicate_ordinals(out, source)
    books: list[BookSignature] = []
    for rank, key in enumerate(sorted(keys)):
        path = signatures_path(out, source, key)
        if not path.exists():
            continue
        table = pq.read_table(path).to_pylist()
        skip = exact.get(key, set())
        books.extend(
            BookSignature(key, rank, row["ordinal"], row["id"], row["title"], row["language"], row["size"],
                          row["values"])
            for row in table if row["ordinal"] not in skip
        )
    return books


# -- matching -------------------------------------------------------------------------------
@dataclass(frozen=True)
class NearMatch:
    """A dropped book and the kept book it matched."""

    input_key: str
    ordinal: int
    doc_id: str
    title: str | None
    language: str | None
    matched_input_key: str
    matched_ordinal: int
    matched_id: str
    matched_title: str | None
    score: float
    mode: str


def estimate(query: MinHash, query_size: int, other: MinHash, other_size: int, mode: Mode) -> float:
    """Estimated Jaccard, or containment of the query in ``other``, from MinHashes and set sizes."""
    jaccard = query.jaccard(other)
    if mode == "jaccard":
        return jaccard
    return min(1.0, jaccard * (query_size + other_size) / ((1.0 + jaccard) * query_size))


def _visit_order(books: Sequence[BookSignature], mode: Mode) -> list[int]:
    if mode == "containment":
        return sorted(range(len(books)), key=lambda i: (-books[i].size, books[i].rank, books[i].ordinal))
    return sorted(range(len(books)), key=lambda i: (books[i].rank, books[i].ordinal))


def find_near_duplicates(books: Sequence[BookSignature], settings: NearDupSettings) -> list[NearMatch]:
    """Greedy near-dedup over ``books`` (see the module docstring); deterministic."""
    candidates = [i for i in range(len(books)) if books[i].size > 0]
    if not candidates:
        return []
    hashes = {i: restore(books[i].values, settings) for i in candidates}
    order = [i for i in _visit_order(books, settings.mode) if books[i].size > 0]
    position = {i: n for n, i in enumerate(order)}
    kept: set[int] = set()
    matches: list[NearMatch] = []
    ensemble: MinHashLSHEnsemble | None = None
    lsh: MinHashLSH | None = None
    if settings.mode == "containment":
        ensemble = MinHashLSHEnsemble(threshold=settings.candidate_threshold, num_perm=settings.num_perm)
        ensemble.index([(i, hashes[i], books[i].size) for i in candidates])
    else:
        lsh = MinHashLSH(threshold=settings.candidate_threshold, num_perm=settings.num_perm)
    for i in order:
        if ensemble is not None:
            found: Iterable[int] = ensemble.query(hashes[i], books[i].size)
        else:
            assert lsh is not None
            found = lsh.query(hashes[i])
        best: tuple[float, int] | None = None
        for j in found:
            if j == i or j not in kept:
                continue
            score = estimate(hashes[i], books[i].size, hashes[j], books[j].size, settings.mode)
            if score >= settings.threshold and (best is None or (-score, position[j]) < (-best[0], position[best[1]])):
                best = (score, j)
        if best is None:
            kept.add(i)
            if lsh is not None:
                lsh.insert(i, hashes[i])
            continue
        score, j = best
        book, other = books[i], books[j]
        matches.append(NearMatch(book.input_key, book.ordinal, book.doc_id, book.title, book.language,
                                 other.input_key, other.ordinal, other.doc_id, other.title, round(score, 4),
                                 settings.mode))
    matches.sort(key=lambda m: (m.input_key, m.ordinal))
    return matches


# -- pipeline glue (no Prefect) -----------------------------------------------------------------
MATCH_SCHEMA = pa.schema([
    pa.field("input_key", pa.string()), pa.field("ordinal", pa.int64()), pa.field("doc_id", pa.string()),
    pa.field("title", pa.string()), pa.field("language", pa.string()),
    pa.field("matched_input_key", pa.string()), pa.field("matched_ordinal", pa.int64()),
    pa.field("matched_id", pa.string()), pa.field("matched_title", pa.string()),
    pa.field("score", pa.float64()), pa.field("mode", pa.string()),
])


def matches_path(out: Path, source: str) -> Path:
    """The run's match table, kept beside the documents (``attributes/<source>/``)."""
    return out / "attributes" / source / "near_duplicates.parquet"


def write_matches(out: Path, source: str, matches: Sequence[NearMatch]) -> Path:
    """Write every match of the run (sorted, so the file is byte-identical on a re-run)."""
    target = matches_path(out, source)
    columns = {name: [asdict(m)[name] for m in matches] for name in MATCH_SCHEMA.names}
    with atomic_path(target) as tmp:
        pq.write_table(pa.table(columns, schema=MATCH_SCHEMA), tmp, compression="zstd")
    return target


def read_matches(out: Path, source: str) -> list[NearMatch]:
    """The run's matches, as written by :func:`write_matches`."""
    path = matches_path(out, source)
    if not path.exists():
        return []
    return [NearMatch(**row) for row in pq.read_table(path).to_pylist()]


def drop_rows(matches: Sequence[NearMatch]) -> list[dict[str, Any]]:
    """The run's drop-list rows for near duplicates: each carries its reason and the book it matched.

    They go to :func:`core.pipeline.add_drops`, so finalize leaves these books out and counts
    them as ``near_duplicate`` directly (nothing is relabelled afterwards).
    """
    return [
        {"input_key": m.input_key, "ordinal": m.ordinal, "id": m.doc_id, "step": NEAR_STEP, "reason": NEAR_REASON,
         "matched_id": m.matched_id,
         "detail": f"{m.title or '?'} matched {m.matched_id} ({m.matched_title or '?'}, input {m.matched_input_key}, "
                   f"record {m.matched_ordinal}): {m.mode} {m.score:.3f}"}
        for m in sorted(matches, key=lambda m: (m.input_key, m.ordinal))
    ]


def matches_by_input(matches: Iterable[NearMatch]) -> dict[str, list[NearMatch]]:
    """Group matches by the input key of the dropped book."""
    grouped: dict[str, list[NearMatch]] = {}
    for match in matches:
        grouped.setdefault(match.input_key, []).append(match)
    return grouped


def iter_match_rows(matches: Iterable[NearMatch]) -> Iterator[dict[str, Any]]:
    """Matches as plain dicts (for artifacts and reports)."""
    for match in matches:
        yield asdict(match)
