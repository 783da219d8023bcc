"""A small offline Project Gutenberg mirror: ``.txt`` eBooks with the headers of three eras.

Every book's text is real public-domain prose from :mod:`sources.samples.prose`; only the
Project Gutenberg matter around it is written here, in the shapes ``flows.books`` must strip
(:mod:`sources.gutenberg`), with CRLF line ends as PG files have:

============  =====================================================  ==========================
file          header                                                  planted outcome
============  =====================================================  ==========================
pg3261.txt    2020s: BOM, ``*** START OF THE PROJECT GUTENBERG EBOOK``  kept (en)
pg972.txt     1993: licence first, ``*END*THE SMALL PRINT! ...*END*``   kept (en)
pg9198.txt    2000s: ``*** START OF THIS PROJECT GUTENBERG EBOOK``      ``near_duplicate`` of 683
pg683.txt     1992 release: no start marker, PG paragraphs around it   kept (first of the pair)
pg22367.txt   2000s, ``Language: German``                               kept (de)
pg4650.txt    2020s, French                                             kept (fr)
pg2000.txt    2020s, Spanish                                            kept (es)
pg24675.txt   2008, ``Character set encoding: ISO-8859-1`` (Latin-1)    kept (nl), decoded
pg8200.txt    2000s header around a single dictionary entry            ``too_short`` (< 1,000)
README.txt    a mirror folder's note, no PG header                      ``no_pg_header``
============  =====================================================  ==========================

pg683 is another edition of The Complete Angler: the same text with a few paragraphs left out and
some spellings modernised. The book near-dedup (Jaccard >= 0.9 on word 5-grams; 0.95 here) keeps
the first book of the pair in input order, ``pg683.txt`` (file names sort as strings), and drops
``pg9198.txt``: stripping the 1992 release's PG paragraphs left its text comparable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from core.atomic import atomic_path
from sources.samples import prose

LICENSE_TAIL = """\
Updated editions will replace the previous one--the old editions will
be renamed.

Creating the works from print editions not protected by U.S. copyright
law means that no one owns a United States copyright in these works,
so the Foundation (and you!) can copy and distribute it in the
United States without permission and without paying copyright
royalties. Special rules, set forth in the General Terms of Use part
of this license, apply to copying and distributing Project
Gutenberg-tm electronic works to protect the PROJECT GUTENBERG-tm
concept and trademark.

START: FULL LICENSE

THE FULL PROJECT GUTENBERG LICENSE
PLEASE READ THIS BEFORE YOU DISTRIBUTE OR USE THIS WORK
"""

MODERN_HEAD = """\
The Project Gutenberg eBook of {title}

This ebook is for the use of anyone anywhere in the United States and
most other parts of the world at no cost and with almost no restrictions
whatsoever. You may copy it, give it away or re-use it under the terms
of the Project Gutenberg License included with this ebook or online
at www.gutenberg.org. If you are not located in the United States,
you will have to check the laws of the country where you are located
before using this eBook.

Title: {title}

Author: {author}

Release date: {date} [eBook #{number}]
                Most recently updated: January 17, 2021

Language: {language}

Credits: Produced by Distributed Proofreaders



*** START OF THE PROJECT GUTENBERG EBOOK {upper} ***



"""
MODERN_FOOT = "\n\n\n*** END OF THE PROJECT GUTENBERG EBOOK {upper} ***\n\n\n" + LICENSE_TAIL

NOUGHTIES_HEAD = """\
The Project Gutenberg EBook of {title}, by {author}

This eBook is for the use of anyone anywhere at no cost and with
almost no restrictions whatsoever.  You may copy it, give it away or
re-use it under the terms of the Project Gutenberg License included
with this eBook or online at www.gutenberg.org


Title: {title}

Author: {author}

Release Date: {date} [EBook #{number}]

Language: {language}

Character set encoding: {encoding}

*** START OF THIS PROJECT GUTENBERG EBOOK {upper} ***




Produced by Distributed Proofreaders





"""
NOUGHTIES_FOOT = ("\n\n\n\nEnd of the Project Gutenberg EBook of {title}, by {author}\n\n"
                  "*** END OF THIS PROJECT GUTENBERG EBOOK {upper} ***\n\n***** This file should be named "
                  "{number}.txt or {number}.zip *****\n" + LICENSE_TAIL)

SMALL_PRINT_HEAD = """\
**The Project Gutenberg Etext of {title}, by {author}**
#1 in our series by {author}

Copyright laws are changing all over the world, be sure to check
the copyright laws for your country before posting these files!!

Please take a look at the important information in this header.
We encourage you to keep this file on your own disk, keeping an
electronic path open for the next readers.  Do not remove this.


**Welcome To The World of Free Plain Vanilla Electronic Texts**

**Etexts Readable By Both Humans and By Computers, Since 1971**

*These Etexts Prepared By Hundreds of Volunteers and Donations*

Information on contacting Project Gutenberg to get Etexts, and
further information is included below.  We need your donations.


{title}

by {author}

{date}  [Etext #{number}]


*****This file should be named devil10.txt or devil10.zip******

Information about Project Gutenberg (one page)

We produce about two million dollars for each hour we work.  The
fifty hours is one conservative estimate for how long it we take
to get any etext selected, entered, proofread, edited, copyright
searched and analyzed, the copyright letters written, etc.

***START**THE SMALL PRINT!**FOR PUBLIC DOMAIN ETEXTS**START***
Why is this "Small Print!" statement here?  You know: lawyers.
They tell us you might sue us if there is something wrong with
your copy of this etext, even if you got it for free from
someone other than us, and even if what's wrong is not our
fault.

*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*





"""
SMALL_PRINT_FOOT = "\n\n\n\nEnd of Project Gutenberg Etext of {title}, by {author}\n\n"

EARLY_HEAD = """\
This is the February 1992 Project Gutenberg release of:

{title} by {author}

The official release date of all Project Gutenberg Etexts is at
Midnight, Central Time, of the last day of the stated month.  A
preliminary version may often be posted for suggestion, comment
and editing by those who wish to do so.  To be sure you have an
up to date first edition [xxxxx10x.xxx] please check file sizes
in the first week of the next month.

Information about Project Gutenberg (one page)

We produce about one million dollars for each hour we work.  One
hundred hours is a conservative estimate for how long it we take
to get any etext selected, entered, proofread, edited, copyright
searched and analyzed, the copyright letters written, etc.  This
projected audience is one hundred million readers.

Please mail donations to:
Project Gutenberg
Illinois Benedictine College
Lisle, IL 60532-0900




"""
EARLY_FOOT = "\n\n\n\nEnd of Project Gutenberg's {title}, by {author}\n"

README = """\
This folder mirrors part of the plain-text collection.  Each book is
one file named after its number; the catalogue lists every title.
Report broken files to the mirror's maintainers.
"""

#: Spellings the later edition of The Complete Angler modernises.
MODERN_SPELLINGS = {"hath": "has", "doth": "does", "Scholer": "Scholar", "bin": "been", "onely": "only"}


@dataclass(frozen=True)
class Book:
    """One file of the mirror: name, header era and what goes around the prose."""

    file: str
    key: str
    era: str  # modern | noughties | small_print | early
    number: int
    date: str
    language: str
    encoding: str = "utf-8"
    edition: bool = False  # the near-duplicate edition (paragraphs left out, spellings modernised)


BOOKS = (
    Book("pg3261.txt", "en-news-from-nowhere", "modern", 3261, "May 8, 2007", "English"),
    Book("pg972.txt", "en-devils-dictionary", "small_print", 972, "June, 1995", "English", "ascii"),
    Book("pg9198.txt", "en-complete-angler", "noughties", 9198, "October, 2005", "English", "ascii"),
    Book("pg683.txt", "en-complete-angler", "early", 683, "February, 1992", "English", "ascii", edition=True),
    Book("pg22367.txt", "de-die-verwandlung", "noughties", 22367, "August 13, 2007", "German"),
    Book("pg4650.txt", "fr-candide", "modern", 4650, "November 1, 2003", "French"),
    Book("pg2000.txt", "es-don-quijote", "modern", 2000, "December 1, 1999", "Spanish"),
    Book("pg24675.txt", "nl-ontboezemingen", "noughties", 24675, "February 23, 2008", "Dutch", "iso-8859-1"),
)
SHORT_BOOK = Book("pg8200.txt", "en-devils-dictionary", "noughties", 8200, "June, 2005", "English", "ascii")

HEADS = {"modern": (MODERN_HEAD, MODERN_FOOT), "noughties": (NOUGHTIES_HEAD, NOUGHTIES_FOOT),
         "small_print": (SMALL_PRINT_HEAD, SMALL_PRINT_FOOT), "early": (EARLY_HEAD, EARLY_FOOT)}
ENCODING_NAMES = {"utf-8": "UTF-8", "ascii": "ASCII", "iso-8859-1": "ISO-8859-1"}


def edition_text(text: str) -> str:
    """Another edition of ``text``: every 40th paragraph left out, a few spellings modernised."""
    paragraphs = re.split(r"\n[ \t]*\n", text.strip("\n"))
    kept = [p for i, p in enumerate(paragraphs) if i % 40 != 39]
    changed = "\n\n".join(kept) + "\n"
    for old, new in MODERN_SPELLINGS.items():
        changed = re.sub(rf"\b{old}\b", new, changed)
    return changed


def book_body(book: Book) -> str:
    """The prose of ``book`` (hard-wrapped, ``\\n`` line ends)."""
    if book is SHORT_BOOK:
        return prose.raw_text(book.key).split("\n\n")[0] + "\n"  # one entry: a few hundred characters
    text = prose.raw_text(book.key)
    return edition_text(text) if book.edition else text


def book_file(book: Book) -> bytes:
    """The bytes of one eBook file: header, prose, footer, CRLF, in the book's encoding."""
    info = prose.text_info(book.key)
    title = "Abasement, a Definition" if book is SHORT_BOOK else info.title
    fields = {"title": title, "author": info.author, "date": book.date, "number": book.number,
              "language": book.language, "upper": title.upper(), "encoding": ENCODING_NAMES[book.encoding]}
    head, foot = HEADS[book.era]
    text = head.format(**fields) + book_body(book) + foot.format(**fields)
    data = text.replace("\n", "\r\n").encode(book.encoding)
    return (b"\xef\xbb\xbf" + data) if book.era == "modern" else data  # PG's 2020s files start with a BOM


def write_sample_inputs(directory: Path) -> list[str]:
    """Write the mirror's files (see the module docstring) into ``directory``; return their paths, sorted."""
    directory.mkdir(parents=True, exist_ok=True)
    contents = {book.file: book_file(book) for book in (*BOOKS, SHORT_BOOK)}
    contents["README.txt"] = README.replace("\n", "\r\n").encode("ascii")
    written = []
    for name, data in sorted(contents.items()):
        target = directory / name
        with atomic_path(target) as tmp:
            tmp.write_bytes(data)
        written.append(str(target))
    return written
