"""Per-record cost of the time and size bounds (issue 11.5) on real-sized records, in us per record.

    nice -n 10 python benchmarks/record_bounds.py            # real samples from ../shared/realdata
    nice -n 10 python benchmarks/record_bounds.py --rounds 5

For each bounded cleaner, the same records are cleaned directly (the unbounded function, in this
process) and through the bound as the readers use it, with a warm helper (its start-up, paid
once per worker thread, is printed separately). Costs are CPU time, this process's plus the
helper processes' (from ``/proc/<pid>/stat``), so a helper's work is not hidden and a loaded
machine disturbs the figures less than wall time would; each measurement repeats its batch for
at least 0.5 s of CPU, and the best of ``--rounds`` is kept. "overhead" is bounded minus direct,
per record. Records: the real Project Gutenberg books, EPUB chapters (Debian Live
manual, Ubuntu packaging guide), MEDLINE citations (``medline16n0902.xml.gz``), C4/dolma web
pages and the mini-Pile shard from ``../shared/realdata``; without that folder the script says so
and stops (it measures real records only).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from core.bounded import BoundedCleaner
from core.document import Document
from core.filters.c4_rules import C4Rules, clean_page, count_sentences
from core.filters.ccnet import tidy_lines
from core.filters.record_bound import TextBound
from core.helper_process import HelperSlot, thread_helpers
from core.pile_format import iter_pile
from sources import gutenberg
from sources.formats import epub, medline

REALDATA = Path(os.environ.get("KINDA_REALDATA", Path(__file__).resolve().parents[2] / "shared" / "realdata"))


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a live process, from ``/proc``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_now() -> float:
    """This process's CPU time plus that of this thread's bounded helpers."""
    total = time.process_time()
    for slot in thread_helpers():
        if isinstance(slot, HelperSlot) and slot.helper is not None:
            total += _proc_cpu(slot.helper.process.pid)
    return total


def best(rounds: int, run: Callable[[], object]) -> float:
    """The least disturbed CPU time of one ``run()`` (each round repeats it for >= 0.5 s of CPU)."""
    times = []
    for _ in range(rounds):
        started, calls = cpu_now(), 0
        while calls == 0 or cpu_now() - started < 0.5:
            run()
            calls += 1
        times.append((cpu_now() - started) / calls)
    return min(times)


def report(name: str, count: int, direct: float, bounded: float, note: str = "") -> None:
    per_direct, per_bounded = 1e6 * direct / count, 1e6 * bounded / count
    print(f"{name:34} {count:7,} {per_direct:12.1f} {per_bounded:12.1f} {per_bounded - per_direct:10.1f} "
          f"{100 * (bounded - direct) / direct:7.1f}%  {note}")


def warm(cleaner: BoundedCleaner[Any], *args: Any) -> float:
    """Start a cleaner's helper; its start-up time (s)."""
    started = time.perf_counter()
    cleaner.run("warm-up", *args)
    return time.perf_counter() - started


def bench_books(rounds: int) -> None:
    books = sorted((REALDATA / "books").glob("*.txt"))
    settings = gutenberg.BookSettings()
    cleaner = gutenberg.book_cleaner(settings)
    start = warm(cleaner, books[0], settings, "x")
    direct = best(rounds, lambda: [gutenberg.read_book(b, settings, "x") for b in books])
    bounded = best(rounds, lambda: [gutenberg.read_book_bounded(cleaner, b, settings, "x") for b in books])
    size = sum(b.stat().st_size for b in books) / len(books) / 1e3
    report("gutenberg book (helper, every book)", len(books), direct, bounded,
           f"avg {size:.0f} KB; helper start {1e3 * start:.0f} ms")


def _chapters() -> list[tuple[str, bytes]]:
    found = []
    settings = epub.EpubSettings()
    for path in sorted((REALDATA / "scibooks" / "epub").glob("*.epub")):
        book = epub.BoundedZip(path, settings)
        for item in epub.read_package(book, settings, epub.EpubText(text="")):
            found.append((item.name, book.read(item.name)))
        book.close()
    return found


def bench_epub(rounds: int) -> None:
    chapters = _chapters()
    cleaner = epub.chapter_cleaner(epub.EpubSettings())
    start = warm(cleaner, chapters[0][1], chapters[0][0])
    direct = best(rounds, lambda: [epub.xhtml_blocks(data, name) for name, data in chapters])
    bounded = best(rounds, lambda: [cleaner.run(name, data, name) for name, data in chapters])
    size = sum(len(d) for _, d in chapters) / len(chapters) / 1e3
    report("epub chapter (helper, every one)", len(chapters), direct, bounded,
           f"avg {size:.0f} KB; helper start {1e3 * start:.0f} ms")


def bench_medline(rounds: int) -> None:
    path = REALDATA / "pubmed" / "baseline" / "medline16n0902.xml.gz"
    count = sum(1 for _ in medline.iter_medline(path, require_abstract=False))
    inline = best(rounds, lambda: list(medline.iter_medline(path, require_abstract=False)))
    forced = medline.CitationBounds(inline_bytes=-1)  # every citation through the helper
    list(medline.iter_medline(path, require_abstract=False, bounds=forced))  # warm the shared helper
    helper = best(rounds, lambda: list(medline.iter_medline(path, require_abstract=False, bounds=forced)))
    reads = (path.stat().st_size * 8 // 32768) + 1  # lxml reads ~32 KiB of XML per read() call (~8x the .gz)
    print(f"{'medline citation, default':34} {count:7,} {1e6 * inline / count:12.1f} {'(inline)':>12} "
          f"{'':10} {'':8}  all real citations are under inline_bytes: the bound costs a counted "
          f"read() per 32 KiB (~{reads / count:.2f} per citation)")
    report("medline citation, if via helper", count, inline, helper, "what the helper would cost per citation")


def _pages() -> list[str]:
    texts: list[str] = []
    for path in sorted((REALDATA / "c4").glob("*.json*.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            texts.extend(json.loads(line)["text"] for line in lines if line.strip())
    return texts


def _direct(func: Callable[..., Any], args: tuple[Any, ...], docs: list[Document]) -> list[Any]:
    return [func(d.text, *args) for d in docs]


def _bounded(bound: TextBound[Any], args: tuple[Any, ...], docs: list[Document]) -> list[Any]:
    return [bound.run(d, d.text, *args) for d in docs]


def bench_filters(rounds: int) -> None:
    pages = _pages()
    docs = [Document(f"d{i}", text, "c4") for i, text in enumerate(pages)]
    rules = C4Rules()
    steps: Sequence[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
        ("c4 clean_page", clean_page, (rules,)), ("ccnet tidy_lines", tidy_lines, ()),
        ("c4 count_sentences", count_sentences, ())]
    for name, func, args in steps:
        inline: TextBound[Any] = TextBound(func)
        forced: TextBound[Any] = TextBound(func, inline_below=-1)
        forced.run(docs[0], docs[0].text, *args)  # warm
        direct = best(rounds, functools.partial(_direct, func, args, docs))
        bounded = best(rounds, functools.partial(_bounded, inline, args, docs))
        helper = best(rounds, functools.partial(_bounded, forced, args, docs))
        report(f"{name} (as used)", len(docs), direct, bounded, f"{sum(len(d.text) > 65536 for d in docs)} pages "
               "over 64 K chars go to the helper")
        report(f"{name} (if all via helper)", len(docs), direct, helper, "")


def _old_raw_lines(path: Path) -> list[bytes]:
    """The Pile line splitter before the bound (pieces joined whatever their size), for comparison."""
    from core.compressed import zstd_chunks

    out: list[bytes] = []
    pending: list[bytes] = []
    for block in zstd_chunks(path, read_size=1 << 20):
        if b"\n" not in block:
            pending.append(block)
            continue
        first, *lines, rest = block.split(b"\n")
        out.append(b"".join([*pending, first]))
        out.extend(lines)
        pending = [rest]
    if any(pending):
        out.append(b"".join(pending))
    return out


def bench_pile(rounds: int) -> None:
    from core import pile_format

    path = REALDATA / "pile" / "mini-pile-v1-format.DERIVED.jsonl.zst"
    count = len(_old_raw_lines(path))
    direct = best(rounds, lambda: _old_raw_lines(path))
    bounded = best(rounds, lambda: list(pile_format._raw_lines(path)))
    report("pile line split (size bound)", count, direct, bounded, "line splitting only")
    whole = best(rounds, lambda: list(iter_pile(path)))
    print(f"{'pile line, whole iter_pile':34} {count:7,} {1e6 * whole / count:12.1f}  (for scale)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not REALDATA.is_dir():
        raise SystemExit(f"real-data samples not found at {REALDATA} (set KINDA_REALDATA)")
    print(f"best of {args.rounds} rounds; us per record\n")
    print(f"{'cleaner':34} {'records':>7} {'direct us':>12} {'bounded us':>12} {'overhead':>10} {'':>8}")
    for bench in (bench_books, bench_epub, bench_medline, bench_filters, bench_pile):
        bench(args.rounds)


if __name__ == "__main__":
    main()
