"""Bounded prefetch window of remote tensor sets (issue 15.6), without a cache cap.

The cache tests (test_remote_cache.py) bound the bytes on disk; these bound how far ahead the
downloader runs: opening a set fetches nothing but its metadata, reading file i fetches at most
the ``window`` files after it (or after the reader's hinted order), and a skip ahead does not
back-fill the files skipped.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loader import Recipe
from loader.remote import RemoteFiles


class _Counting(http.server.SimpleHTTPRequestHandler):
    gets: collections.Counter[str]

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self.gets[self.path.lstrip("/")] += 1
        super().do_GET()


def _serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, type[_Counting]]:
    handler = type("Handler", (_Counting,), {"gets": collections.Counter()})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return httpd, handler


@pytest.fixture
def ten_files(tmp_path: Path) -> Iterator[tuple[str, type[_Counting], list[tuple[str, int, str]], Path]]:
    root = tmp_path / "served"
    root.mkdir()
    files = []
    for i in range(10):
        data = f"file {i}\n".encode() * (100 + i)
        (root / f"f{i}.bin").write_bytes(data)
        files.append((f"f{i}.bin", len(data), hashlib.sha256(data).hexdigest()))
    httpd, handler = _serve(root)
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler, files, tmp_path / "cache"
    httpd.shutdown()
    httpd.server_close()


def _settled(handler: type[_Counting], expected: set[str], timeout: float = 60) -> set[str]:
    """Wait until ``expected`` files were fetched, then a moment more: what was fetched by then."""
    deadline = time.monotonic() + timeout
    while not expected <= set(handler.gets) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # a runaway prefetch would show up now
    return set(handler.gets)


def test_prefetch_runs_at_most_window_files_ahead(ten_files: tuple[str, type[_Counting], list[Any], Path]) -> None:
    url, handler, files, cache = ten_files
    remote = RemoteFiles(url, cache, files, workers=4, window=2)
    try:
        assert _settled(handler, set()) == set()  # opening fetches nothing
        assert remote.local_path("f0.bin").read_bytes() == b"file 0\n" * 100
        assert _settled(handler, {"f0.bin", "f1.bin", "f2.bin"}) == {"f0.bin", "f1.bin", "f2.bin"}
        remote.unpin("f0.bin")
        remote.local_path("f6.bin")  # a skip ahead: f3-f5 are not back-filled
        assert _settled(handler, {"f6.bin", "f7.bin", "f8.bin"}) == {f"f{i}.bin" for i in (0, 1, 2, 6, 7, 8)}
        remote.hint(["f9.bin", "f3.bin", "f4.bin"])  # the reader's order wins over the listing
        assert _settled(handler, {"f9.bin", "f3.bin"}) == {f"f{i}.bin" for i in (0, 1, 2, 3, 6, 7, 8, 9)}
        assert set(handler.gets.values()) == {1}  # nothing fetched twice
    finally:
        remote.close()


def test_opening_a_remote_set_does_not_download_it(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    """The first batch of a recipe over a remote set fetches a window, not every file of the set."""
    _, tensors = corpus
    httpd, handler = _serve(tensors)
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        recipe = Recipe.model_validate({"locations": [url], "components": [{"name": "all"}], "shuffle": False,
                                        "cache_dir": str(tmp_path / "cache"), "prefetch_files": 1})
        data_files = {p.relative_to(tensors).as_posix() for p in (tensors / "train").rglob("*") if p.is_file()}
        assert len(data_files) >= 8
        with recipe.iterator(context_length=32, batch_size=2) as it:
            next(it)
            fetched = _settled(handler, set()) & data_files
            assert 0 < len(fetched) <= len(data_files) // 2, sorted(fetched)
            rest = sum(1 for _ in it)
        assert rest > 0 and set(handler.gets) & data_files == data_files  # reading on fetches the others
    finally:
        httpd.shutdown()
        httpd.server_close()
