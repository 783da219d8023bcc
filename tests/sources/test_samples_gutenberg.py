"""The Gutenberg sample writer: real PG layouts of three eras, and what flows.books does with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.document import make_doc_id
from core.manifest import Manifest
from dedupe.shingles import shingle_items
from flows.books import BooksConfig
from flows.books import run as run_books
from sources.samples import gutenberg


def _shingles(text: str) -> set[bytes]:
    """Word 5-gram shingles as near-dedup sees them (``flows.dedup``, the book near-dedup)."""
    return set(shingle_items(text))


def _between(text: str, start: str, end: str) -> str:
    """Plain reading: the text between the line holding ``start`` and the line holding ``end``."""
    first = text.index("\n", text.index(start)) + 1
    return text[first: text.index(end, first)]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("gutenberg")
    gutenberg.write_sample_inputs(directory)
    return directory


def test_files_are_deterministic(mirror: Path, tmp_path: Path) -> None:
    again = gutenberg.write_sample_inputs(tmp_path)
    assert [Path(p).name for p in again] == sorted(p.name for p in mirror.iterdir())
    for path in map(Path, again):
        assert path.read_bytes() == (mirror / path.name).read_bytes(), path.name


def test_headers_of_each_era(mirror: Path) -> None:
    modern = (mirror / "pg3261.txt").read_bytes()
    assert modern.startswith(b"\xef\xbb\xbfThe Project Gutenberg eBook of News from Nowhere\r\n")
    text = modern.decode("utf-8-sig")
    assert "\r\n*** START OF THE PROJECT GUTENBERG EBOOK NEWS FROM NOWHERE ***\r\n" in text
    assert "\n" not in text.replace("\r\n", "")  # CRLF only
    small_print = (mirror / "pg972.txt").read_text(encoding="ascii")
    assert "*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*" in small_print
    assert "*** START" not in small_print and "End of Project Gutenberg Etext of" in small_print
    early = (mirror / "pg683.txt").read_text(encoding="ascii")
    assert early.startswith("This is the February 1992 Project Gutenberg release of:")
    assert "START OF" not in early
    latin = (mirror / "pg24675.txt").read_bytes()
    assert b"Character set encoding: ISO-8859-1" in latin and "ë".encode("latin-1") in latin
    with pytest.raises(UnicodeDecodeError):
        latin.decode("utf-8")  # really Latin-1 bytes, which the reader must decode by the header
    assert "Language: German" in (mirror / "pg22367.txt").read_text(encoding="utf-8")
    assert "Gutenberg" not in (mirror / "README.txt").read_text(encoding="ascii")


def test_planted_near_duplicate_edition(mirror: Path) -> None:
    first = (mirror / "pg9198.txt").read_text(encoding="ascii").replace("\r\n", "\n")
    edition = (mirror / "pg683.txt").read_text(encoding="ascii").replace("\r\n", "\n")
    a = _shingles(_between(first, "*** START OF THIS", "*** END OF THIS"))
    b = _shingles(edition.split("Lisle, IL 60532-0900", 1)[1].split("End of Project Gutenberg's", 1)[0])
    jaccard = len(a & b) / len(a | b)
    assert 0.9 <= jaccard < 1.0
    assert "Scholer" in first and "Scholer" not in edition


def _drop_counts(manifest: Manifest) -> dict[str, int]:
    return dict(manifest.query("SELECT reason, sum(count) FROM drops GROUP BY reason")[1])


def test_books_flow_keeps_and_drops_what_was_planted(mirror: Path, tmp_path: Path, prefect_api_url: str) -> None:
    summary = run_books(BooksConfig(inputs=[str(mirror / "*.txt")], out=tmp_path, runner="thread", workers=2,
                                    progress=False))
    manifest = Manifest.for_output(tmp_path)
    assert summary.kept == 7 and not summary.failed
    assert _drop_counts(manifest) == {"near_duplicate": 1, "no_pg_header": 1, "too_short": 1}
    near = manifest.query("SELECT record, detail FROM errors WHERE reason = 'near_duplicate'")[1]
    assert len(near) == 1 and near[0][0] == make_doc_id("books", "gutenberg/9198")  # the later file of the pair
    assert f"The Complete Angler matched {make_doc_id('books', 'gutenberg/683')}" in near[0][1]
    languages = {row[0] for row in manifest.query("SELECT DISTINCT language FROM shards")[1]}
    assert {"de", "en", "es", "fr", "nl"} <= languages
