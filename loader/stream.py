"""On-the-fly mode: read document shards, tokenize in worker processes, pack into windows.

For users who change tokenizers often: the same recipe reads Parquet document shards directly
instead of data tensors. :class:`ParquetDocuments` -> :class:`Tokenize` (background processes,
results in order) -> :class:`Chunk` (concatenate with EOS, cut ``context_length`` windows), and
:class:`Mix` interleaves components by weight with a seeded, counter-based choice. Every stage
is checkpointable like the tensor path: a state names the input position and the tokens
already cut but not yet handed out, never what workers computed ahead.
"""

from __future__ import annotations

import bisect
import collections
import hashlib
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import torch

from loader._workers import encode, init_worker
from loader.dataset import DEFAULT_OPTIONS, ItemOptions, make_item
from loader.iterators import State

# -- documents --------------------------------------------------------------------------------


class ParquetDocuments:
    """Texts of Parquet document shards in the given order; state = (file, row)."""

    def __init__(self, paths: Sequence[Path], batch_rows: int = 256) -> None:
        self.paths = [Path(p) for p in paths]
        self.batch_rows = batch_rows
        self.file, self.row = 0, 0
        self._texts: list[str] = []
        self._first_row = 0  # row number of _texts[0] in the current file
        self._batches: Any = None

    def __iter__(self) -> ParquetDocuments:
        return self

    def _open(self) -> None:
        """Start reading the current file at ``self.row``, skipping whole row groups."""
        parquet = pq.ParquetFile(self.paths[self.file])
        meta = parquet.metadata
        starts = [0]
        for i in range(meta.num_row_groups):
            starts.append(starts[-1] + meta.row_group(i).num_rows)
        group = max(0, bisect.bisect_right(starts, self.row) - 1)
        self._first_row = starts[group] if group < meta.num_row_groups else starts[-1]
        self._batches = parquet.iter_batches(batch_size=self.batch_rows, columns=["text"],
                                             row_groups=list(range(group, meta.num_row_groups)))
        self._texts = []

    def __next__(self) -> str:
        while True:
            if self.file >= len(self.paths):
                raise StopIteration
            if self._batches is None:
                self._open()
            index = self.row - self._first_row
            while index >= len(self._texts):
                batch = next(self._batches, None)
                if batch is None:
                    break
                self._first_row += len(self._texts)
                index = self.row - self._first_row
                self._texts = batch.column(0).to_pylist()
            if index < len(self._texts):
                self.row += 1
                return self._texts[index]
            self.file, self.row, self._batches = self.file + 1, 0, None

    def state_dict(self) -> State:
        return {"file": self.file, "row": self.row}

    def load_state_dict(self, state: State) -> None:
        self.file, self.row, self._batches = int(state["file"]), int(state["row"]), None


# -- tokenization in worker processes -----------------------------------------------------------
class TokenizerPool:
    """Worker processes that each hold the tokenizer; shared by every :class:`Tokenize` stage.

    ``workers=0`` tokenizes in the calling process (for tests and debugging).
    """

    def __init__(self, tokenizer: str, split_digits: bool = True, split_mode: str = "sequence",
                 eos_token: str | None = None, workers: int = 2) -> None:
        self.args = (str(tokenizer), split_digits, split_mode, eos_token)
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        if workers == 0:
            init_worker(*self.args)
        else:
            self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=init_worker, initargs=self.args)

    def submit(self, texts: list[str]) -> Future[list[np.ndarray]]:
        """Tokenize a batch of texts in the background (inline when ``workers == 0``)."""
        if self._pool is None:
            future: Future[list[np.ndarray]] = Future()
            future.set_result(encode(texts))
            return future
        return self._pool.submit(encode, texts)

    def close(self) -> None:
        """Stop the worker processes."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class Tokenize:
    """Token arrays (EOS appended) of upstream texts, tokenized ``ahead`` batches in advance.

    State: the upstream state before the batch being handed out, and how many of its documents
    were handed out. Empty documents are skipped.
    """

    def __init__(self, upstream: Any, pool: TokenizerPool, batch_docs: int = 64, ahead: int = 4) -> None:
        self.upstream, self.pool, self.batch_docs, self.ahead = upstream, pool, batch_docs, max(1, ahead)
        self._pending: collections.deque[tuple[State, Future[list[np.ndarray]]]] = collections.deque()
        self._current: list[np.ndarray] = []
        self._current_state: State = upstream.state_dict()
        self._index = 0
        self._exhausted = False

    def __iter__(self) -> Tokenize:
        return self

    def _fill(self) -> None:
        while not self._exhausted and len(self._pending) < self.ahead:
            state = self.upstream.state_dict()
            texts = []
            for _ in range(self.batch_docs):
                try:
                    texts.append(next(self.upstream))
                except StopIteration:
                    self._exhausted = True
                    break
            if texts:
                self._pending.append((state, self.pool.submit(texts)))

    def __next__(self) -> np.ndarray:
        while True:
            while self._index < len(self._current):
                ids = self._current[self._index]
                self._index += 1
                if len(ids):
                    return ids
            self._fill()
            if not self._pending:
                raise StopIteration
            state, future = self._pending.popleft()
            self._current, self._current_state, self._index = future.result(), state, 0

    def state_dict(self) -> State:
        return {"upstream": dict(self._current_state), "skip": self._index}

    def load_state_dict(self, state: State) -> None:
        for _, future in self._pending:
            future.cancel()
        self._pending.clear()
        self._exhausted = False
        self.upstream.load_state_dict(state["upstream"])
        self._current_state = dict(state["upstream"])
        self._current, self._index = [], 0
        skip = int(state["skip"])
        if skip:
            self._fill()
            if self._pending:
                st, future = self._pending.popleft()
                self._current, self._current_state, self._index = future.result(), st, skip


class Chunk:
    """Concatenate documents and cut ``context_length`` windows; items like the tensor path's."""

    def __init__(self, upstream: Any, context_length: int, options: ItemOptions = DEFAULT_OPTIONS) -> None:
        self.upstream, self.context_length, self.options = upstream, context_length, options
        self._tokens = np.zeros(0, dtype=np.int64)
        self._docs = np.zeros(0, dtype=np.int64)
        self._next_doc = 0

    def __iter__(self) -> Chunk:
        return self

    def __next__(self) -> dict[str, Any]:
        length = self.context_length
        while len(self._tokens) < length:
            ids = next(self.upstream)
            self._tokens = np.concatenate([self._tokens, ids])
            self._docs = np.concatenate([self._docs, np.full(len(ids), self._next_doc, dtype=np.int64)])
            self._next_doc += 1
        tokens, docs = self._tokens[:length].copy(), self._docs[:length].copy()
        self._tokens, self._docs = self._tokens[length:], self._docs[length:]
        return make_item(tokens, docs, self.options)

    def state_dict(self) -> State:
        return {"upstream": self.upstream.state_dict(), "tokens": self._tokens.tolist(),
                "docs": self._docs.tolist(), "next_doc": self._next_doc}

    def load_state_dict(self, state: State) -> None:
        self.upstream.load_state_dict(state["upstream"])
        self._tokens = np.asarray(state["tokens"], dtype=np.int64)
        self._docs = np.asarray(state["docs"], dtype=np.int64)
        self._next_doc = int(state["next_doc"])


def _uniform(seed: int, step: int) -> float:
    """A reproducible uniform number in [0, 1) for (seed, step), independent of any RNG state."""
    digest = hashlib.blake2b(f"{seed}:{step}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2**64


class Mix:
    """Interleave iterators by weight; step ``t`` draws its component from ``(seed, t)`` alone.

    An exhausted component leaves the mixture and the others share its weight; the mixture
    ends when all are exhausted. State: the step and every component's state.
    """

    def __init__(self, streams: Sequence[Any], weights: Sequence[float], seed: int = 0) -> None:
        if len(streams) != len(weights) or not streams:
            raise ValueError("one weight per stream, at least one stream")
        self.streams, self.weights, self.seed = list(streams), [float(w) for w in weights], seed
        self.step = 0
        self.live = [True] * len(streams)

    def __iter__(self) -> Mix:
        return self

    def _choose(self) -> int:
        live = [i for i, ok in enumerate(self.live) if ok]
        cumulative = np.cumsum([self.weights[i] for i in live])
        u = _uniform(self.seed, self.step) * cumulative[-1]
        return live[min(int(np.searchsorted(cumulative, u, side="right")), len(live) - 1)]

    def __next__(self) -> Any:
        while any(self.live):
            index = self._choose()
            try:
                item = next(self.streams[index])
            except StopIteration:
                self.live[index] = False
                continue
            self.step += 1
            if isinstance(item, dict):
                item["component"] = torch.tensor(index)
            return item
        raise StopIteration

    def state_dict(self) -> State:
        return {"step": self.step, "live": list(self.live), "streams": [s.state_dict() for s in self.streams]}

    def load_state_dict(self, state: State) -> None:
        self.step, self.live = int(state["step"]), list(state["live"])
        for stream, sub in zip(self.streams, state["streams"], strict=True):
            stream.load_state_dict(sub)
