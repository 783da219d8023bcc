"""fastText's supervised prediction (lid.176), compiled: the same label and score, 3.5-12x less CPU.

Language ID was half of the Common Crawl WET path's CPU (issue 33), and none of it was the
model's arithmetic: fastText 0.9.2 reads each word from a stream, builds a ``std::string`` per
character n-gram to hash it, and decodes every quantized row through virtual calls. This module
reads the model file itself (:func:`read_model`: the 0.9.2 layout of ``.ftz`` and ``.bin``) and
does the same steps in one numba kernel over the UTF-8 bytes of a batch of texts
(:func:`_predict_batch`), in fastText's order and precision, so the results are equal, not close:

- words split on the bytes fastText splits on (space, tab, vertical tab, form feed, NUL, and
  newlines, which the caller's one-line text has as spaces); ``</s>`` ends the line (fastText
  stops reading there), tokens starting with ``__label__`` are not words; then ``</s>``;
- a word's rows: its id if in the vocabulary, then each character n-gram (``minn``..``maxn``
  UTF-8 characters of ``<word>``) hashed with fastText's FNV-1a (bytes sign-extended) modulo
  ``bucket``, kept only where the pruned model keeps it;
- the hidden vector: the rows added one after the other in float32, times ``float32(1/n)``; a
  token's rows are kept in a bounded :class:`TokenCache`, so a repeated word is one lookup;
- the hierarchical softmax's depth-first search for the top label (Huffman tree built from the
  label counts as fastText builds it; sigmoid with ``expf``, ``log(x + 1e-5)`` in double, the
  same pruning and tie rule), and the probability ``expf(score)``.

Agreement is tested against the fastText package on real and random text (every label and score
identical, bit for bit). 48 MB of generated WET page text: fastText 10-15 CPU-s, this 1.2 (12x);
16 MB of real C4, Wikipedia (ja/uk/vi) and StackExchange text: 6.0 vs 1.7-1.9 (3.5x; long
unspaced Japanese runs repeat less). Models this does not cover (word n-grams, softmax loss, a quantized
output) return None from :func:`load`, and the caller uses fastText itself.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import BinaryIO

import numpy as np

from core.compiled import jit

FASTTEXT_MAGIC = 793712314
FASTTEXT_VERSION = 12
LOSS_HS = 1  # fastText's loss_name: hs=1, ns, softmax, ova
MODEL_SUPERVISED = 3  # model_name: cbow=1, sg, sup
EOS = b"</s>"
LABEL = b"__label__"
#: Bytes fastText's ``readWord`` splits on (``\n`` and ``\r`` too: a one-line text has them as spaces).
_SPACES = (32, 9, 11, 12, 0, 10, 13)


@dataclass(frozen=True)
class Lid176:
    """A supervised fastText model as arrays (see the module docstring)."""

    labels: tuple[str, ...]
    nwords: int
    minn: int
    maxn: int
    bucket: int
    vocab_hash: np.ndarray  # uint32 FNV hash per vocabulary entry
    vocab_bytes: np.ndarray  # uint8, every entry's bytes
    vocab_offsets: np.ndarray  # int64, nwords + nlabels + 1
    table: np.ndarray  # int32 open-addressing table of entry ids (-1 empty)
    ngram_row: np.ndarray  # int32 per hash bucket: its input row, or -1 (pruned away)
    rows: np.ndarray  # float32 input rows, decoded
    output: np.ndarray  # float32 output rows (one per inner tree node)
    left: np.ndarray  # int32 Huffman tree
    right: np.ndarray
    cache: TokenCache = field(default_factory=lambda: TokenCache())

    def predict(self, texts: list[str]) -> list[tuple[str, float]]:
        """Top label (without ``__label__``, ``und`` if none) and its probability (<= 1) per text.

        One batch at a time per model (a lock): the kernel releases the GIL and fills :attr:`cache`.
        """
        encoded = [text.encode("utf-8") for text in texts]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        best = np.empty(len(texts), dtype=np.int32)
        score = np.empty(len(texts), dtype=np.float32)
        cache = self.cache
        with cache.lock:
            _predict_batch(data, offsets, self.vocab_hash, self.vocab_bytes, self.vocab_offsets, self.table,
                           self.nwords, self.minn, self.maxn, self.bucket, self.ngram_row, self.rows, self.output,
                           self.left, self.right, cache.slots, cache.entries, cache.token_bytes, cache.token_rows,
                           cache.used, best, score)
        return [(self.labels[b], min(float(s), 1.0)) if b >= 0 else ("und", 0.0)
                for b, s in zip(best.tolist(), score.tolist(), strict=True)]


class TokenCache:
    """The input rows of tokens already met, so a repeated word costs a lookup instead of hashing
    its character n-grams again (words repeat: most of a page's tokens were seen before).

    Only speed depends on it: a token's rows are the same whether computed or looked up, and they
    are added in the same order. Bounded (about 40 MB): when a table or arena is full it is emptied.
    """

    SLOTS = 1 << 20
    ENTRIES = 1 << 19
    BYTES = 8 << 20
    ROWS = 4 << 20

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.slots = np.full(self.SLOTS, -1, dtype=np.int32)
        #: per entry: FNV hash, first byte, byte length, first row, row count
        self.entries = np.zeros((self.ENTRIES, 5), dtype=np.int64)
        self.token_bytes = np.zeros(self.BYTES, dtype=np.uint8)
        self.token_rows = np.zeros(self.ROWS, dtype=np.int32)
        #: entries, bytes and rows in use
        self.used = np.zeros(3, dtype=np.int64)


# -- reading the model file ------------------------------------------------------------------
class _Reader:
    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh

    def array(self, dtype: str, count: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize * count
        data = self.fh.read(size)
        if len(data) != size:
            raise ValueError("truncated fastText model")
        return np.frombuffer(data, dtype=dtype, count=count)

    def one(self, dtype: str) -> int | float:
        value: int | float = self.array(dtype, 1)[0].item()
        return value

    def cstring(self) -> bytes:
        out = bytearray()
        while (byte := self.fh.read(1)) not in (b"\0", b""):
            out += byte
        return bytes(out)


def _dense(reader: _Reader) -> np.ndarray:
    rows, cols = int(reader.one("<i8")), int(reader.one("<i8"))
    return reader.array("<f4", rows * cols).reshape(rows, cols).copy()


def _quantized(reader: _Reader, dim: int) -> np.ndarray | None:
    """A QuantMatrix decoded: row i is ``norm_i * centroid`` per element in float32, what fastText's
    ``addRowToVector`` adds (``x[j] += alpha * c[j]``, alpha the row's quantized norm or 1)."""
    qnorm = bool(reader.one("u1"))
    rows, _cols = int(reader.one("<i8")), int(reader.one("<i8"))
    codes = reader.array("u1", int(reader.one("<i4")))
    pq_dim, nsubq, dsub, lastdsub = (int(reader.one("<i4")) for _ in range(4))
    ksub = 256
    centroids = reader.array("<f4", pq_dim * ksub)
    norms = np.ones(rows, dtype=np.float32)
    if qnorm:
        norm_codes = reader.array("u1", rows)
        if tuple(int(reader.one("<i4")) for _ in range(4)) != (1, 1, 1, 1):
            return None
        norms = reader.array("<f4", ksub)[norm_codes]
    if pq_dim != dim or lastdsub != dsub or nsubq * dsub != dim:
        return None
    codes = codes.reshape(rows, nsubq).astype(np.int64)
    sub = np.arange(nsubq)[None, :, None]
    index = (sub * ksub + codes[:, :, None]) * dsub + np.arange(dsub)[None, None, :]
    decoded = centroids[index].reshape(rows, dim).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf propagate as in fastText's own arithmetic
        return (norms[:, None] * decoded).astype(np.float32)


def _huffman(counts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """fastText's ``HierarchicalSoftmaxLoss::buildTree`` (labels sorted by count, most frequent first)."""
    osz = len(counts)
    size = 2 * osz - 1
    left, right = np.full(size, -1, dtype=np.int32), np.full(size, -1, dtype=np.int32)
    count = [*counts, *([10**15] * (osz - 1))]
    leaf, node = osz - 1, osz
    for i in range(osz, size):
        mini = [0, 0]
        for j in range(2):
            if leaf >= 0 and count[leaf] < count[node]:
                mini[j], leaf = leaf, leaf - 1
            else:
                mini[j], node = node, node + 1
        left[i], right[i] = mini
        count[i] = count[mini[0]] + count[mini[1]]
    return left, right


def _fnv(data: bytes) -> int:
    h = 2166136261
    for byte in data:
        h = ((h ^ (byte if byte < 128 else byte | 0xFFFFFF00)) * 16777619) & 0xFFFFFFFF
    return h


def _vocab_table(words: list[bytes], hashes: np.ndarray) -> np.ndarray:
    size = 1 << max(4, (2 * len(words)).bit_length())
    table = np.full(size, -1, dtype=np.int32)
    for index, h in enumerate(hashes.tolist()):
        slot = h & (size - 1)
        while table[slot] >= 0:
            slot = (slot + 1) & (size - 1)
        table[slot] = index
    return table


def read_model(path: str | Path) -> Lid176 | None:
    """The model at ``path`` as arrays, or None when it is a kind :mod:`this module <core.filters.lid176>` does not cover."""
    with open(path, "rb") as fh:
        reader = _Reader(fh)
        if reader.one("<i4") != FASTTEXT_MAGIC or reader.one("<i4") != FASTTEXT_VERSION:
            return None
        dim, _ws, _epoch, _min_count, _neg, word_ngrams, loss, model, bucket, minn, maxn, _lr_update = (
            int(v) for v in reader.array("<i4", 12))
        reader.one("<f8")  # sampling threshold t
        if loss != LOSS_HS or model != MODEL_SUPERVISED or word_ngrams > 1 or maxn <= 0:
            return None
        size, nwords, _nlabels = (int(reader.one("<i4")) for _ in range(3))
        reader.one("<i8")  # ntokens
        prune_size = int(reader.one("<i8"))
        words, counts = [], []
        for _ in range(size):
            words.append(reader.cstring())
            counts.append(int(reader.one("<i8")))
            reader.one("i1")  # entry type: words first, then labels
        prune = reader.array("<i4", 2 * prune_size).reshape(-1, 2) if prune_size > 0 else None
        quantized = bool(reader.one("u1"))
        rows = _quantized(reader, dim) if quantized else _dense(reader)
        if rows is None or reader.one("u1"):  # a quantized output matrix: not covered
            return None
        output = _dense(reader)
    ngram_row = np.full(bucket, -1, dtype=np.int32)  # pruned to nothing (size 0): no n-gram rows
    if prune_size < 0:  # not pruned: every bucket has its row
        ngram_row[:] = nwords + np.arange(bucket, dtype=np.int32)
    elif prune is not None:
        ngram_row[prune[:, 0]] = nwords + prune[:, 1]
    hashes = np.array([_fnv(w) for w in words], dtype=np.uint32)
    offsets = np.zeros(size + 1, dtype=np.int64)
    np.cumsum([len(w) for w in words], out=offsets[1:])
    left, right = _huffman(counts[nwords:])
    labels = tuple(w.decode("utf-8").removeprefix(LABEL.decode()) for w in words[nwords:])
    return Lid176(labels, nwords, minn, maxn, bucket, hashes, np.frombuffer(b"".join(words), dtype=np.uint8).copy(),
                  offsets, _vocab_table(words, hashes), ngram_row, rows, output, left, right)


@cache
def load(path: str) -> Lid176 | None:
    """:func:`read_model` once per process and path."""
    return read_model(path)


# -- the kernel --------------------------------------------------------------------------------
@jit
def _same_bytes(data: np.ndarray, start: int, end: int, stored: np.ndarray, base: int) -> bool:  # pragma: no cover
    """``data[start:end]`` equals ``stored[base:base + end - start]`` (the vocabulary's and the token
    cache's hash tables both confirm a hash hit this way)."""
    for k in range(end - start):  # noqa: SIM110 - a loop numba compiles
        if stored[base + k] != data[start + k]:
            return False
    return True


@jit
def _word_id(data: np.ndarray, start: int, end: int, h: int, vocab_hash: np.ndarray, vocab_bytes: np.ndarray,
             vocab_offsets: np.ndarray, table: np.ndarray) -> int:  # pragma: no cover - compiled
    mask = table.shape[0] - 1
    slot = h & mask
    while table[slot] >= 0:
        entry = table[slot]
        if vocab_hash[entry] == h and vocab_offsets[entry + 1] - vocab_offsets[entry] == end - start \
                and _same_bytes(data, start, end, vocab_bytes, vocab_offsets[entry]):
            return entry
        slot = (slot + 1) & mask
    return -1


@jit
def _fnv_step(h: int, byte: int) -> int:  # pragma: no cover - compiled
    signed = byte if byte < 128 else byte | 0xFFFFFF00
    return ((h ^ signed) * 16777619) & 0xFFFFFFFF


@jit
def _add_row(hidden: np.ndarray, rows: np.ndarray, row: int) -> None:  # pragma: no cover - compiled
    for j in range(hidden.shape[0]):
        hidden[j] += rows[row, j]


@jit
def _is_label(data: np.ndarray, start: int, end: int) -> bool:  # pragma: no cover - compiled
    prefix = (95, 95, 108, 97, 98, 101, 108, 95, 95)  # __label__
    if end - start < 9:
        return False
    for k in range(9):  # noqa: SIM110 - a loop numba compiles
        if data[start + k] != prefix[k]:
            return False
    return True


@jit
def _is_eos(data: np.ndarray, start: int, end: int) -> bool:  # pragma: no cover - compiled
    return end - start == 4 and data[start] == 60 and data[start + 1] == 47 and data[start + 2] == 115 \
        and data[start + 3] == 62


@jit
def _cache_find(data: np.ndarray, start: int, end: int, h: int, slots: np.ndarray, entries: np.ndarray,
                token_bytes: np.ndarray) -> int:  # pragma: no cover - compiled
    mask = slots.shape[0] - 1
    slot = h & mask
    while slots[slot] >= 0:
        entry = slots[slot]
        if entries[entry, 0] == h and entries[entry, 2] == end - start \
                and _same_bytes(data, start, end, token_bytes, entries[entry, 1]):
            return entry
        slot = (slot + 1) & mask
    return -1


@jit
def _cache_put(data: np.ndarray, start: int, end: int, h: int, found: np.ndarray, count: int, slots: np.ndarray,
               entries: np.ndarray, token_bytes: np.ndarray, token_rows: np.ndarray,
               used: np.ndarray) -> None:  # pragma: no cover - compiled
    length = end - start
    if length > token_bytes.shape[0] // 64 or count > token_rows.shape[0] // 64:
        return  # a very long token: not worth a place
    if used[0] >= entries.shape[0] or used[1] + length > token_bytes.shape[0] or used[2] + count > token_rows.shape[0]:
        slots[:] = -1  # full: start again
        used[:] = 0
    entry = used[0]
    entries[entry, 0], entries[entry, 1], entries[entry, 2] = h, used[1], length
    entries[entry, 3], entries[entry, 4] = used[2], count
    token_bytes[used[1]:used[1] + length] = data[start:end]
    token_rows[used[2]:used[2] + count] = found[:count]
    used[0] += 1
    used[1] += length
    used[2] += count
    mask = slots.shape[0] - 1
    slot = h & mask
    while slots[slot] >= 0:
        slot = (slot + 1) & mask
    slots[slot] = entry


@jit
def _ngram_rows(data: np.ndarray, start: int, end: int, minn: int, maxn: int, bucket: int, ngram_row: np.ndarray,
                found: np.ndarray, count: int) -> int:  # pragma: no cover - compiled
    """fastText's computeSubwords over ``<`` + data[start:end] + ``>``: rows appended to ``found`` from ``count``."""
    length = end - start + 2
    for i in range(length):
        first = 60 if i == 0 else (62 if i == length - 1 else data[start + i - 1])
        if (first & 0xC0) == 0x80:
            continue
        h = 2166136261
        j, n = i, 1
        while j < length and n <= maxn:
            byte = 60 if j == 0 else (62 if j == length - 1 else data[start + j - 1])
            h = _fnv_step(h, byte)
            j += 1
            while j < length:
                byte = 60 if j == 0 else (62 if j == length - 1 else data[start + j - 1])
                if (byte & 0xC0) != 0x80:
                    break
                h = _fnv_step(h, byte)
                j += 1
            if n >= minn and not (n == 1 and (i == 0 or j == length)):
                row = ngram_row[h % bucket]
                if row >= 0:
                    found[count] = row
                    count += 1
            n += 1
    return count


@jit
def _hidden(data: np.ndarray, begin: int, stop: int, vocab_hash: np.ndarray, vocab_bytes: np.ndarray,
            vocab_offsets: np.ndarray, table: np.ndarray, nwords: int, minn: int, maxn: int, bucket: int,
            ngram_row: np.ndarray, rows: np.ndarray, slots: np.ndarray, entries: np.ndarray,
            token_bytes: np.ndarray, token_rows: np.ndarray, used: np.ndarray) -> np.ndarray:  # pragma: no cover
    """The averaged input vector of one text, as fastText's getLine + averageRowsToVector make it."""
    hidden = np.zeros(rows.shape[1], dtype=np.float32)
    count = 0
    position = begin
    while position < stop:
        byte = data[position]
        if byte == 32 or byte == 9 or byte == 11 or byte == 12 or byte == 0 or byte == 10 or byte == 13:
            position += 1
            continue
        start = position
        h = 2166136261
        while position < stop:
            byte = data[position]
            if byte == 32 or byte == 9 or byte == 11 or byte == 12 or byte == 0 or byte == 10 or byte == 13:
                break
            h = _fnv_step(h, byte)
            position += 1
        if _is_eos(data, start, position):  # fastText's getLine stops at the end-of-line token (its row: 0)
            break
        cached = _cache_find(data, start, position, h, slots, entries, token_bytes)
        if cached >= 0:
            for k in range(entries[cached, 3], entries[cached, 3] + entries[cached, 4]):
                _add_row(hidden, rows, token_rows[k])
            count += entries[cached, 4]
            continue
        entry = _word_id(data, start, position, h, vocab_hash, vocab_bytes, vocab_offsets, table)
        if entry >= nwords or (entry < 0 and _is_label(data, start, position)):
            continue  # a label, not a word (never cached: looked up again, as cheap)
        found = np.empty((position - start + 2) * maxn + 1, dtype=np.int32)
        n = 0
        if entry >= 0:
            found[0] = entry
            n = 1
        n = _ngram_rows(data, start, position, minn, maxn, bucket, ngram_row, found, n)
        for k in range(n):
            _add_row(hidden, rows, found[k])
        count += n
        _cache_put(data, start, position, h, found, n, slots, entries, token_bytes, token_rows, used)
    _add_row(hidden, rows, 0)  # "</s>": read in the text, or the newline fastText's predict appends
    count += 1
    scale = np.float32(1.0 / count)
    for j in range(hidden.shape[0]):
        hidden[j] *= scale
    return hidden


@jit
def _std_log(x: float) -> np.float32:  # pragma: no cover - compiled
    """fastText's ``std_log``: ``log(x + 1e-5)`` in double, of a float32 argument, returned as float32."""
    return np.float32(math.log(np.float64(np.float32(x)) + 1e-5))


@jit
def _top_label(hidden: np.ndarray, output: np.ndarray, left: np.ndarray, right: np.ndarray) -> tuple[int, np.float32]:  # pragma: no cover
    """HierarchicalSoftmaxLoss::dfs with k=1, threshold 0: (leaf, score), leaf -1 when every path is below log(1e-5)."""
    osz = output.shape[0]
    floor = _std_log(0.0)
    stack_node = np.empty(2 * osz, dtype=np.int32)
    stack_score = np.empty(2 * osz, dtype=np.float32)
    stack_node[0], stack_score[0] = 2 * osz - 2, np.float32(0.0)
    depth = 1
    best, best_score = -1, np.float32(0.0)
    while depth > 0:
        depth -= 1
        node, score = stack_node[depth], stack_score[depth]
        if score < floor or (best >= 0 and score < best_score):
            continue
        if left[node] == -1 and right[node] == -1:
            best, best_score = node, score  # a later leaf with an equal score replaces the earlier
            continue
        dot = np.float32(0.0)
        for j in range(hidden.shape[0]):
            dot += output[node - osz, j] * hidden[j]
        f = np.float32(1.0) / (np.float32(1.0) + np.float32(math.exp(-dot)))
        stack_node[depth], stack_score[depth] = right[node], np.float32(score + _std_log(f))
        stack_node[depth + 1] = left[node]
        stack_score[depth + 1] = np.float32(score + _std_log(np.float32(1.0 - np.float64(f))))
        depth += 2
    return best, best_score


@jit
def _predict_batch(data: np.ndarray, offsets: np.ndarray, vocab_hash: np.ndarray, vocab_bytes: np.ndarray,
                   vocab_offsets: np.ndarray, table: np.ndarray, nwords: int, minn: int, maxn: int, bucket: int,
                   ngram_row: np.ndarray, rows: np.ndarray, output: np.ndarray, left: np.ndarray, right: np.ndarray,
                   slots: np.ndarray, entries: np.ndarray, token_bytes: np.ndarray, token_rows: np.ndarray,
                   used: np.ndarray, best: np.ndarray, score: np.ndarray) -> None:  # pragma: no cover - compiled
    for t in range(offsets.shape[0] - 1):
        hidden = _hidden(data, offsets[t], offsets[t + 1], vocab_hash, vocab_bytes, vocab_offsets, table, nwords,
                         minn, maxn, bucket, ngram_row, rows, slots, entries, token_bytes, token_rows, used)
        leaf, top = _top_label(hidden, output, left, right)
        best[t] = leaf
        score[t] = np.float32(math.exp(top)) if leaf >= 0 else np.float32(0.0)
