"""The newest Common Crawl, looked up when a run starts (the monthly deployment's input).

A schedule cannot name next month's crawl id in advance, so an input list may say
:data:`LATEST_CRAWL`; only then is ``collinfo.json`` read (one network call), and a list of
fixed crawl ids never touches the network.
"""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

#: In a Common Crawl input list, the newest crawl (looked up when the run starts: monthly schedules).
LATEST_CRAWL = "CC-MAIN-latest"


def latest_crawl(index_url: str, timeout: float = 60) -> str:
    """The newest ``CC-MAIN-YYYY-WW`` id in Common Crawl's ``collinfo.json`` (a network call, on request only)."""
    with urllib.request.urlopen(index_url, timeout=timeout) as response:
        crawls = json.load(response)
    ids = sorted(c["id"] for c in crawls if re.fullmatch(r"CC-MAIN-\d{4}-\d{2}", str(c.get("id", ""))))
    if not ids:
        raise ValueError(f"{index_url}: no CC-MAIN-YYYY-WW crawl listed")
    return ids[-1]


def resolve_latest(section: dict[str, Any], index_url: str) -> dict[str, Any]:
    """Replace :data:`LATEST_CRAWL` in a web source's inputs by the newest crawl id."""
    keys = [k for k in ("inputs", "from_commoncrawl") if LATEST_CRAWL in (section.get(k) or [])]
    if not keys:
        return section
    newest = latest_crawl(index_url)
    return section | {k: [newest if x == LATEST_CRAWL else x for x in section[k]] for k in keys}
