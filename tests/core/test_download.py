"""Downloads against a local HTTP server on 127.0.0.1 that drops connections part-way."""

from __future__ import annotations

import hashlib
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.download import DownloadError, cache_path, download, load_checksums, parse_checksum_list

PAYLOAD = os.urandom(300_000)


class FlakyServer(http.server.ThreadingHTTPServer):
    """Serves PAYLOAD at /dump.bz2; cuts the first ``cuts`` responses after ``cut_at`` bytes."""

    def __init__(self, cuts: int, honour_range: bool = True) -> None:
        super().__init__(("127.0.0.1", 0), FlakyHandler)
        self.cuts, self.honour_range = cuts, honour_range
        self.requests: list[str | None] = []


class FlakyHandler(http.server.BaseHTTPRequestHandler):
    server: FlakyServer

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        if self.path == "/sha1sums.txt":
            body = f"{hashlib.sha1(PAYLOAD).hexdigest()}  dump.bz2\n".encode()
            self._send(200, body, {})
            return
        if self.path != "/dump.bz2":
            self._send(404, b"not found", {})
            return
        rng = self.headers.get("Range")
        self.server.requests.append(rng)
        start = int(rng.split("=")[1].rstrip("-")) if rng and self.server.honour_range else 0
        body = PAYLOAD[start:]
        headers = {"Accept-Ranges": "bytes"}
        status = 200
        if start:
            status = 206
            headers["Content-Range"] = f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}"
        if self.server.cuts > 0:
            self.server.cuts -= 1
            self._send(status, body[: len(body) // 3], headers, length=len(body))  # then hang up
            return
        self._send(status, body, headers)

    def _send(self, status: int, body: bytes, headers: dict[str, str], length: int | None = None) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(length if length is not None else len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True


def _serve(server: FlakyServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def flaky() -> Iterator[tuple[str, FlakyServer]]:
    server = FlakyServer(cuts=3)
    for base in _serve(server):
        yield base, server


def test_resumes_with_range_after_dropped_connections(tmp_path: Path, flaky: tuple[str, FlakyServer]) -> None:
    base, server = flaky
    sha1 = hashlib.sha1(PAYLOAD).hexdigest()
    got = download(f"{base}/dump.bz2", tmp_path, expected={"sha1": sha1}, backoff=0.01)
    assert got.path.read_bytes() == PAYLOAD and got.verified == "sha1"
    assert server.requests[0] is None and all(r and r.startswith("bytes=") for r in server.requests[1:])
    assert len(server.requests) == 4
    assert not list(tmp_path.rglob("*.part"))


def test_cached_file_needs_no_network(tmp_path: Path, flaky: tuple[str, FlakyServer]) -> None:
    base, server = flaky
    download(f"{base}/dump.bz2", tmp_path, backoff=0.01)
    count = len(server.requests)
    again = download(f"{base}/dump.bz2", tmp_path)
    assert len(server.requests) == count and again.path == cache_path(f"{base}/dump.bz2", tmp_path)


def test_server_without_range_support_starts_over(tmp_path: Path) -> None:
    server = FlakyServer(cuts=1, honour_range=False)
    for base in _serve(server):
        got = download(f"{base}/dump.bz2", tmp_path, backoff=0.01)
        assert got.path.read_bytes() == PAYLOAD


def test_checksum_mismatch_is_refused(tmp_path: Path, flaky: tuple[str, FlakyServer]) -> None:
    base, _ = flaky
    with pytest.raises(DownloadError, match="sha1 mismatch"):
        download(f"{base}/dump.bz2", tmp_path, expected={"sha1": "0" * 40}, backoff=0.01)
    assert not cache_path(f"{base}/dump.bz2", tmp_path).exists()


def test_missing_file_fails_fast(tmp_path: Path, flaky: tuple[str, FlakyServer]) -> None:
    base, _ = flaky
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(f"{base}/nope.bz2", tmp_path)


def test_gives_up_after_retries(tmp_path: Path) -> None:
    server = FlakyServer(cuts=100)
    for base in _serve(server):
        with pytest.raises(DownloadError, match="gave up after 3 attempts"):
            download(f"{base}/dump.bz2", tmp_path, retries=2, backoff=0.01)


def test_checksum_lists(tmp_path: Path, flaky: tuple[str, FlakyServer]) -> None:
    base, _ = flaky
    assert load_checksums(f"{base}/sha1sums.txt", tmp_path) == {"dump.bz2": hashlib.sha1(PAYLOAD).hexdigest()}
    assert parse_checksum_list("abc  enwiki-1.xml.bz2\nbad line here x\ndef *b.bz2\n") == {
        "enwiki-1.xml.bz2": "abc", "b.bz2": "def"}
