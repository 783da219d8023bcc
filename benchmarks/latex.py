"""LaTeX cleaning throughput: our cleaner vs pylatexenc's LatexNodes2Text, side by side, one core.

    python benchmarks/latex.py                      # real samples from ../shared/realdata/latex if present
    python benchmarks/latex.py --synthetic 200 --repeat 3

Both get the same input per paper: the .tex files (the peer gets the main file with its
``\\input`` tree inlined, since it does not resolve files). Ours keeps LaTeX source, strips
comments, preamble and bibliography, and expands macros; the peer renders text (a different
job, but the only widely used Python LaTeX pass). Peak memory is tracemalloc's peak of Python
allocations during one pass.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tarfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sources.formats.latex import LatexOptions, clean_paper, decode_tex, inline_includes, strip_comments  # noqa: E402

Paper = dict[str, str]


def real_papers(root: Path) -> list[Paper]:
    """The real samples: two arXiv e-prints and the HoTT book."""
    papers: list[Paper] = []
    for archive in sorted(root.glob("*.tar.gz")):
        with tarfile.open(archive) as tar:
            papers.append({m.name.removeprefix("./"): decode_tex(tar.extractfile(m).read())  # type: ignore[union-attr]
                           for m in tar.getmembers()
                           if m.isfile() and m.name.endswith(".tex") and "/._" not in f"/{m.name}"})
    book = root / "hott-book"
    if book.is_dir():
        papers.append({p.name: decode_tex(p.read_bytes()) for p in sorted(book.glob("*.tex"))})
    return papers


def synthetic_papers(count: int, seed: int = 0) -> list[Paper]:
    """Papers with macros (with and without arguments), comments, sections and a bibliography."""
    rng = random.Random(seed)
    words = ["the", "model", "we", "show", "that", "for", "all", "graphs", "a", "bound", "holds", "theorem", "proof", "lemma", "data", "result"]
    papers = []
    for _ in range(count):
        macros = "".join(f"\\newcommand{{\\m{chr(97 + i)}}}[1]{{\\mathbf{{#1}}_{i}}}\n" for i in range(20))
        body = []
        for section in range(8):
            body.append(f"\\section{{Part {section}}}\n")
            for _ in range(20):
                sentence = " ".join(rng.choice(words) for _ in range(25))
                body.append(f"{sentence} $\\m{chr(97 + rng.randrange(20))}{{x}}$. % remark\n")
        papers.append({"main.tex": "\\documentclass{article}\n" + macros + "\\begin{document}\n" + "".join(body)
                       + "\\begin{thebibliography}{1}\\bibitem{a} A.\\end{thebibliography}\\end{document}\n"})
    return papers


def peer_input(paper: Paper) -> str:
    """Main file with its include tree inlined (comments kept: the peer handles them itself)."""
    result = clean_paper(paper)
    main = result.main_file or next(iter(paper))
    text, _ = inline_includes(main, {p: strip_comments(t) for p, t in paper.items()}, LatexOptions(), [])
    return text


def measure(contenders: dict[str, Callable[[], int]], megabytes: float, docs: int,
            repeat: int) -> tuple[list[dict[str, object]], list[float]]:
    """Interleaved rounds (every contender once per round) timed in CPU seconds of this process.

    Returns a row per contender (median of the rounds) and the per-round ratios peer CPU / ours
    (above 1: ours is faster), taken within each round so load from other processes hits both.
    """
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, work in contenders.items():
            started = time.process_time()
            work()
            times[name].append(time.process_time() - started)
    rows = []
    for name, work in contenders.items():
        tracemalloc.start()
        work()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        median = statistics.median(times[name])
        rows.append({"cleaner": name, "docs/s": docs / median, "MB/s": megabytes / median, "peak MB": peak / 1e6,
                     "seconds": median})
    names = list(contenders)
    ratios = [peer / ours for ours, peer in zip(times[names[0]], times[names[-1]], strict=True)] if len(names) > 1 else []
    return rows, ratios


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--realdata", type=Path, default=REPO.parent / "shared" / "realdata" / "latex")
    parser.add_argument("--synthetic", type=int, default=0, help="use N synthetic papers instead of real ones")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes (median reported)")
    args = parser.parse_args(argv)
    papers = synthetic_papers(args.synthetic) if args.synthetic or not args.realdata.is_dir() else real_papers(args.realdata)
    if not papers:
        papers = synthetic_papers(50)
    megabytes = sum(len(t.encode()) for p in papers for t in p.values()) / 1e6
    peer_texts = [peer_input(p) for p in papers]

    def ours() -> int:
        return sum(len(clean_paper(p).text or "") for p in papers)

    contenders: dict[str, Callable[[], int]] = {"kinda sources.formats.latex.clean_paper": ours}
    failures: set[int] = set()
    try:
        from pylatexenc.latex2text import LatexNodes2Text

        converter = LatexNodes2Text()

        def peer() -> int:
            total = 0
            for index, text in enumerate(peer_texts):
                try:
                    total += len(converter.latex_to_text(text))
                except Exception as exc:  # the peer raises on some real papers; count, go on
                    if index not in failures:
                        print(f"pylatexenc failed on paper {index}: {type(exc).__name__}: {exc}")
                    failures.add(index)
            return total

        contenders["pylatexenc LatexNodes2Text"] = peer
    except ImportError:
        print("pylatexenc not installed: peer skipped")
    rows, ratios = measure(contenders, megabytes, len(papers), args.repeat)
    if ratios:
        print("RESULT " + json.dumps({"metric": "ours vs pylatexenc", "values": ratios}))
    print(f"{len(papers)} papers, {megabytes:.2f} MB of .tex, median of {args.repeat} interleaved rounds, CPU time, one core\n")
    print(f"{'cleaner':34} {'docs/s':>9} {'MB/s':>8} {'peak MB':>8} {'seconds':>8}")
    if len(rows) > 1 and failures:
        print(f"(pylatexenc raised on {len(failures)} of {len(papers)} papers; their time until the error counts)")
    for row in rows:
        print(f"{row['cleaner']:34} {row['docs/s']:9.1f} {row['MB/s']:8.2f} {row['peak MB']:8.1f} {row['seconds']:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
