"""Map-style torch Datasets over data tensors: context windows and seeded mixtures.

:class:`WindowDataset` cuts each token file into consecutive ``context_length`` windows (a
file's last partial window is left out, so a window never spans two memory maps) and serves
them by index. :class:`MixtureDataset` lays several of them out by a recipe's sample counts and
shuffles the whole run with a seeded :class:`~loader.permutation.Permutation`: any index maps to
its window in O(1) time and memory, so the datasets work with ``DataLoader`` and
``DistributedSampler`` as they are, and resuming needs nothing but a position.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from loader.permutation import Permutation
from loader.tensors import TensorFile


@dataclass(frozen=True)
class ItemOptions:
    """Which per-token fields an item carries besides ``token_ids``.

    ``document_ids`` are global document numbers (tell documents apart inside a window);
    ``position_ids`` restart at 0 where a document starts (and at the window start);
    ``attention_mask`` is the causal mask restricted to each document (no attention across
    documents), an L x L bool tensor, so it is off unless asked for. ``token_dtype`` is the
    type of ``token_ids``: ``int64`` (what embedding layers take) or ``native`` (the file's
    uint16/uint32, the cheapest to copy and pin; convert on the device).
    """

    document_ids: bool = True
    position_ids: bool = False
    attention_mask: bool = False
    token_dtype: str = "int64"


DEFAULT_OPTIONS = ItemOptions()


def make_item(token_ids: np.ndarray, document_ids: np.ndarray | None, options: ItemOptions) -> dict[str, torch.Tensor]:
    """A training item as torch tensors, from a window's tokens and per-token document ids."""
    item = {"token_ids": torch.from_numpy(token_ids)}
    if document_ids is None:
        return item
    if options.document_ids:
        item["document_ids"] = torch.from_numpy(document_ids)
    if options.position_ids or options.attention_mask:
        starts = np.flatnonzero(np.diff(document_ids, prepend=document_ids[0] - 1))
        segment_start = np.repeat(starts, np.diff(np.append(starts, len(document_ids))))
        if options.position_ids:
            item["position_ids"] = torch.from_numpy(np.arange(len(document_ids), dtype=np.int64) - segment_start)
        if options.attention_mask:
            # Block-diagonal (one block per document), then causal: only the diagonal blocks are written.
            length = len(document_ids)
            mask = torch.zeros(length, length, dtype=torch.bool)
            bounds = [*starts.tolist(), length]
            for begin, end in itertools.pairwise(bounds):
                mask[begin:end, begin:end] = True
            item["attention_mask"] = mask.tril_()
    return item


class WindowDataset(Dataset[dict[str, torch.Tensor]]):
    """Consecutive ``context_length`` windows of a list of token files, by index."""

    def __init__(self, files: Sequence[TensorFile], context_length: int, options: ItemOptions = DEFAULT_OPTIONS,
                 first_document: int = 0) -> None:
        if context_length < 1:
            raise ValueError("context_length must be >= 1")
        self.files = list(files)
        self.context_length = context_length
        self.options = options
        self._window_starts = [0]
        self._doc_starts = [first_document]
        for file in self.files:
            self._window_starts.append(self._window_starts[-1] + file.tokens // context_length)
            self._doc_starts.append(self._doc_starts[-1] + file.docs)
        self._dtype = np.dtype(np.int64) if options.token_dtype == "int64" else None
        if options.token_dtype not in ("int64", "native"):
            raise ValueError("token_dtype must be 'int64' or 'native'")
        self._need_docs = options.document_ids or options.position_ids or options.attention_mask

    def __len__(self) -> int:
        return self._window_starts[-1]

    @property
    def documents(self) -> int:
        """Number of documents in the files (for numbering the next dataset's documents)."""
        return self._doc_starts[-1] - self._doc_starts[0]

    def locate(self, index: int) -> tuple[int, int]:
        """(file number, first token offset) of window ``index``."""
        if not 0 <= index < self._window_starts[-1]:
            raise IndexError(f"window {index} out of range({len(self)})")
        file_no = bisect.bisect_right(self._window_starts, index) - 1
        return file_no, (index - self._window_starts[file_no]) * self.context_length

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        file_no, start = self.locate(index)
        tokens, offsets = self.files[file_no].open()
        end = start + self.context_length
        window = tokens[start:end]
        token_ids = window.astype(self._dtype) if self._dtype is not None else window.copy()
        if not self._need_docs:
            return make_item(token_ids, None, self.options)
        first = int(offsets.searchsorted(start, side="right")) - 1
        last = int(offsets.searchsorted(end - 1, side="right")) - 1
        base = self._doc_starts[file_no] + first
        doc_ids = np.full(self.context_length, base, dtype=np.int64)
        # A window spans few documents: fill each later document's slice (cheaper than repeat/cumsum).
        for k, cut in enumerate(offsets[first + 1:last + 1].tolist(), start=1):
            doc_ids[cut - start:] = base + k
        return make_item(token_ids, doc_ids, self.options)


def plan_counts(windows: Sequence[int], weights: Sequence[float], epochs: Sequence[float | None],
                balance: str = "weights", total_windows: int | None = None) -> list[int]:
    """How many windows each component contributes to the run.

    ``balance="weights"``: proportions follow the weights exactly; the run has ``total_windows``
    windows, or (when not given) as many as possible without reading any component more than
    its ``epochs`` (1 when unset). ``balance="epochs"``: each component is read ``epochs``
    times and the weights are only reported.
    """
    if any(w <= 0 for w in windows):
        raise ValueError("every component needs at least one window")
    eps = [1.0 if e is None else float(e) for e in epochs]
    if balance == "epochs":
        return [max(1, round(e * w)) for e, w in zip(eps, windows, strict=True)]
    total_weight = float(sum(weights))
    shares = [w / total_weight for w in weights]
    if total_windows is None:
        total_windows = int(min(e * w / s for e, w, s in zip(eps, windows, shares, strict=True)))
    counts = [int(s * total_windows) for s in shares]
    # Largest remainders get the windows left over, so the counts add up exactly.
    order = sorted(range(len(shares)), key=lambda i: (-(shares[i] * total_windows - counts[i]), i))
    for i in order[: total_windows - sum(counts)]:
        counts[i] += 1
    return counts


class MixtureDataset(Dataset[dict[str, torch.Tensor]]):
    """A seeded, shuffled run over several window datasets with fixed sample counts.

    Global index ``g`` maps to ``u = P(g)`` (a permutation of the run); ``u`` falls in one
    component's block, and its position there, modulo the component's size and through the
    component's own permutation, picks the window. Each window is used ``count // size`` or
    one more times, and a fraction of an epoch reads a random subset, not the first files.
    """

    def __init__(self, components: Sequence[WindowDataset], counts: Sequence[int], seed: int = 0,
                 shuffle: bool = True, names: Sequence[str] | None = None, epoch: int = 0) -> None:
        if len(components) != len(counts):
            raise ValueError("one count per component")
        self.components = list(components)
        self.counts = [int(c) for c in counts]
        self.names = list(names) if names is not None else [str(i) for i in range(len(components))]
        self.seed, self.shuffle, self.epoch = seed, shuffle, epoch
        self._starts = [0]
        for count in self.counts:
            self._starts.append(self._starts[-1] + count)
        salt = epoch * 1_000_003
        self._order = Permutation(self._starts[-1], seed, salt) if shuffle else None
        self._component_ids = [torch.tensor(i) for i in range(len(self.components))]
        self._inner = [Permutation(len(c), seed, salt + 1 + i) if shuffle else None
                       for i, c in enumerate(self.components)]
        self._remote = any(f.remote for c in self.components for f in c.files)

    def __len__(self) -> int:
        return self._starts[-1]

    def for_epoch(self, epoch: int) -> MixtureDataset:
        """The same mixture reshuffled for a repeat over the whole run."""
        if epoch == self.epoch:
            return self
        return MixtureDataset(self.components, self.counts, self.seed, self.shuffle, self.names, epoch)

    def source_of(self, index: int) -> tuple[int, int]:
        """(component, window inside the component) of global index ``index``."""
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} out of range({len(self)})")
        u = self._order(index) if self._order is not None else index
        component = bisect.bisect_right(self._starts, u) - 1
        local = (u - self._starts[component]) % len(self.components[component])
        inner = self._inner[component]
        return component, inner(local) if inner is not None else local

    def hint_ahead(self, start: int, count: int) -> None:
        """Tell remote caches which files items ``start .. start + count`` read, in order (local: nothing).

        A bounded cache then prefetches what the reader needs next and keeps it, whatever the
        shuffle, instead of guessing from the listing order.
        """
        if not self._remote:
            return
        wanted: dict[int, tuple[Any, list[str]]] = {}
        for index in range(start, min(len(self), start + count)):
            component, window = self.source_of(index)
            file_no, _ = self.components[component].locate(window)
            file = self.components[component].files[file_no]
            if file.remote:
                wanted.setdefault(id(file.opener), (file.opener, []))[1].extend(file.hint_files())
        for opener, paths in wanted.values():
            opener.hint(paths)

    def __getitem__(self, index: int) -> dict[str, Any]:
        component, window = self.source_of(index)
        item = self.components[component][window]
        item["component"] = self._component_ids[component]
        return item
