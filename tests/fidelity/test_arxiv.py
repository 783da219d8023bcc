r"""The arXiv fidelity corpus: small real-format e-prints and the text a reader of each should get.

Each case is one paper's files (``.tex`` plus, where the kind needs them, ``.sty``, ``.cls``,
``.def``, ``.bbl``), written by hand with the kept text expected for it, also by hand: what the
paper typesets from its first sectioning command to its bibliography, as LaTeX source with the
paper's own macros expanded (RECIPES.md, "ArXiv": the appendix stays by default, the bibliography
and what follows it go). All cases are packed as real arXiv input is, one gzipped e-print per
member of a bulk ``.tar`` (a gzipped tar for several files, a gzipped ``.tex`` for one), and read
once through the arXiv flow's own source function (``ArxivConfig().recipe().read``), as a run
reads it. Kinds covered: conditionals, macros in every file type, ``\input`` trees, comments,
bibliographies, appendices, preamble stripping. Every case is marked ``fidelity("arxiv")`` and
counted in the per-source score (tests/fidelity/scoring.py).
"""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.document import Document, Drop, InputSpec
from core.steps import Record
from flows.arxiv import ArxivConfig

HEAD = "\\documentclass{article}\n"


def paper(body: str, preamble: str = "", cls: str = HEAD) -> str:
    """A main file: class line, preamble, then the body inside the document environment."""
    return f"{cls}{preamble}\\begin{{document}}\n{body}\\end{{document}}\n"


#: (case id, {file name: text}, expected kept text, or "drop:<reason>")
CASES: list[tuple[str, dict[str, str], str]] = [
    # -- conditionals -------------------------------------------------------------------------
    ("iffalse-with-iff", {"paper.tex": paper(
        "\\section{Intro}\nWe prove the claim.\n\\iffalse\nOld: $A \\iff B$, see \\cite{x}.\n\\fi\n"
        "Then we conclude.\n\\iffalse\nSecond draft note.\n\\fi\n\\section{End}\nDone.\n")},
     "\\section{Intro}\nWe prove the claim.\nThen we conclude.\n\\section{End}\nDone."),
    ("iffalse-else-kept", {"paper.tex": paper(
        "\\section{A}\nWe use \\iffalse the old bound\\else the new bound\\fi{} here.\n")},
     "\\section{A}\nWe use the new bound{} here."),
    ("iftrue-else-dropped", {"paper.tex": paper(
        "\\section{A}\n\\iftrue\nShown text.\n\\else\nHidden text.\n\\fi\nAfter.\n")},
     "\\section{A}\nShown text.\nAfter."),
    ("nested-primitives-in-false", {"paper.tex": paper(
        "\\section{A}\nKeep one.\n\\iffalse\n\\ifx\\a\\b yes\\else no\\fi\n\\ifnum\\value{page}>1 x\\fi\n"
        "\\ifmmode m\\fi still hidden\n\\fi\nKeep two.\n")},
     "\\section{A}\nKeep one.\nKeep two."),
    ("newif-switch-true", {"paper.tex": paper(
        "\\section{A}\n\\ifdraft\nDraft remark.\n\\else\nFinal remark.\n\\fi\n",
        preamble="\\newif\\ifdraft\n\\drafttrue\n")},
     "\\section{A}\nDraft remark."),
    ("newif-switch-default-false", {"paper.tex": paper(
        "\\section{A}\n\\ifdraft\nDraft remark.\n\\else\nFinal remark.\n\\fi\nEnd.\n",
        preamble="\\newif\\ifdraft\n")},
     "\\section{A}\nFinal remark.\nEnd."),
    ("newif-in-sty-set-in-main", {
        "main.tex": paper("\\section{A}\nText \\ifshowproofs with proofs\\else without proofs\\fi.\n",
                          preamble="\\usepackage{switches}\n\\showproofstrue\n"),
        "switches.sty": "\\ProvidesPackage{switches}\n\\newif\\ifshowproofs\n"},
     "\\section{A}\nText with proofs."),
    ("switch-set-by-option-unknown", {
        "main.tex": paper("\\section{A}\n\\iflong Long.\\else Short.\\fi\n", preamble="\\usepackage[long]{opts}\n"),
        "opts.sty": "\\newif\\iflong\n\\DeclareOption{long}{\\longtrue}\n\\ProcessOptions\\relax\n"},
     "\\section{A}\n\\iflong Long.\\else Short.\\fi"),
    ("ifcase-or", {"paper.tex": paper(
        "\\section{A}\nVersion \\ifcase 2 zero\\or one\\or two\\else many\\fi.\n")},
     "\\section{A}\nVersion two."),
    ("unknown-conditional-as-written", {"paper.tex": paper(
        "\\section{A}\n\\ifpdf\nPDF output\\iffalse, hidden\\fi.\n\\else\nDVI output.\n\\fi\n")},
     "\\section{A}\n\\ifpdf\nPDF output.\n\\else\nDVI output.\n\\fi"),
    ("if-named-user-macro", {"paper.tex": paper(
        "\\section{A}\nKeep.\n\\iffalse\nWe \\ifonly{} we could.\n\\fi\nAlso keep.\n",
        preamble="\\newcommand{\\ifonly}{if only}\n")},
     "\\section{A}\nKeep.\nAlso keep."),
    ("ifthenelse-in-false", {"paper.tex": paper(
        "\\section{A}\n\\iffalse\n\\ifthenelse{\\boolean{x}}{yes}{no}\n\\fi\nVisible.\n")},
     "\\section{A}\nVisible."),
    ("unclosed-iffalse-kept", {"paper.tex": paper(
        "\\section{A}\nBefore.\n\\iffalse\nAfter an opening never closed.\n\\section{B}\nMore.\n")},
     "\\section{A}\nBefore.\n\\iffalse\nAfter an opening never closed.\n\\section{B}\nMore."),
    ("false-input-not-read", {
        "main.tex": paper("\\section{A}\n\\input{kept}\n\\iffalse\n\\input{old}\n\\fi\nEnd.\n"),
        "kept.tex": "Kept section text.\n", "old.tex": "Old text \\fi\n"},
     "\\section{A}\nKept section text.\nEnd."),
    ("conditional-in-verbatim", {"paper.tex": paper(
        "\\section{A}\n\\begin{verbatim}\n\\iffalse not a conditional here\n\\end{verbatim}\nAfter.\n")},
     "\\section{A}\n\\begin{verbatim}\n\\iffalse not a conditional here\n\\end{verbatim}\nAfter."),
    # -- macros in every file type -------------------------------------------------------------
    ("sty-usepackage", {
        "main.tex": paper("\\section{A}\nLet $\\Prob(\\dist{x}{A})$ be small for \\Lip{} maps.\n",
                          preamble="\\usepackage{amsmath}\n\\usepackage{notation}\n"),
        "notation.sty": "\\ProvidesPackage{notation}\n\\newcommand{\\Prob}{\\mathbb{P}}\n"
                        "\\newcommand{\\dist}[2]{\\operatorname{dist}(#1, #2)}\n\\newcommand{\\Lip}{Lipschitz}\n"},
     "\\section{A}\nLet $\\mathbb{P}(\\operatorname{dist}(x, A))$ be small for Lipschitz{} maps."),
    ("sty-in-subfolder-with-options", {
        "main.tex": paper("\\section{A}\nWe write $\\E[X]$ and $\\Var(X)$.\n",
                          preamble="\\usepackage[final]{amssymb,styles/prob}\n"),
        "styles/prob.sty": "\\DeclareMathOperator{\\Var}{Var}\n\\def\\E{\\mathbb{E}}\n"},
     "\\section{A}\nWe write $\\mathbb{E}[X]$ and $\\operatorname{Var}(X)$."),
    ("requirepackage-chain", {
        "main.tex": paper("\\section{A}\n$\\R^n$ and $\\C$.\n", preamble="\\usepackage{outer}\n"),
        "outer.sty": "\\RequirePackage{inner}\n\\newcommand{\\C}{\\mathbb{C}}\n",
        "inner.sty": "\\newcommand{\\R}{\\mathbb{R}}\n\\RequirePackage{outer}\n"},
     "\\section{A}\n$\\mathbb{R}^n$ and $\\mathbb{C}$."),
    ("local-class", {
        "main.tex": paper("\\section{A}\nThe \\journal{} style.\n", cls="\\documentclass[twocolumn]{myjournal}\n"),
        "myjournal.cls": "\\LoadClass{article}\n\\newcommand{\\journal}{Journal of Examples}\n"},
     "\\section{A}\nThe Journal of Examples{} style."),
    ("def-file-input", {
        "main.tex": paper("\\section{A}\nA \\norm{v} bound.\n", preamble="\\input{macros.def}\n"),
        "macros.def": "\\def\\norm#1{\\|#1\\|}\n"},
     "\\section{A}\nA \\|v\\| bound."),
    ("tex-macros-input", {
        "main.tex": paper("\\section{A}\nOur \\method{} wins.\n", preamble="\\input{defs}\n"),
        "defs.tex": "\\newcommand{\\method}{\\textsc{Fast}}\n"},
     "\\section{A}\nOur \\textsc{Fast}{} wins."),
    ("optional-argument-default", {
        "main.tex": paper("\\section{A}\n$\\loss{x}$ and $\\loss[2]{x}$.\n", preamble="\\usepackage{l}\n"),
        "l.sty": "\\newcommand{\\loss}[2][1]{L_{#1}(#2)}\n"},
     "\\section{A}\n$L_{1}(x)$ and $L_{2}(x)$."),
    ("providecommand-does-not-override", {
        "main.tex": paper("\\section{A}\nSee $\\R$ and $\\N$.\n",
                          preamble="\\usepackage{p}\n\\renewcommand{\\R}{\\mathbf{R}}\n"),
        "p.sty": "\\providecommand{\\R}{\\mathbb{R}}\n\\providecommand{\\N}{\\mathbb{N}}\n\\providecommand{\\N}{X}\n"},
     "\\section{A}\nSee $\\mathbf{R}$ and $\\mathbb{N}$."),
    ("definition-under-option-not-applied", {
        "main.tex": paper("\\section{A}\nWe cite \\href{http://a.org}{the site}.\n",
                          preamble="\\usepackage{venue}\n"),
        "venue.sty": "\\newif\\ifvenue@hyperref\n\\DeclareOption{hyperref}{\\venue@hyperreftrue}\n"
                     "\\ExecuteOptions{hyperref}\n\\ProcessOptions\\relax\n"
                     "\\ifvenue@hyperref\\RequirePackage{hyperref}\\else\\def\\href#1#2{#2}\\fi\n"},
     "\\section{A}\nWe cite \\href{http://a.org}{the site}."),
    ("macros-in-body-file", {
        "main.tex": paper("\\section{A}\n\\input{sec}\nAgain \\tool.\n"),
        "sec.tex": "\\newcommand{\\tool}{\\texttt{tl}}\nWe build \\tool.\n"},
     "\\section{A}\nWe build \\texttt{tl}.\nAgain \\texttt{tl}."),
    # -- \input trees --------------------------------------------------------------------------
    ("input-tree", {
        "main.tex": paper("\\section{Intro}\n\\input{sections/a}\n\\input sections/b\n\\include{c}\n"),
        "sections/a.tex": "Part A, then \\input{sections/a1}.\n", "sections/a1.tex": "part A1",
        "sections/b.tex": "\\subsection{B}\nPart B.\n", "c.tex": "\\section{C}\nPart C.\n"},
     "\\section{Intro}\nPart A, then part A1.\n\\subsection{B}\nPart B.\n\n\\section{C}\nPart C."),
    ("input-missing-and-cycle", {
        "main.tex": paper("\\section{A}\nStart.\n\\input{figure.tikz}\n\\input{loop}\nEnd.\n"),
        "loop.tex": "Loop text \\input{loop}once.\n"},
     "\\section{A}\nStart.\nLoop text once.\nEnd."),
    ("subfile", {
        "main.tex": paper("\\section{A}\n\\subfile{parts/one}\n", preamble="\\usepackage{subfiles}\n"),
        "parts/one.tex": "One part.\n"},
     "\\section{A}\nOne part."),
    # -- comments ------------------------------------------------------------------------------
    ("percent-comments", {"paper.tex": paper(
        "\\section{A}\n% a full-line comment\nRates of 50\\% hold. % a remark\nA line break \\\\% comment\nnext.\n")},
     "\\section{A}\nRates of 50\\% hold.\nA line break \\\\\nnext."),
    ("comment-environment", {"paper.tex": paper(
        "\\section{A}\nKept.\n\\begin{comment}\nHidden \\fi notes.\n\\end{comment}\nAlso kept.\n",
        preamble="\\usepackage{comment}\n")},
     "\\section{A}\nKept.\nAlso kept."),
    ("verbatim-keeps-percent", {"paper.tex": paper(
        "\\section{A}\n\\begin{verbatim}\nx = 5 % 3\n\\end{verbatim}\nand \\verb|50%| too. % gone\n")},
     "\\section{A}\n\\begin{verbatim}\nx = 5 % 3\n\\end{verbatim}\nand \\verb|50%| too."),
    ("commented-input-not-read", {
        "main.tex": paper("\\section{A}\nBody.\n% \\input{draft}\n"), "draft.tex": "DRAFT TEXT\n"},
     "\\section{A}\nBody."),
    # -- bibliographies and appendices ----------------------------------------------------------
    ("thebibliography-cut", {"paper.tex": paper(
        "\\section{A}\nAs shown \\cite{k}.\n\\begin{thebibliography}{1}\n\\bibitem{k} K. Author. Title.\n"
        "\\end{thebibliography}\n")},
     "\\section{A}\nAs shown \\cite{k}."),
    ("bibliography-with-bbl-and-appendix-after", {
        "main.tex": paper("\\section{A}\nText.\n\\bibliographystyle{plain}\n\\bibliography{refs}\n"
                          "\\appendix\n\\section{Proofs}\nProof text.\n"),
        "main.bbl": "\\begin{thebibliography}{1}\n\\bibitem{k} K.\n\\end{thebibliography}\n"},
     "\\section{A}\nText.\n\\bibliographystyle{plain}"),
    ("input-bbl-cut", {
        "main.tex": paper("\\section{A}\nText.\n\\input{main.bbl}\n\\section{After}\nNot kept.\n"),
        "main.bbl": "\\begin{thebibliography}{1}\n\\bibitem{k} K.\n\\end{thebibliography}\n"},
     "\\section{A}\nText."),
    ("appendix-before-bibliography-kept", {"paper.tex": paper(
        "\\section{A}\nMain.\n\\appendix\n\\section{Extra}\nAppendix text.\n\\bibliography{refs}\n")},
     "\\section{A}\nMain.\n\\appendix\n\\section{Extra}\nAppendix text."),
    # -- preamble stripping --------------------------------------------------------------------
    ("preamble-title-abstract-gone", {"paper.tex": paper(
        "\\title{T}\\maketitle\n\\begin{abstract}\nAbstract text.\n\\end{abstract}\n\\section{One}\nBody.\n",
        preamble="\\usepackage{amsmath}\n\\newcommand{\\x}{y}\n")},
     "\\section{One}\nBody."),
    ("text-after-end-document-gone", {"paper.tex": paper("\\section{A}\nBody.\n") + "Notes after the end.\n"},
     "\\section{A}\nBody."),
    ("no-section-dropped", {"paper.tex": paper("Just a note without sections.\n")}, "drop:no_section"),
    ("only-sty-dropped", {"notation.sty": "\\newcommand{\\x}{y}\n", "fig.tikz": "\\draw (0,0);\n"},
     "drop:no_tex_files"),
]


def _tar(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _eprint(files: dict[str, str]) -> bytes:
    """One paper as arXiv serves it: a gzipped .tex when it is one file, else a gzipped tar."""
    if len(files) == 1 and next(iter(files)).endswith(".tex"):
        return gzip.compress(next(iter(files.values())).encode(), mtime=0)
    return gzip.compress(_tar(files), mtime=0)


def arxiv_id(index: int) -> str:
    return f"2301.{index + 1:05d}"


def bulk_tar(cases: list[tuple[str, dict[str, str], str]]) -> bytes:
    """Every case as a member of one bulk source tar, ``2301/2301.NNNNN.gz``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for index, (_, files, _) in enumerate(cases):
            data = _eprint(files)
            info = tarfile.TarInfo(f"2301/{arxiv_id(index)}.gz")
            info.size, info.mtime = len(data), 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def read_as_the_flow_does(path: Path) -> Iterator[Record]:
    """The arXiv flow's source function with its default settings, on one input file."""
    return ArxivConfig(inputs=[str(path)]).recipe().read(InputSpec(str(path), path, path.name))


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Record]:
    """Each case's record, by arXiv id, from one read of the bulk tar."""
    path = tmp_path_factory.mktemp("arxiv-fidelity") / "arXiv_src_2301_001.tar"
    path.write_bytes(bulk_tar(CASES))
    found: dict[str, Record] = {}
    for record in read_as_the_flow_does(path):
        key = record.meta["arxiv_id"] if isinstance(record, Document) else record.record.rsplit("/", 1)[-1][:-3]
        found[str(key)] = record
    return found


@pytest.mark.fidelity("arxiv")
@pytest.mark.parametrize(("index", "case"), list(enumerate(CASES)), ids=[case[0] for case in CASES])
def test_kept_text(records: dict[str, Record], index: int, case: tuple[str, dict[str, str], str]) -> None:
    _, _, expected = case
    record = records[arxiv_id(index)]
    if expected.startswith("drop:"):
        assert isinstance(record, Drop) and record.reason == expected.removeprefix("drop:")
    else:
        assert isinstance(record, Document), record
        assert record.text == expected


def test_the_corpus_is_one_record_per_case(records: dict[str, Record]) -> None:
    assert sorted(records) == [arxiv_id(index) for index in range(len(CASES))]
    assert len({case[0] for case in CASES}) == len(CASES) >= 36
