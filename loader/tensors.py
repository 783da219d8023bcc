"""Open a tensor set (local directory or ``http(s)://`` URL) and its token files.

A :class:`TensorSet` reads ``metadata.json`` and lists one :class:`TensorFile` per shard and
split, with the source, language and labels the recipe selects on. Token files are opened
lazily (memory map on first use) so a remote set can start training while later files are
still being prefetched. Everything a file claims is checked against its index and the
metadata before a single window is served: a size that disagrees, a tokenizer that differs
from the one expected, or a format version we do not know is refused with the file's name.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from loader.remote import DEFAULT_POLICY, RemoteFiles, RetryPolicy, cache_dir_for, fetch_json, is_remote
from loader.tensor_writer import METADATA_NAME, TensorFormatError, open_tokens, read_metadata


def _normalize_label(label: str) -> str:
    return label.upper().replace(".", "")


@dataclass
class TensorFile:
    """One shard's tokens for one split: counts from the metadata, data opened on first use."""

    name: str
    source: str
    language: str | None
    labels: tuple[str, ...]
    dtype: str
    tokens: int
    docs: int
    tokens_path: str
    docs_path: str
    opener: Any = field(repr=False, default=None)
    _data: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def open(self) -> tuple[np.ndarray, np.ndarray]:
        """The memory-mapped tokens and the document offsets (checked against each other).

        The tokens come back as a plain ndarray view of the map: slicing a ``np.memmap`` costs a
        few microseconds of subclass bookkeeping per window, as much as copying the window.
        """
        data = self._data
        if data is None:
            with self._lock:
                if self._data is None:
                    tokens_file, docs_file = self.opener(self.tokens_path), self.opener(self.docs_path)
                    tokens, offsets = open_tokens(Path(tokens_file), Path(docs_file), self.dtype)
                    if len(tokens) != self.tokens or len(offsets) - 1 != self.docs:
                        raise TensorFormatError(
                            f"{tokens_file}: {len(tokens)} tokens / {len(offsets) - 1} documents, but "
                            f"metadata.json says {self.tokens} / {self.docs}")
                    self._data = (tokens.view(np.ndarray), offsets)
                data = self._data
        return data

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the memory map (DataLoader workers reopen it)."""
        state = dict(self.__dict__)
        state["_data"] = None
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


class _LocalOpener:
    def __init__(self, root: Path) -> None:
        self.root = root

    def __call__(self, rel_path: str) -> Path:
        return self.root / rel_path


class _RemoteOpener:
    """Picklable: a DataLoader worker re-creates its own downloader on first use."""

    def __init__(self, base_url: str, cache: Path, files: list[tuple[str, int, str]], workers: int,
                 policy: RetryPolicy) -> None:
        self.args = (base_url, cache, files, workers, policy)
        self._files: RemoteFiles | None = None

    def start(self) -> None:
        if self._files is None:
            self._files = RemoteFiles(*self.args)

    def __call__(self, rel_path: str) -> Path:
        self.start()
        assert self._files is not None
        return self._files.local_path(rel_path)

    def __getstate__(self) -> dict[str, Any]:
        return {"args": self.args, "_files": None}


@dataclass
class TensorSet:
    """A tokenized corpus: its metadata and its files of one split."""

    location: str
    metadata: dict[str, Any]
    files: list[TensorFile]

    @property
    def tokenizer_hash(self) -> str:
        return str(self.metadata["tokenizer"]["hash"])

    @property
    def eos_id(self) -> int:
        return int(self.metadata["tokenizer"]["eos_id"])

    def select(self, sources: Sequence[str] = (), labels: Sequence[str] = ()) -> list[TensorFile]:
        """Files of the given sources (any of) carrying all the given labels."""
        wanted = {_normalize_label(x) for x in labels}
        return [f for f in self.files
                if (not sources or f.source in sources)
                and wanted <= {_normalize_label(x) for x in f.labels}]


def open_tensor_set(
    location: str | Path,
    split: str = "train",
    expect_tokenizer: str | None = None,
    cache_root: Path | None = None,
    prefetch_workers: int = 4,
    policy: RetryPolicy = DEFAULT_POLICY,
) -> TensorSet:
    """Open a local or remote tensor set; refuse it if built with another tokenizer than expected."""
    location = str(location)
    if is_remote(location):
        base = location.rstrip("/")
        cache = cache_dir_for(base, Path(cache_root or Path.home() / ".cache" / "kinda-tensors"))
        metadata = fetch_json(f"{base}/{METADATA_NAME}", cache / METADATA_NAME, policy)
        read_metadata(cache)  # format checks
        files = [(info[f"{k}_path"], info[f"{k}_bytes"], info[f"{k}_sha256"])
                 for shard in metadata["shards"] if (info := shard["splits"].get(split))
                 for k in ("docs", "tokens")]
        opener: Any = _RemoteOpener(base, cache, files, prefetch_workers, policy)
        opener.start()
    else:
        metadata = read_metadata(Path(location))
        opener = _LocalOpener(Path(location))
    found = metadata["tokenizer"]["hash"]
    if expect_tokenizer is not None and found != expect_tokenizer:
        raise TensorFormatError(f"{location}/{METADATA_NAME}: built with tokenizer {found[:12]}…, "
                                f"expected {expect_tokenizer[:12]}…")
    files = []
    for shard in metadata["shards"]:
        info = shard["splits"].get(split)
        if info is None:
            continue
        files.append(TensorFile(
            name=shard["input"], source=shard["source"], language=shard.get("language"),
            labels=tuple(shard.get("labels", [])), dtype=metadata["dtype"], tokens=int(info["tokens"]),
            docs=int(info["docs"]), tokens_path=info["tokens_path"], docs_path=info["docs_path"], opener=opener,
        ))
    return TensorSet(location=location, metadata=metadata, files=files)
