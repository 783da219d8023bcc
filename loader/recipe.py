"""A recipe: which tensors (by location, source and label) are mixed with which weights and epochs.

```python
recipe = Recipe.from_yaml("configs/llama_mixture.yaml")
ds = recipe.dataset(context_length=2048, seed=0)          # map-style torch Dataset
it = recipe.iterator(context_length=2048, batch_size=8, rank=0, world_size=8)
state = it.state_dict()                                   # save with the model checkpoint
it = recipe.iterator(context_length=2048, batch_size=8, rank=0, world_size=16, state_dict=state)
```

The same recipe runs on data tensors (``mode="tensors"``) or tokenizes document shards on the
fly (``mode="documents"``). Every tensor set of a mixture must come from the same tokenizer, and
from the one the recipe names if it names one: mixing tokenizers is refused, not averaged.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from core.config import deep_merge, load_layered
from core.digest import json_hash, pop_defaults
from loader.dataset import ItemOptions, MixtureDataset, WindowDataset, plan_counts
from loader.iterators import Batch, IndexedSource, Prefetch, State, Stride
from loader.permutation import Permutation
from loader.safe_paths import inside
from loader.tensor_writer import TensorFormatError, find_input_shards
from loader.tensors import TensorFile, TensorSet, open_tensor_set

STATE_VERSION = 1
log = logging.getLogger(__name__)
#: Recipe fields added after states were first saved, with their defaults (see Recipe.fingerprint).
_LATER_FIELDS: dict[str, Any] = {"on_empty": "error", "block_docs": 256}


class Component(BaseModel):
    """One part of a mixture: tensor sets (and/or a document root) filtered by source and label."""

    model_config = ConfigDict(extra="forbid")
    name: str
    locations: list[str] = Field(default_factory=list, description="tensor sets: directories or http(s) URLs")
    sources: list[str] = Field(default_factory=list, description="keep files of these sources (empty: all)")
    labels: list[str] = Field(default_factory=list, description="keep files carrying all these labels")
    weight: float = Field(1.0, gt=0, description="sampling proportion (normalized over components)")
    epochs: float | None = Field(None, gt=0, description="passes over the component (cap, or exact with balance=epochs)")


class Recipe(BaseModel):
    """A mixture of tokenized data, and how to read it."""

    model_config = ConfigDict(extra="forbid")
    name: str = "mixture"
    components: list[Component]
    locations: list[str] = Field(default_factory=list, description="default tensor sets of every component")
    balance: Literal["weights", "epochs"] = "weights"
    total_tokens: int | None = Field(None, gt=0, description="run length (balance=weights); default: epochs cap")
    split: str = "train"
    shuffle: bool = True
    seed: int = 0
    tokenizer_hash: str | None = Field(None, description="refuse tensors built with another tokenizer")
    cache_dir: Path | None = Field(None, description="cache of remote tensor sets")
    prefetch_workers: int = Field(4, ge=1, description="parallel downloads of remote files")
    prefetch_files: int | None = Field(8, ge=1, description="remote files downloaded ahead of the reader (null: all)")
    cache_max_bytes: int | None = Field(None, gt=0, description="cap of the remote cache (per process; null: none)")
    on_empty: Literal["error", "skip"] = Field(
        "error", description="a component with no data: refuse the recipe, or leave it out (weights renormalized)")
    # on-the-fly mode
    documents: str | None = Field(None, description="data root with docs/ (or labeled/) Parquet shards")
    tokenizer: str | None = Field(None, description="tokenizer.json for on-the-fly mode")
    split_digits: bool = True
    split_mode: Literal["sequence", "regex"] = "sequence"
    eos_token: str | None = None
    block_docs: int = Field(256, ge=1, description="documents per block of per-rank streaming (iterator per_rank)")

    _sets: dict[str, TensorSet] = PrivateAttr(default_factory=dict)

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: dict[str, Any] | None = None) -> Self:
        """Load a recipe YAML and merge ``overrides`` on top, by the one rule of :mod:`core.config`."""
        return cls.model_validate(deep_merge(load_layered(Path(path)), overrides or {}))

    def fingerprint(self) -> str:
        """What a saved iterator state must match to be resumed with this recipe.

        Fields that only say how data is fetched are left out, and so are fields added later
        while at their defaults, so states saved before they existed still resume.
        """
        fields = self.model_dump(mode="json", exclude={"cache_dir", "prefetch_workers", "prefetch_files",
                                                        "cache_max_bytes"})
        return json_hash(pop_defaults(fields, _LATER_FIELDS, _LATER_FIELDS), compact=False)

    # -- tensors ----------------------------------------------------------------------------
    def tensor_set(self, location: str) -> TensorSet:
        """Open (once) a tensor set of the recipe."""
        if location not in self._sets:
            self._sets[location] = open_tensor_set(
                location, self.split, self.tokenizer_hash, self.cache_dir, self.prefetch_workers,
                prefetch_files=self.prefetch_files, cache_max_bytes=self.cache_max_bytes)
        return self._sets[location]

    def component_files(self) -> list[list[TensorFile]]:
        """Files of each component; checks that every set shares one tokenizer."""
        hashes: dict[str, str] = {}
        result = []
        for component in self.components:
            files: list[TensorFile] = []
            for location in component.locations or self.locations:
                tensor_set = self.tensor_set(location)
                hashes[location] = tensor_set.tokenizer_hash
                files.extend(tensor_set.select(component.sources, component.labels))
            result.append(files)
        if len(set(hashes.values())) > 1:
            listing = ", ".join(f"{loc}: {h[:12]}…" for loc, h in sorted(hashes.items()))
            raise TensorFormatError(f"recipe {self.name!r} mixes tensors of different tokenizers ({listing})")
        return result

    def _empty_component(self, component: Component, files: Sequence[TensorFile], context_length: int) -> str:
        """Why a component has no window, and how to fix it (one line)."""
        where = component.locations or self.locations
        if files:
            found = f"its {len(files)} file(s) hold {sum(f.tokens for f in files)} tokens, less than one " \
                    f"{context_length}-token window per file"
        else:
            held = sorted({f.source for loc in where for f in self.tensor_set(loc).files})
            found = f"no {self.split!r} file of sources={component.sources or 'any'} labels={component.labels or 'any'}" \
                    f" in {where} (they hold sources {held})"
        return (f"recipe {self.name!r}: component {component.name!r} has no data: {found}. Tokenize that "
                f"source, remove the component, or set on_empty: skip (Recipe.from_yaml(path, "
                f"{{'on_empty': 'skip'}})) to read only the components that have data")

    def dataset(self, context_length: int, seed: int | None = None, document_ids: bool = True,
                position_ids: bool = False, attention_mask: bool = False) -> MixtureDataset:
        """The whole run as a map-style Dataset (shuffled, mixed, deterministic for the seed)."""
        options = ItemOptions(document_ids, position_ids, attention_mask)
        windows, kept, first_doc = [], [], 0
        for component, files in zip(self.components, self.component_files(), strict=True):
            ds = WindowDataset(files, context_length, options, first_document=first_doc)
            if len(ds) == 0:
                reason = self._empty_component(component, files, context_length)
                if self.on_empty == "error":
                    raise ValueError(reason)
                log.warning("%s: left out", reason.split(". ")[0])
                continue
            first_doc += ds.documents
            windows.append(ds)
            kept.append(component)
        if not kept:
            raise ValueError(f"recipe {self.name!r}: no component has data in {self.locations}")
        total = self.total_tokens // context_length if self.total_tokens else None
        counts = plan_counts([len(w) for w in windows], [c.weight for c in kept],
                             [c.epochs for c in kept], self.balance, total)
        return MixtureDataset(windows, counts, self.seed if seed is None else seed, self.shuffle,
                              [c.name for c in kept])

    # -- iterators --------------------------------------------------------------------------
    def iterator(self, context_length: int, batch_size: int, rank: int = 0, world_size: int = 1,
                 seed: int | None = None, state_dict: State | None = None, mode: str = "tensors",
                 prefetch: int = 2, workers: int = 2, repeat: bool = False, document_ids: bool = True,
                 position_ids: bool = False, attention_mask: bool = False, per_rank: bool = False,
                 ) -> LoaderIterator:
        """A checkpointable iterator of batches for one rank; ``state_dict`` resumes exactly.

        ``per_rank`` (documents mode): each rank tokenizes only its own blocks of ``block_docs``
        documents instead of the whole stream; resume with the rank's own state on the same
        world size, or with the list of every rank's state on another (see loader.stream.RankBlocks).
        """
        seed = self.seed if seed is None else seed
        options = ItemOptions(document_ids, position_ids, attention_mask)
        merge = None
        if per_rank and mode != "documents":
            raise ValueError("per_rank streaming is for mode='documents' (tensors need no tokenizing)")
        if mode == "tensors":
            source: Any = IndexedSource(
                self.dataset(context_length, seed, document_ids, position_ids, attention_mask), repeat=repeat)
            closers: list[Any] = []
        elif mode == "documents":
            source, closers = self._document_stream(context_length, seed, options, workers,
                                                    (rank, world_size) if per_rank else None)
        else:
            raise ValueError(f"mode must be 'tensors' or 'documents', not {mode!r}")
        if per_rank:  # the rank split is inside each component's stream
            chain: Any = Batch(source, batch_size)
            merge = functools.partial(_merge_per_rank, rank=rank, world_size=world_size)
        else:
            chain = Batch(Stride(source, rank, world_size), batch_size)
        if prefetch:
            chain = Prefetch(chain, prefetch)
            closers.insert(0, chain)
        header = {"version": STATE_VERSION, "mode": mode, "recipe": self.fingerprint(),
                  "context_length": context_length, "seed": seed}
        if per_rank:
            header["per_rank"] = True
        iterator = LoaderIterator(chain, header, closers, merge)
        if state_dict is not None:
            iterator.load_state_dict(state_dict)
        return iterator

    def _document_stream(self, context_length: int, seed: int, options: ItemOptions, workers: int,
                         per_rank: tuple[int, int] | None = None) -> tuple[Any, list[Any]]:
        from loader.stream import (
            Chunk,
            DocumentBlocks,
            Mix,
            ParquetDocuments,
            RankBlocks,
            Tokenize,
            TokenizerPool,
        )

        if not self.documents or not self.tokenizer:
            raise ValueError("on-the-fly mode needs 'documents' (a data root) and 'tokenizer'")
        root = Path(self.documents)
        pool = TokenizerPool(self.tokenizer, self.split_digits, self.split_mode, self.eos_token, workers)
        streams: list[Any] = []
        weights: list[float] = []
        for index, component in enumerate(self.components):
            shards = find_input_shards(root, component.labels, component.sources)
            if not shards:
                reason = (f"recipe {self.name!r}: component {component.name!r} has no data: no document shard of "
                          f"sources={component.sources or 'any'} labels={component.labels or 'any'} under {root}. "
                          f"Run that source's flow, remove the component, or set on_empty: skip")
                if self.on_empty == "error":
                    pool.close()
                    raise ValueError(reason)
                log.warning("%s: left out", reason.split(". ")[0])
                continue
            order = Permutation(len(shards), seed, 7919 + index) if self.shuffle else None
            paths = [inside(root, shards[order(i) if order else i].rel_path, "document shard")
                     for i in range(len(shards))]
            if per_rank is not None:
                streams.append(RankBlocks(DocumentBlocks(paths, self.block_docs), pool, context_length,
                                          *per_rank, options=options))
            else:
                streams.append(Chunk(Tokenize(ParquetDocuments(paths), pool), context_length, options))
            weights.append(component.weight)
        if not streams:
            pool.close()
            raise ValueError(f"recipe {self.name!r}: no component has document shards under {root}")
        return Mix(streams, weights, seed), [pool]


def _merge_per_rank(states: Sequence[State], rank: int, world_size: int) -> State:
    """This rank's pipeline state (Batch -> Mix -> RankBlocks) from every old rank's, for a new world size."""
    from loader.stream import merge_rank_states

    mixes = [state["upstream"] for state in states]
    streams = [merge_rank_states([mix["streams"][c] for mix in mixes], rank, world_size)
               for c in range(len(mixes[0]["streams"]))]
    return {"upstream": {"step": max(int(m["step"]) for m in mixes), "live": [True] * len(streams),
                         "streams": streams}}


def _close_all(closers: Sequence[Any]) -> None:
    for closer in closers:
        closer.close()


class LoaderIterator:
    """Batches for one rank, with a state that resumes exactly, also with another world size."""

    def __init__(self, chain: Any, header: dict[str, Any], closers: Sequence[Any] = (),
                 merge: Callable[[Sequence[State]], State] | None = None) -> None:
        self.chain, self.header, self._merge = chain, header, merge
        # Closed at the latest at interpreter exit: a prefetch thread or tokenizer pool left running
        # while the interpreter tears down torch aborts the process (exit code 134).
        self._finalizer = weakref.finalize(self, _close_all, list(closers))

    def __iter__(self) -> LoaderIterator:
        return self

    def __next__(self) -> Any:
        return next(self.chain)

    def state_dict(self) -> State:
        """Everything needed to continue after the last batch handed out (JSON-able)."""
        return {**self.header, "pipeline": self.chain.state_dict()}

    def load_state_dict(self, state: State | Sequence[State]) -> None:
        """Continue from a saved state; refuse one saved with another recipe, context or seed.

        Per-rank streaming also takes the list of every rank's state, to resume on another world size.
        """
        states = [state] if isinstance(state, dict) else list(state)
        for one in states:
            for key in self.header.keys() | {k for k in one if k != "pipeline"}:
                if one.get(key) != self.header.get(key):
                    raise ValueError(f"iterator state has {key}={one.get(key)!r}, this iterator "
                                     f"{self.header.get(key)!r}")
        if isinstance(state, dict):
            self.chain.load_state_dict(state["pipeline"])
        elif self._merge is None:
            raise ValueError("a list of states resumes per-rank streaming only; pass one state")
        else:
            self.chain.load_state_dict(self._merge([one["pipeline"] for one in states]))

    def close(self) -> None:
        """Stop background threads and worker processes (idempotent; also runs at interpreter exit)."""
        self._finalizer()

    def __enter__(self) -> LoaderIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
