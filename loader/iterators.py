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
import weakref
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

    #: Every this many items, tell the dataset (``hint_ahead``) which items come next, this far ahead.
    HINT_EVERY, HINT_AHEAD = 32, 128

    def __init__(self, dataset: Any, repeat: bool = False) -> None:
        self.dataset = dataset
        self.repeat = repeat
        self.position = 0
        self._next_hint = 0 if hasattr(dataset, "hint_ahead") else None

    def __iter__(self) -> IndexedSource:
        return self

    def _length(self) -> int:
        return len(self.dataset)

    def _at(self, position: int) -> Any:
        n = self._length()
        epoch, index = divmod(position, n)
        dataset = self.dataset.for_epoch(epoch) if epoch and hasattr(self.dataset, "for_epoch") else self.dataset
        return dataset[index]

    def _hint(self, n: int) -> None:
        """Prefetch hints for remote sets (cheap no-op for local ones)."""
        epoch, index = divmod(self.position, n)
        dataset = self.dataset.for_epoch(epoch) if epoch and hasattr(self.dataset, "for_epoch") else self.dataset
        dataset.hint_ahead(index, self.HINT_AHEAD)
        self._next_hint = self.position + self.HINT_EVERY

    def __next__(self) -> Any:
        n = self._length()
        if n == 0 or (not self.repeat and self.position >= n):
            raise StopIteration
        if self._next_hint is not None and self.position >= self._next_hint:
            self._hint(n)
        item = self._at(self.position)
        self.position += 1
        return item

    def skip(self, count: int) -> int:
        """Advance without reading; return how many items were really skipped."""
        n = self._length()
        allowed = count if self.repeat else max(0, min(count, n - self.position))
        self.position += allowed
        if self._next_hint is not None and allowed >= self.HINT_EVERY:
            self._next_hint = self.position  # jumped: hint again at the next item
        return allowed

    def state_dict(self) -> State:
        return {"position": self.position}

    def load_state_dict(self, state: State) -> None:
        self.position = int(state["position"])
        if self._next_hint is not None:
            self._next_hint = self.position


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


class _Reader:
    """The background side of a :class:`Prefetch`: thread, queue and stop flag, without the Prefetch.

    Kept apart so that a ``weakref.finalize`` can stop the thread at interpreter exit without
    keeping the Prefetch alive. A daemon thread still running torch code while the interpreter
    tears down its native runtimes aborts the process (``terminate called without an active
    exception``, exit code 134): the thread must be stopped and joined before that, every time.
    """

    def __init__(self, upstream: Any, depth: int) -> None:
        self.stop = threading.Event()
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self.thread = threading.Thread(target=self._run, args=(upstream,), daemon=True, name="kinda-prefetch")
        self.thread.start()

    def _run(self, upstream: Any) -> None:
        try:
            while not self.stop.is_set():
                try:
                    item = next(upstream)
                except StopIteration:
                    self.queue.put((_END, None))
                    return
                self.queue.put((item, copy.deepcopy(upstream.state_dict())))
        except BaseException as exc:  # hand the error to the consumer
            self.queue.put((exc, None))

    def halt(self) -> None:
        """Stop the thread and wait for it (draining the queue so a blocked ``put`` returns)."""
        self.stop.set()
        if threading.current_thread() is self.thread:  # collected inside its own thread: it ends by itself
            return
        while self.thread.is_alive():
            with contextlib.suppress(queue.Empty):
                self.queue.get(timeout=0.01)
        self.thread.join()


class Prefetch:
    """Reads ``depth`` items ahead in a background thread; the state is that of the last item handed out.

    The thread is stopped by :meth:`close`, by ``load_state_dict``, when the Prefetch is garbage
    collected, and at interpreter exit (a ``weakref.finalize``), whichever comes first.
    """

    def __init__(self, upstream: Any, depth: int = 2) -> None:
        self.upstream, self.depth = upstream, max(1, depth)
        self._state = copy.deepcopy(upstream.state_dict())
        self._reader: _Reader | None = None
        self._finalizer: weakref.finalize | None = None

    def __iter__(self) -> Prefetch:
        return self

    def _start(self) -> _Reader:
        reader = _Reader(self.upstream, self.depth)
        self._reader = reader
        self._finalizer = weakref.finalize(self, reader.halt)
        return reader

    def __next__(self) -> Any:
        reader = self._reader or self._start()
        item, state = reader.queue.get()
        if item is _END:
            reader.queue.put((_END, None))
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        self._state = state
        return item

    def _halt(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # runs reader.halt once, and no more at exit
        self._reader = None
        self._finalizer = None

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
