"""EPUB fidelity: MathML read from the markup (not placeholder alttext), navigation dropped, bounded chapters.

The books are real EPUB 3 files written here with zipfile (``mimetype`` first and stored,
``META-INF/container.xml``, an OPF package, a nav document, XHTML chapters). The chapters follow
the markup of the IDPF EPUB 3 sample *linear-algebra* (tex4ht MathML under DITA-OT XHTML): every
``<math>`` carries ``alttext="Alternative text not available"``, digits come one ``<mn>`` each,
scripts wrap single tokens in ``<mrow>``, aligned equations are ``mtable`` rows with empty label
cells, and each topic has a DITA ``related-links`` bar ("Parent topic / Previous topic / Next topic").
The prose is our own.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from lxml import etree

from core.document import Document, InputSpec
from core.steps import StepStats, run_steps
from sources.formats.epub import EpubSettings, read_epub
from sources.formats.mathml import reading, useful_alttext
from sources.samples.scibooks import CONTAINER_XML
from sources.scibooks import SciBookSettings, SciBooksRecipe
from tests.fixed import zip_info

PLACEHOLDER = "Alternative text not available"
MML = 'xmlns="http://www.w3.org/1998/Math/MathML"'


def _math(body: str, alt: str = PLACEHOLDER) -> str:
    return f'<math alttext="{alt}" {MML}>{body}</math>'


def _sub(base: str, script: str, tag: str = "msub") -> str:
    return f"<{tag}><mrow>{base}</mrow><mrow>{script}</mrow></{tag}>"


X = "<mi>x</mi>"
#: x^2 + y^2 = 1 and −x + sqrt(3)y = 0 as tex4ht writes an align* environment.
SYSTEM = _math(
    '<mtable columnalign="left" class="align-star">'
    f'<mtr><mtd class="align-odd">{_sub(X, "<mn>2</mn>", "msup")}<mo class="MathClass-bin">+</mo>'
    f'{_sub("<mi>y</mi>", "<mn>2</mn>", "msup")}</mtd>'
    '<mtd class="align-even"><mo class="MathClass-rel">=</mo><mn>1</mn><mspace width="2em"/></mtd>'
    '<mtd class="align-label"/><mtd class="align-label"><mspace width="2em"/></mtd></mtr>'
    '<mtr><mtd class="align-odd"><mo class="MathClass-bin">−</mo><mi>x</mi><mo class="MathClass-bin">+</mo>'
    '<msqrt><mrow><mn>3</mn></mrow></msqrt><mi>y</mi></mtd>'
    '<mtd class="align-even"><mo class="MathClass-rel">=</mo><mn>0</mn><mspace width="2em"/></mtd>'
    '<mtd class="align-label"/></mtr>'
    '<mtr><mtd class="align-odd"/><mtd class="align-even"><mspace width="2em"/></mtd></mtr></mtable>')
SOLUTION = _math('<mi>x</mi><mo class="MathClass-rel">=</mo><mfrac><mrow><msqrt><mrow><mn>3</mn></mrow></msqrt></mrow>'
                 '<mrow><mn>2</mn></mrow></mfrac><mo class="MathClass-punc">,</mo><mspace width="3.26288pt"/>'
                 '<mi>y</mi><mo class="MathClass-rel">=</mo><mfrac><mrow><mn>1</mn></mrow><mrow><mn>2</mn></mrow></mfrac>')
LINEAR = _math(f'<mn>4</mn>{_sub(X, "<mn>1</mn>")}<mo class="MathClass-bin">+</mo><mn>5</mn>{_sub(X, "<mn>2</mn>")}'
               '<mo class="MathClass-rel">=</mo><mo class="MathClass-bin">−</mo><mn>6</mn><mn>5</mn>')
POWER = _math('<msubsup><mi>x</mi><mn>2</mn><mn>3</mn></msubsup>')
VECTOR = _math('<mfenced separators="" open="[" close="]"><mrow><mtable class="array">'
               + "".join(f'<mtr><mtd class="array">{_sub(X, f"<mn>{i}</mn>")}</mtd></mtr>' for i in (1, 2, 3))
               + "</mtable></mrow></mfenced>")
SUM = _math('<munderover><mo>∑</mo><mrow><mi>i</mi><mo>=</mo><mn>1</mn></mrow><mi>n</mi></munderover>'
            '<msub><mi>a</mi><mi>i</mi></msub>')
REAL_ALT = _math("<mfrac><mi>a</mi><mi>b</mi></mfrac>", alt="\\frac{a}{b}")

RELATED_LINKS = ('<div class="related-links"><div class="familylinks">'
                 '<div class="parentlink"><strong>Parent topic:</strong> <a class="link" href="ch1.xhtml">'
                 'Chapter SLE Systems of Linear Equations</a></div>'
                 '<div class="previouslink"><strong>Previous topic:</strong> <a class="link" href="ch1.xhtml">'
                 'Section WILA What is Linear Algebra?</a></div>'
                 '<div class="nextlink"><strong>Next topic:</strong> <a class="link" href="ch3.xhtml">'
                 'Section RREF Reduced Row-Echelon Form</a></div></div></div>')
PROSE = ("A system of linear equations is a collection of equations in the same variables, and a solution "
         "assigns a number to each variable so that every equation holds at once. ")


def _chapter(title: str, body: str) -> str:
    return ('<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml" '
            f'xmlns:epub="http://www.idpf.org/2007/ops" xml:lang="en"><head><title>{title}</title></head>'
            f"<body>{body}</body></html>\n")


CHAPTERS = {
    "ch1.xhtml": _chapter("Section SSLE", (
        '<div class="chapter-banner"><h1 class="title topictitle1">Section SSLE Solving Systems</h1></div>'
        '<h1 class="title topictitle1">Section SSLE Solving Systems</h1>'
        f'{RELATED_LINKS}<div class="body"><p class="p">{PROSE}Suppose we want the common solutions of</p>'
        f'<p class="p d4p_eqn_block">{SYSTEM}</p>'
        f'<p class="p">By substitution, {SOLUTION} is a solution; so is the point on the other side.'
        '<span epub:type="pagebreak" id="page17" title="17">17</span> '
        f'Equations such as {LINEAR} and the power {POWER} appear below. {PROSE}</p></div>')),
    "ch2.xhtml": _chapter("Section RREF", (
        '<h2>Section RREF Reduced Row-Echelon Form</h2><h2>Section RREF Reduced Row-Echelon Form</h2>'
        f'<div role="navigation"><a href="ch1.xhtml">Previous</a> | <a href="ch3.xhtml">Next</a></div>'
        f'<nav epub:type="landmarks"><ol><li><a href="ch1.xhtml">Start of content</a></li></ol></nav>'
        f'<p>{PROSE}The unknowns form a column vector {VECTOR}, and a weighted sum {SUM} of the entries.'
        f' Authors who write real alternative text keep it: {REAL_ALT}.</p>'
        f'<section epub:type="toc"><p>Contents: Section SSLE, Section RREF</p></section>{RELATED_LINKS}'
        f'<h3>Example</h3><p>{PROSE}</p><h3>Example</h3><p>{PROSE}</p>')),
}


def write_epub3(path: Path, chapters: dict[str, str]) -> Path:
    """A real EPUB 3: ``mimetype`` first and stored, container, OPF, nav document, the chapters in spine order."""
    items = "".join(f'<item id="c{i}" href="xhtml/{name}" media-type="application/xhtml+xml"/>'
                    for i, name in enumerate(chapters))
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    opf = ('<?xml version="1.0" encoding="UTF-8"?>\n<package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
           'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
           '<dc:identifier id="id">urn:test:linear</dc:identifier><dc:title>Linear Systems</dc:title>'
           '<dc:language>en</dc:language></metadata><manifest>'
           '<item id="nav" href="xhtml/nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
           f'{items}</manifest><spine><itemref idref="nav"/>{spine}</spine></package>\n')
    nav = _chapter("Contents", '<nav epub:type="toc"><h1>Contents</h1><ol>' + "".join(
        f'<li><a href="{name}">Chapter {i}</a></li>' for i, name in enumerate(chapters)) + "</ol></nav>")
    with zipfile.ZipFile(path, "w") as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr(zip_info("META-INF/container.xml"), CONTAINER_XML.format(opf="EPUB/package.opf"),
                      zipfile.ZIP_DEFLATED)
        book.writestr(zip_info("EPUB/package.opf"), opf, zipfile.ZIP_DEFLATED)
        book.writestr(zip_info("EPUB/xhtml/nav.xhtml"), nav, zipfile.ZIP_DEFLATED)
        for name, content in chapters.items():
            book.writestr(zip_info(f"EPUB/xhtml/{name}"), content, zipfile.ZIP_DEFLATED)
    return path


def run_recipe(path: Path, settings: SciBookSettings) -> tuple[list[Document], StepStats]:
    recipe = SciBooksRecipe(settings)
    stats = StepStats()
    docs = list(run_steps(recipe.read(InputSpec(str(path), path, path.name)), recipe.steps(), stats))
    assert stats.balanced()
    return docs, stats


def test_formulas_are_read_from_the_mathml_not_the_placeholder_alttext(tmp_path: Path) -> None:
    book = read_epub(write_epub3(tmp_path / "linear.epub", CHAPTERS), EpubSettings())
    assert PLACEHOLDER not in book.text and book.math == 7
    for formula in ("x^2 + y^2 = 1; −x + sqrt(3)y = 0", "x = (sqrt(3))/2, y = 1/2", "4x_1 + 5x_2 = −65",
                    "the power x_2^3 appear", "[x_1; x_2; x_3]", "∑_(i = 1)^n a_i", "keep it: \\frac{a}{b}."):
        assert formula in book.text, formula


def test_navigation_bars_page_breaks_and_repeated_headings_are_dropped(tmp_path: Path) -> None:
    docs, stats = run_recipe(write_epub3(tmp_path / "linear.epub", CHAPTERS), SciBookSettings(language_id=False))
    assert stats.kept == 1 and stats.records_in == 1
    text = docs[0].text
    for furniture in ("Parent topic", "Previous topic", "Next topic", "Previous", "Start of content", "Contents:",
                      "Section WILA", "17 Equations"):
        assert furniture not in text, furniture
    assert text.startswith("Section SSLE Solving Systems\n\nA system of linear equations")
    assert text.count("Section SSLE Solving Systems") == 1
    assert text.count("Section RREF Reduced Row-Echelon Form") == 1
    assert text.count("\n\nExample\n\n") == 2  # a heading recurring with text between: the book's own
    assert "other side. Equations such as" in text  # the pagebreak marker's number is gone, the sentence joined
    assert docs[0].meta["skipped_items"] == {"navigation": 1, "repeated_heading": 2}


def test_placeholder_learned_in_one_chapter_is_skipped_in_the_next(tmp_path: Path) -> None:
    """A house placeholder no list knows: two formulas share it in chapter 1, so chapter 2's lone one is not trusted."""
    house = "Equation graphic"
    chapters = {
        "a.xhtml": _chapter("A", f"<p>{PROSE}{_math(X, house)} and {_math('<mi>y</mi>', house)}.</p>"),
        "b.xhtml": _chapter("B", f"<p>{PROSE}The count {_math('<mi>n</mi>', house)} is positive.</p>"),
    }
    book = read_epub(write_epub3(tmp_path / "house.epub", chapters), EpubSettings())
    assert house not in book.text and "The count n is positive." in book.text


@pytest.mark.parametrize(("markup", "alt", "expected"), [
    ("<mi>x</mi>", PLACEHOLDER, None),
    ("<mi>x</mi>", "alt text not available.", None),
    ("<mi>x</mi>", "Equation", None),
    ("<msup><mi>x</mi><mn>2</mn></msup>", "x squared", "x squared"),
    ("<msup><mi>x</mi><mn>2</mn></msup>", "4x^2", "4x^2"),
    ("<mi>n</mi>", "Inline graphic", None),  # no symbol of the formula: the n of "Inline" is not one
    ("<mn>12</mn>", "112", None),
])
def test_alttext_is_used_only_when_it_describes_the_formula(markup: str, alt: str, expected: str | None) -> None:
    assert useful_alttext(etree.fromstring(f'<math alttext="{alt}" {MML}>{markup}</math>')) == expected


@pytest.mark.parametrize(("markup", "expected"), [
    ("<mover accent='true'><mi>x</mi><mo>¯</mo></mover><mo>+</mo><mi>sin</mi><mo>&#x2061;</mo><mi>θ</mi>",
     "bar(x) + sin θ"),
    ("<msup><mrow><mo>(</mo><mi>a</mi><mo>+</mo><mi>b</mi><mo>)</mo></mrow><mn>2</mn></msup>", "(a + b)^2"),
    ("<msub><mi>x</mi><mrow><mi>i</mi><mo>+</mo><mn>1</mn></mrow></msub>", "x_(i + 1)"),
    ("<mroot><mi>x</mi><mn>3</mn></mroot>", "root(x, 3)"),
    ("<mfrac><mrow><mi>k</mi><mi>t</mi></mrow><msup><mi>h</mi><mn>2</mn></msup></mfrac>", "(kt)/(h^2)"),
    ("<mmultiscripts><mi>C</mi><mn>6</mn><none/><mprescripts/><mn>14</mn><none/></mmultiscripts>", "_14C_6"),
    ("<semantics><mi>x</mi><annotation encoding='application/x-tex'>x^{2}</annotation></semantics>", "x^{2}"),
])
def test_presentation_mathml_as_linear_text(markup: str, expected: str) -> None:
    assert reading(etree.fromstring(f"<math {MML}>{markup}</math>")) == expected


def test_chapter_past_its_time_bound_is_one_drop_and_the_book_is_kept(tmp_path: Path) -> None:
    """A chapter whose XHTML-to-text takes seconds of CPU (3 million elements) against a 1 s bound.

    The helper is killed at the bound, whatever the machine's load: the chapter costs ~7 s of
    CPU, the small ones milliseconds. The chapter is one ``cleaner_timeout`` drop naming the file
    and the chapter; the chapters before and after it are in the book.
    """
    slow = _chapter("Slow", "<p>" + "<b>x</b>" * 3_000_000 + "</p>")
    chapters = {"ch1.xhtml": CHAPTERS["ch1.xhtml"], "slow.xhtml": slow, "ch2.xhtml": CHAPTERS["ch2.xhtml"]}
    path = write_epub3(tmp_path / "slow.epub", chapters)
    settings = SciBookSettings(epub=EpubSettings(chapter_timeout_s=1.0, max_ratio=1e6), language_id=False)
    docs, stats = run_recipe(path, settings)
    assert stats.drops[("reader", "cleaner_timeout", "")] == 1 and stats.kept == 1
    assert [e["record"] for e in stats.errors] == [f"{path} chapter EPUB/xhtml/slow.xhtml"]
    text = docs[0].text
    assert "Section SSLE Solving Systems" in text and "Section RREF Reduced Row-Echelon Form" in text
    assert docs[0].meta["dropped_chapters"] == 1 and docs[0].meta["chapters"] == 2
