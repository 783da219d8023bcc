"""Common Crawl's names: its base URL, crawl ids, and the paths lists that name a crawl's files.

Apart from the WARC reader (:mod:`sources.formats.warc`, which needs warcio and the HTML
extractor) so a command that only names crawls (``python -m flows.c4 --help``, a config check)
does not import them.
"""

from __future__ import annotations

import gzip
import re
import urllib.parse
from pathlib import Path

CC_BASE_URL = "https://data.commoncrawl.org"
CRAWL_ID = re.compile(r"^CC-MAIN-\d{4}-\d{2}$")


def read_paths_list(path: Path) -> list[str]:
    """The relative paths in a ``*.paths.gz`` list (one per line), in file order."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


def resolve_url(base_url: str, relative: str) -> str:
    """Join a ``crawl-data/...`` path to the configured base URL (a mirror, or a local ``file://``)."""
    return urllib.parse.urljoin(base_url.rstrip("/") + "/", relative.lstrip("/"))


def crawl_paths_url(base_url: str, crawl: str, kind: str = "wet") -> str:
    """URL of a crawl's ``wet.paths.gz`` / ``warc.paths.gz``."""
    if not CRAWL_ID.match(crawl):
        raise ValueError(f"not a Common Crawl id: {crawl!r} (expected CC-MAIN-YYYY-WW)")
    if kind not in ("wet", "warc"):
        raise ValueError(f"paths kind must be 'wet' or 'warc', got {kind!r}")
    return resolve_url(base_url, f"crawl-data/{crawl}/{kind}.paths.gz")
