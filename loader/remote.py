"""Remote tensor sets over plain http(s): background prefetch, retries, resume, checksums, cache.

A tensor set is a directory of files plus ``metadata.json`` (with each file's size and SHA256),
so any static web server can serve it (Kogitune's idea). :class:`RemoteFiles` downloads every
file a dataset will need in background threads as soon as the dataset is opened, in the order
the dataset lists them; asking for a file moves it to the front. A download resumes an
interrupted transfer with an HTTP ``Range`` request, retries failures with backoff, and renames
a file into the cache only after its size and SHA256 match the metadata, so a reader never
sees a partial or corrupt file. A file that stays unavailable raises :class:`RemoteError`
naming its URL.

A cached file is trusted only while it is the file the metadata names: beside it a small
``<name>.verified`` stamp records the SHA256 it was checked against, its size and its mtime.
Opening a set re-hashes a cached file whose stamp does not match (a republished file with a new
``tokens_sha256``, a file rewritten in place, a copy from before stamps) and fetches it again when
the hash differs, so a same-size stale or corrupted copy is never read; an unchanged cache costs
one ``stat`` and a stamp read per file. ``metadata.json`` is capped at
:data:`MAX_METADATA_BYTES` before it is downloaded or parsed (it is parsed whole).
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import hashlib
import json
import logging
import os
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from loader.safe_paths import inside

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

#: Largest remote ``metadata.json`` read (parsed whole: a 400 MB one took 1.5 GB of memory). A set
#: of 100,000 shards lists ~40 MB; a larger file is refused before its bytes are downloaded.
MAX_METADATA_BYTES = 64 << 20
STAMP_SUFFIX = ".verified"


class TooLarge(RemoteError):
    """A file is larger than the bound its reader sets (not retried: it will not shrink)."""


def is_remote(location: str | os.PathLike[str]) -> bool:
    """True for ``http://`` and ``https://`` locations."""
    return str(location).startswith(("http://", "https://"))


def cache_dir_for(base_url: str, cache_root: Path) -> Path:
    """A readable, collision-free cache directory for one remote tensor set."""
    parsed = urllib.parse.urlparse(base_url)
    digest = hashlib.sha256(base_url.encode()).hexdigest()[:12]
    name = f"{parsed.hostname or 'host'}-{parsed.port or ''}-{Path(parsed.path).name or 'root'}-{digest}"
    return cache_root / re.sub(r"[^A-Za-z0-9._-]", "_", name)  # one plain directory name, whatever the URL


def _fetch_once(url: str, part: Path, timeout: float, max_bytes: int | None = None) -> None:
    """Download ``url`` into ``part``, continuing from its current size with a Range request;
    :class:`TooLarge` as soon as the file is known to exceed ``max_bytes`` (header or bytes read)."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        if have and response.status != 206:  # server ignored the range: start over
            have = 0
        expected = response.headers.get("Content-Length")
        if max_bytes is not None and expected is not None and have + int(expected) > max_bytes:
            raise TooLarge(f"{url}: {have + int(expected):,} bytes, over the {max_bytes:,}-byte bound")
        written = 0
        with open(part, "ab" if have else "wb") as handle:
            while chunk := response.read(1 << 20):
                handle.write(chunk)
                written += len(chunk)
                if max_bytes is not None and have + written > max_bytes:
                    raise TooLarge(f"{url}: more than {max_bytes:,} bytes, over the bound")
        if expected is not None and written != int(expected):
            raise urllib.error.URLError(f"transfer cut after {written} of {expected} bytes")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def stamp_path(target: Path) -> Path:
    """Where the verified stamp of a cached file lives (beside it)."""
    return target.with_name(target.name + STAMP_SUFFIX)


def _stamp_key(target: Path, sha256: str) -> dict[str, object]:
    stat = target.stat()
    return {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _write_stamp(target: Path, sha256: str) -> None:
    """Record that ``target`` hashed to ``sha256`` at its current size and mtime (atomic)."""
    stamp = stamp_path(target)
    tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(_stamp_key(target, sha256)), encoding="utf-8")
    os.replace(tmp, stamp)


def forget(target: Path) -> None:
    """Remove a cached file and its stamp (evicted, or found stale)."""
    target.unlink(missing_ok=True)
    stamp_path(target).unlink(missing_ok=True)


def is_verified(target: Path, size: int | None, sha256: str | None) -> bool:
    """True when ``target`` is the file the metadata describes.

    Its stamp matching ``sha256``, its size and mtime answers without reading it; otherwise the
    file is hashed once and, if it matches, stamped. False for a missing file, a wrong size or a
    wrong hash (the caller fetches it again).
    """
    try:
        actual = target.stat().st_size
    except FileNotFoundError:
        return False
    if size is not None and actual != size:
        return False
    if sha256 is None:
        return True
    try:
        if json.loads(stamp_path(target).read_text(encoding="utf-8")) == _stamp_key(target, sha256):
            return True
    except (OSError, ValueError):
        pass  # no stamp, or a torn one: hash the file
    if _sha256(target) != sha256:
        return False
    _write_stamp(target, sha256)
    return True


def download(url: str, target: Path, size: int | None, sha256: str | None,
             policy: RetryPolicy = DEFAULT_POLICY, max_bytes: int | None = None) -> Path:
    """Fetch ``url`` to ``target`` (atomic, verified); a cached copy is reused only if verified.

    A cached copy that is not the file the metadata names (other hash, other size) is removed and
    fetched again. ``max_bytes`` refuses a larger file at once (:class:`TooLarge`, no retry).
    """
    if target.exists():
        if is_verified(target, size, sha256):
            return target
        log.info("%s: cached copy does not match the metadata; fetching it again", url)
        forget(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    last: Exception | None = None
    for attempt in range(policy.attempts):
        try:
            if not (size is not None and part.exists() and part.stat().st_size == size):
                _fetch_once(url, part, policy.timeout_s, max_bytes)
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
            if sha256 is not None:
                _write_stamp(target, sha256)
            return target
        except TooLarge:
            part.unlink(missing_ok=True)
            raise
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


def fetch_json(url: str, target: Path, policy: RetryPolicy = DEFAULT_POLICY,
               max_bytes: int | None = None) -> dict:
    """Download a small JSON file (no checksum known yet) and parse it; refuse one over ``max_bytes``
    (default :data:`MAX_METADATA_BYTES`)."""
    target.unlink(missing_ok=True)
    try:
        download(url, target, None, None, policy, MAX_METADATA_BYTES if max_bytes is None else max_bytes)
    except TooLarge as exc:
        raise TooLarge(f"{exc}: not read (a metadata file is parsed whole, so its size is bounded; "
                       f"pass max_bytes to fetch_json to raise it)") from None
    try:
        return json.loads(target.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        target.unlink(missing_ok=True)
        raise RemoteError(f"{url}: not valid JSON ({exc})") from exc


class RemoteFiles:
    """Background downloads of a tensor set's files into a bounded local cache directory.

    ``files`` is ``(relative path, size, sha256)`` in the order they will be used. Every path is
    checked to stay inside ``cache`` before anything is fetched (a hostile ``metadata.json``
    must not write outside it). Downloads run in ``workers`` threads, at most ``window`` files
    ahead of the last file asked for (all of them when ``window`` is None), in listing order.

    With ``cap_bytes`` the files on disk (finished, being downloaded, or left by an earlier
    run) never add up to more than the cap: before a download starts, finished files are
    evicted, oldest first. A prefetch evicts only files that were already read and makes no
    room by evicting a file fetched ahead but not read yet (it is skipped instead); a file
    asked for evicts whatever it must, waiting for running downloads if needed. A file being
    opened is pinned (:meth:`unpin` when done) and never evicted; ``on_evict(path)`` lets the
    reader drop its memory map of an evicted file, which is downloaded again if asked for later.
    """

    def __init__(self, base_url: str, cache: Path, files: Sequence[tuple[str, int, str]],
                 workers: int = 4, policy: RetryPolicy = DEFAULT_POLICY, window: int | None = 8,
                 cap_bytes: int | None = None, on_evict: Callable[[str], None] | None = None) -> None:
        for path, _, _ in files:
            inside(cache, path, f"{base_url}: file")
        self.base_url = base_url.rstrip("/")
        self.cache = cache
        self.policy = policy
        self.window = window
        self.cap_bytes = cap_bytes
        self.on_evict = on_evict
        self._order = [path for path, _, _ in files]
        self._position = {path: i for i, path in enumerate(self._order)}
        self._specs = {path: (size, sha) for path, size, sha in files}
        if cap_bytes is not None and files:
            largest = sorted(files, key=lambda f: f[1])[-2:]  # a shard opens its tokens and its index together
            if sum(f[1] for f in largest) > cap_bytes:
                raise ValueError(f"{self.base_url}: a cache cap of {cap_bytes} bytes cannot hold "
                                 f"{' + '.join(f'{f[0]} ({f[1]} bytes)' for f in largest)} at once; "
                                 f"raise cache_max_bytes")
        self._futures: dict[str, Future[Path]] = {}
        self._resident: collections.OrderedDict[str, int] = collections.OrderedDict()  # on disk or coming
        self._used: set[str] = set()
        self._pinned: collections.Counter[str] = collections.Counter()
        self._upcoming: list[str] | None = None  # the reader's next files, when it tells (see hint)
        self._lock = threading.RLock()
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="kinda-prefetch")
        evicted = self._adopt_cached()
        self._notify(evicted)

    # -- bookkeeping (called with the lock held) ------------------------------------------------
    def _adopt_cached(self) -> list[str]:
        """Count intact files left by an earlier run (they are on disk: they count against the cap)."""
        with self._lock:
            for path in self._order:
                file = self.cache / path
                if not file.is_file():
                    continue
                if not is_verified(file, *self._specs[path]):
                    forget(file)  # stale (republished) or corrupted: fetched again when asked for
                    continue
                done: Future[Path] = Future()
                done.set_result(file)
                self._futures[path] = done
                self._resident[path] = self._specs[path][0]
                self._used.add(path)  # unknown history: first to go
            return self._make_room(0, prefetch=False) or []

    def cached_bytes(self) -> int:
        """Bytes of the files on disk or being downloaded (what the cap bounds)."""
        with self._lock:
            return sum(self._resident.values())

    def _make_room(self, size: int, prefetch: bool) -> list[str] | None:
        """Evict finished, unpinned files (oldest first) until ``size`` more bytes fit; None if they cannot."""
        if self.cap_bytes is None:
            return []
        evicted: list[str] = []
        total = sum(self._resident.values())
        coming = set(self._upcoming or ())
        # Files read and not coming back soon go first (oldest first); a prefetch evicts nothing else.
        done_with = [p for p in self._resident if p in self._used and p not in coming]
        rest = [p for p in self._resident if p not in done_with]
        for path in done_with if prefetch else done_with + rest:
            if total + size <= self.cap_bytes:
                break
            future = self._futures.get(path)
            if self._pinned[path] or future is None or not future.done():
                continue
            self._drop(path)
            total -= self._specs[path][0]
            evicted.append(path)
        return evicted if total + size <= self.cap_bytes else None

    def _drop(self, path: str) -> None:
        self._resident.pop(path, None)
        self._futures.pop(path, None)
        self._used.discard(path)
        forget(self.cache / path)

    def _notify(self, evicted: Sequence[str]) -> None:
        if self.on_evict is not None:
            for path in evicted:
                self.on_evict(path)

    def _start(self, path: str) -> Future[Path]:
        """Reserve the file's bytes and queue its download (room already made)."""
        size, sha = self._specs[path]
        self._resident[path] = size
        future = self._pool.submit(download, self.url(path), self.cache / path, size, sha, self.policy)
        future.add_done_callback(functools.partial(self._finished, path))
        self._futures[path] = future
        return future

    def _finished(self, path: str, future: Future[Path]) -> None:
        """A failed or cancelled download leaves nothing on disk: free its reservation (asking retries it)."""
        if future.cancelled() or future.exception() is not None:
            with self._lock:
                if self._futures.get(path) is future:
                    self._futures.pop(path)
                    self._resident.pop(path, None)

    def hint(self, upcoming: Sequence[str]) -> None:
        """The files the reader will ask for next, in order: prefetch follows them, not the listing."""
        with self._lock:
            self._upcoming = [p for p in dict.fromkeys(upcoming) if p in self._specs]
        self._prefetch(None)

    def _prefetch(self, after: str | None) -> None:
        """Queue the next ``window`` files the reader will need that fit under the cap.

        The next files are the hinted ones when the reader gave hints, else those after
        ``after`` in listing order.
        """
        with self._lock:
            if self._upcoming is not None:
                ahead = self._upcoming
            else:
                ahead = self._order[self._position[after] + 1:] if after is not None else self._order
            ahead = ahead if self.window is None else ahead[: self.window]
        evicted: list[str] = []
        with self._lock:
            for path in ahead:
                if path in self._futures:
                    continue
                room = self._make_room(self._specs[path][0], prefetch=True)
                if room is None:
                    break
                evicted.extend(room)
                self._start(path)
        self._notify(evicted)

    # -- the reader's side ------------------------------------------------------------------------
    def url(self, rel_path: str) -> str:
        """The URL of a file of the set."""
        return f"{self.base_url}/{urllib.parse.quote(rel_path)}"

    def local_path(self, rel_path: str) -> Path:
        """The verified local copy of ``rel_path``, pinned until :meth:`unpin`; prefetches the files after it."""
        if rel_path not in self._specs:
            raise KeyError(f"{rel_path} is not a file of {self.base_url}")
        size, sha = self._specs[rel_path]
        evicted: list[str] = []
        mine = False
        while True:
            with self._lock:
                future = self._futures.get(rel_path)
                if future is not None and future.cancel():  # queued behind others: fetch it in this thread
                    self._futures.pop(rel_path, None)
                    self._resident.pop(rel_path, None)
                    future = None
                if future is None:
                    room = self._make_room(size, prefetch=False)
                    if room is not None:
                        evicted.extend(room)
                        future = Future()
                        future.set_running_or_notify_cancel()  # running: no other caller's cancel() frees its bytes
                        self._futures[rel_path] = future
                        self._resident[rel_path] = size
                        mine = True
                    else:  # the cap is taken by downloads in flight: cancel queued ones, wait for one
                        for path, other in list(self._futures.items()):
                            if other.cancel():
                                self._futures.pop(path, None)
                                self._resident.pop(path, None)
                        busy = [f for f in self._futures.values() if not f.done()]
                        if not busy:
                            pinned = sorted(p for p, n in self._pinned.items() if n)
                            raise RemoteError(f"{self.base_url}: cache cap of {self.cap_bytes} bytes is full of "
                                              f"files being opened ({pinned}); raise cache_max_bytes")
                if future is not None:
                    self._pinned[rel_path] += 1
                    self._used.add(rel_path)
                    if rel_path in self._resident:
                        self._resident.move_to_end(rel_path)
                    break
            concurrent.futures.wait(busy, timeout=1.0, return_when=concurrent.futures.FIRST_COMPLETED)
        self._notify(evicted)
        if mine:
            try:
                future.set_result(download(self.url(rel_path), self.cache / rel_path, size, sha, self.policy))
            except BaseException as exc:
                with self._lock:
                    if self._futures.get(rel_path) is future:  # asking again retries
                        self._futures.pop(rel_path)
                        self._resident.pop(rel_path, None)
                future.set_exception(exc)
        try:
            result = future.result()
        except BaseException:
            self.unpin(rel_path)
            raise
        self._prefetch(rel_path)
        return result

    def unpin(self, rel_path: str) -> None:
        """The reader is done opening ``rel_path`` (its map, if any, keeps the data): it may be evicted."""
        with self._lock:
            if self._pinned[rel_path] > 0:
                self._pinned[rel_path] -= 1

    def wait_all(self) -> list[Path]:
        """Fetch every file (in this thread, through the cache rules); raise the first permanent failure."""
        paths = []
        for path in self._order:
            paths.append(self.local_path(path))
            self.unpin(path)
        return paths

    def close(self) -> None:
        """Stop queued downloads (running ones finish)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
