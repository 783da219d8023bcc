"""Tests for the Gutenberg reader: header/footer variants, encodings, CRLF, metadata, bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.document import Document, Drop, InputSpec
from core.steps import StepStats, run_steps
from sources.gutenberg import (
    BookSettings,
    GutenbergRecipe,
    book_list_payload,
    decode_book,
    parse_header,
    read_book,
    strip_gutenberg,
)

BODY = "CHAPTER I.\n\nIt was a dark and stormy night; the rain fell in torrents.\n" * 40

MODERN = (
    "The Project Gutenberg eBook of Café Stories, by Zoë Müller\n\n"
    "Title: Café Stories\n\nAuthor: Zoë Müller\n\nRelease date: May 1, 2021 [eBook #65432]\n\n"
    "Language: French\n\nCredits: Someone\n\n"
    "*** START OF THE PROJECT GUTENBERG EBOOK CAFÉ STORIES ***\n\n"
    "Produced by a volunteer team\nat the Distributed Proofreaders\n\n"
    + BODY +
    "\n*** END OF THE PROJECT GUTENBERG EBOOK CAFÉ STORIES ***\n\nSection 1. General Terms of Use...\n"
)
OLD_1990S = (
    "**The Project Gutenberg Etext of Old Tales**\n\nPlease take a look at the important information.\n"
    "*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*\n\n" + BODY +
    "\nEnd of the Project Gutenberg Etext of Old Tales\n"
)
NO_SPACES = (
    "The Project Gutenberg EBook of Tight, by A. B.\n\nTitle: Tight\n\n"
    "***START OF THE PROJECT GUTENBERG EBOOK TIGHT***\n" + BODY +
    "End of Project Gutenberg's Tight, by A. B.\n\n***END OF THE PROJECT GUTENBERG EBOOK TIGHT***\nlicence\n"
)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("text", [MODERN, OLD_1990S, NO_SPACES])
def test_header_and_footer_variants(text: str) -> None:
    book = strip_gutenberg(text)
    assert book.start_found and book.end_found
    assert book.text == BODY.strip("\n") + "\n"


def test_modern_header_metadata_and_credit_removed(tmp_path: Path) -> None:
    doc = read_book(write(tmp_path, "65432-0.txt", MODERN.encode("utf-8")), BookSettings(), "x")
    assert isinstance(doc, Document)
    assert doc.meta["title"] == "Café Stories" and doc.meta["author"] == "Zoë Müller"
    assert doc.meta["language"] == "fr" and doc.meta["ebook_number"] == "65432"
    assert doc.meta["release"] == "May 1, 2021"
    assert "Produced by" not in doc.text and "General Terms" not in doc.text


def test_latin1_crlf_round_trip(tmp_path: Path) -> None:
    text = MODERN.replace("Language: French", "Language: French\n\nCharacter set encoding: ISO-8859-1")
    data = text.replace("\n", "\r\n").encode("latin-1")
    doc = read_book(write(tmp_path, "b.txt", data), BookSettings(), "x")
    assert isinstance(doc, Document)
    assert doc.meta["encoding"] == "iso8859-1" and doc.meta["title"] == "Café Stories"
    assert "\r" not in doc.text and doc.text == BODY.strip("\n") + "\n"


def test_utf8_bom_and_gzip(tmp_path: Path) -> None:
    path = write(tmp_path, "b.txt.gz", gzip.compress(b"\xef\xbb\xbf" + MODERN.encode("utf-8"), mtime=0))
    doc = read_book(path, BookSettings(), "x")
    assert isinstance(doc, Document) and doc.meta["encoding"] == "utf-8"


def test_no_header_dropped_or_kept_per_config(tmp_path: Path) -> None:
    path = write(tmp_path, "plain.txt", BODY.encode())
    dropped = read_book(path, BookSettings(), "x")
    assert isinstance(dropped, Drop) and dropped.reason == "no_pg_header"
    kept = read_book(path, BookSettings(keep_without_header=True), "x")
    assert isinstance(kept, Document) and kept.text == BODY.strip() + "\n"
    assert kept.meta["pg_header"] is False and kept.meta["url"] is None


def test_header_without_start_marker_keeps_the_book(tmp_path: Path) -> None:
    path = write(tmp_path, "odd.txt", ("The Project Gutenberg EBook of X\n\nTitle: X\n\n" + BODY).encode())
    doc = read_book(path, BookSettings(), "x")
    assert isinstance(doc, Document) and doc.text == BODY.strip("\n") + "\n"
    assert doc.meta["title"] == "X" and doc.meta["pg_early_release"]


def test_only_pg_matter_is_dropped(tmp_path: Path) -> None:
    """A file whose every paragraph is about PG (an index, a licence) has no book to keep."""
    notes = "\n\n".join(f"Project Gutenberg etext list, part {i}: see the small print at ftp.example.edu"
                         for i in range(200))
    drop = read_book(write(tmp_path, "index.txt", notes.encode()), BookSettings(), "x")
    assert isinstance(drop, Drop) and drop.reason == "pg_start_marker_missing" and "index.txt" in drop.record


#: The real February 1992 release of Paradise Lost (PG etext #20, the Canterbury Corpus' plrabn12.txt):
#: its whole free-form header as released, the first 49 lines of Book I and the last 10 lines of the
#: poem, with the cut marked " [...]". Public domain; no start marker, no licence.
PARADISE_LOST = Path(__file__).parent / "data" / "plrabn12-excerpt.txt"


def test_real_early_release_is_cleaned_not_dropped() -> None:
    doc = read_book(PARADISE_LOST, BookSettings(), "x")
    assert isinstance(doc, Document), doc
    assert doc.text.startswith("Paradise Lost \n")  # the book from its first real line
    assert "Of Man's first disobedience, and the fruit" in doc.text
    assert doc.text.endswith("Through Eden took their solitary way. \n \n[The End]\n")
    for matter in ("Gutenberg", "etext", "Introduction  (one page)", "IBM cards", "listserver"):
        assert matter not in doc.text, matter
    assert (doc.meta["title"], doc.meta["author"]) == ("Paradise Lost", "John Milton")
    assert doc.meta["pg_header"] and doc.meta["pg_early_release"] and not doc.meta["pg_footer"]


def test_early_release_trailing_matter_removed(tmp_path: Path) -> None:
    """Closing paragraphs about the etext (notes, addresses, small print) go; the poem stays whole."""
    text = PARADISE_LOST.read_text(encoding="utf-8") + (
        "\n\nThis etext was prepared for Project Gutenberg; please send corrections to\n"
        "hart@vmd.cso.uiuc.edu or to the Illinois Benedictine College address.\n\n"
        "**Tax-deductible donations can be sent to Project Gutenberg**\n"
    )
    doc = read_book(write(tmp_path, "plrabn12.txt", text.replace("\n", "\r\n").encode("latin-1")), BookSettings(), "x")
    assert isinstance(doc, Document)
    assert doc.text.endswith("[The End]\n") and "hart@" not in doc.text and "donations" not in doc.text


def test_early_release_through_the_recipe_balances(tmp_path: Path) -> None:
    listing = tmp_path / "l.books.json"
    files = [PARADISE_LOST, write(tmp_path, "index.txt", b"Project Gutenberg etext index\n\nftp.example.edu")]
    listing.write_text(json.dumps(book_list_payload(files)))
    recipe = GutenbergRecipe()
    stats = StepStats()
    docs = list(run_steps(recipe.read(InputSpec(str(listing), listing, listing.name)), recipe.steps(), stats))
    assert [d.meta["title"] for d in docs] == ["Paradise Lost"]
    assert stats.records_in == 2 and stats.balanced()


def test_bad_inputs_are_reasoned_drops(tmp_path: Path) -> None:
    not_gzip = read_book(write(tmp_path, "a.txt.gz", b"not gzip at all"), BookSettings(), "x")
    assert isinstance(not_gzip, Drop) and not_gzip.reason == "truncated_input" and "a.txt.gz" in not_gzip.record
    binary = read_book(write(tmp_path, "b.txt", b"\x00\x01" * 100), BookSettings(), "x")
    assert isinstance(binary, Drop) and binary.reason == "binary"
    missing = read_book(tmp_path / "gone.txt", BookSettings(), "x")
    assert isinstance(missing, Drop) and missing.is_error


def test_book_list_counts_every_book(tmp_path: Path) -> None:
    files = [write(tmp_path, "1.txt", MODERN.encode()), write(tmp_path, "2.txt", b"readme"),
             write(tmp_path, "3.txt.gz", b"junk")]
    listing = tmp_path / "l.books.json"
    listing.write_text(json.dumps(book_list_payload(files)))
    recipe = GutenbergRecipe()
    stats = StepStats()
    docs = list(run_steps(recipe.read(InputSpec(str(listing), listing, listing.name)), recipe.steps(), stats))
    assert len(docs) == 1 and stats.records_in == 3 and stats.balanced()


def test_real_books(realdata: Path) -> None:
    for path in sorted((realdata / "books").glob("*.txt")):
        doc = read_book(path, BookSettings(), str(path))
        assert isinstance(doc, Document), path
        assert "PROJECT GUTENBERG" not in doc.text.upper()[:2000] and "FULL LICENSE" not in doc.text
        assert doc.meta["pg_header"] and doc.meta["pg_footer"] and doc.meta["title"]
    dutch = read_book(realdata / "books" / "pg24675-ontboezemingen-nl-latin1.txt", BookSettings(), "x")
    assert isinstance(dutch, Document)
    assert dutch.meta["language"] == "nl" and dutch.meta["encoding"] == "iso8859-1" and "GABRIËL" in dutch.text
    morris = read_book(realdata / "books" / "pg3261-news-from-nowhere.txt", BookSettings(), "x")
    assert isinstance(morris, Document) and morris.meta["title"].startswith("News from Nowhere or An Epoch of Rest")


def test_parse_header_language_list() -> None:
    assert parse_header("Title: T\nLanguage: English and French\n").language == "en"


@given(st.text(max_size=400))
def test_decode_never_fails_and_utf8_round_trips(text: str) -> None:
    assert decode_book(text.encode("utf-8")) == (text.removeprefix("\ufeff"), "utf-8")


@given(st.text(alphabet=st.characters(blacklist_characters="*\r", codec="utf-8"), min_size=1, max_size=300))
def test_body_survives_stripping(body: str) -> None:
    text = "Title: X\n*** START OF THE PROJECT GUTENBERG EBOOK X ***\n" + body + "\n*** END OF THE PROJECT GUTENBERG EBOOK X ***\n"
    stripped = strip_gutenberg(text).text
    if not body.lstrip().lower().startswith(("produced by", "e-text", "etext", "transcribed", "this e")):
        assert stripped.strip() == body.strip("\n").rstrip().strip() or not body.strip()
