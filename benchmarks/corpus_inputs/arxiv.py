"""arXiv at scale: bulk source tars ``arXiv_src_2301_NNN.tar`` as arXiv's S3 bucket serves them.

Layout (as :mod:`sources.samples.arxiv`): an uncompressed tar (USTAR, fixed mtime and owners) of
``2301/2301.NNNNN.gz`` members, each an e-print: a gzipped tar of the paper's files (``main.tex``,
an ``\\input`` file, figures) or, for 30%, one gzipped ``.tex``; 3% are PDF-only submissions
(``.pdf`` members, which the flow skips). A real bulk tar is ~500 MB; these are ``per_file``.

Text: real LaTeX, cut into paragraphs and drawn at random per paper within one family: the HoTT
book's chapters with its ``macros.tex`` (408 definitions) travelling in the e-print, or the two
real e-prints of ``realdata/latex`` under the preamble of 2019's (18 macro definitions);
``\\section`` headings between runs of paragraphs. The flow's cleaner sees real macros, math,
environments and citations. Without realdata the sample paper's sections are the pool.

Length of the ``.tex``: log-normal, median 40,000 characters, sigma 0.8 (RedPajama's arXiv
subset: 28B tokens over ~1.5M papers, ~19K tokens or ~70 KB of text a paper on average).
Figures: a log-normal total of incompressible bytes per e-print (median 250 KB, sigma 1.2), so
TeX is a small part of an input's bytes, as in the real bulk tars (our assumption: arXiv
publishes no per-paper split; its bulk source is a few TB for ~2.3M papers).

Duplicates: 1% of e-prints are a recent paper again under a new id with two words changed (a
re-submission); no exact duplicates.
"""

from __future__ import annotations

import gzip
import random
import re
import tarfile
from functools import cache
from pathlib import Path

from sources.samples.arxiv import _tar

from ._text import lognormal_chars, near_copy, realdata

PER_FILE = 64_000_000
NEAR_RATE, SINGLE_TEX_RATE, PDF_RATE = 0.01, 0.30, 0.03
PLAIN_PREAMBLE = "\\documentclass[11pt]{article}\n\\usepackage{amsmath,amssymb,amsthm}\n"


def _paragraphs(texts: list[str]) -> tuple[str, ...]:
    found = []
    for text in texts:
        body = text.split("\\begin{document}", 1)[-1].split("\\end{document}", 1)[0]
        found += [p.strip() for p in re.split(r"\n\s*\n", body) if len(p.split()) >= 12 and "\\documentclass" not in p]
    return tuple(found)


@cache
def families() -> tuple[tuple[str, dict[str, str], tuple[str, ...]], ...]:
    """(preamble, files travelling with it, body paragraphs) of each family of real LaTeX."""
    found = []
    hott = realdata("latex", "hott-book")
    if hott is not None:
        chapters = [p.read_text(encoding="utf-8") for p in sorted(hott.glob("*.tex"))
                    if not p.name.startswith(("cover", "hott-", "opt-", "main", "macros"))]
        macros = (hott / "macros.tex").read_text(encoding="utf-8")
        found.append((PLAIN_PREAMBLE + "\\input{macros}\n", {"macros.tex": macros}, _paragraphs(chapters)))
    texts, preamble = [], ""
    for name in ("arxiv-1911.02782.tar.gz", "arxiv-2004.14974.tar.gz"):
        path = realdata("latex", name)
        if path is None:
            continue
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith(".tex") and "/._" not in "/" + member.name:
                    handle = tar.extractfile(member)
                    text = handle.read().decode("utf-8", "replace") if handle else ""
                    texts.append(text)
                    if "\\begin{document}" in text and not preamble:
                        preamble = text.split("\\begin{document}", 1)[0]
    if texts:
        found.append((preamble or PLAIN_PREAMBLE, {}, _paragraphs(texts)))
    if not found:
        from sources.samples.arxiv import paper_files

        files = paper_files()
        found.append((files["main.tex"].split("\\begin{document}", 1)[0], {},
                      _paragraphs([t for n, t in files.items() if n != "main.tex"] * 3)))
    return tuple(found)


def paper(rng: random.Random, chars: int) -> tuple[dict[str, str], str]:
    """(the e-print's text files, its main file's body) of about ``chars`` characters of TeX."""
    preamble, files, pool = rng.choice(families())
    parts, size, section = [], 0, 0
    while size < chars:
        if not parts or rng.random() < 0.08:
            section += 1
            parts.append(f"\\section{{Part {section}}}")
        part = rng.choice(pool)
        parts.append(part)
        size += len(part) + 2
    body = "\n\n".join(parts)
    return dict(files), f"{preamble}\\begin{{document}}\n\\title{{A study}}\n\\maketitle\n\n{body}\n\n\\end{{document}}\n"


def eprint(rng: random.Random, files: dict[str, str], main: str) -> bytes:
    """The e-print's bytes: a gzipped ``.tex`` alone, or a gzipped tar with its files and figures."""
    if not files and rng.random() < SINGLE_TEX_RATE:
        return gzip.compress(main.encode("utf-8"), 6, mtime=0)
    figures = lognormal_chars(rng, 250_000, 1.2, 1_000, 20_000_000)
    members = {"main.tex": main.encode("utf-8"), **{n: t.encode("utf-8") for n, t in files.items()},
               "figures/fig1.png": b"\x89PNG\r\n\x1a\n" + rng.randbytes(figures)}
    return gzip.compress(_tar(members), 6, mtime=0)


def write(directory: Path, size: int, seed: int = 0, per_file: int = PER_FILE) -> list[str]:
    """Bulk tars of ``size`` bytes in all under ``directory``; their paths."""
    rng = random.Random(f"arxiv/{seed}")
    directory.mkdir(parents=True, exist_ok=True)
    written, recent, total, number, paper_id = [], [], 0, 1, 0
    while total < size:
        members: dict[str, bytes] = {}
        held = 0
        while held < min(per_file, size - total):
            paper_id += 1
            name = f"2301/2301.{paper_id:05d}"
            if rng.random() < PDF_RATE:
                members[name + ".pdf"] = b"%PDF-1.4\n% PDF-only submission\n" + rng.randbytes(50_000) + b"\n%%EOF\n"
            else:
                if recent and rng.random() < NEAR_RATE:
                    files, main = rng.choice(recent)
                    main = near_copy(rng, main)
                else:
                    files, main = paper(rng, lognormal_chars(rng, 40_000, 0.8, 3_000, 1_000_000))
                    recent = ([*recent, (files, main)])[-50:]
                members[name + ".gz"] = eprint(rng, files, main)
            held += len(members[next(reversed(members))])
        target = directory / f"arXiv_src_2301_{number:03d}.tar"
        target.write_bytes(_tar(members, tarfile.USTAR_FORMAT))
        total += target.stat().st_size
        written.append(str(target))
        number += 1
    return written
