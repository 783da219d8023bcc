"""The two HTML extractors of the Common Crawl recipe: trafilatura (default) and resiliparse.

Both run on real WARC records written by warcio, through the same reader and time/size bounds;
the choice of engine is a config setting that leaves the default config hash unchanged.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from core.document import Document, Drop
from flows import commoncrawl as cc_flow
from flows.runtime.web import ExtractConfig
from sources.formats.html_text import ExtractOptions, extract_text
from sources.formats.warc import WarcReader

pytest.importorskip("resiliparse")

STORY = ("The old mill on the river was restored by volunteers over three summers. They replaced the wheel, "
         "repaired the roof, and opened a small museum about the history of flour milling in the valley.")
SECOND = ("A new study of coastal erosion shows that the cliffs retreat faster after wet winters. Geologists "
          "compared aerial photographs taken over forty years and measured the loss of land at each site.")
NAV = "Home | News | Sport | Weather | Contact us"
FOOTER = "Copyright 2020 Example Media Group. All rights reserved. Privacy policy. Cookie settings."


def _page(paragraphs: list[str]) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<html><head><title>t</title></head><body><nav><a href='/'>{NAV}</a></nav>"
            f"<main><article>{body}</article></main><footer>{FOOTER}</footer></body></html>").encode()


def _warc(path: Path, pages: list[tuple[str, bytes]]) -> Path:
    """A real WARC of HTML responses, written by warcio (the Common Crawl tests' writer)."""
    spec = importlib.util.spec_from_file_location("cc_warc_helpers", Path(__file__).parent / "test_commoncrawl.py")
    helpers = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(helpers)  # type: ignore[union-attr]
    helpers.write_warc(path, pages)
    return path


@pytest.mark.parametrize("engine", ["trafilatura", "resiliparse"])
def test_main_text_without_navigation_or_footer(engine: str) -> None:
    text = extract_text(_page([STORY, SECOND]).decode(), ExtractOptions(engine=engine))
    assert STORY in text and SECOND in text
    assert NAV not in text and "All rights reserved" not in text


def test_unknown_engine_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown extraction engine 'lynx'"):
        ExtractOptions(engine="lynx")


def test_reader_with_resiliparse_keeps_the_same_pages(tmp_path: Path) -> None:
    warc = _warc(tmp_path / "a.warc.gz", [("http://a/1", _page([STORY])), ("http://a/2", _page([SECOND])),
                                         ("http://a/3", b"<html><body><nav>Only a menu</nav></body></html>")])

    def read(engine: str) -> dict[str, str]:
        reader = WarcReader(warc, str(warc), "commoncrawl", warc.name, extract=ExtractOptions(engine=engine))
        return {r.meta["url"]: r.text for r in reader if isinstance(r, Document)}

    fast, default = read("resiliparse"), read("trafilatura")
    assert set(fast) == {"http://a/1", "http://a/2"} <= set(default)
    assert STORY in fast["http://a/1"] and SECOND in fast["http://a/2"]
    # a page that is only a menu has no main content for resiliparse (trafilatura keeps its words)
    assert "http://a/3" not in fast


def test_reader_bounds_apply_to_resiliparse(tmp_path: Path) -> None:
    """The size bound is the reader's, whatever the engine: a body past it is one counted drop."""
    big = _page([STORY] * 400)
    warc = _warc(tmp_path / "b.warc.gz", [("http://b/1", big), ("http://b/2", _page([SECOND]))])
    cfg = ExtractConfig(engine="resiliparse", max_body_bytes=len(big) - 1)
    reader = WarcReader(warc, str(warc), "commoncrawl", warc.name, limits=cfg.limits(), extract=cfg.options())
    records = list(reader)
    drops = [r for r in records if isinstance(r, Drop)]
    assert [d.reason for d in drops] == ["too_large"] and "http://b/1" in str(drops[0].record)
    assert [r.meta["url"] for r in records if isinstance(r, Document)] == ["http://b/2"]


def test_engine_setting_keeps_the_default_hash() -> None:
    default = cc_flow.parse_args(["--inputs", "x.warc.gz"])
    same = cc_flow.parse_args(["--inputs", "x.warc.gz", "--set", "extract.engine=trafilatura"])
    other = cc_flow.parse_args(["--inputs", "x.warc.gz", "--set", "extract.engine=resiliparse"])
    assert default.extract.engine == "trafilatura"
    assert same.config_hash() == default.config_hash() != other.config_hash()
    assert "extract" in default.output_fields() and "engine" not in default.output_fields()["extract"]
