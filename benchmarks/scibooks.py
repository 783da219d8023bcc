"""Science books benchmark: PDF pages/s per core (full path vs bare pypdfium2 vs other libraries), OCR pages/s, CER, RSS.

    nice -n 10 .venv/bin/python benchmarks/scibooks.py --pdfs ../shared/realdata/scibooks/pdf/*.pdf
    nice -n 10 .venv/bin/python benchmarks/scibooks.py --pdfs ... --memory-pages 2000 --ocr-pages 2

Every number is CPU seconds of this process and its children (``resource.getrusage``, psutil for the live worker),
so "per core" holds on a busy machine. The pypdfium2 loops run in ``--repeat`` interleaved rounds
(one round = each loop once over all files) and each ratio to the bare loop is taken within a
round, then reported as min/median/max: a busy machine's load changes between minutes, and
ratios of timings taken minutes apart moved by +-15%. The slow peers run once. Loops compared,
on the same files:

* ``bare_pypdfium2``: open, for each page get_textpage + get_text_range, close (the floor);
* ``full_in_process``: :mod:`sources.formats.pdf_text` without the worker (layout, headers, hyphens);
* ``full_isolated``: the product path, pages extracted in the time-bounded worker process;
* ``pdfminer.six`` (``extract_text``) and ``pypdf`` (``page.extract_text``) when installed
  (``pip install pdfminer.six pypdf``; not project dependencies).

``--ocr-pages N`` renders the first N text pages of the first PDF at 300 dpi, OCRs them with
tesseract and reports pages/s and the character error rate against the text layer.
``--memory-pages N`` builds an N-page PDF (pages of the inputs repeated) and reports the peak RSS
of the worker and of the caller while reading it.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sources.formats import pdf_text
from sources.scibooks import SciBookSettings, read_pdf


def cpu_seconds() -> float:
    """This process, its reaped children (tesseract) and its live ones (the PDF worker)."""
    import psutil

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    live = sum(sum(c.cpu_times()[:2]) for c in psutil.Process().children(recursive=True))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + live


def bare_pypdfium2(path: Path) -> int:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    for index in range(len(document)):
        page = document[index]
        textpage = page.get_textpage()
        textpage.get_text_range()
        textpage.close()
        page.close()
    count = len(document)
    document.close()
    return count


def full(path: Path, isolate: bool) -> int:
    from core.document import Document, InputSpec

    settings = SciBookSettings(pdf=pdf_text.PdfSettings(isolate=isolate, ocr="off"))
    records = list(read_pdf(InputSpec(str(path), path, path.name), settings, "bench"))
    doc = records[-1]
    assert isinstance(doc, Document)
    return int(doc.meta["pages"])


def pdfminer(path: Path) -> int:
    from pdfminer.high_level import extract_text
    from pdfminer.pdfpage import PDFPage

    extract_text(str(path))
    with path.open("rb") as handle:
        return sum(1 for _ in PDFPage.get_pages(handle))


def pypdf_loop(path: Path) -> int:
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    for page in reader.pages:
        page.extract_text()
    return len(reader.pages)


def rate(loop: Callable[[Path], int], paths: list[Path]) -> float:
    """Pages per CPU second of one pass of ``loop`` over ``paths``."""
    start = cpu_seconds()
    pages = sum(loop(p) for p in paths)
    return pages / max(cpu_seconds() - start, 1e-9)


def _mmm(values: list[float], digits: int = 1) -> dict[str, float]:
    return {"min": round(min(values), digits), "median": round(statistics.median(values), digits),
            "max": round(max(values), digits)}


def measure_interleaved(loops: dict[str, Callable[[Path], int]], paths: list[Path], repeat: int
                        ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Rates of every loop and their ratios to the first, from ``repeat`` interleaved rounds."""
    rounds = [{name: rate(loop, paths) for name, loop in loops.items()} for _ in range(repeat)]
    first = next(iter(loops))
    rates = {name: _mmm([r[name] for r in rounds]) for name in loops}
    ratios = {name: _mmm([r[name] / r[first] for r in rounds], 2) for name in loops}
    for name in list(loops)[1:]:
        print("RESULT " + json.dumps({"metric": f"{name} vs {first}", "values": [r[name] / r[first] for r in rounds]}))
    return rates, ratios


def ocr_benchmark(path: Path, pages: int) -> dict[str, object]:
    import pypdfium2 as pdfium

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "sources"))
    from test_scibooks import cer, squash  # type: ignore[import-not-found]

    settings = pdf_text.PdfSettings(isolate=False)
    document = pdfium.PdfDocument(str(path))
    rates, seconds = [], 0.0
    for index in range(min(pages, len(document))):
        reference = squash(" ".join(ln.text for ln in pdf_text.extract_page(document, index, settings).lines))
        page = document[index]
        start = time.perf_counter()
        gray, width, height = pdf_text.render_gray(page, settings.ocr_dpi)
        text = pdf_text.ocr_image(gray, width, height, settings)
        seconds += time.perf_counter() - start
        page.close()
        rates.append(round(cer(squash(pdf_text.clean_text(text)), squash(pdf_text.clean_text(reference.replace("\x02", "-")))), 4))
    document.close()
    return {"pages": len(rates), "pages_per_s_wall": round(len(rates) / seconds, 3), "cer_per_page": rates}


def memory_benchmark(paths: list[Path], pages: int) -> dict[str, object]:
    import pypdfium2 as pdfium

    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.pdf"
        out = pdfium.PdfDocument.new()
        while len(out) < pages:
            for path in paths:
                source = pdfium.PdfDocument(str(path))
                out.import_pages(source)
                source.close()
        out.save(str(big))
        out.close()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        worker = pdf_text.PdfWorker()
        count = 0
        chars = 0
        items = [i for i in worker.pages(big, pdf_text.PdfSettings(ocr="off")) if isinstance(i, pdf_text.PageText)]
        count = len(items)
        text = pdf_text.assemble(items).text
        chars = len(text)
        worker.close()
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"pages": count, "text_mb": round(chars / 1e6, 1), "caller_peak_rss_mb": round(after / 1024, 1),
            "caller_rss_growth_mb": round((after - before) / 1024, 1), "worker_peak_rss_mb": round(child / 1024, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdfs", nargs="+", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds of the pypdfium2 loops")
    parser.add_argument("--ocr-pages", type=int, default=0)
    parser.add_argument("--memory-pages", type=int, default=0)
    args = parser.parse_args(argv)
    results: dict[str, object] = {}
    loops: dict[str, Callable[[Path], int]] = {
        "bare_pypdfium2": bare_pypdfium2,
        "full_in_process": lambda p: full(p, isolate=False),
        "full_isolated": lambda p: full(p, isolate=True),
    }
    peers: dict[str, Callable[[Path], int]] = {}
    for name, module, loop in (("pdfminer.six", "pdfminer", pdfminer), ("pypdf", "pypdf", pypdf_loop)):
        try:
            __import__(module)
            peers[name] = loop
        except ImportError:
            results[name] = "not installed"
    full(args.pdfs[0], isolate=True)  # start the worker outside the timings
    rates, ratios = measure_interleaved(loops, args.pdfs, args.repeat)
    results.update(rates)
    bare = rates["bare_pypdfium2"]["median"]
    for name, peer in peers.items():  # slow: one pass, compared with the bare loop's median
        results[name] = round(rate(peer, args.pdfs), 1)
        ratios[name] = {"vs_median_bare": round(float(results[name]) / bare, 3)}  # type: ignore[arg-type]
    results["ratios_vs_bare"] = ratios
    if args.ocr_pages:
        results["ocr"] = ocr_benchmark(args.pdfs[0], args.ocr_pages) if pdf_text.tesseract_command() else "no tesseract"
    if args.memory_pages:
        results["memory"] = memory_benchmark(args.pdfs, args.memory_pages)
    pdf_text.shared_worker().close()
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
