"""A small offline arXiv sample: one bulk source tar, ``arXiv_src_2301_001.tar``, as arXiv's S3
bucket ships them (a plain tar of ``2301/<id>.gz`` e-prints and ``.pdf`` for PDF-only papers).

What it holds, so every rule of :mod:`sources.arxiv` and :mod:`sources.formats.latex` does real work:

- ``2301.00001``: a gzipped tar e-print split over a multi-file ``\\input`` tree
  (``main.tex`` -> ``sections/intro.tex``, ``sections/method.tex`` -> ``sections/proof.tex``), user
  macros (``\\newcommand`` with and without arguments, ``\\def``), full-line and inline comments, a
  commented-out ``\\input``, a ``thebibliography`` and a figure (a binary member the reader skips);
- ``2301.00002``: a single gzipped ``.tex`` (no tar), with ``\\def`` macros and a ``.bib`` bibliography;
- ``2301.00003.pdf``: a PDF-only submission (``pdf_only`` drop);
- ``2301.00004``: the same note as ``2301.00002`` submitted again as a tar (an exact duplicate, dropped
  by the source run's exact dedup);
- ``2301.00005``: ``2301.00001`` resubmitted under a new id with two words corrected (a near
  duplicate, found by MinHash in ``flows.dedup``);
- ``2301.00006``: an erratum with no sectioning command (``no_section`` drop);
- ``2301.00007``: a short paper in one ``.tex`` inside a tar, matched by nothing.

Bytes are deterministic (fixed tar header times and owners, gzip ``mtime=0``), so a second
sample run finds the file unchanged and resumes.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from core.atomic import atomic_path

TAR_NAME = "arXiv_src_2301_001.tar"
#: Header time of every tar member (2023-01-02), so the bytes never depend on the clock.
MTIME = 1672617600

MAIN_TEX = r"""\documentclass[11pt]{article}
\usepackage{amsmath,amssymb,graphicx}
% Notation used throughout; expanded by the cleaner.
\newcommand{\R}{\mathbb{R}}
\newcommand{\norm}[1]{\left\lVert #1 \right\rVert}
\newcommand{\grad}{\nabla}
\def\eps{\varepsilon}
\title{Step Sizes for Gradient Descent on Smooth Convex Functions}
\author{A. Example \and B. Sample}
\begin{document}
\maketitle
\begin{abstract}
We revisit the classical analysis of gradient descent with a constant step size on smooth convex
functions. We give a short self-contained proof of the $O(1/k)$ rate and discuss how the constant
depends on the smoothness parameter and on the distance to the minimiser. % TODO: add strongly convex case
\end{abstract}
\input{sections/intro}
\input{sections/method}
%\input{sections/old_experiments}
\section{Discussion}
The analysis above is deliberately elementary. It uses only the descent lemma and the convexity
inequality, and it explains why the step size $1/L$ is a natural default: it is the largest
constant step for which every iterate is guaranteed to decrease the objective. Larger steps can
still converge on particular problems, but the guarantee is then lost, and in practice a line
search or an adaptive rule is the safer choice when $L$ is not known in advance.
Several extensions are straightforward. With strong convexity the same argument gives a linear
rate, and with a noisy gradient oracle the bound acquires an additional variance term that
decreases only when the step size is reduced over time.
\bibliographystyle{plain}
\begin{thebibliography}{9}
\bibitem{nesterov} Y. Nesterov. \emph{Introductory Lectures on Convex Optimization}. Kluwer, 2004.
\bibitem{boyd} S. Boyd and L. Vandenberghe. \emph{Convex Optimization}. Cambridge University Press, 2004.
\end{thebibliography}
\end{document}
"""

INTRO_TEX = r"""\section{Introduction}
Gradient descent is the simplest method for minimising a differentiable function $f:\R^n\to\R$.
Starting from a point $x_0$, it repeats the update $x_{k+1} = x_k - \eta \grad f(x_k)$, where
$\eta > 0$ is the step size. % the step size is also called the learning rate
Despite its simplicity the method remains the workhorse of large scale optimisation, because each
step needs only one gradient and its memory cost is linear in the dimension.
We assume that $f$ is convex and that its gradient is $L$-Lipschitz, that is,
$\norm{\grad f(x) - \grad f(y)} \le L \norm{x - y}$ for all $x$ and $y$. Under these assumptions
the question we ask is simple: how many iterations are needed to reach a point whose objective
value is within $\eps$ of the optimum?
"""

METHOD_TEX = r"""\section{Analysis}
\label{sec:analysis}
The first ingredient is the descent lemma: for an $L$-smooth function,
$f(y) \le f(x) + \langle \grad f(x), y - x\rangle + \frac{L}{2}\norm{y - x}^2$.
Applied to one step with $\eta = 1/L$ it shows that the objective decreases by at least
$\frac{1}{2L}\norm{\grad f(x_k)}^2$ at every iteration.
\subsection{The main bound}
Combining the descent lemma with convexity gives the following result.
\input{sections/proof}
"""

PROOF_TEX = r"""\begin{theorem}
Let $f$ be convex and $L$-smooth with a minimiser $x^\star$. Gradient descent with step size
$1/L$ satisfies $f(x_k) - f(x^\star) \le \frac{L \norm{x_0 - x^\star}^2}{2k}$ for every $k \ge 1$.
\end{theorem}
\begin{proof}
By convexity, $f(x_k) - f(x^\star) \le \langle \grad f(x_k), x_k - x^\star\rangle$. Writing the
inner product with the update and using the decrease of the descent lemma, the distance to the
minimiser shrinks by exactly the amount that the objective gap contributes, so summing the
inequalities over the first $k$ steps telescopes. Since the objective never increases, the last
gap is at most the average of the gaps, which gives the claimed bound.
\end{proof}
So an accuracy of $\eps$ needs at most $L\norm{x_0 - x^\star}^2 / (2\eps)$ iterations.
"""

NOTE_TEX = r"""\documentclass{amsart}
\def\G{\mathcal{G}}
\def\deg{\operatorname{deg}}
\newcommand{\abs}[1]{\lvert #1\rvert}
\title{A Note on Degrees in Finite Graphs}
\begin{document}
\maketitle
%% This note was written for an undergraduate seminar.
\section{The handshake lemma}
Let $\G = (V, E)$ be a finite graph. Every edge has two endpoints, so when we add up the degrees
of all vertices each edge is counted exactly twice. Hence $\sum_{v \in V} \deg(v) = 2\abs{E}$.
A first consequence is that the number of vertices of odd degree is always even: the sum of the
degrees is even, and the vertices of even degree contribute an even amount.
\section{Applications}
At a party where some guests shake hands, the number of guests who shook an odd number of hands
is even. In a tournament, where every pair of players meets exactly once, the total number of
games is $\abs{V}(\abs{V}-1)/2$, and the same counting argument shows that the scores add up to
this number. The lemma is also the first step in Euler's theorem on closed walks that use every
edge exactly once: such a walk can exist only if every vertex has even degree.
\section{Regular graphs}
A graph is $r$-regular when every vertex has degree $r$. Then $r\abs{V} = 2\abs{E}$, so an
$r$-regular graph with an odd number of vertices must have $r$ even; there is, for example, no
$3$-regular graph on seven vertices.
\bibliography{refs}
\end{document}
"""

SURVEY_TEX = r"""\documentclass{revtex4}
\newcommand{\kB}{k_{\mathrm{B}}}
\newcommand{\avg}[1]{\langle #1 \rangle}
\begin{document}
\title{Why Does a Cup of Tea Cool Faster When You Blow on It?}
\maketitle
\section{Introduction}
A cup of hot tea loses heat in three ways: by conduction through the cup, by radiation, and by
evaporation from its surface. For a typical mug near $80^\circ$C evaporation dominates, because
every gram of water that leaves the surface carries away its latent heat of vaporisation.
\section{Evaporation near the surface}
Just above the liquid the air is almost saturated with vapour. Evaporation is limited by how fast
this moist layer is replaced by drier air. Blowing across the cup thins the layer and so raises
the evaporation rate; the mean kinetic energy $\avg{E} = \frac{3}{2}\kB T$ of the escaping
molecules is higher than the average in the liquid, so what stays behind is cooler.
\section{An estimate}
With a still surface the cup cools by about one degree per minute. A steady breath across the
surface can double this, which agrees with the common experience that blowing helps, but only
while one keeps blowing: the effect disappears as soon as the moist layer builds up again.
\end{document}
"""

ERRATUM_TEX = r"""\documentclass{article}
\begin{document}
\noindent\textbf{Erratum.} In the published version of our note the constant in the second
display should be $2$ rather than $3$. The argument is otherwise unchanged.
\end{document}
"""

#: Two words corrected in the resubmission of 2301.00001 (a near duplicate).
REVISIONS = {"simplest method": "most basic method", "deliberately elementary": "intentionally elementary"}


def _tar(files: dict[str, bytes], fmt: int = tarfile.GNU_FORMAT) -> bytes:
    """A tar of ``files`` with fixed header times and owners (deterministic bytes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), MTIME, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def paper_files(revised: bool = False) -> dict[str, str]:
    """The ``.tex`` tree of 2301.00001 (``revised``: the words of :data:`REVISIONS` corrected)."""
    files = {"main.tex": MAIN_TEX, "sections/intro.tex": INTRO_TEX, "sections/method.tex": METHOD_TEX,
             "sections/proof.tex": PROOF_TEX}
    if revised:
        for old, new in REVISIONS.items():
            files = {name: text.replace(old, new) for name, text in files.items()}
    return files


def _eprint(files: dict[str, str], extra: dict[str, bytes] | None = None) -> bytes:
    members = {name: text.encode("utf-8") for name, text in files.items()}
    return _gz(_tar({**members, **(extra or {})}))


#: A tiny figure that travels in the e-print (binary: the reader skips it).
FIGURE = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


def bulk_members() -> dict[str, bytes]:
    """The members of the bulk tar, in order: ``2301/<id>.gz`` e-prints and one PDF."""
    return {
        "2301/2301.00001.gz": _eprint(paper_files(), {"figures/rate.png": FIGURE}),
        "2301/2301.00002.gz": _gz(NOTE_TEX.encode("utf-8")),
        "2301/2301.00003.pdf": b"%PDF-1.4\n% PDF-only submission\n%%EOF\n",
        "2301/2301.00004.gz": _eprint({"note.tex": NOTE_TEX}),
        "2301/2301.00005.gz": _eprint(paper_files(revised=True)),
        "2301/2301.00006.gz": _gz(ERRATUM_TEX.encode("utf-8")),
        "2301/2301.00007.gz": _eprint({"tea.tex": SURVEY_TEX}),
    }


def write_sample_inputs(directory: Path) -> list[str]:
    """Write ``arXiv_src_2301_001.tar`` into ``directory``; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / TAR_NAME
    with atomic_path(target) as tmp:
        tmp.write_bytes(_tar(bulk_members(), tarfile.USTAR_FORMAT))
    return [str(target)]
