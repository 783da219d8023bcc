"""Memory bombs of the PDF, EPUB-free science-books and PMC formats (issue 24 item 8): one drop each, RSS bounded.

Each bomb runs the way a user runs it (``python -m flows.science_books ...``, ``python -m
flows.pubmed ...``) under :func:`tests.faults.rss.run_measured`, which reports the peak RSS of
the flow and every process it waited for (the PDF worker, the article helper). At default
settings the peak stays under :data:`tests.faults.rss.MAX_RSS_BYTES` (2 GB), the bomb is one
counted drop naming its record, and the records beside it are kept.

The files are real: PDFs written by pypdfium2 (pages, images) and pypdf (flate-compressed
content streams), PMC packages as gzip'd tars of JATS articles (``sources.samples.pubmed``).

* A page of 14,400 x 14,400 pt without a text layer: OCR would render it at 300 dpi to
  3.6 G pixels. The pixel cap (``pdf.max_ocr_pixels``) is checked before rendering, so the drop
  does not need tesseract.
* A 51 KB PDF whose first page's flate-compressed content stream shows 20 M characters: pdfium's
  text page for it took 3.2 GB (the "389 KB PDF that reached 5.9-7.0 GB" was this kind of file).
  The PDF worker runs under an address-space bound (``pdf.worker_memory_bytes``, via
  ``core.bounded.limit_address_space``): pdfium aborts, and that page alone is dropped.
* A page of 1.2 M characters: under the memory bound, over ``pdf.max_page_chars``.
* A PMC package member ``.nxml.gz`` of 4 MB that inflates to 4 GiB: inflated only up to
  ``max_article_bytes``; the article helper also runs under ``max_article_memory``.
"""

from __future__ import annotations

import os
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from core.document import Document, Drop, InputSpec
from core.manifest import Manifest
from sources.formats import pdf_text
from sources.formats.epub import EpubSettings, read_epub
from sources.pubmed import CentralSettings, gunzip_bounded, iter_central
from sources.samples.pubmed import jats_article, write_package
from sources.samples.scibooks import prose, wrap, write_sample_epub3, write_sample_pdf
from sources.scibooks import SciBookSettings, SciBooksRecipe
from tests.faults.rss import MAX_RSS_BYTES, run_measured
from tests.fixed import save_pdf

REPO = Path(__file__).resolve().parents[2]


def flow_env(api: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "PREFECT_API_URL": api}


def errors(out: Path) -> list[tuple[str, str]]:
    _, rows = Manifest.for_output(out).query("SELECT reason, record FROM errors ORDER BY record")
    return [(reason, record) for reason, record in rows]


def docs_kept(out: Path) -> int:
    _, rows = Manifest.for_output(out).query("SELECT sum(docs_kept) FROM latest_inputs")
    return int(rows[0][0])


# -- PDF ------------------------------------------------------------------------------------
def huge_page_pdf(path: Path) -> Path:
    """One 14,400 x 14,400 pt page (the largest PDF allows) holding only a small picture: a "scan"."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument.new()
    scratch = pdfium.PdfDocument.new()
    bitmap = scratch.new_page(100, 100).render(scale=1, grayscale=True)
    page = pdf.new_page(14_400, 14_400)
    image = pdfium.PdfImage.new(pdf)
    image.set_bitmap(bitmap)
    image.set_matrix(pdfium.PdfMatrix().scale(14_400, 14_400))
    page.insert_obj(image)
    page.gen_content()
    save_pdf(pdf, path)
    pdf.close()
    scratch.close()
    return path


def _text_page(writer: object, content: bytes) -> None:
    """A US-letter page whose content stream (Helvetica text operators) is flate-compressed."""
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    page = writer.add_blank_page(612, 792)  # type: ignore[attr-defined]
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    fonts = DictionaryObject({NameObject("/F1"): writer._add_object(font)})  # type: ignore[attr-defined]
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
    stream = DecodedStreamObject()
    stream.set_data(content)
    page[NameObject("/Contents")] = writer._add_object(stream.flate_encode(level=9))  # type: ignore[attr-defined]


def _many_chars(lines: int) -> bytes:
    """``lines`` text lines of 1,000 characters each, 1 pt apart."""
    return b"BT /F1 1 Tf 10 780 Td\n" + (b"(" + b"word " * 200 + b") Tj 0 -1 Td\n") * lines + b"ET\n"


def _prose_page() -> bytes:
    lines = wrap(prose(2, 14), 80)
    shown = b"".join(b"(" + line.encode() + b") Tj 0 -14 Td\n" for line in lines)
    return b"BT /F1 10 Tf 60 740 Td\n" + shown + b"ET\n"


def text_bomb_pdf(path: Path) -> Path:
    """Page 1: 20 M characters (51 KB compressed); page 2: 1.2 M characters; page 3: ordinary prose."""
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter()
    _text_page(writer, _many_chars(20_000))
    _text_page(writer, _many_chars(1_200))
    _text_page(writer, _prose_page())
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def test_pdf_bombs_are_page_drops_under_2_gb(prefect_api_url: str, tmp_path: Path) -> None:
    good = tmp_path / "paper.pdf"
    write_sample_pdf(good, scanned_page=False)
    huge = huge_page_pdf(tmp_path / "poster.pdf")
    bomb = text_bomb_pdf(tmp_path / "bomb.pdf")
    assert bomb.stat().st_size < 200_000
    out = tmp_path / "out"
    run = run_measured([sys.executable, "-m", "flows.science_books", "--inputs", str(good), "--inputs", str(huge),
                        "--inputs", str(bomb), "--out", str(out), "--runner", "sequential"],
                       cwd=tmp_path, env=flow_env(prefect_api_url), timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.peak_rss_bytes <= MAX_RSS_BYTES, f"peak RSS {run.peak_rss_bytes / 2**30:.2f} GiB"
    found = errors(out)
    assert ("page_too_large", f"{huge} page 1") in found  # the pixel cap, before any rendering
    assert ("page_too_large", f"{bomb} page 1") in found  # pdfium out of the worker's memory bound
    assert ("page_too_large", f"{bomb} page 2") in found  # over max_page_chars
    assert ("no_text", str(huge)) in found
    assert docs_kept(out) == 2  # the paper, and the bomb's third page


def test_pixel_cap_is_decided_before_rendering(tmp_path: Path) -> None:
    """In process, without tesseract or a worker: the page's size alone decides."""
    pages = [p for p in pdf_text.pages_in_process(huge_page_pdf(tmp_path / "poster.pdf"),
                                                  pdf_text.PdfSettings(isolate=False))
             if isinstance(p, pdf_text.PageText)]
    assert [(p.drop, p.detail) for p in pages] == [
        ("page_too_large", "no usable text layer; rendering it: 60,000 x 60,000 pixels at 300 dpi "
                           "(limit 40,000,000 pixels)")]


def test_document_text_cap_stops_the_file_and_the_worker(tmp_path: Path) -> None:
    """A PDF over ``max_document_chars`` is one drop; the shared worker, stopped mid-file, serves the next file."""
    paper = tmp_path / "paper.pdf"
    write_sample_pdf(paper, scanned_page=False)
    capped = SciBooksRecipe(SciBookSettings(pdf=pdf_text.PdfSettings(max_document_chars=2_000), language_id=False))
    records = list(capped.read(InputSpec(str(paper), paper, paper.name)))
    assert [(type(r).__name__, getattr(r, "reason", None), getattr(r, "record", None)) for r in records] == [
        ("Drop", "text_too_large", f"{paper} page 2")]
    again = list(SciBooksRecipe(SciBookSettings(language_id=False)).read(InputSpec(str(paper), paper, paper.name)))
    assert len(again) == 1 and isinstance(again[0], Document) and again[0].meta["text_pages"] == 3


def test_epub_chapter_over_the_helper_memory_bound_is_one_chapter_drop(tmp_path: Path) -> None:
    """A chapter of 1.5 M tiny paragraphs (12 MB, inside the zip bounds) against a 256 MiB helper bound."""
    book = tmp_path / "wide.epub"
    write_sample_epub3(book)
    wide = tmp_path / "wide2.epub"
    with zipfile.ZipFile(book) as source, zipfile.ZipFile(wide, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith("ch2.xhtml"):
                data = data.replace(b"</body>", b"<p>a</p>" * 1_500_000 + b"</body>", 1)
            target.writestr(info, data)
    result = read_epub(wide, EpubSettings(chapter_memory_bytes=256 << 20, max_ratio=1e6))
    assert [(d.reason, d.name) for d in result.dropped] == [("record_too_large", "OEBPS/text/ch2.xhtml")]
    assert result.chapters == 1 and "Chapter One" in result.text


# -- PMC ------------------------------------------------------------------------------------
def gzip_bomb(gibibytes: int) -> bytes:
    """A gzip member that inflates to ``gibibytes`` GiB of zeros (about 1 KB per MiB compressed).

    Each MiB is compressed after a full flush, so every block after the first is the same bytes
    and the member is built without compressing gigabytes.
    """
    zeros = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    return head + block * ((gibibytes << 10) - 2) + compressor.flush()


def test_pmc_gzip_bomb_is_one_drop_under_2_gb(prefect_api_url: str, tmp_path: Path) -> None:
    bomb = gzip_bomb(4)
    assert len(bomb) < 8 << 20
    package = write_package(tmp_path / "oa_comm_xml.PMC001xxxxxx.baseline.tar.gz", {
        "PMC1/PMC1.nxml": jats_article("1", "Stable schemes for heat flow"),
        "PMC2/PMC2.nxml.gz": bomb,
        "PMC3/PMC3.nxml": jats_article("3", "Implicit solvers for stiff systems"),
    })
    out = tmp_path / "out"
    run = run_measured([sys.executable, "-m", "flows.pubmed", "--central", str(package), "--out", str(out),
                        "--runner", "sequential"], cwd=tmp_path, env=flow_env(prefect_api_url), timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.peak_rss_bytes <= MAX_RSS_BYTES, f"peak RSS {run.peak_rss_bytes / 2**30:.2f} GiB"
    assert errors(out) == [("too_large", f"{package.name}:PMC2/PMC2.nxml.gz")]
    assert docs_kept(out) == 2


def test_article_over_the_helper_memory_bound_is_one_drop(tmp_path: Path) -> None:
    """An article that fits ``max_article_bytes`` but whose tree does not fit the helper's address space."""
    wide = jats_article("2", "Many paragraphs").replace(b"</body>", b"<p>a</p>" * 1_500_000 + b"</body>", 1)
    package = write_package(tmp_path / "pkg.tar.gz", {
        "PMC1.nxml": jats_article("1", "Stable schemes for heat flow"), "PMC2.nxml": wide,
        "PMC3.nxml": jats_article("3", "Implicit solvers for stiff systems")})
    records = list(iter_central(package, CentralSettings(max_article_memory=256 << 20)))
    assert [type(r).__name__ for r in records] == ["Document", "Drop", "Document"]
    drop = records[1]
    assert isinstance(drop, Drop) and drop.reason == "record_too_large" and drop.record == "pkg.tar.gz:PMC2.nxml"


def test_bounded_gunzip() -> None:
    text = b"<article>" + b"x" * 5000 + b"</article>"
    two_members = zlib.compress(text[:100], wbits=31) + zlib.compress(text[100:], wbits=31)
    assert gunzip_bounded(two_members, len(text)) == text
    with pytest.raises(ValueError, match=f"more than {len(text) - 1:,} bytes"):
        gunzip_bounded(two_members, len(text) - 1)
    with pytest.raises(EOFError):
        gunzip_bounded(two_members[:-20], len(text))
