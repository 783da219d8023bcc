"""Science books: PDF reading order, headers, hyphens, OCR and its error rate, EPUB spine and MathML, bad input.

Real files from ../shared/realdata/scibooks (the ``realdata`` fixture skips where absent); the
rest are written here by pdfium (pypdfium2) and zipfile, the formats' own libraries.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.document import Document, Drop, InputSpec
from core.steps import StepStats, run_steps
from sources.formats import pdf_text
from sources.formats.epub import EpubError, EpubSettings, mathml_text, read_epub, resolve_href
from sources.samples.scibooks import _put_text, write_sample_epub3, write_sample_pdf
from sources.scibooks import SciBookSettings, SciBooksRecipe, text_quality
from tests.fixed import save_pdf, zip_info

N18 = "scibooks/pdf/N18-3011.pdf"


def spec(path: Path) -> InputSpec:
    return InputSpec(str(path), path, path.name)


def run_recipe(path: Path, **settings: object) -> tuple[list[Document], StepStats]:
    recipe = SciBooksRecipe(SciBookSettings(**settings))  # type: ignore[arg-type]
    stats = StepStats()
    docs = list(run_steps(recipe.read(spec(path)), recipe.steps(), stats))
    assert stats.balanced()
    return docs, stats


def in_process(**kwargs: object) -> pdf_text.PdfSettings:
    return pdf_text.PdfSettings(isolate=False, **kwargs)  # type: ignore[arg-type]


def pdf_pages(path: Path, settings: pdf_text.PdfSettings | None = None) -> list[pdf_text.PageText]:
    items = list(pdf_text.pages_in_process(path, settings or in_process()))
    return [p for p in items if isinstance(p, pdf_text.PageText)]


def cer(hypothesis: str, reference: str) -> float:
    """Character error rate: Levenshtein distance / reference length (row-vectorised DP)."""
    a = np.frombuffer(hypothesis.encode("utf-32-le"), dtype=np.uint32)
    b = np.frombuffer(reference.encode("utf-32-le"), dtype=np.uint32)
    previous = np.arange(len(b) + 1, dtype=np.int64)
    offsets = np.arange(len(b) + 1, dtype=np.int64)
    for i, char in enumerate(a, start=1):
        substitute = previous[:-1] + (b != char)
        current = np.empty_like(previous)
        current[0] = i
        current[1:] = np.minimum(previous[1:] + 1, substitute)
        current = np.minimum.accumulate(current - offsets) + offsets  # insertions along the row
        previous = current
    return float(previous[-1]) / max(len(b), 1)


def squash(text: str) -> str:
    return " ".join(text.split())


# -- PDF on the real files --------------------------------------------------------------------
def test_two_column_page_reading_order(realdata: Path) -> None:
    page = pdf_pages(realdata / N18)[1]
    assert page.columns == 2
    columns = [ln.column for ln in page.lines if ln.column != -1]
    assert columns == sorted(columns)  # the whole left column, then the whole right one
    text = "\n".join(ln.text for ln in page.lines)
    assert text.index("2016), and assume that entity types") < text.index("2 Structure of The Literature Graph")
    # the same lines in a writer's line-by-line order (left and right interleaved) come back in column order
    by_row = sorted(page.lines, key=lambda ln: (-round(ln.top), ln.x0))
    assert by_row != list(page.lines)
    reordered, columns_found = pdf_text.order_columns(by_row, page.width)
    assert columns_found == 2
    assert [ln.text for ln in reordered if ln.column == 0] == [ln.text for ln in page.lines if ln.column == 0]
    assert [ln.text for ln in reordered if ln.column == 1] == [ln.text for ln in page.lines if ln.column == 1]


def test_n18_text_hyphens_ligatures_page_numbers(realdata: Path) -> None:
    docs, stats = run_recipe(realdata / N18, pdf=in_process())
    assert stats.kept == 1
    doc = docs[0]
    text = doc.text
    assert doc.meta["two_column_pages"] == 8 and doc.meta["language"] == "en"
    for joined in ("directed edges", "Resource Description Framework", "MEDLINE", "deterministically remove",
                   "authorship edges"):
        assert joined in text
    assert "\x02" not in text and "\ufffe" not in text and "di- rected" not in text
    assert not re.search("[\ufb00-\ufb06]", text)
    assert not re.search(r"(?m)^(?:8[4-9]|9[01])$", text) and "Xiong et al., 84" not in text
    # the first page's left column, then its right column, then the proceedings footer
    assert text.index("(e.g., Xiong et al.,") < text.index("Figure 1: Part of the literature graph") \
        < text.index("Proceedings of NAACL-HLT 2018") < text.index("2016), and assume")


def test_running_headers_removed(realdata: Path) -> None:
    r_intro = pdf_text.assemble(pdf_pages(realdata / "scibooks/pdf/R-intro.pdf"))
    assert "Chapter 1: Introduction and preliminaries" not in r_intro.text
    assert "Introduction and preliminaries" in r_intro.text  # the chapter heading itself stays
    geotopo = pdf_text.assemble(pdf_pages(realdata / "scibooks/pdf/GeoTopo-komprimiert.pdf"))
    assert "WEGE UND KNOTEN" not in geotopo.text and "Wege und Knoten" in geotopo.text
    assert geotopo.furniture_lines >= 100 and geotopo.two_column_pages <= 2  # formula pages are not columns


def test_ocr_character_error_rate(realdata: Path) -> None:
    """Render real text-layer pages, OCR them, compare with the text layer."""
    if pdf_text.tesseract_command() is None:
        pytest.skip("tesseract is not installed (apt-get install tesseract-ocr)")
    import pypdfium2 as pdfium

    settings = in_process()
    document = pdfium.PdfDocument(str(realdata / N18))
    rates = []
    for index in (1,):  # benchmarks/scibooks.py measures more pages
        page = document[index]
        reference = squash(" ".join(ln.text for ln in pdf_text.extract_page(document, index, settings).lines))
        gray, width, height = pdf_text.render_gray(page, 300)
        ocr = pdf_text.ocr_image(gray, width, height, settings)
        page.close()
        rates.append(cer(squash(pdf_text.clean_text(ocr)), squash(pdf_text.clean_text(reference.replace("\x02", "-")))))
    document.close()
    assert max(rates) < 0.08, rates


def test_scanned_page_without_tesseract_is_a_counted_drop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "paper.pdf"
    write_sample_pdf(path)
    monkeypatch.setattr(pdf_text, "tesseract_command", lambda: None)
    docs, stats = run_recipe(path, pdf=in_process(), language_id=False)
    assert stats.drops[("reader", "ocr_unavailable", "")] == 1 and stats.records_in == 2 and stats.kept == 1
    assert any("paper.pdf page 4" in e["record"] for e in stats.errors)
    doc = docs[0]
    assert doc.meta["text_pages"] == 3 and doc.meta["ocr_pages"] == 0
    assert "Journal of Sample Numerical Methods" not in doc.text  # running header on 3 pages
    assert "discretization" in doc.text and "discreti-" not in doc.text


def test_ocr_rendering_is_the_bitmap_behind_a_pgm_header(tmp_path: Path) -> None:
    """The image tesseract reads (one copy of pdfium's bitmap) holds exactly the rendered rows."""
    import pypdfium2 as pdfium

    path = tmp_path / "paper.pdf"
    write_sample_pdf(path)
    document = pdfium.PdfDocument(str(path))
    try:
        page = document[3]  # the scanned page
        image, width, height = pdf_text.render_pgm(page, 97)
        bitmap = page.render(scale=97 / 72, grayscale=True)
        expected = np.ascontiguousarray(bitmap.to_numpy()).tobytes()
        bitmap.close()
        assert image == bytearray(f"P5 {width} {height} 255\n".encode() + expected) and len(expected) == width * height
        assert pdf_text.render_gray(page, 97) == (expected, width, height)
        assert pdf_text.render_size(page.get_width(), page.get_height(), 97) == (width, height)
    finally:
        document.close()


def test_scanned_page_is_ocrd(tmp_path: Path) -> None:
    if pdf_text.tesseract_command() is None:
        pytest.skip("tesseract is not installed")
    path = tmp_path / "paper.pdf"
    write_sample_pdf(path)
    docs, stats = run_recipe(path, language_id=False)  # through the worker process
    assert stats.kept == 1 and docs[0].meta["ocr_pages"] == 1
    assert "Stability requires that the time step" in docs[0].text.split("Engineers verify")[-1] or \
        docs[0].text.count("Stability requires that the time step") >= 4


def test_hanging_page_is_bounded(tmp_path: Path) -> None:
    """A page slower than the bound: the worker is killed, the page dropped, the next pages read."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument.new()
    font = raw.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica")
    for number in range(3):
        page = pdf.new_page(595, 842)
        if number == 1:  # ~1.3 s of extraction on a quiet machine: 5x the bound, whatever the speed-ups
            for i in range(48_000):
                _put_text(pdf, page, font, "x" * 60, (i % 7) * 80, (i * 7) % 800, 2)
        else:
            for i in range(30):
                _put_text(pdf, page, font, f"Line {i} of page {number + 1} about finite elements and meshes.", 60,
                          780 - 20 * i)
        raw.FPDFPage_GenerateContent(page.raw)
    path = save_pdf(pdf, tmp_path / "slow.pdf")
    pdf.close()
    worker = pdf_text.PdfWorker()
    try:
        items = list(worker.pages(path, pdf_text.PdfSettings(page_timeout_s=0.25)))
    finally:
        worker.close()
    pages = [p for p in items if isinstance(p, pdf_text.PageText)]
    assert [(p.index, p.drop) for p in pages] == [(0, None), (1, "page_timeout"), (2, None)]
    assert "page 3 about finite elements" in pages[2].lines[0].text


def test_worker_batches_give_the_in_process_pages(realdata: Path) -> None:
    """Pages from the worker (batched, packed as plain tuples) equal the in-process pages, in order."""
    worker = pdf_text.PdfWorker()
    try:
        for path in sorted((realdata / "scibooks" / "pdf").glob("*.pdf")):
            isolated = [p for p in worker.pages(path, pdf_text.PdfSettings(ocr="off"))
                        if isinstance(p, pdf_text.PageText)]
            local = pdf_pages(path, in_process(ocr="off"))
            assert isolated == local and all(isinstance(ln, pdf_text.Line) for p in isolated for ln in p.lines)
    finally:
        worker.close()


@pytest.mark.parametrize("text", [
    "", "x" * 15, "x" * 16, " \t\x1c\x1d\x1e\x1f\x85" * 40 + "x" * 16, "\x02" * 200 + "ab", "word " * 100,
    "word " * 100 + "\ufffd" * 30, "\ue000" * 100 + "word " * 10, "\x01\x03" * 5 + "a" * 200, "\x85\x0b" * 300,
])
def test_text_layer_check_equals_the_visible_text_rule(text: str) -> None:
    """has_text_layer (prefix and no-garbage shortcuts) decides as the rule on the whole visible text."""
    for settings in (pdf_text.PdfSettings(), pdf_text.PdfSettings(min_page_chars=1, max_page_garbage=0.0),
                     pdf_text.PdfSettings(min_page_chars=300, max_page_garbage=-1.0)):
        visible = pdf_text.visible_chars(text)
        expected = len(visible) >= settings.min_page_chars and \
            pdf_text.garbage_share(visible) <= settings.max_page_garbage
        assert pdf_text.has_text_layer(text, settings) == expected


def test_quality_floor_reasons() -> None:
    words = "stress strain modulus beam " * 200
    assert text_quality(words, 1, SciBookSettings().quality) is None
    assert text_quality(words, 100, SciBookSettings().quality) == "too_little_text_per_page"
    assert text_quality(words + "\ue000" * 100, 1, SciBookSettings().quality) == "garbage_chars"
    assert text_quality("12 34 56 ## " * 200, 1, SciBookSettings().quality) == "too_few_words"
    assert pdf_text.clean_text("ﬁnite ﬂow ﬀ") == "finite flow ff"


# -- PDF bad input ----------------------------------------------------------------------------
def test_broken_and_encrypted_pdfs(tmp_path: Path, realdata: Path) -> None:
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\nthis is not a pdf body\n")
    docs, stats = run_recipe(broken, pdf=in_process())
    assert not docs and stats.drops[("reader", "broken_pdf", "")] == 1
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter(clone_from=str(realdata / N18))
    writer.encrypt(user_password="secret", owner_password="owner")
    encrypted = tmp_path / "encrypted.pdf"
    with encrypted.open("wb") as handle:
        writer.write(handle)
    docs, stats = run_recipe(encrypted)  # through the worker
    assert not docs and stats.drops[("reader", "encrypted_pdf", "")] == 1


# -- EPUB -------------------------------------------------------------------------------------
def test_epub2_spine_order_real(realdata: Path) -> None:
    path = realdata / "scibooks/epub/live-manual.en.epub"
    assert zipfile.ZipFile(path).namelist()[0] == "META-INF/container.xml"  # not mimetype first
    book = read_epub(path, EpubSettings())
    assert book.version == "2.0" and book.title == "Live Systems Manual"
    order = [book.text.index(h) for h in ("1. About this manual", "2. About the Live Systems Project",
                                          "3. Installation", "4. The basics")]
    assert order == sorted(order)
    assert book.text.count("1.1 For the impatient") == 1  # fragment hrefs do not repeat a file
    assert book.skipped.get("link_page") == 1  # the table of contents page
    assert not re.search(r"(?m)^\d{1,4}$", book.text)  # SiSU paragraph numbers


def test_epub3_real_nav_and_translations_left_out(realdata: Path) -> None:
    docs, _ = run_recipe(realdata / "scibooks/epub/ubuntu-packaging-guide.epub")
    doc = docs[0]
    assert doc.meta["epub_version"] == "3.0" and doc.meta["language"] == "en"
    assert doc.text.startswith("1. Introduction to Ubuntu Development")
    assert doc.meta["skipped_items"]["nonlinear"] > 100  # the translations
    assert "Navigation" not in doc.text.split("\n\n")[:3] and "previous |" not in doc.text


def test_epub3_sample_spine_mathml_traversal(tmp_path: Path) -> None:
    path = tmp_path / "book.epub"
    write_sample_epub3(path)
    book = read_epub(path, EpubSettings())
    assert book.text.index("Chapter One") < book.text.index("Chapter Two")  # spine, not manifest, order
    assert "u = (kt)/(h^2)" in book.text and book.math == 1
    assert "COVER PAGE" not in book.text and "NONLINEAR" not in book.text and "next" not in book.text
    assert book.skipped == {"boilerplate": 1, "navigation": 1, "nonlinear": 1, "href_outside_package": 1}
    assert resolve_href("OEBPS", "../../etc/passwd") is None and resolve_href("", "/etc/passwd") is None
    assert resolve_href("OEBPS/text", "../img/a%20b.png#x") == "OEBPS/img/a b.png"


def test_mathml_annotations() -> None:
    from lxml import etree

    tex = etree.fromstring('<math xmlns="http://www.w3.org/1998/Math/MathML"><semantics><mi>x</mi>'
                           '<annotation encoding="application/x-tex">x^2 + 1</annotation></semantics></math>')
    assert mathml_text(tex) == "x^2 + 1"
    root = etree.fromstring('<math xmlns="http://www.w3.org/1998/Math/MathML" alttext="\\sqrt{2}"><msqrt>'
                            '<mn>2</mn></msqrt></math>')
    assert mathml_text(root) == "\\sqrt{2}"
    del root.attrib["alttext"]
    assert mathml_text(root) == "sqrt(2)"


def _zip(files: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as handle:
        for name, data in files.items():
            handle.writestr(zip_info(name, compression), data)
    return buffer.getvalue()


def test_bad_epubs_are_counted_drops(tmp_path: Path) -> None:
    cases = {
        "not_a_zip": b"PK\x03\x04 but not really a zip",
        "no_container": _zip({"mimetype": b"application/epub+zip", "content.opf": b"<package/>"}),
        "zip_bomb": _zip({"META-INF/container.xml": b"\x00" * (40 * 1024 * 1024)}),
        "no_package": _zip({"META-INF/container.xml": b"<container><rootfiles/></container>"}),
        "href_outside_package": _zip({"META-INF/container.xml": b'<container><rootfiles><rootfile '
                                      b'full-path="../../x.opf" media-type="application/oebps-package+xml"/>'
                                      b"</rootfiles></container>"}),
    }
    for reason, data in cases.items():
        path = tmp_path / f"{reason}.epub"
        path.write_bytes(data)
        docs, stats = run_recipe(path)
        assert not docs and stats.drops[("reader", reason, "")] == 1, (reason, stats.drops)
    with pytest.raises(EpubError) as caught:
        read_epub(tmp_path / "zip_bomb.epub", EpubSettings(max_member_bytes=1024, max_ratio=10_000))
    assert caught.value.reason == "zip_bomb"
    other = tmp_path / "notes.txt"
    other.write_text("plain text")
    assert list(SciBooksRecipe().read(spec(other))) == [Drop("unsupported_format", str(other), "not one of .pdf, .epub")]


_LINE = st.builds(pdf_text.Line, st.text(), st.floats(allow_nan=False), st.floats(allow_nan=False),
                  st.floats(allow_nan=False), st.floats(allow_nan=False), st.sampled_from([-1, 0, 1]))


@given(lines=st.lists(_LINE, max_size=60), drop=st.sampled_from([None, "page_timeout"]))
def test_page_packing_for_the_worker_pipe_round_trips(lines: list[pdf_text.Line], drop: str | None) -> None:
    """Line texts (NUL, astral characters, empty) and boxes come back exactly from the flat columns."""
    page = pdf_text.PageText(7, tuple(lines), 595.0, 842.0, "text", drop, "detail", 2)
    assert pdf_text.unpack_page(pdf_text.pack_page(page)) == page
