"""A tiny invented URL blocklist in the UT1 layout, for the offline sample's Common Crawl and C4.

UT1 (the Toulouse lists that datatrove's URL filter and RefinedWeb use) is a folder of category
folders, each with a ``domains`` file (a host and every host below it) and a ``urls`` file
(``host/path``: that page and the pages below it); :mod:`core.filters.url_blocklist` reads it.
Every listed name is invented, under the reserved top-level domains ``.test`` and ``.example``
(RFC 2606) or on a sample site, so the list can never drop a real page. Planted pages hit it:

* ``gambling/domains`` lists :data:`GAMBLING_HOST`: the Common Crawl sample's second WARC file
  ends with a page on a host *below* it (:data:`CC_GAMBLING_URL`: a parent-domain match);
* ``gambling/urls`` lists :data:`SPONSORED_PREFIX`, a section of a sample site whose other pages
  are kept: the same file holds a page under it (:data:`CC_SPONSORED_URL`: a URL-prefix match);
* ``phishing/domains`` lists :data:`PHISHING_HOST`: the C4 sample's second file ends with a row
  of that host (:data:`C4_PHISHING_URL`).

Each planted page is English prose that every other rule keeps, so ``url_blocklist:<category>``
is the only reason it is dropped. The files are written with fixed content (byte-identical runs).
"""

from __future__ import annotations

from pathlib import Path

from core.atomic import atomic_path

GAMBLING_HOST = "lucky-spins.test"
SPONSORED_PREFIX = "northern-review.example.net/sponsored"
PHISHING_HOST = "account-verify.example"
CC_GAMBLING_URL = f"https://blog.{GAMBLING_HOST}/2023/01/a-winter-evening/"
CC_SPONSORED_URL = f"https://{SPONSORED_PREFIX}/partner-stories/a-letter-home.html"
C4_PHISHING_URL = f"https://www.{PHISHING_HOST}/stories/the-long-silence"
#: category -> list file -> lines (each category also lists names no sample page uses)
LISTS: dict[str, dict[str, list[str]]] = {
    "gambling": {"domains": [GAMBLING_HOST, "jackpot-palace.test"], "urls": [SPONSORED_PREFIX]},
    "phishing": {"domains": [PHISHING_HOST, "secure-login-update.test"], "urls": ["parcel-notice.test/track"]},
}


def write_sample_blocklist(directory: Path) -> list[str]:
    """Write ``<category>/domains`` and ``<category>/urls`` into ``directory``; return their paths."""
    written = []
    for category, files in LISTS.items():
        for name, lines in files.items():
            target = directory / category / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(target) as tmp:
                tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            written.append(str(target))
    return written
