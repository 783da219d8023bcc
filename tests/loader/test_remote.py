"""Remote tensors over HTTP: a flaky local server fails requests, cuts and corrupts transfers."""

from __future__ import annotations

import collections
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from loader import Recipe, RemoteError
from loader.remote import RetryPolicy, download
from loader.tensors import open_tensor_set

MAX_REQUESTS = 3000  # the server stops answering by itself after this many


class FlakyHandler(http.server.SimpleHTTPRequestHandler):
    """Per path: 1st request 503, 2nd a flipped byte, 3rd cut half-way, then served (resumed with Range)."""

    counts: collections.Counter[str]
    log: list[tuple[str, int, str]]
    gone: set[str]
    lock = threading.Lock()

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        with self.lock:
            self.counts[self.path] += 1
            attempt = self.counts[self.path]
            total = sum(self.counts.values())
        file = Path(self.directory) / self.path.lstrip("/")
        if total > MAX_REQUESTS or self.path.lstrip("/") in self.gone or not file.is_file():
            self.send_error(404)
            return
        data = file.read_bytes()
        if attempt == 1 and not self.path.endswith("metadata.json"):
            self.log.append((self.path, attempt, "503"))
            self.send_error(503)
            return
        start = 0
        range_header = self.headers.get("Range")
        if range_header:
            start = int(range_header.split("=")[1].rstrip("-"))
            self.log.append((self.path, attempt, f"range {start}"))
        body = data[start:]
        if attempt == 2 and not range_header and len(body) > 1:
            body = bytes([body[0] ^ 0xFF]) + body[1:]
            self.log.append((self.path, attempt, "corrupt"))
        self.send_response(206 if range_header else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if attempt == 3 and len(body) > 4:
            self.wfile.write(body[: len(body) // 2])  # cut the transfer
            self.log.append((self.path, attempt, "cut"))
            self.close_connection = True
            return
        self.wfile.write(body)


@pytest.fixture
def server(corpus: tuple[Path, Path]) -> Iterator[tuple[str, type[FlakyHandler]]]:
    _, tensors = corpus
    handler = type("Handler", (FlakyHandler,), {"counts": collections.Counter(), "log": [], "gone": set()})

    def factory(*args: object, **kwargs: object) -> FlakyHandler:
        return handler(*args, directory=str(tensors), **kwargs)  # type: ignore[arg-type]

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), factory)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_remote_recipe_reads_what_local_reads(corpus: tuple[Path, Path], server: tuple[str, type[FlakyHandler]],
                                              tmp_path: Path) -> None:
    _, tensors = corpus
    url, handler = server
    components = [{"name": "wiki", "sources": ["wiki"], "weight": 2}, {"name": "c4", "sources": ["c4"]}]
    local = Recipe.model_validate({"locations": [str(tensors)], "components": components})
    remote = Recipe.model_validate({"locations": [url], "components": components, "cache_dir": str(tmp_path)})
    with local.iterator(context_length=16, batch_size=4) as a, remote.iterator(context_length=16, batch_size=4) as b:
        pairs = list(zip(a, b, strict=True))
    assert pairs and all(torch.equal(x["token_ids"], y["token_ids"]) for x, y in pairs)
    kinds = {kind.split()[0] for _, _, kind in handler.log}
    assert {"503", "cut", "range", "corrupt"} <= kinds  # every fault was exercised and survived
    cached = sorted(p.name for p in tmp_path.rglob("*.tokens"))
    assert cached == sorted(Path(f.tokens_path).name for f in open_tensor_set(tensors).files)
    assert not list(tmp_path.rglob("*.part"))


def test_permanently_gone_file_is_a_clear_error(corpus: tuple[Path, Path], server: tuple[str, type[FlakyHandler]],
                                                tmp_path: Path) -> None:
    _, tensors = corpus
    url, handler = server
    victim = open_tensor_set(tensors).files[0]
    handler.gone.add(victim.tokens_path)
    ts = open_tensor_set(url, cache_root=tmp_path, policy=RetryPolicy(attempts=3, backoff_s=0.01))
    with pytest.raises(RemoteError, match=victim.tokens_path.split("/")[-1]):
        ts.files[0].open()
    assert not (tmp_path / victim.tokens_path).exists()


def test_download_checks_size_and_checksum(server: tuple[str, type[FlakyHandler]], tmp_path: Path) -> None:
    url, _ = server
    with pytest.raises(RemoteError, match="checksum mismatch"):
        download(f"{url}/metadata.json", tmp_path / "m.json", None, "0" * 64, RetryPolicy(attempts=2, backoff_s=0))
    assert not (tmp_path / "m.json").exists() and not (tmp_path / "m.json.part").exists()
