"""Remote tensor sets over plain http(s): background prefetch, retries, resume, checksums, cache.

A tensor set is a directory of files plus ``metadata.json`` (with each file's size and SHA256),
so any static web server can serve it (Kogitune's idea). :class:`RemoteFiles` downloads every
file a dataset will need in background threads as soon as the dataset is opened, in the order
the dataset lists them; asking for a file moves it to the front. A download resumes an
interrupted transfer with an HTTP ``Range`` request, retries failures with backoff, and renames
a file into the cache only after its size and SHA256 match the metadata, so a reader never
sees a partial or corrupt file. A file that stays unavailable raises :class:`RemoteError`
naming its URL.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


class RemoteError(OSError):
    """A remote file could not be fetched intact after every retry."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try: attempts per file, backoff between them, socket timeout."""

    attempts: int = 8
    backoff_s: float = 0.05
    max_backoff_s: float = 2.0
    timeout_s: float = 30.0


DEFAULT_POLICY = RetryPolicy()


def is_remote(location: str | os.PathLike[str]) -> bool:
    """True for ``http://`` and ``https://`` locations."""
    return str(location).startswith(("http://", "https://"))


def cache_dir_for(base_url: str, cache_root: Path) -> Path:
    """A readable, collision-free cache directory for one remote tensor set."""
    parsed = urllib.parse.urlparse(base_url)
    digest = hashlib.sha256(base_url.encode()).hexdigest()[:12]
    name = f"{parsed.hostname or 'host'}-{parsed.port or ''}-{Path(parsed.path).name or 'root'}-{digest}"
    return cache_root / name


def _fetch_once(url: str, part: Path, timeout: float) -> None:
    """Download ``url`` into ``part``, continuing from its current size with a Range request."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        if have and response.status != 206:  # server ignored the range: start over
            have = 0
        expected = response.headers.get("Content-Length")
        written = 0
        with open(part, "ab" if have else "wb") as handle:
            while chunk := response.read(1 << 20):
                handle.write(chunk)
                written += len(chunk)
        if expected is not None and written != int(expected):
            raise urllib.error.URLError(f"transfer cut after {written} of {expected} bytes")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def download(url: str, target: Path, size: int | None, sha256: str | None,
             policy: RetryPolicy = DEFAULT_POLICY) -> Path:
    """Fetch ``url`` to ``target`` (atomic, verified); a verified cached copy is reused."""
    if target.exists() and (size is None or target.stat().st_size == size):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    last: Exception | None = None
    for attempt in range(policy.attempts):
        try:
            if not (size is not None and part.exists() and part.stat().st_size == size):
                _fetch_once(url, part, policy.timeout_s)
            actual_size = part.stat().st_size
            if size is not None and actual_size > size:
                part.unlink()
                raise ValueError(f"got {actual_size} bytes, expected {size}")
            if size is not None and actual_size < size:
                raise urllib.error.URLError(f"short file: {actual_size} of {size} bytes")
            if sha256 is not None and _sha256(part) != sha256:
                part.unlink()
                raise ValueError("checksum mismatch")
            os.replace(part, target)
            return target
        except urllib.error.HTTPError as exc:
            last = exc
            if exc.code in (403, 404, 410):  # gone: retrying will not help
                break
            if exc.code == 416:  # our partial file does not fit the remote one: start over
                part.unlink(missing_ok=True)
        except (OSError, ValueError) as exc:
            last = exc
        time.sleep(min(policy.backoff_s * 2**attempt, policy.max_backoff_s))
        log.info("retrying %s (attempt %d): %s", url, attempt + 2, last)
    part.unlink(missing_ok=True)
    raise RemoteError(f"{url}: unavailable after {policy.attempts} attempts: {last}")


def fetch_json(url: str, target: Path, policy: RetryPolicy = DEFAULT_POLICY) -> dict:
    """Download a small JSON file (no checksum known yet) and parse it."""
    target.unlink(missing_ok=True)
    download(url, target, None, None, policy)
    try:
        return json.loads(target.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        target.unlink(missing_ok=True)
        raise RemoteError(f"{url}: not valid JSON ({exc})") from exc


class RemoteFiles:
    """Background downloads of a tensor set's files into a local cache directory.

    ``files`` is ``(relative path, size, sha256)`` in the order they will be used; downloads
    start at once in ``workers`` threads. :meth:`local_path` returns the verified local file,
    waiting only if it is not there yet.
    """

    def __init__(self, base_url: str, cache: Path, files: Sequence[tuple[str, int, str]],
                 workers: int = 4, policy: RetryPolicy = DEFAULT_POLICY) -> None:
        self.base_url = base_url.rstrip("/")
        self.cache = cache
        self.policy = policy
        self._specs = {path: (size, sha) for path, size, sha in files}
        self._futures: dict[str, Future[Path]] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="kinda-prefetch")
        for path, _, _ in files:
            self._submit(path)

    def url(self, rel_path: str) -> str:
        """The URL of a file of the set."""
        return f"{self.base_url}/{urllib.parse.quote(rel_path)}"

    def _submit(self, rel_path: str) -> Future[Path]:
        with self._lock:
            return self._submit_locked(rel_path)

    def _submit_locked(self, rel_path: str) -> Future[Path]:
        future = self._futures.get(rel_path)
        if future is None:
            size, sha = self._specs[rel_path]
            future = self._pool.submit(download, self.url(rel_path), self.cache / rel_path, size, sha, self.policy)
            self._futures[rel_path] = future
        return future

    def local_path(self, rel_path: str) -> Path:
        """The verified local copy of ``rel_path``; waits only for a download already running."""
        if rel_path not in self._specs:
            raise KeyError(f"{rel_path} is not a file of {self.base_url}")
        with self._lock:
            future = self._submit_locked(rel_path)
            mine = future.cancel()  # still queued behind others: fetch it now, in this thread
            if mine:
                future = Future()
                self._futures[rel_path] = future
        if mine:
            size, sha = self._specs[rel_path]
            try:
                future.set_result(download(self.url(rel_path), self.cache / rel_path, size, sha, self.policy))
            except BaseException as exc:
                future.set_exception(exc)
        return future.result()

    def wait_all(self) -> list[Path]:
        """Block until every file is fetched; raise the first permanent failure."""
        return [self._futures[p].result() for p in self._specs]

    def close(self) -> None:
        """Stop queued downloads (running ones finish)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
