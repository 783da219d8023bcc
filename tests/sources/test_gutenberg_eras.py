"""Every header and footer era of Project Gutenberg (1991-today), one small hand-written file each.

Issue 31 case 12: an early complete-works file kept its ``<<…>>`` licence notice (repeated before
every work) and its ``End of this Etext of …`` footer. The kind is "PG matter the stripper does not
know", so each era's markers, and the notices that multi-work files repeat inside the book, get a
file here with the text a reader of the book should get. All wording is invented; the layouts
follow PG's own files (pg100's notices, the 1993 and 2002 small print, the 2020s header).
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.document import Document
from sources.gutenberg import BookSettings, read_book, remove_notices, strip_gutenberg

#: A book long enough to be told apart from PG matter (over BOOK_RUN_CHARS without PG's words).
CHAPTER = "".join(
    f"The miller walked the {n}th furrow at dawn, counting crows along the hedge,\n"
    "and the wind that came off the river smelled of rain and cut hay.\n\n"
    for n in range(30)
)
BOOK = "CHAPTER I.\n\n" + CHAPTER + "CHAPTER II.\n\n" + CHAPTER.replace("miller", "carter")
KEPT = BOOK.rstrip() + "\n"

SMALL_PRINT_1993 = (
    "*****SMALL PRINT!*****\n\nWhy is this \"Small Print\" statement here? You know: lawyers.\n"
    "This etext is distributed under the terms below; the Project may not be liable to you.\n\n"
    "LIMITED WARRANTY; DISCLAIMER OF DAMAGES\nThe etext is provided \"as-is\" with no other warranties.\n\n"
)
NOTICE = (
    "<<THIS ELECTRONIC VERSION OF THE GATHERED PLAYS OF A. WRIGHT IS\n"
    "COPYRIGHT 1990-1993 BY EXAMPLE LIBRARY, INC., AND IS PROVIDED BY\n"
    "PROJECT GUTENBERG ETEXT WITH PERMISSION.  COPIES MAY BE DISTRIBUTED\n"
    "FOR PERSONAL USE ONLY.  PROHIBITED COMMERCIAL DISTRIBUTION INCLUDES BY ANY\n"
    "SERVICE THAT CHARGES FOR DOWNLOAD TIME OR FOR MEMBERSHIP.>>\n"
)
PLAY_ONE = "THE FIRST PLAY\n\n" + CHAPTER
PLAY_TWO = "THE SECOND PLAY\n\n" + CHAPTER.replace("miller", "weaver")
FULL_LICENSE = ("*** START: FULL LICENSE ***\n\nTHE FULL PROJECT GUTENBERG LICENSE\n"
                "PLEASE READ THIS BEFORE YOU DISTRIBUTE OR USE THIS WORK\n\n"
                "Section 1.  General Terms of Use and Redistributing Project Gutenberg-tm electronic works\n")

ERAS: dict[str, tuple[str, str]] = {
    # 1991-1992: no markers at all; free-form notes about the etext before and after the book.
    "1991-early-release": (
        "This is the June 1991 Project Gutenberg release of: The Furrows by A. Wright\n\n"
        "Project Gutenberg etexts are in the public domain; send corrections to\n"
        "hart@example.edu, or reach us on the listserver.\n\n"
        "The Furrows\n\nby A. Wright\n\n" + BOOK +
        "\nThis etext was prepared for Project Gutenberg; donations are tax deductible.\n",
        "The Furrows\n\nby A. Wright\n\n" + KEPT,
    ),
    # 1993: the small print comes first and ends in the *END* line; a prose end line.
    "1993-small-print-first": (
        "**The Project Gutenberg Etext of The Furrows, by A. Wright**\n\n" + SMALL_PRINT_1993 +
        "*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*\n\n" + BOOK +
        "\nEnd of The Project Gutenberg Etext of The Furrows\n",
        KEPT,
    ),
    # 1997-2001: a header, the small print between START and END lines, a credit, the book.
    "1997-etext-header": (
        "The Project Gutenberg Etext of The Furrows, by A. Wright\n#2 in our series by A. Wright\n\n"
        "Copyright laws are changing all over the world, be sure to check\nthe laws for your country.\n\n"
        "**Welcome To The World of Free Plain Vanilla Electronic Texts**\n\n"
        "The Furrows\n\nby A. Wright\n\nMarch, 1997  [Etext #1234]\n\n"
        "***START**THE SMALL PRINT!**FOR PUBLIC DOMAIN ETEXTS**START***\n" + SMALL_PRINT_1993 +
        "*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*\n\n"
        "This etext was prepared by A. Volunteer, of Example Town.\n\n" + BOOK +
        "\n\nEnd of the Project Gutenberg Etext of The Furrows, by A. Wright\n",
        KEPT,
    ),
    # 2002: the small print's closing line without the middle asterisk; "End of Project Gutenberg's".
    "2002-end-the-small-print": (
        "The Project Gutenberg EBook of The Furrows, by A. Wright\n\nTitle: The Furrows\n\n"
        "Author: A. Wright\n\nRelease Date: June, 2002 [EBook #3200]\n\n" + SMALL_PRINT_1993 +
        "*END THE SMALL PRINT! FOR PUBLIC DOMAIN EBOOKS*Ver.02/11/02*END*\n\n"
        "E-text prepared by A. Volunteer\n\n" + BOOK +
        "\nEnd of Project Gutenberg's The Furrows, by A. Wright\n",
        KEPT,
    ),
    # 2004: a complete-works file (pg100's layout): *** START, notes, the small print closed by
    # ["Small Print" V.12.08.93], the <<...>> notice before every work, two prose end lines.
    "2004-complete-works": (
        "The Project Gutenberg EBook of The Gathered Plays of A. Wright\n\n"
        "Title: The Gathered Plays of A. Wright\n\nAuthor: A. Wright\n\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK GATHERED PLAYS--A. WRIGHT ***\n\n"
        "Produced by Example Library, Inc., from their Library of Plays\n\n"
        "This is the 1234th Etext file presented by Project Gutenberg, in\n"
        "cooperation with Example Library, Inc.\n\n"
        "Plays\n\n*This Etext has certain copyright implications you should read!*\n\n" + NOTICE + "\n"
        + SMALL_PRINT_1993 + "[\"Small Print\" V.12.08.93]\n\n" + NOTICE + "\n" + PLAY_ONE + "\n"
        + NOTICE + "\n" + PLAY_TWO +
        "\nEnd of this Etext of The Gathered Plays of A. Wright\n\n"
        "End of the Project Gutenberg EBook of The Gathered Plays of A. Wright\n\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK GATHERED PLAYS--A. WRIGHT ***\n\n" + FULL_LICENSE,
        PLAY_ONE + "\n" + PLAY_TWO.rstrip() + "\n",
    ),
    # 2006: the classic 2000s header and footer with the full licence after the end line.
    "2006-this-ebook": (
        "The Project Gutenberg EBook of The Furrows, by A. Wright\n\n"
        "This eBook is for the use of anyone anywhere at no cost and with\nalmost no restrictions whatsoever.\n\n"
        "Title: The Furrows\n\nAuthor: A. Wright\n\nRelease Date: May 3, 2006 [EBook #18300]\n\n"
        "Language: English\n\nCharacter set encoding: ISO-8859-1\n\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK THE FURROWS ***\n\n\n\n\n"
        "Produced by A. Volunteer and the Online Distributed\nProofreading Team at http://www.pgdp.net\n\n\n\n\n"
        + BOOK + "\n\n\n\n\nEnd of the Project Gutenberg EBook of The Furrows, by A. Wright\n\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK THE FURROWS ***\n\n"
        "***** This file should be named 18300-8.txt or 18300-8.zip *****\n\n" + FULL_LICENSE,
        KEPT,
    ),
    # 2009: the header names the book "Project Gutenberg's ..."; the start marker wraps a long title.
    "2009-wrapped-start-marker": (
        "Project Gutenberg's The Furrows and Other Long Titled Pieces, by A. Wright\n\n"
        "Title: The Furrows and Other Long Titled Pieces of the Northern Country\n\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK THE FURROWS AND OTHER LONG TITLED\n"
        "PIECES OF THE NORTHERN COUNTRY ***\n\n" + BOOK +
        "\nEnd of Project Gutenberg's The Furrows and Other Long Titled Pieces, by A. Wright\n\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK THE FURROWS AND OTHER LONG TITLED ***\n",
        KEPT,
    ),
    # 2010s: the no-space markers.
    "2012-no-spaces": (
        "The Project Gutenberg eBook, The Furrows, by A. Wright\n\nTitle: The Furrows\n\n"
        "***START OF THE PROJECT GUTENBERG EBOOK THE FURROWS***\n\n" + BOOK +
        "\n***END OF THE PROJECT GUTENBERG EBOOK THE FURROWS***\n\n" + FULL_LICENSE,
        KEPT,
    ),
    # 2020-2022: "THE" in both markers, no prose end line.
    "2021-the-ebook": (
        "The Project Gutenberg eBook of The Furrows, by A. Wright\n\n"
        "This eBook is for the use of anyone anywhere in the United States and\nmost other parts of the world.\n\n"
        "Title: The Furrows\n\nAuthor: A. Wright\n\nRelease Date: March 3, 2021 [eBook #64000]\n\n"
        "Language: English\n\nCharacter set encoding: UTF-8\n\nProduced by: A. Volunteer\n\n"
        "*** START OF THE PROJECT GUTENBERG EBOOK THE FURROWS ***\n" + BOOK +
        "\n*** END OF THE PROJECT GUTENBERG EBOOK THE FURROWS ***\n\nUpdated editions will replace the previous one.\n",
        KEPT,
    ),
    # 2023-today: "Release date", "Most recently updated", "Credits", the number in the start marker.
    "2024-credits-header": (
        "The Project Gutenberg eBook of The Furrows\n\n"
        "Title: The Furrows\n\nAuthor: A. Wright\n\nRelease date: January 5, 2024 [eBook #72600]\n"
        "                Most recently updated: February 1, 2024\n\nLanguage: English\n\n"
        "Credits: A. Volunteer and the Online Distributed Proofreading Team\n\n\n"
        "*** START OF THE PROJECT GUTENBERG EBOOK 72600 ***\n\n\n" + BOOK +
        "\n\n*** END OF THE PROJECT GUTENBERG EBOOK 72600 ***\n\n\n\n\n" + FULL_LICENSE,
        KEPT,
    ),
    # Copyrighted etexts: their own markers and a notice line repeated between chapters.
    "copyrighted-etext": (
        "The Project Gutenberg Etext of The Furrows, by A. Wright\n\n"
        "*** START OF THE COPYRIGHTED PROJECT GUTENBERG EBOOK THE FURROWS ***\n\n"
        "**This is a COPYRIGHTED Project Gutenberg Etext, Details Above**\n\n"
        "CHAPTER I.\n\n" + CHAPTER +
        "**This is a COPYRIGHTED Project Gutenberg Etext, Details Above**\n\n"
        "CHAPTER II.\n\n" + CHAPTER.replace("miller", "carter") +
        "*** END OF THE COPYRIGHTED PROJECT GUTENBERG EBOOK THE FURROWS ***\n",
        KEPT,
    ),
    # A collection made of separate etexts: each closes with its own prose end line.
    "collection-of-etexts": (
        "The Project Gutenberg EBook of Two Plays, by A. Wright\n\nTitle: Two Plays\n\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK TWO PLAYS ***\n\n" + PLAY_ONE +
        "End of the Project Gutenberg Etext of The First Play\n\n" + PLAY_TWO +
        "End of the Project Gutenberg Etext of The Second Play\n\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK TWO PLAYS ***\n",
        PLAY_ONE + PLAY_TWO.rstrip() + "\n",
    ),
    # Projekt Gutenberg-DE style closing line (German etexts on PG).
    "german-ende-dieses": (
        "The Project Gutenberg EBook of Die Furchen, by A. Wright\n\nTitle: Die Furchen\n\nLanguage: German\n\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK DIE FURCHEN ***\n\n" + BOOK +
        "\nEnde dieses Projekt Gutenberg Etextes \"Die Furchen\".\n",
        KEPT,
    ),
}


@pytest.mark.parametrize("era", sorted(ERAS))
def test_every_era_keeps_the_book_only(tmp_path: Path, era: str) -> None:
    text, expected = ERAS[era]
    path = tmp_path / "book.txt"
    path.write_bytes(text.encode("utf-8"))
    doc = read_book(path, BookSettings(), "x")
    assert isinstance(doc, Document), doc
    assert doc.text == expected


def test_case_12_interleaved_licence_through_the_recipe(tmp_path: Path) -> None:
    """Issue 31 case 12's file (shared/cases/fidelity/12-…): the three works, nothing of the licence."""
    text, expected = ERAS["2004-complete-works"]
    assert "WORK" not in expected and expected.count("THE FIRST PLAY") == 1
    path = tmp_path / "99999.txt"
    path.write_bytes(text.replace("\n", "\r\n").encode("latin-1"))
    doc = read_book(path, BookSettings(), "x")
    assert isinstance(doc, Document) and doc.text == expected
    assert doc.meta["pg_footer"] and doc.meta["title"] == "The Gathered Plays of A. Wright"


_LINE = st.text(alphabet=string.ascii_letters + string.digits + " .,;:'!?-()", min_size=1, max_size=70)
_WORK = st.lists(_LINE, min_size=1, max_size=12).map(
    lambda lines: "\n".join(line.strip() or "x" for line in lines))

FRAMES = {  # era -> (before the book, after it), for the eras with markers
    era: (text[: text.index(BOOK)], text[text.index(BOOK) + len(BOOK):])
    for era, (text, _) in ERAS.items() if BOOK in text and era not in ("1991-early-release", "copyrighted-etext")
}


@given(era=st.sampled_from(sorted(FRAMES)), works=st.lists(_WORK, min_size=1, max_size=4))
def test_book_text_without_markers_is_never_altered(era: str, works: list[str]) -> None:
    """Whatever the book says (no PG markers in it), every era's frame gives it back unchanged."""
    body = "CHAPTER I.\n\n" + "\n\n".join(works) + "\n"
    before, after = FRAMES[era]
    assert strip_gutenberg(before + body + after).text == body


@given(works=st.lists(_WORK, min_size=1, max_size=5))
def test_notices_between_works_are_removed_and_works_kept(works: list[str]) -> None:
    """A ``<<…>>`` notice before every work goes; the works come back joined by their blank lines."""
    body = "".join(NOTICE + "\n" + work + "\n\n" for work in works)
    assert remove_notices(body).rstrip() + "\n" == "\n\n".join(works) + "\n"


def test_a_books_own_double_angle_quotes_stay() -> None:
    """ASCII guillemets in a book (``<<Bonjour>>``) are not a notice: they name no copyright or PG."""
    body = "<<Bonjour, dit-il.\nVous venez de loin?>>\n\nElle ne répondit pas.\n"
    assert remove_notices(body) == body


def test_prose_end_line_followed_only_by_licence_ends_the_book() -> None:
    text = ("Title: X\n\n*** START OF THIS PROJECT GUTENBERG EBOOK X ***\n\n" + BOOK +
            "\nEnd of this Etext of X\n\nThis etext is in the public domain; see the small print.\n")
    book = strip_gutenberg(text)
    assert book.text == KEPT and book.end_found
