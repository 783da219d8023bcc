"""Fidelity corpus, books: short Project Gutenberg files in every era and encoding, with the kept text by hand.

Each case is a file as a PG mirror holds it (bytes: UTF-8 with or without BOM, Latin-1 or
Windows-1252, CRLF or CR line ends, ``.txt`` or ``.txt.gz``, the two forms the reader takes), read
through the recipe (:meth:`GutenbergRecipe.read` and its steps, as the books flow runs each input).
The expected text is what a reader of the book sees: the book, none of PG's header, licence,
notices or credits, every character of the book itself (indentation, scene breaks, the book's own
``<<…>>`` or "copyright"). A case whose file is no book expects its drop reason.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.document import Document, InputSpec
from core.steps import StepStats, run_steps
from sources.gutenberg import GutenbergRecipe
from tests.sources.test_gutenberg_eras import BOOK, ERAS, KEPT

pytestmark = pytest.mark.fidelity("books")

PROSE = "".join(f"She crossed the square for the {n}th time that week, and the baker nodded.\n" for n in range(40))
HEAD = "The Project Gutenberg EBook of Example, by A. Wright\n\nTitle: Example\n\nAuthor: A. Wright\n\n"
START = "*** START OF THIS PROJECT GUTENBERG EBOOK EXAMPLE ***\n\n"
END = "\n\nEnd of Project Gutenberg's Example, by A. Wright\n\n*** END OF THIS PROJECT GUTENBERG EBOOK EXAMPLE ***\n"


def framed(body: str, head: str = HEAD) -> str:
    return head + START + body + END


@dataclass(frozen=True)
class Case:
    """One file: its text, how it is stored, and what a reader of the book should get."""

    text: str
    expected: str  # the kept text, or "drop:<reason>"
    codec: str = "utf-8"
    newline: str = "\n"
    name: str = "book.txt"

    def data(self) -> bytes:
        raw = self.text.replace("\n", self.newline).encode(self.codec)
        return gzip.compress(raw, mtime=0) if self.name.endswith(".gz") else raw


CASES: dict[str, Case] = {f"era-{era}": Case(text, expected) for era, (text, expected) in ERAS.items()}
CASES.update({
    "utf8-bom": Case(framed("Café Zoë\n\n" + PROSE), "Café Zoë\n\n" + PROSE, codec="utf-8-sig"),
    "latin1-declared-crlf": Case(
        framed("GABRIËL en de brûlée\n\n" + PROSE, HEAD + "Character set encoding: ISO-8859-1\n\n"),
        "GABRIËL en de brûlée\n\n" + PROSE, codec="latin-1", newline="\r\n"),
    "cp1252-undeclared-quotes": Case(framed("“Well,” she said — ‘fine’…\n\n" + PROSE),
                                     "“Well,” she said — ‘fine’…\n\n" + PROSE, codec="cp1252"),
    "old-mac-cr": Case(framed(PROSE), PROSE, newline="\r"),
    "gzip-txt": Case(framed(PROSE), PROSE, name="book.txt.gz"),
    "poetry-indentation-kept": Case(
        framed("    Of Man's first disobedience,\n        and the fruit\n\n" + PROSE),
        "    Of Man's first disobedience,\n        and the fruit\n\n" + PROSE),
    "scene-breaks-and-own-triple-stars": Case(
        framed(PROSE + "\n* * *\n\n*** END OF PART ONE ***\n\n" + PROSE),
        PROSE + "\n* * *\n\n*** END OF PART ONE ***\n\n" + PROSE),
    "book-says-end-of-chapter": Case(framed(PROSE + "\nEnd of the First Book.\n\n" + PROSE),
                                     PROSE + "\nEnd of the First Book.\n\n" + PROSE),
    "book-own-guillemets": Case(
        framed("<<Bonjour, dit-il,\nvous venez de loin?>>\n\n" + PROSE),
        "<<Bonjour, dit-il,\nvous venez de loin?>>\n\n" + PROSE),
    "book-own-copyright-page": Case(
        framed("Copyright, 1912, by Example & Sons.\n\n" + PROSE),
        "Copyright, 1912, by Example & Sons.\n\n" + PROSE),
    "multi-line-credit": Case(
        framed("Produced by A. Volunteer, B. Helper and the Online\nDistributed Proofreading Team at "
               "http://www.pgdp.net (This file was\nproduced from images generously made available\n\n\n" + PROSE),
        PROSE),
    "transcribers-note-kept": Case(
        framed(PROSE + "\nTranscriber's Note: obvious printer errors have been corrected.\n"),
        PROSE + "\nTranscriber's Note: obvious printer errors have been corrected.\n"),
    "notice-then-works-latin1": Case(
        framed("<<THIS ELECTRONIC VERSION OF EXAMPLE IS COPYRIGHT 1993 BY A LIBRARY,\n"
               "PROVIDED BY PROJECT GUTENBERG ETEXT WITH PERMISSION.>>\n\nLA PIÈCE\n\n" + PROSE),
        "LA PIÈCE\n\n" + PROSE, codec="latin-1"),
    "too-short-after-stripping": Case(framed("A single line of a book.\n"), "drop:too_short"),
    "no-pg-header-readme": Case("This folder holds the files of the mirror.\n" + PROSE, "drop:no_pg_header"),
    "licence-only": Case(
        "\n\n".join(f"Project Gutenberg etext list, part {i}: see the small print at ftp.example.edu"
                    for i in range(80)), "drop:pg_start_marker_missing"),
    "no-end-marker": Case(HEAD + START + BOOK, KEPT),
})


def _kept(path: Path) -> tuple[list[str], list[str]]:
    recipe = GutenbergRecipe()
    stats = StepStats()
    spec = InputSpec(str(path), path, path.name)
    docs = list(run_steps(recipe.read(spec), recipe.steps(), stats))
    drops = [reason for (_, reason, _), count in stats.drops.items() for _ in range(count)]
    return [d.text for d in docs if isinstance(d, Document)], drops


@pytest.mark.parametrize("name", sorted(CASES))
def test_book_keeps_what_a_reader_sees(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    path = tmp_path / case.name
    path.write_bytes(case.data())
    texts, drops = _kept(path)
    if case.expected.startswith("drop:"):
        assert texts == [] and drops == [case.expected.removeprefix("drop:")]
    else:
        assert texts == [case.expected.rstrip() + "\n"], drops
