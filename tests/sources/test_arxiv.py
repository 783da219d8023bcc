"""arXiv reader: bulk tars of per-paper .gz (tar or single .tex), safety bounds, drops with reasons."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.document import Document, Drop, InputSpec
from core.steps import StepStats, run_steps
from sources.arxiv import (
    ArchiveLimits,
    ArxivReader,
    ArxivRecipe,
    arxiv_id_from_name,
    is_junk,
    yymm_of,
)

MAIN = (b"\\documentclass{article}\n\\newcommand{\\model}{\\textsc{Net}}\n\\begin{document}\n"
        b"\\input{intro}\n\\bibliography{refs}\n\\end{document}\n")
INTRO = b"\\section{Introduction}\nWe present \\model. % comment\n"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def tar_bytes(members: list[tuple[str, bytes]], links: list[tuple[str, str, bytes]] = ()) -> bytes:
    """A tar holding ``members`` (name, data) and ``links`` (name, target, type)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1_600_000_000
            tar.addfile(info, io.BytesIO(data))
        for name, target, kind in links:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = target
            tar.addfile(info)
    return buffer.getvalue()


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def paper_tar_gz() -> bytes:
    return gz(tar_bytes([("main.tex", MAIN), ("intro.tex", INTRO), ("._main.tex", b"\x00\x05\x16\x07junk"),
                         ("fig.png", PNG), ("refs.bbl", b"\\begin{thebibliography}\\bibitem{x}\\end{thebibliography}")]))


def single_tex_gz() -> bytes:
    return gz(b"\\documentclass{article}\\begin{document}\\section{Only} One file paper.\\end{document}")


def write_bulk(path: Path, members: list[tuple[str, bytes]], links: list[tuple[str, str, bytes]] = ()) -> Path:
    path.write_bytes(tar_bytes(members, links))
    return path


def read_all(path: Path, limits: ArchiveLimits | None = None) -> tuple[list[Document], list[Drop], StepStats]:
    recipe = ArxivRecipe(limits=limits or ArchiveLimits())
    stats = StepStats()
    records = list(recipe.read(InputSpec(str(path), path, path.name)))
    docs = list(run_steps(iter(records), recipe.steps(), stats))
    return docs, [r for r in records if isinstance(r, Drop)], stats


def test_bulk_tar_with_tar_and_single_tex_papers(tmp_path: Path) -> None:
    bulk = write_bulk(tmp_path / "arXiv_src_2301_001.tar", [
        ("2301/2301.00001.gz", paper_tar_gz()),
        ("2301/2301.00002.gz", single_tex_gz()),
        ("2301/2301.00003.pdf", b"%PDF-1.4 ..."),
    ])
    docs, drops, stats = read_all(bulk)
    assert [d.meta["arxiv_id"] for d in docs] == ["2301.00001", "2301.00002"]
    first = docs[0]
    assert first.text == "\\section{Introduction}\nWe present \\textsc{Net}."
    assert first.meta["yymm"] == "2301" and first.meta["url"] == "https://arxiv.org/abs/2301.00001"
    assert first.meta["main_file"] == "main.tex" and first.meta["tex_files"] == 2
    assert first.meta["support_files"] == 1 and first.meta["local_packages"] == 0  # refs.bbl, read
    assert docs[1].text == "\\section{Only} One file paper."
    assert [d.reason for d in drops] == ["pdf_only"]
    assert stats.records_in == 3 and stats.balanced()


def test_same_input_gives_the_same_documents(tmp_path: Path) -> None:
    bulk = write_bulk(tmp_path / "b.tar", [("2301/2301.00001.gz", paper_tar_gz())])
    assert read_all(bulk)[0] == read_all(bulk)[0]


def test_symlink_and_parent_paths_are_refused(tmp_path: Path) -> None:
    evil_paths = gz(tar_bytes([("main.tex", MAIN), ("../../etc/evil.tex", INTRO)]))
    evil_link = gz(tar_bytes([("main.tex", MAIN), ("intro.tex", INTRO)], [("x.tex", "/etc/passwd", tarfile.SYMTYPE)]))
    evil_hard = gz(tar_bytes([("main.tex", MAIN)], [("h.tex", "main.tex", tarfile.LNKTYPE)]))
    absolute = gz(tar_bytes([("/tmp/abs.tex", MAIN)]))
    bulk = write_bulk(tmp_path / "evil.tar", [
        ("2301/2301.00010.gz", evil_paths), ("2301/2301.00011.gz", evil_link),
        ("2301/2301.00012.gz", evil_hard), ("2301/2301.00013.gz", absolute),
        ("../2301.00014.gz", single_tex_gz()), ("2301/2301.00015.gz", single_tex_gz()),
    ], links=[("2301/2301.00016.gz", "/etc/shadow", tarfile.SYMTYPE)])
    docs, drops, stats = read_all(bulk)
    assert [d.meta["arxiv_id"] for d in docs] == ["2301.00015"]
    assert [d.reason for d in drops] == ["unsafe_archive"] * 6
    assert "leaves the archive" in drops[0].detail and "2301.00010" in drops[0].record
    assert "link" in drops[1].detail and "/etc/passwd" in drops[1].detail
    assert stats.balanced()
    assert not (tmp_path / "etc").exists() and not Path("/tmp/abs.tex").exists()


def test_gz_that_is_not_gzip_and_corrupt_gzip(tmp_path: Path) -> None:
    truncated = paper_tar_gz()[:-40]
    bulk = write_bulk(tmp_path / "bad.tar", [
        ("2301/2301.00020.gz", b"\\documentclass{article} plain text named .gz"),
        ("2301/2301.00021.gz", truncated),
        ("2301/2301.00022.gz", single_tex_gz()),
    ])
    docs, drops, stats = read_all(bulk)
    assert len(docs) == 1
    assert [(d.reason, d.record.rsplit("/", 1)[-1]) for d in drops] == [
        ("not_gzip", "2301.00020.gz"), ("corrupt_archive", "2301.00021.gz")]
    assert all(d.detail for d in drops) and stats.balanced()


def test_truncated_bulk_tar_keeps_papers_before_the_cut(tmp_path: Path) -> None:
    whole = tar_bytes([("2301/2301.00030.gz", single_tex_gz()), ("2301/2301.00031.gz", paper_tar_gz() * 3)])
    path = tmp_path / "cut.tar"
    path.write_bytes(whole[: 1024 + len(single_tex_gz()) + 700])
    docs, drops, stats = read_all(path)
    assert [d.meta["arxiv_id"] for d in docs] == ["2301.00030"]
    assert drops[-1].reason == "truncated_input" and stats.balanced()


def test_size_bounds_make_drops_not_crashes(tmp_path: Path) -> None:
    bomb = gz(tar_bytes([("main.tex", MAIN), ("zeros.bin", bytes(4_000_000))]))
    big_tex = gz(b"\\documentclass{article}\\section{A}" + b"x" * 300_000)
    bulk = write_bulk(tmp_path / "big.tar", [("2301/2301.00040.gz", bomb), ("2301/2301.00041.gz", big_tex)])
    docs, drops, stats = read_all(bulk, ArchiveLimits(max_unpacked_bytes=1_000_000, max_tex_bytes=100_000))
    assert not docs and [d.reason for d in drops] == ["too_large", "too_large"]
    assert "decompressed" in drops[0].detail and stats.balanced()


def test_binaries_and_junk_are_skipped_inside_a_paper(tmp_path: Path) -> None:
    paper = gz(tar_bytes([("main.tex", MAIN), ("intro.tex", INTRO), ("bad.tex", b"\x00\x01binary"),
                          ("__MACOSX/._intro.tex", b"\x00junk"), ("fig.pdf", b"%PDF")]))
    path = tmp_path / "2301.00050.gz"
    path.write_bytes(paper)
    docs, drops, _ = read_all(path)
    assert len(docs) == 1 and not drops
    assert docs[0].meta["tex_files"] == 2 and docs[0].meta["warning_count"] == 1
    assert "binary" in docs[0].meta["warnings"][0]


def test_papers_without_usable_latex_are_reasoned_drops(tmp_path: Path) -> None:
    bulk = write_bulk(tmp_path / "x.tar", [
        ("2301/2301.00060.gz", gz(tar_bytes([("fig.png", PNG)]))),
        ("2301/2301.00061.gz", gz(b"%PDF-1.5 binary\x00")),
        ("2301/2301.00062.gz", gz(b"\\documentclass{article}\\begin{document}no sections\\end{document}")),
        ("2301/2301.00063.gz", gz(tar_bytes([("a.tex", b"\\section{A}"), ("b.tex", b"\\section{B}")]))),
        ("2301/._2301.00064.gz", b"junk"),
        ("2301/README", b"hello"),
    ])
    _, drops, stats = read_all(bulk)
    assert Counter(d.reason for d in drops) == Counter(
        {"no_tex_files": 1, "not_latex_source": 2, "no_section": 1, "no_main_file": 1, "junk_member": 1})
    assert stats.balanced()


def test_single_eprint_and_tex_inputs(tmp_path: Path) -> None:
    eprint = tmp_path / "arxiv-2301.00070.tar.gz"
    eprint.write_bytes(paper_tar_gz())
    tex = tmp_path / "math0601001.tex"
    tex.write_text("\\documentclass{article}\\section{Old} An old-style id.")
    docs = read_all(eprint)[0] + read_all(tex)[0]
    assert [(d.meta["arxiv_id"], d.meta["yymm"]) for d in docs] == [("2301.00070", "2301"), ("math/0601001", "0601")]
    assert docs[0].id != docs[1].id and docs[0].source == "arxiv"


def test_unknown_input_type_is_a_drop(tmp_path: Path) -> None:
    path = tmp_path / "x.zip"
    path.write_bytes(b"PK")
    assert [r.reason for r in ArxivReader(InputSpec(str(path), path, path.name))] == ["not_latex_source"]  # type: ignore[union-attr]


@pytest.mark.parametrize(("name", "expected"), [
    ("2301/2301.00001.gz", "2301.00001"), ("arXiv_src/1501.0123v2.gz", "1501.0123"),
    ("math0601001.gz", "math/0601001"), ("hep-th9901001.gz", "hep-th/9901001"),
    ("math.GT0601001.gz", "math.GT/0601001"), ("notes.gz", None),
])
def test_arxiv_ids(name: str, expected: str | None) -> None:
    assert arxiv_id_from_name(name) == expected


def test_yymm_and_junk() -> None:
    assert yymm_of("2301.00001") == "2301" and yymm_of("hep-th/9901001") == "9901"
    assert is_junk("a/._x.tex") and is_junk("__MACOSX/x.tex") and is_junk(".DS_Store") and not is_junk("a/x.tex")


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=600), st.integers(min_value=0, max_value=2000))
def test_arbitrary_bytes_in_a_bulk_tar_never_raise(tmp_path_factory: pytest.TempPathFactory, junk: bytes, cut: int) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "f.tar"
    whole = tar_bytes([("2301/2301.00090.gz", junk), ("2301/2301.00091.gz", gz(junk)),
                       ("2301/2301.00092.gz", paper_tar_gz()[: cut or None])])
    path.write_bytes(whole)
    _, _, stats = read_all(path)
    assert stats.balanced() and stats.records_in == 3


@pytest.mark.realdata
def test_real_eprints(realdata: Path) -> None:
    for name, main, min_chars in [("arxiv-1911.02782.tar.gz", "main.tex", 30_000),
                                  ("arxiv-2004.14974.tar.gz", "emnlp2020.tex", 30_000)]:
        path = realdata / "latex" / name
        docs, drops, _ = read_all(path)
        assert not drops and len(docs) == 1
        doc = docs[0]
        assert doc.meta["main_file"] == main and len(doc.text) > min_chars
        assert "\\newcommand" not in doc.text and "\\bibitem" not in doc.text
    assert doc.meta["tex_files"] == 60 and doc.meta["inlined_files"] == 27  # the 60 ._* twins are skipped


# -- issue 31's shared cases, through the flow's own source function ---------------------------
CASE_01 = r"""\documentclass{article}
\begin{document}
\section{Introduction}
Kept paragraph one: we study monotone maps.
\iffalse
DRAFTONE: an abandoned proof sketch, $P \iff Q$ holds trivially.
\fi
Kept paragraph two: the main theorem follows.
\iffalse
DRAFTTWO: another commented-out remark that must not appear.
\fi
\section{Results}
Kept paragraph three: the bound is tight.
\end{document}
"""
CASE_11_MAIN = r"""\documentclass{article}
\usepackage{amsmath,amssymb}
\usepackage{notation}
\begin{document}
\title{Distances to random sets}
\maketitle
\section{Introduction}
Let $A$ be a closed set. We bound $\Prob(\dist{x}{A} > t)$ for every point $x$.
Every \Lip{} function $f$ satisfies $|f(x)-f(y)| \le \dist{x}{y}$.
\section{Main result}
The bound $\Prob(\dist{x}{A} > t) \le e^{-t^2/2}$ holds for all $t > 0$.
\end{document}
"""
CASE_11_STY = r"""\ProvidesPackage{notation}
\newcommand{\Prob}{\mathbb{P}}
\newcommand{\dist}[2]{\operatorname{dist}(#1, #2)}
\newcommand{\Lip}{Lipschitz}
"""
CASE_01_KEPT = ("\\section{Introduction}\nKept paragraph one: we study monotone maps.\n"
                "Kept paragraph two: the main theorem follows.\n\\section{Results}\n"
                "Kept paragraph three: the bound is tight.")
CASE_11_KEPT = ("\\section{Introduction}\nLet $A$ be a closed set. We bound $\\mathbb{P}(\\operatorname{dist}(x, A) > t)$"
                " for every point $x$.\nEvery Lipschitz{} function $f$ satisfies $|f(x)-f(y)| \\le "
                "\\operatorname{dist}(x, y)$.\n\\section{Main result}\nThe bound $\\mathbb{P}(\\operatorname{dist}(x, A) > t)"
                " \\le e^{-t^2/2}$ holds for all $t > 0$.")


def flow_read(path: Path) -> list[Document]:
    """Documents as the arXiv flow reads ``path`` (its config's recipe, default settings)."""
    from flows.arxiv import ArxivConfig

    records = list(ArxivConfig(inputs=[str(path)]).recipe().read(InputSpec(str(path), path, path.name)))
    assert all(isinstance(r, Document) for r in records), records
    return [r for r in records if isinstance(r, Document)]


def case_11_eprint() -> bytes:
    """Case 11's e-print as its make.py packs it (a gzipped tar), with fixed dates."""
    return gz(tar_bytes([("main.tex", CASE_11_MAIN.encode()), ("notation.sty", CASE_11_STY.encode())]))


def test_case_01_iffalse_blocks_with_iff_vanish(tmp_path: Path) -> None:
    path = tmp_path / "paper.tex"
    path.write_text(CASE_01)
    [doc] = flow_read(path)
    assert doc.text == CASE_01_KEPT
    assert doc.meta["conditionals"] == 2 and doc.meta["unclosed_conditionals"] == 0


def test_case_11_macros_of_a_local_sty_are_expanded(tmp_path: Path) -> None:
    path = tmp_path / "2301.00042.tar.gz"
    path.write_bytes(case_11_eprint())
    [doc] = flow_read(path)
    assert doc.text == CASE_11_KEPT
    assert doc.meta["title"] == "Distances to random sets"
    assert doc.meta["tex_files"] == 1 and doc.meta["support_files"] == 1 and doc.meta["local_packages"] == 1


def test_both_cases_in_a_bulk_tar(tmp_path: Path) -> None:
    bulk = write_bulk(tmp_path / "arXiv_src_2301_001.tar", [
        ("2301/2301.00041.gz", gz(CASE_01.encode())), ("2301/2301.00042.gz", case_11_eprint())])
    assert [(d.meta["arxiv_id"], d.text) for d in flow_read(bulk)] == [
        ("2301.00041", CASE_01_KEPT), ("2301.00042", CASE_11_KEPT)]


def test_macros_of_a_local_sty_obey_the_expansion_bound(tmp_path: Path) -> None:
    defs = "".join("\\def\\m" + chr(97 + i) + "{" + ("\\m" + chr(98 + i) + " ") * 20 + "}\n" for i in range(5))
    paper = gz(tar_bytes([("main.tex", b"\\documentclass{article}\\usepackage{bomb}\n\\section{S} \\ma"),
                          ("bomb.sty", (defs + "\\def\\mf{x}\n").encode())]))
    bulk = write_bulk(tmp_path / "b.tar", [("2301/2301.00043.gz", paper), ("2301/2301.00044.gz", single_tex_gz())])
    docs, drops, stats = read_all(bulk)
    assert [d.reason for d in drops] == ["macro_expansion_limit"] and len(docs) == 1 and stats.balanced()
