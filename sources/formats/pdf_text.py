"""PDF to text for books and papers: pdfium's text layer in reading order, OCR where there is none.

Library: pypdfium2 (Apache-2.0/BSD-3; the PDFium engine of Chrome). Measured on the real sample
PDFs it extracts a text layer 10-30x faster than pdfminer.six and pypdf (``benchmarks/scibooks.py``,
``docs/science.md``); PyMuPDF is AGPL and therefore not an option for the product.

Per page (in a worker process, see below):

1. pdfium's text in content-stream order, as raw UTF-16 so that every character keeps its index
   (pypdfium2's ``get_text_range`` drops NULs, which shifts indices), split into lines at
   pdfium's generated ``\\r\\n``; each line gets a box from its first and last visible character.
   pdfium marks a hyphen it judges to be line-end hyphenation as ``\\x02``.
2. Reading order: a page is two-column when enough lines sit wholly in each half; lines that
   cross the gutter (titles, full-width figures, footers) cut the page into bands, and inside a
   band the left column is read before the right one. Single-column pages keep pdfium's order.
3. A page without a usable text layer (almost no characters, or mostly unmapped glyphs) is
   rendered and OCR'd with the ``tesseract`` command when it is installed; otherwise it becomes
   a counted drop ``ocr_unavailable``. An empty page without images is a ``blank_page`` drop.

Per document (in the calling process): running headers and footers (a line at the top or bottom
edge whose digit-free form recurs at the edge of >= 3 pages) and bare page numbers go; lines
become paragraphs (a break at a large vertical gap or after a short line); hyphenation at line
ends is joined; ligatures (ﬁ, ﬂ, ...) are spelt out.

Time bound: pdfium is C code that Python cannot interrupt, so pages are extracted in a worker
process (:mod:`core.helper_process`, the life cycle of every helper) that streams finished pages
in small batches (at most ``BATCH_SECONDS`` old); when no message comes for ``page_timeout_s``
the worker is killed, re-reads from the first page not received one page per message, and the
page that overruns again becomes a ``page_timeout`` drop; a fresh worker resumes at the next page.
The same isolation turns a crash inside pdfium into an ``extractor_crashed`` drop.
Memory: the worker holds one page at a time, under an address-space bound
(``worker_memory_bytes`` via :func:`core.helper_process.limit_address_space`): a page that needs more
(a flate-compressed content stream showing millions of characters) aborts pdfium, and the worker
names the page it was on (its mark), so that page alone is a ``page_too_large`` drop. Pages
over ``max_page_chars`` and OCR renderings over ``max_ocr_pixels`` (checked before rendering) are
``page_too_large`` too. The caller holds the document's lines (about three times the text size,
at most ``max_document_chars``), so RSS is bounded by a constant plus the size of one book's text.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import math
import operator
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import time
import unicodedata
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from core.helper_process import (
    Channel,
    HelperEnded,
    HelperProcess,
    HelperSlot,
    HelperTimeout,
    address_space_in_use,
    limit_address_space,
    thread_helper,
)

LIGATURES = {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st", "Ĳ": "IJ", "ĳ": "ij"}
_LIGATURE_RE = re.compile("[" + "".join(LIGATURES) + "]")
SOFT_HYPHEN = "\x02"
_PAGE_NUMBER = re.compile(r"^\W*(?:page\s+)?(?:\d{1,4}|[ivxlcdm]{1,7})(?:\s+(?:of|/)\s+\d{1,4})?\W*$", re.I)
_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
#: Share of a page's height that counts as its top or bottom edge (where running headers live).
EDGE_SHARE = 0.12
#: A header/footer candidate must recur at the edge of this many pages.
HEADER_MIN_PAGES = 3


@dataclass(frozen=True)
class PdfSettings:
    """How PDFs are read (defaults in ``configs/science_books.yaml``)."""

    page_timeout_s: float = 20.0
    ocr: str = "auto"  # auto: OCR when tesseract is installed | off: never (ocr_disabled drops)
    ocr_languages: str = "eng"
    ocr_dpi: int = 300
    ocr_timeout_s: float = 120.0
    min_page_chars: int = 16
    max_page_garbage: float = 0.3
    max_pages: int = 10_000
    #: A page rendered for OCR larger than this (pixels at ``ocr_dpi``) is a ``page_too_large`` drop,
    #: decided before rendering: a 14,400 pt page at 300 dpi is 3.6 G pixels. 40 M is A2 at 300 dpi.
    max_ocr_pixels: int = 40_000_000
    #: A page whose text layer has more characters is a ``page_too_large`` drop (a dense real page has
    #: ~10 K; a flate-compressed content stream of 51 KB held 20 M, 3.2 GB in pdfium's text page).
    max_page_chars: int = 1_000_000
    #: A PDF with more text than this is a ``text_too_large`` drop, read no further: the caller holds a
    #: book's lines (~15x its text) until its running headers are known. 40 M is ten Bibles.
    max_document_chars: int = 40_000_000
    #: Address space the worker process may add to what it maps once started (its imports), through
    #: ``core.helper_process.limit_address_space``: a
    #: page that needs more aborts pdfium and becomes a ``page_too_large`` drop, not a machine out of memory.
    worker_memory_bytes: int = 1 << 30
    isolate: bool = True  # False: extract in this process (no time or memory bound; benchmarks/debugging)


class Line(NamedTuple):
    """A line of text with its box (PDF points, origin bottom-left) and its column (0, 1, or -1).

    A named tuple, not a dataclass: pages have ~50 lines and this is the hot path.
    """

    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    column: int = -1


@dataclass(frozen=True)
class PageText:
    """One page's outcome: lines in reading order, or the reason it yielded none."""

    index: int
    lines: tuple[Line, ...] = ()
    width: float = 0.0
    height: float = 0.0
    method: str = "text"  # text | ocr
    drop: str | None = None
    detail: str = ""
    columns: int = 1


@dataclass
class PdfInfo:
    """What the file says about itself, and what went wrong opening it."""

    pages: int = 0
    metadata: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    detail: str = ""


# -- per page (runs inside the worker) --------------------------------------------------------
_GARBAGE = re.compile("[\x00\x01\x03-\x1f\x7f-\x9f\ufffd\ue000-\uf8ff]")


def visible_chars(text: str) -> str:
    """The text without whitespace and pdfium's soft-hyphen marks."""
    return "".join(text.split()).replace(SOFT_HYPHEN, "")


#: The characters of _GARBAGE that ``str.split()`` does not treat as whitespace (it does for
#: \t \n \v \f \r, \x1c-\x1f and \x85): the garbage that :func:`visible_chars` keeps.
_VISIBLE_GARBAGE = re.compile("[\x00\x01\x03-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\ufffd\ue000-\uf8ff]")


def has_text_layer(text: str, settings: PdfSettings) -> bool:
    """``len(visible) >= min_page_chars and garbage_share(visible) <= max_page_garbage``, cheaply.

    A page without garbage characters (nearly all) has a share of 0, and a prefix of it with
    enough visible characters proves the count, so its whole visible text is never built.
    """
    if settings.max_page_garbage >= 0 and _VISIBLE_GARBAGE.search(text) is None:
        prefix = 4 * settings.min_page_chars + 64
        if len(text) > prefix and len(visible_chars(text[:prefix])) >= settings.min_page_chars:
            return True
    visible = visible_chars(text)
    return len(visible) >= settings.min_page_chars and garbage_share(visible) <= settings.max_page_garbage


def garbage_share(visible: str) -> float:
    """Share of visible characters that are unmapped glyphs (NUL, U+FFFD, private use, controls)."""
    return len(_GARBAGE.findall(visible)) / len(visible) if visible else 0.0


def _raw_text(textpage: Any, count: int) -> str:
    """All characters of a text page, one Python character per pdfium character index."""
    import pypdfium2.raw as raw

    buffer = (ctypes.c_ushort * (2 * count + 1))()
    written = raw.FPDFText_GetText(textpage, 0, count, buffer)
    data = ctypes.string_at(buffer, max(0, written - 1) * 2)
    return data.decode("utf-16-le", errors="surrogatepass")  # pairs combine: one str char per pdfium char


_BLANK = "".join(chr(c) for c in range(33)) + SOFT_HYPHEN
#: ``FPDFText_GetCharBox`` called through a prototype of plain addresses: pypdfium2's binding
#: checks and converts typed pointers on every call, which made up a third of the per-line cost
#: (two calls per line, ~50 lines a page). Same C function, same results.
_CHAR_BOX_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                       ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_CHAR_BOX: list[Any] = []


def _char_box_function() -> Any:
    if not _CHAR_BOX:
        import pypdfium2.raw as raw

        _CHAR_BOX.append(_CHAR_BOX_PROTOTYPE(ctypes.cast(raw.FPDFText_GetCharBox, ctypes.c_void_p).value or 0))
    return _CHAR_BOX[0]


_QUAD = struct.Struct("4d")  # the char box, read in one call (ctypes array items one by one cost more)
_new_tuple = tuple.__new__  # builds a Line without the named tuple's Python-level __new__


class PageTooLargeError(ValueError):
    """A page over one of the size bounds (characters of its text layer, pixels of its rendering)."""


def _text_lines(textpage: Any, max_chars: int | None = None) -> list[Line]:
    """pdfium's lines (content order) with boxes from their first and last visible characters."""
    import pypdfium2.raw as raw

    count = raw.FPDFText_CountChars(textpage)
    if count <= 0:
        return []
    if max_chars is not None and count > max_chars:
        raise PageTooLargeError(f"{count:,} characters in the text layer (limit {max_chars:,})")
    text = _raw_text(textpage, count)
    box = (ctypes.c_double * 4)()  # left, right, bottom, top
    left = ctypes.addressof(box)
    right, bottom, top = left + 8, left + 16, left + 24
    char_box, page = _char_box_function(), ctypes.cast(textpage, ctypes.c_void_p).value
    unpack = _QUAD.unpack_from
    lines: list[Line] = []
    append, blank = lines.append, _BLANK
    start = 0
    for chunk in text.split("\r\n"):
        size = len(chunk)
        head = size - len(chunk.lstrip(blank))
        if head < size:
            char_box(page, start + head, left, right, bottom, top)
            x0, _, y_bottom, y_top = unpack(box)
            char_box(page, start + len(chunk.rstrip(blank)) - 1, left, right, bottom, top)
            _, x1, y_bottom2, y_top2 = unpack(box)
            append(_new_tuple(Line, (chunk, x0, x1 if x1 > x0 else x0, y_top if y_top > y_top2 else y_top2,
                                     y_bottom if y_bottom < y_bottom2 else y_bottom2, -1)))
        start += size + 2
    return lines


def order_columns(lines: Sequence[Line], width: float) -> tuple[list[Line], int]:
    """Reading order of a page's lines, and its column count (see the module docstring)."""
    if len(lines) < 10 or width <= 0:
        return list(lines), 1
    middle, tolerance = width / 2, width * 0.02
    low, high = middle - tolerance, middle + tolerance
    side = [0 if x1 <= high and x0 < low else 1 if x0 >= low and x1 > high else -1
            for _, x0, x1, _, _, _ in lines]
    # decide on lines of running text only: formula fragments sit anywhere on a page
    counts = [0, 0, 0]  # left, right, crossing (index -1)
    for ln, s in zip(lines, side, strict=True):
        if len(ln.text) >= 25:
            counts[s] += 1
    substantial = counts[0] + counts[1] + counts[2]
    if counts[0] < 5 or counts[1] < 5 or counts[-1] > 0.3 * substantial:
        return list(lines), 1
    cuts = [ln.top for ln, s in zip(lines, side, strict=True) if s == -1]
    keyed = []
    for index, (line, column) in enumerate(zip(lines, side, strict=True)):
        band = sum(1 for cut in cuts if cut > line.top + 0.5)  # gutter-crossing lines above this one
        # a crossing line ends its band: it comes after both columns of the text above it
        keyed.append(((band, column if column != -1 else 2, index), line._replace(column=column)))
    keyed.sort(key=lambda item: item[0])
    return [line for _, line in keyed], 2


def _image_count(page: Any) -> int:
    import pypdfium2.raw as raw

    count = raw.FPDFPage_CountObjects(page.raw)
    return sum(1 for i in range(count) if raw.FPDFPageObj_GetType(raw.FPDFPage_GetObject(page.raw, i)) == raw.FPDF_PAGEOBJ_IMAGE)


def tesseract_command() -> str | None:
    """The tesseract executable, if installed."""
    return shutil.which("tesseract")


def ocr_image(gray: bytes | bytearray, width: int, height: int, settings: PdfSettings, dpi: int | None = None,
              pgm: bool = False) -> str:
    """OCR an 8-bit grayscale image with the tesseract command; raises on failure or timeout.

    ``gray`` is the raw rows, or with ``pgm`` already a whole PGM file (:func:`render_pgm`), which
    spares a copy of a page-sized buffer.
    """
    command = tesseract_command()
    if command is None:
        raise FileNotFoundError("tesseract is not installed")
    image = gray if pgm else pgm_header(width, height) + gray
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    done = subprocess.run(
        [command, "stdin", "stdout", "-l", settings.ocr_languages, "--dpi", str(dpi or settings.ocr_dpi), "--psm", "3"],
        input=image, capture_output=True, timeout=settings.ocr_timeout_s, env=env, check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode("utf-8", "replace").strip()[-300:])
    return done.stdout.decode("utf-8", "replace")


def pgm_header(width: int, height: int) -> bytes:
    """The header of a binary 8-bit PGM image."""
    return f"P5 {width} {height} 255\n".encode()


def render_size(width_pt: float, height_pt: float, dpi: int) -> tuple[int, int]:
    """The pixel size of a page of ``width_pt`` x ``height_pt`` points rendered at ``dpi`` (as pdfium rounds)."""
    return max(1, math.ceil(width_pt * dpi / 72)), max(1, math.ceil(height_pt * dpi / 72))


def check_render_size(width_pt: float, height_pt: float, settings: PdfSettings) -> None:
    """Raise :class:`PageTooLargeError` when rendering the page for OCR would pass ``max_ocr_pixels``.

    Checked before anything is rendered: the bitmap of a 14,400 pt page at 300 dpi is 3.6 GB.
    """
    width, height = render_size(width_pt, height_pt, settings.ocr_dpi)
    if width * height > settings.max_ocr_pixels:
        raise PageTooLargeError(f"{width:,} x {height:,} pixels at {settings.ocr_dpi} dpi "
                                f"(limit {settings.max_ocr_pixels:,} pixels)")


def render_pgm(page: Any, dpi: int) -> tuple[bytearray, int, int]:
    """A page rendered to 8-bit grayscale at ``dpi`` as a whole PGM file: (file bytes, width, height).

    One copy of the pixels besides pdfium's bitmap (rows copied straight after the header).
    """
    bitmap = page.render(scale=dpi / 72, grayscale=True)
    try:
        width, height, stride = bitmap.width, bitmap.height, bitmap.stride
        image = bytearray(pgm_header(width, height))
        pixels = memoryview(bitmap.buffer).cast("B")
        if stride == width:
            image += pixels
        else:
            for row in range(height):
                image += pixels[row * stride: row * stride + width]
        return image, width, height
    finally:
        bitmap.close()


def render_gray(page: Any, dpi: int) -> tuple[bytes, int, int]:
    """A page rendered to 8-bit grayscale at ``dpi``: (rows without padding, width, height)."""
    image, width, height = render_pgm(page, dpi)
    return bytes(memoryview(image)[len(pgm_header(width, height)):]), width, height


def ocr_lines(text: str, height: float) -> tuple[Line, ...]:
    """OCR output as lines; without geometry, lines get evenly spaced positions down the page."""
    rows = [row for row in text.splitlines() if row.strip()]
    step = height / (len(rows) + 1) if rows else 0.0
    return tuple(Line(row, 0.0, 0.0, height - i * step, height - (i + 1) * step) for i, row in enumerate(rows))


def _page_lines(document: Any, index: int, max_chars: int | None = None) -> tuple[list[Line], float, float]:
    """A page's text lines and size, read through pdfium's raw page handles.

    No helper objects per page (pypdfium2's PdfPage/PdfTextPage each register a finalizer and
    check every call's pointer types): about 3% of a text page's CPU. The pages that need a
    rendering (OCR) open the helper page again.
    """
    import pypdfium2.raw as raw

    page = raw.FPDF_LoadPage(document.raw, index)
    if not page:
        raise RuntimeError(f"pdfium could not load page {index + 1}")
    try:
        width, height = raw.FPDF_GetPageWidthF(page), raw.FPDF_GetPageHeightF(page)
        textpage = raw.FPDFText_LoadPage(page)
        if not textpage:
            raise RuntimeError(f"pdfium could not read the text of page {index + 1}")
        try:
            return _text_lines(textpage, max_chars), width, height
        finally:
            raw.FPDFText_ClosePage(textpage)
    finally:
        raw.FPDF_ClosePage(page)


def extract_page(document: Any, index: int, settings: PdfSettings, notify: Any = None) -> PageText:
    """One page: text lines in reading order, OCR, or a drop reason."""
    try:
        lines, width, height = _page_lines(document, index, settings.max_page_chars)
    except PageTooLargeError as exc:
        return PageText(index, drop="page_too_large", detail=str(exc))
    text = "".join([ln.text for ln in lines])
    if has_text_layer(text, settings):
        ordered, columns = order_columns(lines, width)
        return PageText(index, tuple(ordered), width, height, columns=columns)
    page = document[index]
    try:
        visible = visible_chars(text)
        if not visible and _image_count(page) == 0:
            return PageText(index, drop="blank_page")
        if settings.ocr == "off":
            return PageText(index, drop="ocr_disabled", detail="page has no usable text layer")
        try:
            check_render_size(width, height, settings)
        except PageTooLargeError as exc:
            return PageText(index, drop="page_too_large", detail=f"no usable text layer; rendering it: {exc}")
        if tesseract_command() is None:
            return PageText(index, drop="ocr_unavailable", detail="no usable text layer and tesseract is not installed")
        if notify is not None:
            notify(index)
        image, w, h = render_pgm(page, settings.ocr_dpi)
        try:
            text = ocr_image(image, w, h, settings, pgm=True)
        except subprocess.TimeoutExpired:
            return PageText(index, drop="ocr_timeout", detail=f"tesseract took more than {settings.ocr_timeout_s:g}s")
        except (OSError, RuntimeError) as exc:
            return PageText(index, drop="ocr_failed", detail=f"{type(exc).__name__}: {exc}")
        ocr = ocr_lines(_LIGATURE_RE.sub(lambda m: LIGATURES[m.group()], text), height)
        if not ocr:
            return PageText(index, drop="ocr_empty", detail="tesseract found no text")
        return PageText(index, ocr, width, height, method="ocr")
    finally:
        page.close()


def open_pdf(path: Path) -> tuple[Any, PdfInfo]:
    """Open a PDF with pdfium; (document or None, info with the error reason if it failed)."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        message = str(exc)
        reason = "encrypted_pdf" if "password" in message.lower() else "broken_pdf"
        return None, PdfInfo(error=reason, detail=message)
    except (OSError, ValueError) as exc:
        return None, PdfInfo(error="broken_pdf", detail=f"{type(exc).__name__}: {exc}")
    try:
        metadata = {k.lower(): str(v) for k, v in document.get_metadata_dict(skip_empty=True).items()}
    except Exception:  # metadata is optional; a broken Info dict must not lose the text
        metadata = {}
    return document, PdfInfo(pages=len(document), metadata=metadata)


# -- the worker process -----------------------------------------------------------------------
#: The worker sends finished pages in batches at most this old (and at most BATCH_PAGES long;
#: at most a quarter of the page timeout): one message per page (a pickled PageText of ~50 named
#: tuples, a pipe write and a wake-up of the caller) cost the isolated path a fifth of its CPU.
BATCH_SECONDS = 0.2
BATCH_PAGES = 64
PackedPage = tuple[int, str, bytes, bytes, float, float, str, "str | None", str, int]


def pack_page(page: PageText) -> PackedPage:
    """A page as flat columns: its line texts as one string, their boxes and (lengths, columns) as arrays.

    Pickling and rebuilding ~50 line tuples per page was a third of what the isolated worker
    added to a page; a string and two byte arrays pickle at memcpy speed.
    """
    lines = page.lines
    texts = [ln[0] for ln in lines]
    boxes = array("d", [value for ln in lines for value in ln[1:5]])
    numbers = array("i", [len(text) for text in texts])
    numbers.extend(ln[5] for ln in lines)
    return (page.index, "".join(texts), boxes.tobytes(), numbers.tobytes(), page.width, page.height,
            page.method, page.drop, page.detail, page.columns)


_make_line = functools.partial(tuple.__new__, Line)  # Line._make without its Python-level frame


def unpack_page(packed: PackedPage) -> PageText:
    """The PageText that :func:`pack_page` packed."""
    index, joined, box_bytes, number_bytes, width, height, method, drop, detail, columns = packed
    boxes, numbers = array("d"), array("i")
    boxes.frombytes(box_bytes)
    numbers.frombytes(number_bytes)
    count = len(numbers) // 2
    ends = list(itertools.accumulate(numbers[:count]))
    texts = [joined[start:end] for start, end in zip([0, *ends], ends, strict=False)]
    lines = tuple(map(_make_line, zip(texts, boxes[0::4], boxes[1::4], boxes[2::4], boxes[3::4], numbers[count:],
                                      strict=True)))
    return PageText(index, lines, width, height, method, drop, detail, columns)


def _worker_main(conn: Channel) -> None:
    """Serve ("open", path, settings, first_page, batch_s, lost) requests: reply info, then batches of pages.

    ``batch_s`` 0 sends every page on its own (the caller asks for that after a timeout, so the
    page that hung is known exactly). The channel's mark holds the page being read, so the caller
    knows which page killed a worker that died; ``lost`` is that page's drop, sent in its place
    when the caller restarts the worker to re-read the pages it finished but never sent. The
    worker dies with the reader's process (:mod:`core.helper_process`).
    """
    import pypdfium2  # noqa: F401  (mapped before the baseline of the memory bound is taken)

    baseline = address_space_in_use()
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        _, path, settings, first, batch_s, lost = request
        conn.mark(-1)
        limit_address_space(baseline + settings.worker_memory_bytes)
        document, info = open_pdf(Path(path))
        conn.send(("info", info))
        if document is None:
            continue
        sender = _PageSender(conn, batch_s)
        try:
            for index in range(first, min(info.pages, settings.max_pages)):
                if lost is not None and index == lost.index:
                    sender.add(lost)
                    continue
                conn.mark(index)
                try:
                    result = extract_page(document, index, settings, sender.before_ocr)
                except MemoryError:
                    result = PageText(index, drop="page_too_large",
                                      detail=f"the page needed more than {settings.worker_memory_bytes:,} bytes of memory")
                except Exception as exc:  # a page pdfium cannot load is that page's drop, not the book's
                    result = PageText(index, drop="page_error", detail=f"{type(exc).__name__}: {exc}")
                sender.add(result)
            sender.flush()
            conn.send(("end", None))
        finally:
            document.close()


class _PageSender:
    """The worker's outgoing pages: a batch is sent when BATCH_PAGES long or ``batch_s`` old."""

    def __init__(self, conn: Channel, batch_s: float) -> None:
        self.conn, self.batch_s = conn, batch_s
        self.batch: list[PackedPage] = []
        self.oldest = 0.0

    def add(self, page: PageText) -> None:
        if not self.batch:
            self.oldest = time.monotonic()
        self.batch.append(pack_page(page))
        if len(self.batch) >= BATCH_PAGES or time.monotonic() - self.oldest >= self.batch_s:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            self.conn.send(("pages", tuple(self.batch)))
            self.batch.clear()

    def before_ocr(self, index: int) -> None:
        """Called before a page is OCR'd: pages stay in order, and the caller extends its wait."""
        self.flush()
        self.conn.send(("ocr", index))


def _lost_page(index: int, limit: float, exit_code: int | None, settings: PdfSettings) -> PageText:
    """The drop for a page the worker did not finish: past its time, out of its memory, or a crash.

    Under its address-space bound an allocation that fails inside pdfium aborts the worker
    (SIGABRT): the page is too large for the bound. (A ``MemoryError`` in Python is caught per
    page in the worker.)
    """
    if exit_code is None:
        return PageText(index, drop="page_timeout", detail=f"page took more than {limit:g}s")
    if exit_code == -signal.SIGABRT:
        return PageText(index, drop="page_too_large",
                        detail=f"the page needed more than the worker's {settings.worker_memory_bytes:,}-byte memory "
                               f"bound (exit {exit_code})")
    return PageText(index, drop="extractor_crashed", detail=f"the extractor process died (exit {exit_code})")


#: What the worker process runs.
WORKER = f"{__name__}:_worker_main"


class PdfWorker:
    """A worker process extracting pages; killed and restarted when a page overruns its time."""

    def __init__(self) -> None:
        self._slot = HelperSlot(WORKER, mark=True)

    def close(self) -> None:
        """Stop the worker (a new one starts on the next request)."""
        self._slot.kill()

    def _running(self) -> HelperProcess:
        helper, _ = self._slot.running()
        return helper

    def _exit_code(self) -> int | None:
        """The dead worker's exit code (negative: the signal that ended it), once it is reaped."""
        helper = self._slot.helper
        return helper.exit_code() if helper is not None else None

    def _current(self) -> int:
        """The page the worker was reading (its mark; -1 when none)."""
        helper = self._slot.helper
        return helper.marked if helper is not None else -1

    def _receive(self, timeout: float) -> tuple[str, Any] | None:
        helper = self._slot.helper
        assert helper is not None
        try:
            message: tuple[str, Any] = helper.receive(timeout)
            return message
        except HelperTimeout:
            return None
        except HelperEnded:
            return ("crashed", None)

    def pages(self, path: Path, settings: PdfSettings) -> Iterator[PdfInfo | PageText]:
        """The file's info, then every page's outcome in order (see :meth:`_pages`).

        A caller that stops early (a bound of its own) leaves the worker mid-file, its pipe full of
        pages no one will read: the worker is stopped then, and the next file starts a fresh one.
        """
        finished = False
        try:
            yield from self._pages(path, settings)
            finished = True
        finally:
            if not finished:
                self.close()

    def _pages(self, path: Path, settings: PdfSettings) -> Iterator[PdfInfo | PageText]:
        """The file's info, then every page's outcome in order; never hangs longer than the bounds.

        Pages come in batches (:data:`BATCH_SECONDS`), and the wait for a message is still
        ``page_timeout_s``. When it runs out (or the worker dies), pages the worker had finished
        but not yet sent die with it, so the caller restarts it at the first page it has not
        received, one page per message: the page that overruns again is the one dropped, with the
        exact bound (a hanging page costs two timeouts; no finished page is lost or blamed). A
        worker that dies names its page itself (``current``): that page is dropped at once and the
        pages before it are read again, so a page that exhausts the memory bound costs one crash.
        """
        first, info, lost = 0, None, None
        batch_s = min(BATCH_SECONDS, settings.page_timeout_s / 4)
        while True:
            with contextlib.suppress(HelperEnded):  # died between the check and the request: the reply says so
                self._running().send(("open", str(path), settings, first, batch_s, lost))
            lost = None
            reply = self._receive(settings.page_timeout_s + 30.0)  # first call pays the worker's start-up
            if reply is None or reply[0] != "info":
                self.close()
                yield PdfInfo(error="open_timeout" if reply is None else "extractor_crashed",
                              detail="pdfium did not open the file in time" if reply is None else "worker died")
                return
            if info is None:
                info = reply[1]
                yield info
            if info.error:
                return
            expected = first
            limit = settings.page_timeout_s
            while True:
                message = self._receive(limit)
                if message is not None and message[0] == "crashed" and self._current() >= expected:
                    exit_code, dead = self._exit_code(), self._current()
                    self.close()
                    lost, first = _lost_page(dead, limit, exit_code, settings), expected
                    if dead == expected:  # nothing finished and unsent: no need to start again here
                        yield lost
                        lost, first = None, expected + 1
                    break
                if message is None or message[0] == "crashed":
                    exit_code = self._exit_code() if message is not None else None
                    self.close()
                    if batch_s > 0:  # finished pages may have died in the batch: read them again singly
                        first, batch_s = expected, 0.0
                        break
                    yield _lost_page(expected, limit, exit_code, settings)
                    first = expected + 1
                    break
                kind, payload = message
                if kind == "ocr":
                    limit = settings.page_timeout_s + settings.ocr_timeout_s + 5.0
                    continue
                if kind == "end":
                    return
                limit = settings.page_timeout_s
                for packed in payload:
                    page = unpack_page(packed)
                    expected = page.index + 1
                    yield page
            if first >= min(info.pages, settings.max_pages):
                return


def pages_in_process(path: Path, settings: PdfSettings) -> Iterator[PdfInfo | PageText]:
    """Like :meth:`PdfWorker.pages` without the worker: no time bound (benchmarks, debugging)."""
    document, info = open_pdf(path)
    yield info
    if document is None:
        return
    try:
        for index in range(min(info.pages, settings.max_pages)):
            try:
                yield extract_page(document, index, settings)
            except Exception as exc:
                yield PageText(index, drop="page_error", detail=f"{type(exc).__name__}: {exc}")
    finally:
        document.close()


def shared_worker() -> PdfWorker:
    """One worker per thread of a process (:func:`core.helper_process.thread_helper`; recipes are
    pickled to tasks, the worker never is)."""
    return thread_helper(WORKER, PdfWorker)


# -- per document -----------------------------------------------------------------------------
def edge_key(text: str) -> str:
    """A running header's identity: lower case, digits and extra spaces gone."""
    return _SPACE.sub(" ", _DIGITS.sub("", text.lower())).strip(" .:-|")


def edge_lines(page: PageText) -> tuple[list[int], list[int]]:
    """Indexes of up to three top-edge and three bottom-edge lines of a text page (two-line footers above a page number)."""
    if not page.lines or page.height <= 0:
        return [], []
    tops = [ln.top for ln in page.lines]
    by_top = sorted(range(len(tops)), key=tops.__getitem__, reverse=True)  # stable: ties keep line order
    top = [i for i in by_top[:3] if page.lines[i].top >= page.height * (1 - EDGE_SHARE)]
    bottom = [i for i in by_top[::-1][:3] if page.lines[i].bottom <= page.height * EDGE_SHARE]
    return top, bottom


def running_lines(pages: Sequence[PageText], edges: Sequence[tuple[list[int], list[int]]] | None = None) -> set[str]:
    """Edge-line keys that recur on >= HEADER_MIN_PAGES pages (running headers and footers).

    ``edges``: each page's :func:`edge_lines`, when the caller has them already.
    """
    counts: Counter[str] = Counter()
    for number, page in enumerate(pages):
        top, bottom = edge_lines(page) if edges is None else edges[number]
        counts.update({edge_key(page.lines[i].text) for i in top + bottom} - {""})
    return {key for key, count in counts.items() if count >= HEADER_MIN_PAGES}


def strip_page_furniture(page: PageText, running: set[str], edges: tuple[list[int], list[int]] | None = None
                         ) -> tuple[list[Line], int]:
    """A page's lines without running headers/footers and page numbers; (lines, removed count)."""
    top, bottom = edge_lines(page) if edges is None else edges
    remove = {i for i in top + bottom
              if edge_key(page.lines[i].text) in running or _PAGE_NUMBER.match(page.lines[i].text.strip())}
    return [ln for i, ln in enumerate(page.lines) if i not in remove], len(remove)


def _join(previous: str, line: str) -> str:
    """Append a line to a paragraph, joining hyphenation at the line end."""
    if previous.endswith(SOFT_HYPHEN):
        return previous[:-1] + line
    if (previous.endswith("-") and len(previous) > 2 and previous[-2].isalpha() and previous[-3].isalpha()
            and line[:1].islower()):
        return previous[:-1] + line
    return f"{previous} {line}"


def paragraphs(lines: Sequence[Line], method: str) -> list[str]:
    """A page's lines as paragraphs: break at a large vertical gap, a column change, or after a short line."""
    if not lines:
        return []
    if method == "ocr":
        return _ocr_paragraphs(lines)
    tops = [ln.top for ln in lines]
    pitches = [gap for gap in map(operator.sub, tops, tops[1:]) if 0 < gap < 40]
    pitch = statistics.median(pitches) if pitches else 12.0
    right_edge: dict[int, float] = {}
    for ln in lines:
        right_edge[ln.column] = max(right_edge.get(ln.column, 0.0), ln.x1)
    out: list[str] = []
    current = ""
    big_gap, pitch_up = 1.6 * pitch, -pitch
    # the previous line's fields, unpacked once (named-tuple attribute reads were the loop's cost)
    prev_x0 = prev_x1 = prev_top = 0.0
    prev_column: int | None = None
    for raw_text, x0, x1, top, _, column in lines:
        text = raw_text.strip()
        if not text:
            continue
        if prev_column is None:
            current = text
        else:
            gap = prev_top - top
            edge = right_edge[prev_column]
            width = edge - (prev_x0 if prev_x0 < x0 else x0)
            short = prev_x1 < edge - 0.12 * (width if width > 1.0 else 1.0)
            last = current[-1]
            if column != prev_column or gap > big_gap or gap < pitch_up or (short and last != SOFT_HYPHEN):
                out.append(current)
                current = text
            elif last == SOFT_HYPHEN or last == "-":
                current = _join(current, text)
            else:  # _join's common case, inline
                current = f"{current} {text}"
        prev_x0, prev_x1, prev_top, prev_column = x0, x1, top, column
    if current:
        out.append(current)
    return out


def _ocr_paragraphs(lines: Sequence[Line]) -> list[str]:
    """OCR lines: tesseract already separates paragraphs by blank lines, which ocr_lines removed; join all."""
    out: list[str] = []
    current = ""
    for ln in lines:
        text = ln.text.strip()
        current = _join(current, text) if current else text
        if text.endswith((".", "!", "?", ":")) and len(text) < 60:
            out.append(current)
            current = ""
    if current:
        out.append(current)
    return out


def clean_text(text: str) -> str:
    """Ligatures spelt out, unmapped glyphs and control characters removed, NFC."""
    if text.isascii():  # most paragraphs: no ligature to spell out, and ASCII is already NFC
        return _CONTROL.sub("", text)
    text = _LIGATURE_RE.sub(lambda m: LIGATURES[m.group()], text)
    return unicodedata.normalize("NFC", _CONTROL.sub("", text))


def merge_continued(paras: list[str]) -> list[str]:
    """Rejoin a paragraph split by a column or page break (no sentence end, next starts lower-case)."""
    merged: list[str] = []
    for para in paras:
        if merged and not merged[-1].endswith((".", "!", "?", ":", ";")) and para[:1].islower():
            merged[-1] = _join(merged[-1], para)
        else:
            merged.append(para)
    return merged


@dataclass
class PdfDocumentText:
    """A whole PDF as text, with what was removed or dropped on the way."""

    text: str
    pages: int
    text_pages: int
    ocr_pages: int
    two_column_pages: int
    furniture_lines: int


def assemble(pages: Sequence[PageText]) -> PdfDocumentText:
    """The document's text from its usable pages (see the module docstring, per document)."""
    usable = [p for p in pages if p.drop is None]
    text_pages = [p for p in usable if p.method == "text"]
    edges = [edge_lines(p) for p in text_pages]  # once per page: running_lines and stripping both need them
    running = running_lines(text_pages, edges)
    paras: list[str] = []
    removed = 0
    text_page = 0
    for page in usable:
        if page.method == "text":
            lines, count = strip_page_furniture(page, running, edges[text_page])
            text_page += 1
        else:
            lines, count = list(page.lines), 0
        removed += count
        paras.extend(paragraphs(lines, page.method))
    # ASCII paragraphs need only the control characters removed: one pass over the whole text
    # (clean_text's other steps are per character or, for NFC, stop at the "\n\n" between paragraphs)
    text = _CONTROL.sub("", "\n\n".join(p if p.isascii() else clean_text(p) for p in merge_continued(paras)))
    text = "\n\n".join(p for p in (s.strip() for s in text.split("\n\n")) if p)
    return PdfDocumentText(
        text=text + "\n" if text else "",
        pages=len(pages),
        text_pages=sum(1 for p in usable if p.method == "text"),
        ocr_pages=sum(1 for p in usable if p.method == "ocr"),
        two_column_pages=sum(1 for p in usable if p.columns == 2),
        furniture_lines=removed,
    )

