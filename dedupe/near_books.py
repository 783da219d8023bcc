"""Book-level near-deduplication: drop a book that overlaps an earlier kept book by >= 90%.

The LLaMA paper removed books with more than 90% content overlap; RedPajama used SimHash on
character 6-grams (Hamming distance <= 5). Here a book is a set of word 5-gram shingles
(:mod:`dedupe.shingles`: case-folded words, hashed as arrays), summarized by a 128-permutation
MinHash computed for a batch of books at once by :mod:`dedupe.minhash` (equal to datasketch's
``MinHash``, so datasketch's LSH indexes them), and two
measures are offered:

* ``jaccard`` (default): |A ∩ B| / |A ∪ B| >= threshold, candidates from ``MinHashLSH``; the
  book that comes first in (input, record) order is kept.
* ``containment``: |A ∩ B| / |A| >= threshold, i.e. book A is (almost) entirely inside B (a
  novel inside a "Complete Works"), candidates from ``MinHashLSHEnsemble``; books are visited
  largest first, so the larger book is kept and the contained one dropped.

Candidates come from LSH at a lower threshold (0.7) and are verified with the MinHash estimate of the measure (containment estimated from
Jaccard and the two set sizes). With 128 permutations the estimate's standard error near 0.9 is
~0.027, so a pair of true Jaccard 0.937 can be estimated at 0.898 and missed (the books benchmark
lost one of 19 planted duplicates that way). A candidate whose estimate lies within
``exact_margin`` of the threshold is therefore decided by the exact measure on the two books'
distinct shingle sets (recomputed from the staged text, only for those pairs). Matching is greedy over a fixed order and only against books
already kept, so the result does not depend on workers or timing, and each dropped book
records the kept book it matched, with the score.

Pipeline files (all under the run's output root):
``_staging/<source>/<input>/minhash.parquet`` signatures of one staged input;
``attributes/<source>/near_duplicates.parquet`` every match of the run (kept after the run).
"""

from __future__ import annotations

import functools
import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from datasketch import MinHash, MinHashLSH, MinHashLSHEnsemble

from core.atomic import atomic_path
from core.layout import duplicates_path, staging_dir
from core.shards import read_documents
from dedupe.minhash import MinHashConfig, MinHasher, to_hashfunc_value
from dedupe.shingles import NORMALIZATION, ShingleConfig
from dedupe.shingles import shingle_hashes as batch_shingle_hashes

NEAR_STEP = "dedup_near"
NEAR_REASON = "near_duplicate"
SCHEME = "affine32"

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
    #: Candidates whose estimate is within this of ``threshold`` (either side) are decided by the
    #: exact measure when the books' shingles can be loaded: ~3 standard errors of a 128-permutation
    #: estimate near 0.9, so a pair is misjudged by the estimate alone about once in a thousand.
    #: The last field, so positional construction (flows/books.py) keeps working.
    exact_margin: float = 0.08

    def fingerprint(self) -> str:
        """Identity of the signature parameters (signatures are recomputed when it changes)."""
        return json.dumps({"num_perm": self.num_perm, "ngram": self.ngram, "seed": self.seed,
                           "shingles": _SHINGLE_SCHEME}, sort_keys=True)


# -- signatures -----------------------------------------------------------------------------
_SHINGLE_SCHEME = f"dedupe.shingles/v1+{NORMALIZATION}"  # word bytes + polynomial hash, normalization; in the fingerprint
#: Characters of book text hashed per batch: bounds the batch's arrays (~24 bytes per word).
BATCH_CHARS = 32_000_000


@functools.lru_cache(maxsize=8)
def _hasher(num_perm: int, seed: int, ngram: int) -> MinHasher:
    return MinHasher(MinHashConfig(num_perm=num_perm, seed=seed, shingles=ShingleConfig(ngram=ngram)))


def _settings_hasher(settings: NearDupSettings) -> MinHasher:
    return _hasher(settings.num_perm, settings.seed, settings.ngram)


def shingle_hashes(text: str, ngram: int = 5) -> np.ndarray:
    """Distinct 32-bit values of the word ``ngram``-grams of ``text`` (what its MinHash is made of).

    Shingles are :mod:`dedupe.shingles`' (case-folded words split at ASCII punctuation and
    spaces, hashed with numpy over the whole text), and each value is the upper half of the
    64-bit shingle hash, as :mod:`dedupe.minhash` feeds them to the permutations. A text shorter
    than ``ngram`` words is one shingle of all its words; a text without words has none.
    """
    hashes, _ = batch_shingle_hashes([text], ShingleConfig(ngram=ngram))
    values = np.sort(to_hashfunc_value(hashes))
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values


def signature(hashes: np.ndarray, settings: NearDupSettings) -> MinHash:
    """The MinHash (datasketch's, scheme ``affine32``) of a set of 32-bit shingle values."""
    values = np.asarray(hashes, dtype=np.uint32)
    row = _settings_hasher(settings).signatures_from_hashes(values, np.array([0, len(values)], dtype=np.int64))[0]
    return MinHash(num_perm=settings.num_perm, seed=settings.seed, hashvalues=row, scheme=SCHEME)


def book_signatures(texts: Sequence[str], settings: NearDupSettings) -> list[tuple[int, bytes]]:
    """``(distinct shingles, signature bytes)`` of each text, computed for the whole batch at once.

    Why a batch: per-book hashing in Python (one call per word, then datasketch's per-batch
    updates) ran at ~6 MB/s; :class:`dedupe.minhash.MinHasher` does words, shingles and all
    permutations as array operations over the concatenated books. The values equal
    ``signature(shingle_hashes(text))`` for each text (tested).
    """
    if not texts:
        return []
    hashes, offsets = batch_shingle_hashes(list(texts), ShingleConfig(ngram=settings.ngram))
    values = to_hashfunc_value(hashes)
    rows = _settings_hasher(settings).signatures_from_hashes(values, offsets)
    sizes = distinct_counts(values, offsets)
    return [(int(size), rows[i].astype(np.uint32).tobytes()) for i, size in enumerate(sizes)]


def distinct_counts(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Distinct values of each segment ``values[offsets[i]:offsets[i+1]]``, with one sort in all.

    Each value is tagged with its segment in the upper 32 bits and the whole batch is sorted once;
    ``np.unique`` per book measured ~10x slower than that on 60 real books.
    """
    count = len(offsets) - 1
    owners = np.repeat(np.arange(count, dtype=np.uint64), np.diff(offsets))
    keys = (owners << np.uint64(32)) | values.astype(np.uint64)
    keys.sort()
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return np.bincount((keys[first] >> np.uint64(32)).astype(np.int64), minlength=count)


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
    #: Loads the book's distinct shingle values (:func:`shingle_hashes`) for the exact check of
    #: candidates near the threshold; None: the estimate alone decides.
    shingles: Callable[[], np.ndarray] | None = field(default=None, compare=False, repr=False)


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
    batch: list[str] = []

    def flush() -> None:
        for size, values in book_signatures(batch, settings):
            rows["size"].append(size)
            rows["values"].append(values)
        batch.clear()

    ordinal = 0
    for part in sorted(stage.glob("part-*.parquet")):
        for doc in read_documents(part):
            rows["ordinal"].append(ordinal)
            rows["id"].append(doc.id)
            rows["title"].append(doc.meta.get("title"))
            rows["language"].append(doc.language)
            batch.append(doc.text)
            ordinal += 1
            if sum(map(len, batch)) >= BATCH_CHARS:
                flush()
    flush()
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
        parquet = pq.read_table(path)
        fingerprint = (parquet.schema.metadata or {}).get(b"kinda.near_settings", b"{}").decode()
        ngram = int(json.loads(fingerprint).get("ngram", NearDupSettings.ngram))
        table = parquet.to_pylist()
        skip = exact.get(key, set())
        stage = staging_dir(out, source, key)
        books.extend(
            BookSignature(key, rank, row["ordinal"], row["id"], row["title"], row["language"], row["size"],
                          row["values"], functools.partial(staged_shingles, stage, row["ordinal"], ngram))
            for row in table if row["ordinal"] not in skip
        )
    return books


def staged_text(stage: Path, ordinal: int) -> str:
    """Text of the ``ordinal``-th staged book of an input (the order :func:`write_signatures` reads).

    Only the row group that holds the book is read, and only its ``text`` column.
    """
    remaining = ordinal
    for part in sorted(stage.glob("part-*.parquet")):
        parquet = pq.ParquetFile(part)
        if remaining >= parquet.metadata.num_rows:
            remaining -= parquet.metadata.num_rows
            continue
        for group in range(parquet.metadata.num_row_groups):
            rows = parquet.metadata.row_group(group).num_rows
            if remaining < rows:
                return str(parquet.read_row_group(group, columns=["text"]).column("text")[remaining].as_py())
            remaining -= rows
    raise LookupError(f"{stage}: no staged book {ordinal}")


def staged_shingles(stage: Path, ordinal: int, ngram: int) -> np.ndarray:
    """Distinct shingle values of a staged book (for the exact check near the threshold)."""
    return shingle_hashes(staged_text(stage, ordinal), ngram)


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


def exact_measure(query: np.ndarray, other: np.ndarray, mode: Mode) -> float:
    """Exact Jaccard, or containment of the query in ``other``, of two sorted distinct value sets."""
    if not len(query):
        return 0.0
    common = len(np.intersect1d(query, other, assume_unique=True))
    if mode == "jaccard":
        return common / (len(query) + len(other) - common)
    return common / len(query)


class _Scorer:
    """The match score of a candidate pair: the MinHash estimate, or the exact measure near the threshold.

    Loaded shingle sets are kept in a small LRU cache, so a kept book that many copies are
    checked against is loaded once, and memory stays bounded (``max_values`` values in all).
    """

    def __init__(self, books: Sequence[BookSignature], hashes: dict[int, MinHash], settings: NearDupSettings,
                 max_values: int = 32_000_000) -> None:
        self.books, self.hashes, self.settings = books, hashes, settings
        self.max_values = max_values
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()
        self._cached_values = 0

    def _shingles(self, index: int) -> np.ndarray:
        found = self._cache.get(index)
        if found is not None:
            self._cache.move_to_end(index)
            return found
        loader = self.books[index].shingles
        assert loader is not None
        values = loader()
        self._cache[index] = values
        self._cached_values += len(values)
        while self._cached_values > self.max_values and len(self._cache) > 1:
            _, evicted = self._cache.popitem(last=False)
            self._cached_values -= len(evicted)
        return values

    def score(self, i: int, j: int) -> float:
        """Score of book ``i`` against the kept book ``j`` under the settings' mode."""
        books, settings = self.books, self.settings
        approx = estimate(self.hashes[i], books[i].size, self.hashes[j], books[j].size, settings.mode)
        near = abs(approx - settings.threshold) < settings.exact_margin
        if not near or books[i].shingles is None or books[j].shingles is None:
            return approx
        return exact_measure(self._shingles(i), self._shingles(j), settings.mode)


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
    scorer = _Scorer(books, hashes, settings)
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
            score = scorer.score(i, j)
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
