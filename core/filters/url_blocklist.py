"""URL and domain blocklists in the UT1 layout: a page whose host or URL is listed is dropped, naming the list.

UT1 (Université Toulouse 1 Capitole's blacklists, used by datatrove's URL filter and RefinedWeb) is a
folder of categories, each a folder with a ``domains`` file (one host per line: the host and every
host below it are listed) and a ``urls`` file (``host/path`` without the scheme: that page and the
pages below it). A user gives the folder and, optionally, which categories apply; the Common Crawl
and C4 recipes drop a listed page as step ``url_blocklist``, reason ``url_blocklist:<category>``,
so the manifest's drop counts say which list caught how many pages.

Hosts are compared lower-cased, without a port, a trailing dot or a leading ``www.``; a page
is listed when its host or a parent domain of it is (``a.b.example.org`` by a listed
``b.example.org`` or ``example.org``), never through a bare top-level domain (a list line ``com``
cannot drop the web). Lines starting with ``#`` and blank lines are skipped.
The sets are built once per worker, on the first page (a full UT1 ``adult`` list, about 4.6 M
domains, takes roughly 0.5 GB there).
"""

from __future__ import annotations

import hashlib
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.document import Document
from core.steps import Filter

REASON_PREFIX = "url_blocklist:"
LIST_FILES = ("domains", "urls")


def _normal_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    return host[4:] if host.startswith("www.") else host


def _normal_url(entry: str) -> str:
    """``host/path`` of a list line or a page URL: no scheme, no query or fragment, no trailing slash."""
    entry = entry.strip()
    parts = urllib.parse.urlsplit(entry if "://" in entry else "http://" + entry)
    host = _normal_host(parts.hostname or "")
    return f"{host}{parts.path}".rstrip("/")


def categories(folder: Path, chosen: Sequence[str] = ()) -> list[Path]:
    """The category folders of a UT1 tree (those named in ``chosen``, or all), sorted by name."""
    found = sorted(p for p in folder.iterdir() if p.is_dir() and any((p / name).is_file() for name in LIST_FILES))
    if chosen:
        missing = sorted(set(chosen) - {p.name for p in found})
        if missing:
            raise ValueError(f"{folder}: no blocklist categories {missing} (has: {[p.name for p in found]})")
        found = [p for p in found if p.name in chosen]
    return found


def _lines(path: Path) -> Iterable[str]:
    if not path.is_file():
        return ()
    text = path.read_bytes().decode("utf-8", "replace")
    return (line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def folder_digest(folder: Path, chosen: Sequence[str] = ()) -> str:
    """SHA256 over the chosen lists' names and bytes: the config hash keys on what is listed, not on the path."""
    digest = hashlib.sha256()
    for category in categories(folder, chosen):
        for name in LIST_FILES:
            path = category / name
            if path.is_file():
                digest.update(f"{category.name}/{name}\0".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass
class Blocklists:
    """Host and URL sets per category, loaded from a UT1 folder."""

    domains: dict[str, str] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: Path, chosen: Sequence[str] = ()) -> Blocklists:
        """Read every chosen category; a host listed in two categories keeps the first by name."""
        lists = cls()
        for category in categories(folder, chosen):
            for line in _lines(category / "domains"):
                lists.domains.setdefault(_normal_host(line), category.name)
            for line in _lines(category / "urls"):
                lists.urls.setdefault(_normal_url(line), category.name)
        return lists

    def category(self, url: str) -> str | None:
        """The category listing ``url`` (its host, a parent domain, or the page or a page above it)."""
        try:
            parts = urllib.parse.urlsplit(url.strip())
            host = _normal_host(parts.hostname or "")
        except ValueError:  # a malformed URL (bad port, brackets): no host to look up
            return None
        labels = host.split(".")
        for start in range(len(labels) - 1):  # the host and its parents, never the bare top-level domain
            found = self.domains.get(".".join(labels[start:]))
            if found is not None:
                return found
        if self.urls:
            path = f"{host}{parts.path}".rstrip("/")
            while path:
                found = self.urls.get(path)
                if found is not None:
                    return found
                cut = path.rfind("/")
                if cut <= len(host) - 1 or cut < 0:
                    break
                path = path[:cut]
        return None


class UrlBlocklist(Filter):
    """Drops a page whose ``meta["url"]`` is listed; a document without a URL is kept (nothing to look up)."""

    name = "url_blocklist"

    def __init__(self, folder: str, chosen: Sequence[str] = ()) -> None:
        self.folder = folder
        self.chosen = tuple(chosen)
        self._lists: Blocklists | None = None

    def decide(self, doc: Document) -> str | None:
        url = doc.meta.get("url")
        if not isinstance(url, str) or not url:
            return None
        if self._lists is None:
            self._lists = Blocklists.load(Path(self.folder), self.chosen)
        found = self._lists.category(url)
        return None if found is None else REASON_PREFIX + found
