"""URL blocklists in the UT1 layout: what a listed host, parent domain or URL drops, through a real C4 input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from core import pipeline
from core.document import InputSpec
from core.filters.url_blocklist import Blocklists, UrlBlocklist, folder_digest
from core.shards import ShardLimits
from flows.c4 import C4Config
from sources.c4 import C4Recipe


def _ut1(root: Path) -> Path:
    """A tiny UT1 tree: two categories, domains and urls files, a comment and a blank line."""
    (root / "adult").mkdir(parents=True)
    (root / "adult" / "domains").write_text("# adult hosts\nbad-site.example.org\n\nWWW.Shady.Example.net\n")
    (root / "phishing").mkdir()
    (root / "phishing" / "domains").write_text("login-verify.example.com\n")
    (root / "phishing" / "urls").write_text("news.example.org/promo/free-prize\n")
    (root / "README").write_text("not a category\n")
    return root


@pytest.mark.parametrize(("url", "category"), [
    ("https://bad-site.example.org/page", "adult"),
    ("http://cdn.bad-site.example.org:8080/x.jpg", "adult"),         # a host below a listed domain
    ("https://shady.example.net/", "adult"),                           # www. and case folded on both sides
    ("https://login-verify.example.com/account?id=1", "phishing"),
    ("https://news.example.org/promo/free-prize", "phishing"),          # a listed page
    ("https://news.example.org/promo/free-prize/step-2", "phishing"),   # a page below it
    ("https://news.example.org/promo/free-prizes", None),               # not below: another page
    ("https://news.example.org/world/", None),
    ("https://example.org/", None),                                     # a parent of a listed host is not listed
    ("https://not-bad-site.example.org/", None),                        # a suffix of the name, not a parent domain
    ("http://[broken/", None),                                          # a malformed URL has no host
])
def test_category_of_url(tmp_path: Path, url: str, category: str | None) -> None:
    assert Blocklists.load(_ut1(tmp_path / "ut1")).category(url) == category


def test_a_top_level_domain_line_never_matches(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "domains").write_text("com\n")
    assert Blocklists.load(tmp_path).category("https://anything.com/") is None


def test_chosen_categories_and_unknown_ones(tmp_path: Path) -> None:
    root = _ut1(tmp_path / "ut1")
    assert Blocklists.load(root, ["phishing"]).category("https://bad-site.example.org/") is None
    with pytest.raises(ValueError, match="no blocklist categories \\['gambling'\\]"):
        Blocklists.load(root, ["gambling"])


def test_digest_follows_content_not_path(tmp_path: Path) -> None:
    first = _ut1(tmp_path / "a")
    second = _ut1(tmp_path / "elsewhere" / "b")
    assert folder_digest(first) == folder_digest(second)
    assert C4Config(url_blocklist=str(first)).config_hash() == C4Config(url_blocklist=str(second)).config_hash()
    assert C4Config().config_hash() != C4Config(url_blocklist=str(first)).config_hash()
    (second / "adult" / "domains").write_text("other.example.org\n")
    assert folder_digest(first) != folder_digest(second)


def test_c4_input_drops_listed_pages_by_category(tmp_path: Path) -> None:
    rows = [
        {"text": "A page about rivers and boats.", "timestamp": "2019-04-25T12:57:54Z", "url": "https://rivers.example.org/a"},
        {"text": "A listed page.", "timestamp": "2019-04-25T12:57:55Z", "url": "https://bad-site.example.org/b"},
        {"text": "Another listed page.", "timestamp": "2019-04-25T12:57:56Z", "url": "https://news.example.org/promo/free-prize"},
        {"text": "A page about bridges.", "timestamp": "2019-04-25T12:57:57Z", "url": "https://bridges.example.org/c"},
    ]
    path = tmp_path / "c4-train.00000-of-01024.json.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode(), mtime=0))
    recipe = C4Recipe(url_filters=(UrlBlocklist(str(_ut1(tmp_path / "ut1"))),))
    ctx = pipeline.RunContext(tmp_path / "out", "c4", "cfg", ShardLimits(), "c4")
    record = pipeline.stage_input(recipe, InputSpec(str(path), path, path.name), ctx)
    assert record.records_in == 4
    assert record.docs_kept == 2  # the pages before and after the listed ones are kept
    drops = {(d["step"], d["reason"]): d["count"] for d in record.drops}
    assert drops == {("url_blocklist", "url_blocklist:adult"): 1, ("url_blocklist", "url_blocklist:phishing"): 1}


def test_common_crawl_drops_listed_pages_before_extraction_counts(tmp_path: Path) -> None:
    """A real WARC (warcio, fixed ids) through extract -> line dedup -> stage: the listed page is one drop."""
    from sources import commoncrawl as cc
    from tests.sources.test_commoncrawl import STORIES, page, run_phases, write_warc

    spec = write_warc(tmp_path / "a.warc.gz", [
        ("https://mill.example.org/story", page([STORIES[0]])),
        ("https://www.bad-site.example.org/story", page([STORIES[1]])),
        ("https://library.example.org/story", page([STORIES[2]])),
    ])
    recipe = cc.CommonCrawlRecipe(min_chars=50, url_filters=(UrlBlocklist(str(_ut1(tmp_path / "ut1"))),))
    [record] = run_phases(recipe, [spec], tmp_path / "out")
    reasons = {(d["step"], d["reason"]): d["count"] for d in record.drops}
    assert reasons[("url_blocklist", "url_blocklist:adult")] == 1
    assert record.docs_kept == 2
