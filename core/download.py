"""Downloads that survive flaky networks: retries, HTTP Range resume, checksums, a local cache.

A dump is fetched to ``<cache>/<host>/<file>.part`` and renamed when complete and verified, so
the cache only ever holds whole files. A dropped connection resumes from the bytes already on
disk (``Range: bytes=N-``); a server that ignores ranges gets a fresh start. Wikimedia publishes
``<wiki>-<date>-sha1sums.txt`` / ``md5sums.txt`` beside each dump: when given, the file is
verified against it, and a mismatch deletes the file and fails loudly rather than feeding a
corrupt dump to the pipeline.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from core.layout import slug

log = logging.getLogger(__name__)

CHUNK = 1 << 20
USER_AGENT = "kinda-llama/0.1 (+https://github.com/kinda-llama)"


class DownloadError(RuntimeError):
    """A download failed for good (after retries) or did not verify."""


@dataclass(frozen=True)
class Downloaded:
    """A verified local copy of a URL."""

    url: str
    path: Path
    size: int
    verified: str | None  # "sha1", "md5" or None when no checksum was known


def is_url(location: str) -> bool:
    """True for http(s) locations."""
    return urllib.parse.urlparse(location).scheme in {"http", "https"}


def cache_path(url: str, cache_dir: Path) -> Path:
    """Where a URL is cached: ``<cache>/<host>/<file name>``."""
    parsed = urllib.parse.urlparse(url)
    name = Path(urllib.parse.unquote(parsed.path)).name or "index"
    return Path(cache_dir) / slug(parsed.netloc) / slug(name)


def parse_checksum_list(text: str) -> dict[str, str]:
    """Parse ``<hex>  <file name>`` lines (``sha1sum``/``md5sum`` output, Wikimedia's lists)."""
    sums: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            sums[parts[1].lstrip("*")] = parts[0].lower()
    return sums


def algorithm_for(hex_digest: str) -> str:
    """Guess the algorithm from the digest length (40: sha1, 32: md5, 64: sha256)."""
    return {40: "sha1", 32: "md5", 64: "sha256"}.get(len(hex_digest), "sha1")


def _file_digest(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _fetch_once(url: str, part: Path, timeout: float) -> None:
    """One attempt: continue ``part`` from its current size; raises on any interruption."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # nothing left to fetch
            return
        raise
    with response:
        expected_total = _expected_total(response, have)
        mode = "ab" if response.status == 206 else "wb"
        if response.status == 200 and have:
            log.info("%s: server ignored Range, starting over", url)
        with open(part, mode) as out:
            while chunk := response.read(CHUNK):
                out.write(chunk)
    if expected_total is not None and part.stat().st_size != expected_total:
        raise http.client.IncompleteRead(b"", expected_total - part.stat().st_size)


def _expected_total(response: http.client.HTTPResponse, have: int) -> int | None:
    """Total file size the server announced (Content-Range for 206, Content-Length for 200)."""
    content_range = response.headers.get("Content-Range", "")
    if response.status == 206 and "/" in content_range:
        total = content_range.rsplit("/", 1)[1]
        return int(total) if total.isdigit() else None
    length = response.headers.get("Content-Length")
    return int(length) if length and length.isdigit() else None


def download(
    url: str,
    cache_dir: Path,
    expected: dict[str, str] | None = None,
    retries: int = 8,
    timeout: float = 60.0,
    backoff: float = 0.5,
) -> Downloaded:
    """Fetch ``url`` into the cache and return the local copy.

    ``expected`` maps an algorithm (``sha1``/``md5``/``sha256``) to a hex digest. A cached file
    that verifies (or has nothing to verify against) is returned without any network access.
    """
    target = cache_path(url, cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    algorithm, digest = next(iter((expected or {}).items()), (None, None))
    if target.exists() and (algorithm is None or digest is None or _file_digest(target, algorithm) == digest):
        return Downloaded(url, target, target.stat().st_size, algorithm)
    part = target.with_name(target.name + ".part")
    last_error: Exception | None = None
    for attempt in range(retries + 1):
        try:
            _fetch_once(url, part, timeout)
            break
        except urllib.error.HTTPError as exc:
            last_error = exc
            if exc.code < 500 and exc.code != 429:
                raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
        except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError, OSError) as exc:
            last_error = exc
        log.warning("%s: attempt %d failed (%s); resuming", url, attempt + 1, last_error)
        time.sleep(min(backoff * 2**attempt, 30.0))
    else:
        raise DownloadError(f"{url}: gave up after {retries + 1} attempts: {last_error}")
    if digest is not None and algorithm is not None:
        actual = _file_digest(part, algorithm)
        if actual != digest:
            part.unlink(missing_ok=True)
            raise DownloadError(f"{url}: {algorithm} mismatch: expected {digest}, got {actual}")
    part.replace(target)
    return Downloaded(url, target, target.stat().st_size, algorithm)


def load_checksums(location: str, cache_dir: Path) -> dict[str, str]:
    """Read a checksum list from a path or URL (fetched through the cache)."""
    local = download(location, cache_dir).path if is_url(location) else Path(location)
    return parse_checksum_list(local.read_text(encoding="utf-8", errors="replace"))
