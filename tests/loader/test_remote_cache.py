"""Bounded remote cache (issue 15.6): a window of prefetch, a size cap, eviction, exact resume.

A local tensor set is served by ``http.server``; the recipe reads it remotely with a cache cap
well under the set's size. The bytes in the cache are sampled after every batch, at every
request the server gets, and by a thread polling the directory: they never exceed the cap. The
batches equal the local set's, a sequential reader downloads each file once (what it has read
is evicted, what comes next is prefetched), and a resumed iterator continues exactly.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from loader import Recipe
from loader.remote import STAMP_SUFFIX, RemoteFiles

CAP = 24_000  # the served set's train files: ~58 KB; its largest shard (tokens + index): ~11.5 KB


def _cache_bytes(cache: Path) -> int:
    """Bytes of the set's files in the cache (``.part`` downloads included; metadata.json and the
    ~100-byte ``.verified`` stamps, which the cap does not count, not).

    The walk lists every folder first and stats the files after: a file counted was on disk both
    when its folder was listed and when it was stat'ed, so at the moment the listing ended, and
    the sum is of files that were there at one instant. Stat'ing while walking would add a file
    evicted from a folder already walked to one downloaded since into a folder walked later, a
    total the cache never held at any moment.
    """
    listed = [path for path in cache.rglob("*")
              if path.name != "metadata.json" and not path.name.endswith(STAMP_SUFFIX)]
    total = 0
    for path in listed:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):  # renamed or evicted meanwhile
            total += path.stat().st_size if path.is_file() else 0
    return total


class _Counting(http.server.SimpleHTTPRequestHandler):
    gets: collections.Counter[str]
    seen: list[int]
    cache: Path

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self.gets[self.path] += 1
        self.seen.append(_cache_bytes(self.cache))
        super().do_GET()


@pytest.fixture
def served(corpus: tuple[Path, Path], tmp_path: Path) -> Iterator[tuple[str, type[_Counting], Path]]:
    _, tensors = corpus
    cache = tmp_path / "cache"
    handler = type("Handler", (_Counting,), {"gets": collections.Counter(), "seen": [], "cache": cache})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(tensors)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler, cache
    httpd.shutdown()
    httpd.server_close()


def _recipe(location: str, cache: Path | None, shuffle: bool, components: list[dict[str, Any]]) -> Recipe:
    fields: dict[str, Any] = {"locations": [location], "components": components, "shuffle": shuffle}
    if cache is not None:
        fields |= {"cache_dir": str(cache), "cache_max_bytes": CAP, "prefetch_files": 4}
    return Recipe.model_validate(fields)


def _watch(cache: Path, stop: threading.Event, peaks: list[int]) -> None:
    while not stop.is_set():
        if cache.exists():
            peaks.append(_cache_bytes(cache))
        time.sleep(0.0005)


@pytest.mark.parametrize("shuffle", [False, True])
def test_cache_stays_under_its_cap_and_reads_what_local_reads(
        corpus: tuple[Path, Path], served: tuple[str, type[_Counting], Path], shuffle: bool) -> None:
    _, tensors = corpus
    url, handler, cache = served
    total = sum(p.stat().st_size for p in (tensors / "train").rglob("*") if p.is_file())
    assert total > 2 * CAP
    components: list[dict[str, Any]] = [{"name": "wiki", "sources": ["wiki"], "weight": 2},
                                        {"name": "c4", "sources": ["c4"]}]
    with _recipe(str(tensors), None, shuffle, components).iterator(context_length=32, batch_size=4) as it:
        expected = [b["token_ids"] for b in it]
    stop, polled = threading.Event(), [0]
    watcher = threading.Thread(target=_watch, args=(cache, stop, polled))
    watcher.start()
    after_batch = []
    try:
        with _recipe(url, cache, shuffle, components).iterator(context_length=32, batch_size=4) as it:
            got = []
            for batch in it:
                got.append(batch["token_ids"])
                after_batch.append(_cache_bytes(cache))
    finally:
        stop.set()
        watcher.join()
    assert len(got) == len(expected) > 20 and all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))
    assert max(after_batch) <= CAP and max(handler.seen) <= CAP and max(polled) <= CAP
    assert max(polled) > CAP // 3  # the cap was really used, not a cache that stayed empty
    fetched = {p: n for p, n in handler.gets.items() if not p.endswith("metadata.json")}
    read_bytes = sum((tensors / path.lstrip("/")).stat().st_size for path in fetched)
    assert read_bytes > 2 * CAP  # the reader went through more than twice what the cache may hold
    if not shuffle:  # a sequential reader never comes back: each file once, though the set is over twice the cap
        assert set(fetched.values()) == {1}


def test_resume_from_a_bounded_cache_is_exact(corpus: tuple[Path, Path],
                                              served: tuple[str, type[_Counting], Path]) -> None:
    _, tensors = corpus
    url, _, cache = served
    components: list[dict[str, Any]] = [{"name": "all"}]
    with _recipe(str(tensors), None, True, components).iterator(context_length=48, batch_size=2) as it:
        expected = [b["token_ids"] for b in it]
    with _recipe(url, cache, True, components).iterator(context_length=48, batch_size=2) as it:
        head = [next(it)["token_ids"] for _ in range(40)]
        state = json.loads(json.dumps(it.state_dict()))
    with _recipe(url, cache, True, components).iterator(context_length=48, batch_size=2, state_dict=state) as it:
        tail = [b["token_ids"] for b in it]
    assert all(torch.equal(a, b) for a, b in zip(head + tail, expected, strict=True))
    assert len(head + tail) == len(expected)
    assert _cache_bytes(cache) <= CAP


def test_cap_too_small_for_a_shard_is_one_clear_error(served: tuple[str, type[_Counting], Path]) -> None:
    url, _, cache = served
    files = [("a.docs.npy", 400, "0" * 64), ("a.tokens", 9000, "0" * 64)]
    with pytest.raises(ValueError, match=r"cannot hold .*a\.tokens \(9000 bytes\).* raise cache_max_bytes"):
        RemoteFiles(url, cache, files, cap_bytes=9000)
