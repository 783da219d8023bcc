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


# -- per-rank streaming ---------------------------------------------------------------------------
class DocumentBlocks:
    """A component's documents cut into blocks of ``block_docs`` (in shard order): the unit of work.

    Row counts come from the Parquet footers alone, so every rank knows every block's place
    without reading a row; block ``b`` is documents ``b * block_docs`` up to the next block.
    """

    def __init__(self, paths: Sequence[Path], block_docs: int) -> None:
        if block_docs < 1:
            raise ValueError("block_docs must be >= 1")
        self.paths, self.block_docs = [Path(p) for p in paths], block_docs
        self._starts = [0]
        for path in self.paths:
            self._starts.append(self._starts[-1] + pq.ParquetFile(path).metadata.num_rows)
        self.documents = self._starts[-1]
        self.count = -(-self.documents // block_docs)

    def texts(self, block: int) -> list[str]:
        """The texts of one block."""
        first = block * self.block_docs
        count = min(self.block_docs, self.documents - first)
        file = bisect.bisect_right(self._starts, first) - 1
        reader = ParquetDocuments(self.paths, batch_rows=min(256, self.block_docs))
        reader.load_state_dict({"file": file, "row": first - self._starts[file]})
        return [next(reader) for _ in range(count)]


def _block_windows(encoded: list[np.ndarray], first_doc: int, length: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """A block's documents (EOS included) concatenated and cut into windows; the tail under one window is left."""
    kept = [(i, ids) for i, ids in enumerate(encoded) if len(ids)]
    if not kept:
        return []
    tokens = np.concatenate([ids for _, ids in kept])
    docs = np.concatenate([np.full(len(ids), first_doc + i, dtype=np.int64) for i, ids in kept])
    return [(tokens[s:s + length], docs[s:s + length]) for s in range(0, len(tokens) - length + 1, length)]


class RankBlocks:
    """Per-rank streaming: rank ``rank`` of ``world_size`` tokenizes and serves only its own blocks.

    The work list is ``pending`` (blocks left part-read by an earlier world, each with the
    window to start at) followed by every block from ``next`` on; rank ``r`` takes items
    ``r, r + W, r + 2W, ...``. Each block is tokenized alone and cut into windows, so a rank
    needs nobody else's tokens. State: the shared work list, and this rank's progress in it
    (items finished, windows handed out of the current one). Resuming on the same world size
    takes the rank's own state; on another, :func:`merge_rank_states` turns the states of all
    ranks into a new work list, so every window is served exactly once across the change.
    """

    def __init__(self, blocks: DocumentBlocks, pool: TokenizerPool, context_length: int, rank: int,
                 world_size: int, options: ItemOptions = DEFAULT_OPTIONS, ahead: int = 2) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} not in range({world_size})")
        self.blocks, self.pool, self.context_length, self.options = blocks, pool, context_length, options
        self.rank, self.world_size, self.ahead = rank, world_size, max(0, ahead)
        self.pending: list[list[int]] = []
        self.next_block = 0
        self.done = 0  # items of this rank finished
        self.offset = 0  # windows handed out of the current item
        self._futures: dict[int, Future[list[np.ndarray]]] = {}
        self._windows: tuple[int, list[tuple[np.ndarray, np.ndarray]]] | None = None

    def __iter__(self) -> RankBlocks:
        return self

    def _item(self, index: int) -> tuple[int, int] | None:
        """(block, first window) of work item ``index`` of the shared list, None past the end."""
        if index < len(self.pending):
            block, start = self.pending[index]
            return block, start
        block = self.next_block + index - len(self.pending)
        return (block, 0) if block < self.blocks.count else None

    def _mine(self, done: int) -> tuple[int, int] | None:
        return self._item(self.rank + done * self.world_size)

    def _submit(self, done: int) -> None:
        item = self._mine(done)
        if item is not None and done not in self._futures:
            self._futures[done] = self.pool.submit(self.blocks.texts(item[0]))

    def _windows_of(self, done: int, block: int) -> list[tuple[np.ndarray, np.ndarray]]:
        if self._windows is None or self._windows[0] != done:
            self._submit(done)
            encoded = self._futures.pop(done).result()
            self._windows = (done, _block_windows(encoded, block * self.blocks.block_docs, self.context_length))
            for later in range(done + 1, done + 1 + self.ahead):
                self._submit(later)
        return self._windows[1]

    def __next__(self) -> dict[str, Any]:
        while True:
            item = self._mine(self.done)
            if item is None:
                raise StopIteration
            windows = self._windows_of(self.done, item[0])
            position = item[1] + self.offset
            if position < len(windows):
                self.offset += 1
                tokens, docs = windows[position]
                return make_item(tokens.copy(), docs.copy(), self.options)
            self.done, self.offset, self._windows = self.done + 1, 0, None

    def state_dict(self) -> State:
        return {"pending": [list(p) for p in self.pending], "next": self.next_block, "blocks": self.blocks.count,
                "rank": self.rank, "world_size": self.world_size, "done": self.done, "offset": self.offset}

    def load_state_dict(self, state: State) -> None:
        if (state["rank"], state["world_size"]) != (self.rank, self.world_size):
            raise ValueError(f"per-rank state of rank {state['rank']} of {state['world_size']} cannot resume rank "
                             f"{self.rank} of {self.world_size}: pass the states of all {state['world_size']} "
                             f"ranks (state_dict=[...]) to resume on another world size")
        for future in self._futures.values():
            future.cancel()
        self._futures, self._windows = {}, None
        self.pending = [[int(b), int(s)] for b, s in state["pending"]]
        self.next_block, self.done, self.offset = int(state["next"]), int(state["done"]), int(state["offset"])


def merge_rank_states(states: Sequence[State], rank: int, world_size: int) -> State:
    """The state of rank ``rank`` of a new world from the :class:`RankBlocks` states of every old rank.

    Work items every old rank finished are dropped; an item a rank was inside stays with the
    window it reached; items no rank reached follow. The new world splits what is left.
    """
    old_world = int(states[0]["world_size"])
    progress = {int(s["rank"]): (int(s["done"]), int(s["offset"])) for s in states}
    shared = {(repr(s["pending"]), int(s["next"]), int(s["world_size"])) for s in states}
    if sorted(progress) != list(range(old_world)) or len(states) != old_world or len(shared) != 1:
        raise ValueError(f"need the per-rank states of all {old_world} ranks of one job, got ranks "
                         f"{sorted(progress)} of {len(states)} states")
    pending, next_block, blocks = [list(p) for p in states[0]["pending"]], int(states[0]["next"]), int(states[0]["blocks"])
    reached = max(r + done * old_world for r, (done, _) in progress.items())
    remaining = []
    for index in range(reached + 1):
        block, start = pending[index] if index < len(pending) else (next_block + index - len(pending), 0)
        done, offset = progress[index % old_world]
        local = index // old_world
        if local >= done and block < blocks:
            remaining.append([block, start + (offset if local == done else 0)])
    if reached + 1 < len(pending):
        remaining.extend(pending[reached + 1:])
        new_next = next_block
    else:
        new_next = next_block + reached + 1 - len(pending)
    return {"pending": remaining, "next": min(new_next, blocks), "blocks": blocks, "rank": rank,
            "world_size": world_size, "done": 0, "offset": 0}
