"""Benchmark decontamination: mark every document that shares a word n-gram with an evaluation item.

A model trained on a benchmark's questions scores well on it for the wrong reason. As GPT-3
(Brown et al. 2020, appendix C) and datatrove's decontamination do, a document counts as
contaminated when it shares one n-gram of ``n`` words (default 13) with an evaluation item.
Words are those of near-dedup (:func:`dedupe.shingles.normalize_for_shingles`: NFKC, case
folded, punctuation a separator), so ``"Tom’s farm, has"`` and ``"TOM'S FARM HAS"`` are the
same three words, and n-grams are the shingles of :func:`dedupe.shingles.shingle_hashes` (the
compiled kernel that signs documents for MinHash).

Evaluation sets (:func:`read_eval_items`) are JSON lines, a JSON list, Parquet or CSV files, or a
folder of them (lm-eval-harness style: one file per task and split; the benchmark is the file's
path under the folder, without suffixes). Each named text field of a row is checked on its own
(an n-gram across a question and its answer is in no document); without named fields every
string field but the id is. An item's id is its ``id``/``idx``/``doc_id`` field or its row
number. A text piece of fewer than ``n`` words can share no n-gram and is counted as too short.

Per document shard the stage writes ``attributes/decontamination/<shard>.parquet``: one row per
(document, benchmark, item) it matches (at most :data:`MAX_MATCHES_PER_DOC`), with the first
overlapping span (the n normalized words) and the number of the document's n-gram positions
matching that item. Hash hits are confirmed on the words themselves, so a 64-bit hash
collision never marks a document. The file exists (maybe empty) for every shard checked, and its
metadata names the evaluation sets' fingerprint, so a changed set is checked again.

Speed: the shingle kernel hashes a batch of documents in one compiled pass; membership is a
gather into a bit table of the evaluation hashes (2^24 slots, a few percent full for 10k items),
then a binary search for the few candidates. ``benchmarks/decontamination.py`` measures it.
"""

from __future__ import annotations

import csv
import functools
import gzip
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.digest import json_hash
from core.document import Document
from dedupe.shingles import ShingleConfig, batch_words, shingle_hashes

NGRAM = 13
MAX_MATCHES_PER_DOC = 8
ID_FIELDS = ("id", "idx", "doc_id", "question_id")
EVAL_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".parquet", ".csv")
ATTRIBUTE_DIR = "decontamination"
SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("benchmark", pa.string(), nullable=False),
                    pa.field("item", pa.string(), nullable=False), pa.field("span", pa.string(), nullable=False),
                    pa.field("ngrams", pa.int32(), nullable=False)])


@dataclass(frozen=True)
class EvalSet:
    """An evaluation set the user names: a file or folder, its text fields (all strings when empty)."""

    path: str
    fields: tuple[str, ...] = ()
    name: str | None = None


@dataclass(frozen=True)
class EvalPiece:
    """One text field of one evaluation item."""

    benchmark: str
    item: str
    text: str


def contamination_path(out: Path, shard: str) -> Path:
    """The decontamination attribute of a document shard (``docs/a/b.parquet`` -> ``attributes/decontamination/a/b.parquet``)."""
    relative = Path(shard)
    if relative.parts and relative.parts[0] == "docs":
        relative = Path(*relative.parts[1:])
    return out / "attributes" / ATTRIBUTE_DIR / relative


def contaminated_ids(path: Path) -> set[str]:
    """The ids of the documents a decontamination attribute marks."""
    return set(pq.read_table(path, columns=["id"]).column("id").to_pylist())


# -- reading evaluation sets ----------------------------------------------------------------
def _benchmark_name(path: Path, root: Path | None) -> str:
    name = path.relative_to(root).as_posix() if root is not None else path.name
    for suffix in sorted(EVAL_SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    name = path.name
    if name.endswith((".jsonl", ".jsonl.gz")):
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    row = json.loads(line)
                    if not isinstance(row, dict):
                        raise ValueError(f"{path}:{number}: a JSON lines row must be an object")
                    yield row
    elif name.endswith(".json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = data if isinstance(data, list) else next((data[k] for k in ("data", "docs", "rows") if k in data), None)
        if not isinstance(rows, list):
            raise ValueError(f"{path}: a JSON eval file is a list of rows (or has a data/docs/rows list)")
        yield from rows
    elif name.endswith(".parquet"):
        yield from pq.read_table(path).to_pylist()
    elif name.endswith(".csv"):
        with path.open(newline="", encoding="utf-8") as handle:
            yield from csv.DictReader(handle)
    else:
        raise ValueError(f"{path}: not an eval file ({', '.join(EVAL_SUFFIXES)})")


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        for entry in value:
            yield from _texts(entry)
    elif isinstance(value, dict):
        for key in sorted(value):
            yield from _texts(value[key])


def _item_pieces(row: dict[str, Any], number: int, benchmark: str, fields: Sequence[str]) -> Iterator[EvalPiece]:
    id_field = next((f for f in ID_FIELDS if row.get(f) not in (None, "")), None)
    item = str(row[id_field]) if id_field is not None else str(number)
    names = list(fields) or sorted(k for k in row if k != id_field)
    missing = [f for f in fields if f not in row]
    if missing:
        raise ValueError(f"{benchmark} row {number}: no field {missing} (fields: {sorted(row)})")
    for name in names:
        for text in _texts(row[name]):
            yield EvalPiece(benchmark, item, text)


def eval_files(path: Path) -> list[tuple[Path, Path | None]]:
    """``(file, folder it was found in)``: a file alone, or every eval file under a folder (sorted)."""
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(EVAL_SUFFIXES))
        if not found:
            raise ValueError(f"{path}: no eval file ({', '.join(EVAL_SUFFIXES)}) in this folder")
        return [(p, path) for p in found]
    if not path.is_file():
        raise ValueError(f"{path}: no such eval file or folder")
    return [(path, None)]


def read_eval_items(sets: Sequence[EvalSet]) -> list[EvalPiece]:
    """Every text piece of every item of the named evaluation sets, in a fixed order."""
    pieces: list[EvalPiece] = []
    for spec in sets:
        for file, root in eval_files(Path(spec.path)):
            benchmark = _benchmark_name(file, root)
            if spec.name:
                benchmark = spec.name if root is None else f"{spec.name}/{benchmark}"
            for number, row in enumerate(_rows(file)):
                pieces.extend(_item_pieces(row, number, benchmark, spec.fields))
    return pieces


# -- the index --------------------------------------------------------------------------------
def normalized_words(text: str) -> list[bytes]:
    """The words n-grams are made of, as UTF-8 (near-dedup's words: ASCII letters/digits and non-ASCII runs),
    by the compiled fold (:func:`dedupe.shingles.batch_words`, equal to the words of
    :func:`dedupe.shingles.normalize_for_shingles`, property-tested there): the per-character definition was a third
    of :func:`find_matches`."""
    return batch_words([text])[0]


@dataclass
class EvalIndex:
    """The n-gram hashes of the evaluation items (sorted) and each n-gram's words -> the items holding it."""

    ngram: int
    keys: np.ndarray  # uint64, sorted, unique
    items: list[tuple[str, str]]  # (benchmark, item)
    grams: dict[bytes, tuple[int, ...]]  # an n-gram's words joined by a space -> indexes into ``items``
    pieces: int = 0
    too_short: int = 0
    fingerprint: str = ""
    table: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))

    @classmethod
    def build(cls, pieces: Sequence[EvalPiece], ngram: int = NGRAM) -> EvalIndex:
        """Hash every n-gram of every piece of at least ``ngram`` words."""
        from dedupe.decontaminate_kernel import bit_table

        items: list[tuple[str, str]] = []
        number: dict[tuple[str, str], int] = {}
        owners: dict[bytes, set[int]] = {}
        kept: list[str] = []
        too_short = 0
        for piece in pieces:
            tokens = normalized_words(piece.text)
            if len(tokens) < ngram:
                too_short += 1
                continue
            key = (piece.benchmark, piece.item)
            if key not in number:
                number[key] = len(items)
                items.append(key)
            for i in range(len(tokens) - ngram + 1):
                owners.setdefault(b" ".join(tokens[i:i + ngram]), set()).add(number[key])
            kept.append(piece.text)
        hashes = shingle_hashes(kept, ShingleConfig(ngram))[0] if kept else np.zeros(0, np.uint64)
        keys = np.unique(hashes)
        grams = {gram: tuple(sorted(found)) for gram, found in owners.items()}
        fingerprint = json_hash([ngram, sorted((gram.hex(), [items[i] for i in found]) for gram, found in grams.items())],
                                20)
        return cls(ngram, keys, items, grams, len(pieces), too_short, fingerprint, bit_table(keys))

    def candidates(self, hashes: np.ndarray) -> np.ndarray:
        """Positions in ``hashes`` whose hash is an evaluation n-gram's (the bit table, then a search)."""
        from dedupe.decontaminate_kernel import hit_positions

        if len(self.keys) == 0 or len(hashes) == 0:
            return np.zeros(0, dtype=np.int64)
        out = np.empty(len(hashes), dtype=np.int64)
        return out[: hit_positions(hashes, self.table, self.keys, out)]


@dataclass(frozen=True)
class Match:
    """One document's overlap with one evaluation item."""

    id: str
    benchmark: str
    item: str
    span: str
    ngrams: int


def _confirm(doc: Document, positions: np.ndarray, index: EvalIndex) -> list[Match]:
    """The hash hits of one document, confirmed on its words, grouped by item (first span, count)."""
    tokens = normalized_words(doc.text)
    n = index.ngram
    found: dict[int, list[Any]] = {}
    for position in positions.tolist():
        if position + n > len(tokens):  # a short document's one shingle: never an n-gram
            continue
        gram = b" ".join(tokens[position:position + n])
        for owner in index.grams.get(gram, ()):  # absent: a hash collision, no match
            entry = found.setdefault(owner, [position, 0, gram.decode("utf-8", errors="replace")])
            entry[1] += 1
    ranked = sorted(found.items(), key=lambda kv: (kv[1][0], index.items[kv[0]]))[:MAX_MATCHES_PER_DOC]
    return [Match(doc.id, *index.items[owner], span, count) for owner, (_, count, span) in ranked]


def find_matches(docs: Iterable[Document], index: EvalIndex, batch: int = 1024) -> tuple[list[Match], int, int]:
    """Every contaminated document's matches; ``(matches, documents read, text bytes read)``."""
    matches: list[Match] = []
    read = text_bytes = 0
    pending: list[Document] = []
    encoded: list[bytes] = []

    def flush() -> None:
        hashes, offsets = shingle_hashes([d.text for d in pending], ShingleConfig(index.ngram), encoded)
        hits = index.candidates(hashes)
        if len(hits):
            owners = np.searchsorted(offsets, hits, side="right") - 1
            for number in np.unique(owners).tolist():
                lo = int(offsets[number])
                local = hits[owners == number] - lo
                matches.extend(_confirm(pending[number], local, index))
        pending.clear()
        encoded.clear()

    for doc in docs:
        read += 1
        encoded.append(doc.text.encode("utf-8", errors="surrogatepass"))
        text_bytes += len(encoded[-1])
        pending.append(doc)
        if len(pending) >= batch:
            flush()
    if pending:
        flush()
    return matches, read, text_bytes


def write_matches(path: Path, matches: Sequence[Match], metadata: dict[str, str]) -> None:
    """Write one shard's attribute (byte-deterministic: rows in document order, fixed settings)."""
    from core.atomic import atomic_path

    table = pa.Table.from_pylist([m.__dict__ for m in matches], schema=SCHEMA)
    table = table.replace_schema_metadata({f"kinda.{k}": v for k, v in sorted(metadata.items())})
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def attribute_metadata(path: Path) -> dict[str, str]:
    """The ``kinda.`` metadata of an attribute file (empty when unreadable)."""
    try:
        raw = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowInvalid):
        return {}
    return {k.decode()[6:]: v.decode() for k, v in raw.items() if k.decode().startswith("kinda.")}


# -- one shard (the flow's task) ---------------------------------------------------------------
def save_index(index: EvalIndex, path: Path) -> None:
    """Write the index once per run for the shard tasks (a process pool would pickle it per task)."""
    import pickle

    from core.atomic import atomic_path

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_bytes(pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL))


@functools.lru_cache(maxsize=2)
def load_index(path: Path) -> EvalIndex:
    """The index a run saved under its own ``_state`` folder (loaded once per worker process)."""
    import pickle

    index = pickle.loads(path.read_bytes())
    if not isinstance(index, EvalIndex):
        raise TypeError(f"{path} holds no evaluation index")
    return index


def shard_documents(out: Path, shard: dict[str, Any]) -> Iterator[Document]:
    """A final shard's documents: from ``docs/``, or from its class shards when the label stage released it."""
    from core.released import read_release, released_documents

    path = out / shard["path"]
    if path.is_file():
        from core.shards import read_documents

        return read_documents(path)
    record = read_release(out, shard["path"])
    if record is None or record.get("order") is None:
        raise ValueError(f"{shard['path']}: not on disk and its release record cannot rebuild it; "
                         "re-run its source flow")
    return (doc for doc in released_documents(out, record) if doc is not None)


@dataclass
class ShardCheck:
    """What decontamination found in one shard."""

    shard: str
    source: str
    documents: int = 0
    text_bytes: int = 0
    contaminated: int = 0
    benchmarks: dict[str, int] = field(default_factory=dict)
    resumed: bool = False
    error: str | None = None


def decontaminate_shard(out: Path, shard: dict[str, Any], index_path: Path) -> ShardCheck:
    """Check one final document shard against the saved index; write its attribute; resumable.

    An attribute whose metadata names the same evaluation sets and shard checksum stands; errors
    are returned, never raised, so one bad shard does not stop the others.
    """
    check = ShardCheck(shard["path"], shard["source"])
    try:
        index = load_index(index_path)
        target = contamination_path(out, shard["path"])
        expected = {"evals": index.fingerprint, "docs": str(shard["sha256"]), "ngram": str(index.ngram)}
        if target.is_file() and attribute_metadata(target) == expected:
            matches = [Match(**row) for row in pq.read_table(target).to_pylist()]
            check.resumed = True
        else:
            matches, check.documents, check.text_bytes = find_matches(shard_documents(out, shard), index)
            write_matches(target, matches, expected)
    except Exception as exc:
        check.error = f"{shard['path']}: {type(exc).__name__}: {exc}"
        return check
    check.contaminated = len({m.id for m in matches})
    for benchmark in sorted({m.benchmark for m in matches}):
        check.benchmarks[benchmark] = len({m.id for m in matches if m.benchmark == benchmark})
    return check
