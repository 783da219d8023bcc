"""Remote cache against stale and corrupt copies, and a bounded ``metadata.json`` (issue 24, items 8-9).

A real local HTTP server (``http.server``) serves a copy of a tensor set. The server republishes a
``.tokens`` file with the same size and a new ``tokens_sha256``; a cached file is corrupted in
place at the same size: reopening the set must read the served bytes both times (one new GET),
while an unchanged cache is reused without a request. A ``metadata.json`` over the bound is
refused with an error naming it, before it is read whole, whether or not the server sends its
length.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from loader import remote
from loader.remote import RemoteError, TooLarge, fetch_json, stamp_path
from loader.tensors import open_tensor_set


class _Counting(http.server.SimpleHTTPRequestHandler):
    """Serves files and counts GETs per path; ``no_length`` paths are sent without Content-Length."""

    gets: collections.Counter[str]
    no_length: set[str]

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self.gets[self.path] += 1
        if self.path in self.no_length:  # HTTP/1.0 style: the body ends when the connection closes
            data = (Path(self.directory) / self.path.lstrip("/")).read_bytes()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture
def served(corpus: tuple[Path, Path], tmp_path: Path) -> Iterator[tuple[str, type[_Counting], Path]]:
    """(url, handler class, served directory): a private copy of the tensor set the test may edit."""
    root = tmp_path / "served"
    shutil.copytree(corpus[1], root)
    handler = type("Handler", (_Counting,), {"gets": collections.Counter(), "no_length": set()})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler, root
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _first_tokens(url: str, cache: Path) -> tuple[np.ndarray, str]:
    """The first train file's tokens (a copy) read through a freshly opened remote set, and its path."""
    first = open_tensor_set(url, cache_root=cache).files[0]
    tokens, _ = first.open()
    return np.array(tokens), first.tokens_path


def _republish(root: Path, rel_path: str) -> np.ndarray:
    """Rewrite a served ``.tokens`` file in place with other ids, same size; update its metadata."""
    metadata = json.loads((root / "metadata.json").read_text())
    info = next(s["splits"]["train"] for s in metadata["shards"] if s["splits"]["train"]["tokens_path"] == rel_path)
    path = root / rel_path
    tokens = np.fromfile(path, dtype=np.dtype(metadata["dtype"]))
    new = tokens[::-1].copy()  # the same ids reversed: valid, same size, other bytes
    assert not np.array_equal(new, tokens)
    new.tofile(path)
    info["tokens_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (root / "metadata.json").write_text(json.dumps(metadata))
    return new


def test_republished_same_size_file_is_fetched_again(served: tuple[str, type[_Counting], Path],
                                                     tmp_path: Path) -> None:
    url, handler, root = served
    cache = tmp_path / "cache"
    before, rel_path = _first_tokens(url, cache)
    assert handler.gets[f"/{rel_path}"] == 1
    again, _ = _first_tokens(url, cache)  # unchanged: the stamp answers, no request, no re-read
    assert np.array_equal(again, before) and handler.gets[f"/{rel_path}"] == 1

    republished = _republish(root, rel_path)
    after, _ = _first_tokens(url, cache)
    assert np.array_equal(after, republished) and not np.array_equal(after, before)
    assert handler.gets[f"/{rel_path}"] == 2


def test_same_size_corrupt_cached_file_is_fetched_again(served: tuple[str, type[_Counting], Path],
                                                        tmp_path: Path) -> None:
    url, handler, _ = served
    cache = tmp_path / "cache"
    before, rel_path = _first_tokens(url, cache)
    cached = next(cache.rglob(Path(rel_path).name))
    assert stamp_path(cached).is_file()
    data = bytearray(cached.read_bytes())
    data[0] ^= 0x01  # one flipped bit, same size
    cached.write_bytes(bytes(data))

    after, _ = _first_tokens(url, cache)
    assert np.array_equal(after, before)
    assert handler.gets[f"/{rel_path}"] == 2
    assert cached.read_bytes() != bytes(data)


def test_cache_from_before_stamps_is_checked_once(served: tuple[str, type[_Counting], Path], tmp_path: Path) -> None:
    """A cached file without a stamp (an older cache) is hashed, kept when intact, and stamped."""
    url, handler, _ = served
    cache = tmp_path / "cache"
    before, rel_path = _first_tokens(url, cache)
    cached = next(cache.rglob(Path(rel_path).name))
    stamp_path(cached).unlink()
    after, _ = _first_tokens(url, cache)
    assert np.array_equal(after, before) and handler.gets[f"/{rel_path}"] == 1
    assert stamp_path(cached).is_file()


@pytest.mark.parametrize("send_length", [True, False])
def test_metadata_over_the_bound_is_refused_unread(served: tuple[str, type[_Counting], Path], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch, send_length: bool) -> None:
    url, handler, root = served
    size = (root / "metadata.json").stat().st_size
    if not send_length:
        handler.no_length.add("/metadata.json")
    monkeypatch.setattr(remote, "MAX_METADATA_BYTES", size - 1)
    with pytest.raises(RemoteError, match=r"metadata\.json.*bound") as info:
        open_tensor_set(url, cache_root=tmp_path / "cache")
    assert isinstance(info.value, TooLarge)
    assert handler.gets["/metadata.json"] == 1  # not retried: a file does not shrink
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]  # nothing kept

    monkeypatch.setattr(remote, "MAX_METADATA_BYTES", size)  # exactly at the bound: read
    assert open_tensor_set(url, cache_root=tmp_path / "cache").files


def test_metadata_bound_is_the_documented_default(served: tuple[str, type[_Counting], Path], tmp_path: Path) -> None:
    url, _, _ = served
    assert remote.MAX_METADATA_BYTES == 64 << 20
    with pytest.raises(TooLarge, match="over the 10-byte bound"):
        fetch_json(f"{url}/metadata.json", tmp_path / "m.json", max_bytes=10)
    assert not (tmp_path / "m.json").exists() and not (tmp_path / "m.json.part").exists()
