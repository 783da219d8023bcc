"""A small offline sample of the science-books formats, written by the formats' own libraries.

* ``paper.pdf`` (pdfium via pypdfium2): three two-column pages of text with a running header,
  page numbers, a word hyphenated at a line end, and a fourth page that is only a scanned image
  of text (OCR'd when tesseract is installed, else an ``ocr_unavailable`` drop);
* ``book3.epub`` (zipfile + lxml): EPUB 3 with ``container.xml`` stored before ``mimetype`` (as
  Debian's EPUBs do), a nav document, a cover page marked in the landmarks, a spine whose order
  differs from the manifest's, inline MathML, and a ``linear="no"`` item;
* ``book2.epub``: EPUB 2 with an NCX and a ``<guide>`` naming its cover.

Used by ``flows.llama --sample`` and by the tests; nothing is copied from elsewhere.
"""

from __future__ import annotations

import ctypes
import hashlib
import io
import re
import zipfile
from pathlib import Path
from typing import Any

SENTENCES = [
    "The heat equation describes how temperature spreads through a solid body over time.",
    "A finite difference scheme replaces each derivative by a quotient of nearby values.",
    "Stability requires that the time step stays below a bound set by the grid spacing.",
    "Engineers verify such schemes against exact solutions before trusting them in design.",
    "The error of a consistent and stable method shrinks as the grid is refined.",
    "Boundary conditions fix the temperature or the heat flux at the edges of the domain.",
    "Implicit methods solve a linear system at every step but allow much larger steps.",
    "Sparse matrix solvers make these systems cheap even for millions of unknowns.",
]
HEADER = "Journal of Sample Numerical Methods"


def prose(seed: int, sentences: int) -> str:
    """Deterministic English prose for the sample (real-looking, so language ID is sure of it)."""
    return " ".join(SENTENCES[(seed * 3 + i) % len(SENTENCES)] for i in range(sentences))


def wrap(text: str, width: int) -> list[str]:
    """Greedy line wrap at ``width`` characters."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return [*lines, current] if current else lines


# -- PDF --------------------------------------------------------------------------------------
def _put_text(pdf: Any, page: Any, font: Any, text: str, x: float, y: float, size: float = 10.0) -> None:
    import pypdfium2.raw as raw

    obj = raw.FPDFPageObj_CreateTextObj(pdf.raw, font, size)
    encoded = (text + "\x00").encode("utf-16-le")
    buffer = ctypes.create_string_buffer(encoded, len(encoded))
    raw.FPDFText_SetText(obj, ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ushort)))
    raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
    raw.FPDFPage_InsertObject(page.raw, obj)


def _column_lines(seed: int) -> tuple[list[str], list[str]]:
    left = wrap(prose(seed, 9), 46)
    right = wrap(prose(seed + 1, 9), 46)
    # a word hyphenated at the end of a line, as TeX does it
    left[3] = left[3] + " discreti-"
    left[4] = "zation " + left[4]
    return left, right


def write_sample_pdf(path: Path, scanned_page: bool = True) -> None:
    """The two-column sample paper (see the module docstring)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument.new()
    font = raw.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica")
    width, height = 595.0, 842.0
    for number in range(1, 4):
        page = pdf.new_page(width, height)
        _put_text(pdf, page, font, HEADER, 200, 800, 9)
        if number == 1:
            _put_text(pdf, page, font, "Stable Schemes for the Heat Equation", 150, 760, 16)
        left, right = _column_lines(number)
        top = 720.0
        for i, line in enumerate(left):
            _put_text(pdf, page, font, line, 60, top - 13 * i)
        for i, line in enumerate(right):
            _put_text(pdf, page, font, line, 310, top - 13 * i)
        _put_text(pdf, page, font, str(number), 295, 40, 9)
        raw.FPDFPage_GenerateContent(page.raw)
    if scanned_page:
        _add_scanned_page(pdf, font, width, height)
    buffer = io.BytesIO()
    pdf.save(buffer)
    pdf.close()
    path.write_bytes(reproducible_pdf(buffer.getvalue()))


def reproducible_pdf(data: bytes) -> bytes:
    """PDFium stamps the save time into ``/CreationDate`` and a time-based file ``/ID``; a fixed date and
    an ID hashed from the content, each the same length, keep every xref offset valid and make the
    file the same bytes on every run (so a second sample run resumes instead of redoing the source)."""
    data = re.sub(rb"/CreationDate\(D:\d{14}", b"/CreationDate(D:20200101000000", data)
    ids = re.compile(rb"/ID\[<[0-9A-Fa-f]{32}><[0-9A-Fa-f]{32}>\]")
    digest = hashlib.md5(ids.sub(b"", data), usedforsecurity=False).hexdigest().upper().encode()
    return ids.sub(b"/ID[<" + digest + b"><" + digest + b">]", data)


def _add_scanned_page(pdf: Any, font: Any, width: float, height: float) -> None:
    """A page that is only an image: a text page rendered to a bitmap and placed as a picture."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    scratch = pdfium.PdfDocument.new()
    scratch_font = raw.FPDFText_LoadStandardFont(scratch.raw, b"Helvetica")
    source = scratch.new_page(width, height)
    for i, line in enumerate(wrap(prose(7, 8), 60)):
        _put_text(scratch, source, scratch_font, line, 60, 760 - 18 * i, 13)
    raw.FPDFPage_GenerateContent(source.raw)
    bitmap = source.render(scale=200 / 72, grayscale=True)
    page = pdf.new_page(width, height)
    image = pdfium.PdfImage.new(pdf)
    image.set_bitmap(bitmap)
    image.set_matrix(pdfium.PdfMatrix().scale(width, height))
    page.insert_obj(image)
    page.gen_content()
    scratch.close()


# -- EPUB -------------------------------------------------------------------------------------
CONTAINER_XML = """<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="{opf}" media-type="application/oebps-package+xml"/></rootfiles>
</container>
"""
MATH = ('<math xmlns="http://www.w3.org/1998/Math/MathML"><mrow><mi>u</mi><mo>=</mo>'
        '<mfrac><mrow><mi>k</mi><mi>t</mi></mrow><msup><mi>h</mi><mn>2</mn></msup></mfrac></mrow></math>')


def _xhtml(title: str, body: str) -> str:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml" '
            f'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>{title}</title></head><body>{body}</body></html>\n')


def _chapter(title: str, seed: int, extra: str = "") -> str:
    paragraphs = "".join(f"<p>{prose(seed + i, 4)}</p>" for i in range(3))
    return _xhtml(title, f'<div class="related" role="navigation"><a href="#">next</a></div>'
                         f"<h1>{title}</h1>{paragraphs}{extra}")


def _write_zip(path: Path, files: list[tuple[str, str]]) -> None:
    """container.xml first, then mimetype (the Debian ordering), then the rest; fixed timestamps."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as book:
        for name, content in files:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
            book.writestr(info, content)


def write_sample_epub3(path: Path) -> None:
    """EPUB 3 sample (see the module docstring)."""
    math_paragraph = f"<p>The scheme is stable when {MATH} stays below one half.</p>"
    nav = _xhtml("Contents", '<nav epub:type="toc"><ol><li><a href="ch1.xhtml">One</a></li></ol></nav>'
                             '<nav epub:type="landmarks"><ol><li><a epub:type="cover" href="cover.xhtml">Cover</a>'
                             '</li></ol></nav>')
    opf = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">sample-heat-3</dc:identifier><dc:title>Heat Transfer Notes</dc:title>
    <dc:creator>Sample Author</dc:creator><dc:language>en</dc:language>
  </metadata>
  <manifest>
    <item id="c2" href="text/ch2.xhtml" media-type="application/xhtml+xml"/>
    <item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/>
    <item id="cover" href="text/cover.xhtml" media-type="application/xhtml+xml"/>
    <item id="nav" href="text/nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="notes" href="text/notes.xhtml" media-type="application/xhtml+xml"/>
    <item id="evil" href="../../outside.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine><itemref idref="cover"/><itemref idref="nav"/><itemref idref="c1"/><itemref idref="c2"/>
    <itemref idref="evil"/><itemref idref="notes" linear="no"/></spine>
</package>
"""
    _write_zip(path, [
        ("META-INF/container.xml", CONTAINER_XML.format(opf="OEBPS/package.opf")),
        ("mimetype", "application/epub+zip"),
        ("OEBPS/package.opf", opf),
        ("OEBPS/text/nav.xhtml", nav),
        ("OEBPS/text/cover.xhtml", _xhtml("Cover", "<p>COVER PAGE OF THE SAMPLE</p>")),
        ("OEBPS/text/ch2.xhtml", _chapter("Chapter Two: Implicit Methods", 3)),
        ("OEBPS/text/ch1.xhtml", _chapter("Chapter One: Explicit Methods", 1, math_paragraph)),
        ("OEBPS/text/notes.xhtml", _xhtml("Notes", "<p>NONLINEAR NOTES</p>")),
    ])


def write_sample_epub2(path: Path) -> None:
    """EPUB 2 sample with an NCX and a guide (see the module docstring)."""
    opf = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="2.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">sample-solvers-2</dc:identifier><dc:title>Sparse Solvers</dc:title>
    <dc:language>en</dc:language>
  </metadata>
  <manifest>
    <item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
    <item id="front" href="front.html" media-type="application/xhtml+xml"/>
    <item id="a" href="a.html" media-type="application/xhtml+xml"/>
    <item id="b" href="b.html" media-type="application/xhtml+xml"/>
  </manifest>
  <spine toc="ncx"><itemref idref="front"/><itemref idref="a"/><itemref idref="b"/></spine>
  <guide><reference type="cover" title="Cover" href="front.html"/></guide>
</package>
"""
    ncx = ('<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap>'
           '<navPoint id="a"><navLabel><text>A</text></navLabel><content src="a.html"/></navPoint></navMap></ncx>')
    _write_zip(path, [
        ("META-INF/container.xml", CONTAINER_XML.format(opf="content.opf")),
        ("mimetype", "application/epub+zip"),
        ("content.opf", opf),
        ("toc.ncx", ncx),
        ("front.html", _xhtml("Front", "<p>FRONT MATTER OF THE SAMPLE</p>")),
        ("a.html", _chapter("Part A: Direct Solvers", 5)),
        ("b.html", _chapter("Part B: Iterative Solvers", 6, "<pre>x = solve(A, b)\nprint(x)</pre>")),
    ])


def write_sample_inputs(directory: Path) -> list[str]:
    """Write the sample PDF and EPUBs into ``directory``; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / "paper.pdf", directory / "book3.epub", directory / "book2.epub"]
    write_sample_pdf(paths[0])
    write_sample_epub3(paths[1])
    write_sample_epub2(paths[2])
    return [str(p) for p in paths]
