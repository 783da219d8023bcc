"""Checkpointable iterators: every stage has ``state_dict()`` that nests its upstream's (Epochraft style).

A pipeline is a chain such as ``IndexedSource -> Stride -> Batch -> Prefetch``. Each stage's
state says exactly what has been *handed out* (never what was read ahead), so saving it after
any item and loading it into a freshly built chain continues with the very next item. The
rank split (:class:`Stride`) reads upstream in groups of ``world_size`` items, which puts every
rank's upstream at the same position after each step: the state of any rank resumes a job with
a different number of ranks (elastic resume), the global order of items staying the same.
"""

from __future__ import annotations

import contextlib
import copy
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import torch

State = dict[str, Any]


class Checkpointable(Protocol):
    """An iterator whose position can be saved and restored."""

    def __iter__(self) -> Iterator[Any]: ...

    def __next__(self) -> Any: ...

    def state_dict(self) -> State: ...

    def load_state_dict(self, state: State) -> None: ...


class IndexedSource:
    """Items ``dataset[0], dataset[1], ...`` of a map-style dataset; repeats with a new shuffle if asked.

    ``dataset`` may provide ``for_epoch(e)`` (a :class:`~loader.dataset.MixtureDataset` does) so
    each repeat is a new permutation.
    """

    def __init__(self, dataset: Any, repeat: bool = False) -> None:
        self.dataset = dataset
        self.repeat = repeat
        self.position = 0

    def __iter__(self) -> IndexedSource:
        return self

    def _length(self) -> int:
        return len(self.dataset)

    def _at(self, position: int) -> Any:
        n = self._length()
        epoch, index = divmod(position, n)
        dataset = self.dataset.for_epoch(epoch) if epoch and hasattr(self.dataset, "for_epoch") else self.dataset
        return dataset[index]

    def __next__(self) -> Any:
        n = self._length()
        if n == 0 or (not self.repeat and self.position >= n):
            raise StopIteration
        item = self._at(self.position)
        self.position += 1
        return item

    def skip(self, count: int) -> int:
        """Advance without reading; return how many items were really skipped."""
        n = self._length()
        allowed = count if self.repeat else max(0, min(count, n - self.position))
        self.position += allowed
        return allowed

    def state_dict(self) -> State:
        return {"position": self.position}

    def load_state_dict(self, state: State) -> None:
        self.position = int(state["position"])


def _skip(upstream: Any, count: int) -> bool:
    """Skip ``count`` upstream items, cheaply when upstream knows how; False if it ran out."""
    if count <= 0:
        return True
    if hasattr(upstream, "skip"):
        return bool(upstream.skip(count) == count)
    for _ in range(count):
        try:
            next(upstream)
        except StopIteration:
            return False
    return True


class Stride:
    """Rank ``rank`` of ``world_size``: from each group of ``world_size`` upstream items, item ``rank``.

    A group that is incomplete at the end is dropped by every rank, so all ranks do the same
    number of steps (a collective never waits on a rank that ran out).
    """

    def __init__(self, upstream: Any, rank: int = 0, world_size: int = 1) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} not in range({world_size})")
        self.upstream, self.rank, self.world_size = upstream, rank, world_size
        self._done = False

    def __iter__(self) -> Stride:
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        saved = self.upstream.state_dict()
        try:
            if not _skip(self.upstream, self.rank):
                raise StopIteration
            item = next(self.upstream)
            if not _skip(self.upstream, self.world_size - self.rank - 1):
                raise StopIteration
        except StopIteration:
            self.upstream.load_state_dict(saved)  # state stays at the last complete group
            self._done = True
            raise
        return item

    def state_dict(self) -> State:
        return {"upstream": self.upstream.state_dict()}

    def load_state_dict(self, state: State) -> None:
        self.upstream.load_state_dict(state["upstream"])
        self._done = False


def collate(items: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Stack the fields of equal-shaped items into a batch."""
    return {key: torch.stack([item[key] for item in items]) for key in items[0]}


class Batch:
    """Groups of ``batch_size`` upstream items (the last incomplete group is dropped)."""

    def __init__(self, upstream: Any, batch_size: int,
                 collate_fn: Callable[[Sequence[Any]], Any] = collate) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.upstream, self.batch_size, self.collate_fn = upstream, batch_size, collate_fn

    def __iter__(self) -> Batch:
        return self

    def __next__(self) -> Any:
        saved = self.upstream.state_dict()
        items = []
        for _ in range(self.batch_size):
            try:
                items.append(next(self.upstream))
            except StopIteration:
                self.upstream.load_state_dict(saved)
                raise
        return self.collate_fn(items)

    def state_dict(self) -> State:
        return {"upstream": self.upstream.state_dict()}

    def load_state_dict(self, state: State) -> None:
        self.upstream.load_state_dict(state["upstream"])


_END = object()


class Prefetch:
    """Reads ``depth`` items ahead in a background thread; the state is that of the last item handed out."""

    def __init__(self, upstream: Any, depth: int = 2) -> None:
        self.upstream, self.depth = upstream, max(1, depth)
        self._state = copy.deepcopy(upstream.state_dict())
        self._queue: queue.Queue[Any] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def __iter__(self) -> Prefetch:
        return self

    def _run(self, out: queue.Queue[Any], stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                try:
                    item = next(self.upstream)
                except StopIteration:
                    out.put((_END, None))
                    return
                out.put((item, copy.deepcopy(self.upstream.state_dict())))
        except BaseException as exc:  # hand the error to the consumer
            out.put((exc, None))

    def _start(self) -> None:
        self._stop = threading.Event()
        self._queue = queue.Queue(maxsize=self.depth)
        self._thread = threading.Thread(target=self._run, args=(self._queue, self._stop), daemon=True)
        self._thread.start()

    def __next__(self) -> Any:
        if self._queue is None:
            self._start()
        assert self._queue is not None
        item, state = self._queue.get()
        if item is _END:
            self._queue.put((_END, None))
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        self._state = state
        return item

    def _halt(self) -> None:
        if self._thread is not None:
            self._stop.set()
            assert self._queue is not None
            while self._thread.is_alive():
                with contextlib.suppress(queue.Empty):
                    self._queue.get(timeout=0.01)
            self._thread = None
            self._queue = None

    def state_dict(self) -> State:
        """The upstream's state as of the last item handed out (transparent: same shape with or without prefetch)."""
        return copy.deepcopy(self._state)

    def load_state_dict(self, state: State) -> None:
        self._halt()
        self.upstream.load_state_dict(state)
        self._state = copy.deepcopy(state)

    def close(self) -> None:
        """Stop the background thread."""
        self._halt()
