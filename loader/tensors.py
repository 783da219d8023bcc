"""Open a tensor set (local directory or ``http(s)://`` URL) and its token files.

A :class:`TensorSet` reads ``metadata.json`` and lists one :class:`TensorFile` per shard and
split, with the source, language and labels the recipe selects on. Token files are opened
lazily (memory map on first use) so a remote set can start training while later files are
still being prefetched. Everything a file claims is checked against its index and the
metadata before a single window is served: a size that disagrees, a tokenizer that differs
from the one expected, or a format version we do not know is refused with the file's name.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from loader.remote import DEFAULT_POLICY, RemoteFiles, RetryPolicy, cache_dir_for, fetch_json, is_remote
from loader.safe_paths import check_metadata_paths, inside
from loader.tensor_writer import METADATA_NAME, TensorFormatError, open_tokens, read_metadata

#: Token ids checked per step when a file is opened (bounded temporaries, early stop on a bad id).
ID_CHECK_BLOCK = 1 << 24


def sample_hint(location: Path) -> str:
    """The offline sample command that writes a dataset's tensors (``<root>/tensors/g2``: the G.2 sample)."""
    dataset, root = location.name, location.parent.parent
    if location.parent.name != "tensors" or dataset not in ("g1", "g2", "g3"):
        return "the offline sample: python -m flows.llama --sample --out data/ writes data/tensors/g1"
    config = "" if dataset == "g1" else f"--config configs/{dataset}.yaml "
    return f"the offline sample: python -m flows.llama {config}--sample --out {root.as_posix()}/ writes {location.as_posix()}"


def _normalize_label(label: str) -> str:
    return label.upper().replace(".", "")


def id_bound(metadata: dict[str, Any], root: Path | None) -> int | None:
    """One past the largest id the set's tokenizer can emit: ``vocab_size``, or more if its ids have gaps.

    ``vocab_size`` counts ids; a tokenizer whose added tokens sit past a gap has larger ids, so
    the set's own ``tokenizer.json`` (when local) raises the bound to its largest id + 1.
    """
    vocab = metadata.get("tokenizer", {}).get("vocab_size")
    bound = int(vocab) if vocab is not None else None
    name = metadata.get("tokenizer", {}).get("file")
    if bound is None or root is None or not name:
        return bound
    try:
        config = json.loads(inside(root, name, "tokenizer.file").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return bound
    model_vocab = config.get("model", {}).get("vocab")
    ids = list(model_vocab.values()) if isinstance(model_vocab, dict) else [len(model_vocab or []) - 1]
    ids += [int(t["id"]) for t in config.get("added_tokens") or [] if isinstance(t, dict) and "id" in t]
    return max(bound, max(ids, default=-1) + 1)


def check_token_ids(tokens: np.ndarray, vocab_size: int | None, name: object) -> None:
    """Refuse a token file holding an id the tokenizer cannot have produced (a corrupt file).

    A same-size file of garbage passes every size check; an id past the vocabulary would index
    past the embedding table on the GPU. One vectorised ``max`` per block: a few GB/s, so it is
    done on every open. Skipped when every value of the dtype is a valid id.
    """
    if vocab_size is None or vocab_size > np.iinfo(tokens.dtype).max:
        return
    for start in range(0, len(tokens), ID_CHECK_BLOCK):
        block = tokens[start:start + ID_CHECK_BLOCK]
        if int(block.max()) >= vocab_size:
            where = int(np.argmax(block >= vocab_size))
            raise TensorFormatError(
                f"{name}: token id {int(block[where])} at position {start + where} is past the vocabulary "
                f"({vocab_size} ids): the file is corrupt; `loader.verify.verify_tensor_set` checks the whole set")


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
    vocab_size: int | None = None
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
                    register = getattr(self.opener, "register", None)
                    if register is not None:
                        register(self)
                    tokens_file, docs_file = self.opener(self.tokens_path), self.opener(self.docs_path)
                    try:
                        tokens, offsets = open_tokens(Path(tokens_file), Path(docs_file), self.dtype)
                    finally:
                        unpin = getattr(self.opener, "unpin", None)
                        if unpin is not None:
                            unpin(self.tokens_path)
                            unpin(self.docs_path)
                    if len(tokens) != self.tokens or len(offsets) - 1 != self.docs:
                        raise TensorFormatError(
                            f"{tokens_file}: {len(tokens)} tokens / {len(offsets) - 1} documents, but "
                            f"metadata.json says {self.tokens} / {self.docs}")
                    check_token_ids(tokens, self.vocab_size, tokens_file)
                    self._data = (tokens.view(np.ndarray), offsets)
                data = self._data
        return data

    def hint_files(self) -> tuple[str, str]:
        """The files :meth:`open` reads (for a remote set's prefetch hints)."""
        return self.tokens_path, self.docs_path

    @property
    def remote(self) -> bool:
        """True when the files come through a remote cache (that takes prefetch hints)."""
        return hasattr(self.opener, "hint")

    def release(self) -> None:
        """Drop the memory map (its file left a bounded cache); the next window reopens it.

        No lock: called from the cache while other files' locks may be held, and a reader that
        already holds the arrays keeps a valid map until it lets go of them.
        """
        self._data = None

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
        return inside(self.root, rel_path)


class _RemoteOpener:
    """Picklable: a DataLoader worker re-creates its own downloader (and cache accounting) on first use."""

    def __init__(self, base_url: str, cache: Path, files: list[tuple[str, int, str]], workers: int,
                 policy: RetryPolicy, window: int | None = 8, cap_bytes: int | None = None) -> None:
        self.args = (base_url, cache, files, workers, policy, window, cap_bytes)
        self._files: RemoteFiles | None = None
        self._readers: dict[str, weakref.ref[TensorFile]] = {}

    def start(self) -> RemoteFiles:
        if self._files is None:
            base_url, cache, files, workers, policy, window, cap_bytes = self.args
            self._files = RemoteFiles(base_url, cache, files, workers, policy, window, cap_bytes, self._evicted)
        return self._files

    def register(self, reader: TensorFile) -> None:
        """``reader`` maps ``reader.tokens_path``: tell it when the cache evicts that file."""
        self._readers[reader.tokens_path] = weakref.ref(reader)

    def _evicted(self, rel_path: str) -> None:
        ref = self._readers.pop(rel_path, None)
        reader = ref() if ref is not None else None
        if reader is not None:
            reader.release()

    def __call__(self, rel_path: str) -> Path:
        return self.start().local_path(rel_path)

    def unpin(self, rel_path: str) -> None:
        self.start().unpin(rel_path)

    def hint(self, rel_paths: list[str]) -> None:
        self.start().hint(rel_paths)

    def close(self) -> None:
        if self._files is not None:
            self._files.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"args": self.args, "_files": None, "_readers": {}}


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
    prefetch_files: int | None = 8,
    cache_max_bytes: int | None = None,
) -> TensorSet:
    """Open a local or remote tensor set; refuse it if built with another tokenizer than expected.

    A remote set is downloaded ``prefetch_files`` files ahead of the reader (all when None) into
    a cache holding at most ``cache_max_bytes`` (unbounded when None); see :class:`RemoteFiles`.
    Any file path in the metadata that would leave the set's root refuses the whole set.
    """
    location = str(location)
    if is_remote(location):
        base = location.rstrip("/")
        cache = cache_dir_for(base, Path(cache_root or Path.home() / ".cache" / "kinda-tensors"))
        metadata = fetch_json(f"{base}/{METADATA_NAME}", cache / METADATA_NAME, policy)
        check_metadata_paths(metadata, cache, f"{base}/{METADATA_NAME}")  # before any file is fetched
        read_metadata(cache)  # format checks
        remote_files = [(info[f"{k}_path"], info[f"{k}_bytes"], info[f"{k}_sha256"])
                        for shard in metadata["shards"] if (info := shard["splits"].get(split))
                        for k in ("docs", "tokens")]
        opener: Any = _RemoteOpener(base, cache, remote_files, prefetch_workers, policy, prefetch_files,
                                    cache_max_bytes)
        opener.start()
    else:
        if not (Path(location) / METADATA_NAME).is_file():
            raise TensorFormatError(
                f"{location}: no tensor set here (no {METADATA_NAME}); tokenize documents first: "
                f"python -m flows.tokenization --data data/ --tokenizer tokenizer.json --out {location} "
                f"({sample_hint(Path(location))})")
        metadata = read_metadata(Path(location))
        opener = _LocalOpener(Path(location))
    found = metadata["tokenizer"]["hash"]
    if expect_tokenizer is not None and found != expect_tokenizer:
        raise TensorFormatError(f"{location}/{METADATA_NAME}: built with tokenizer {found[:12]}…, "
                                f"expected {expect_tokenizer[:12]}…")
    vocab_size = id_bound(metadata, None if is_remote(location) else Path(location))
    files = []
    for shard in metadata["shards"]:
        info = shard["splits"].get(split)
        if info is None:
            continue
        files.append(TensorFile(
            name=shard["input"], source=shard["source"], language=shard.get("language"),
            labels=tuple(shard.get("labels", [])), dtype=metadata["dtype"], tokens=int(info["tokens"]),
            docs=int(info["docs"]), tokens_path=info["tokens_path"], docs_path=info["docs_path"], opener=opener,
            vocab_size=vocab_size,
        ))
    return TensorSet(location=location, metadata=metadata, files=files)
