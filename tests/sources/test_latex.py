"""LaTeX cleaning: comments, main file, includes, preamble/bibliography cuts, macro expansion, bounds."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sources.formats.latex import (
    LatexOptions,
    Macro,
    MacroExpander,
    clean_paper,
    clean_tex,
    collect_macros,
    cut_preamble,
    decode_tex,
    find_main_file,
    inline_includes,
    iter_macro_uses,
    strip_comments,
)

PAPER = r"""\documentclass[11pt]{article}
\usepackage{amsmath}
\newcommand{\R}{\mathbb{R}}
\newcommand{\norm}[1]{\left\| #1 \right\|}
\newcommand*{\pair}[2]{\langle #1, #2 \rangle}
\newcommand{\opt}[2][x]{f_{#1}(#2)}
\def\vect#1{\mathbf{#1}}
\def\ours{\textsc{Ours}}
\title{A Paper}
\begin{document}
\maketitle
\begin{abstract}Not kept: the abstract comes before the first section.\end{abstract}
\section{Introduction}
We study $\norm{\vect{v}}$ over $\R^n$, see \ours. % a remark
% a whole-line comment
Pairs: $\pair{a}{b}$, options: $\opt{y}$ and $\opt[z]{y}$. Rates of 50\% hold.
\bibliographystyle{plain}
\bibliography{refs}
\section{After the bibliography}
Gone.
\end{document}
"""


# -- comments -----------------------------------------------------------------------------
def test_strip_comments_full_line_inline_and_escaped() -> None:
    text = "a % inline\n% full line\n   % indented full line\nb 50\\% c\nd \\\\% after a line break\ne"
    assert strip_comments(text) == "a \nb 50\\% c\nd \\\\\ne"


def test_strip_comments_keeps_verbatim_and_verb() -> None:
    text = ("x \\verb|100%| y % gone\n\\begin{verbatim}\n50% kept\n\\end{verbatim}\n"
            "\\begin{lstlisting}\n% kept too\n\\end{lstlisting}\nz % gone")
    out = strip_comments(text)
    assert "\\verb|100%| y " in out and "50% kept" in out and "% kept too" in out
    assert "gone" not in out


def test_comment_environment_and_iffalse_are_removed() -> None:
    text = "a\n\\begin{comment}\nsecret\n\\end{comment}\nb \\iffalse hidden \\ifx\\a\\b nested \\fi still \\fi c"
    out = strip_comments(text)
    assert "secret" not in out and "hidden" not in out and "still" not in out
    assert out.startswith("a\n") and out.rstrip().endswith("c")


def test_unclosed_iffalse_is_left_alone() -> None:
    assert strip_comments("a \\iffalse b") == "a \\iffalse b"


# -- main file and includes ----------------------------------------------------------------
def test_find_main_file_prefers_the_document_that_includes_most() -> None:
    files = {
        "errata.tex": "\\documentclass{article}\\begin{document}short\\end{document}",
        "book.tex": "\\documentclass{book}\\begin{document}\\include{ch1}\\end{document}",
        "ch1.tex": "\\chapter{One}" + "text " * 100,
    }
    assert find_main_file(files) == "book.tex"
    assert find_main_file({"only.tex": "\\section{A} no class"}) == "only.tex"
    assert find_main_file({"a.tex": "\\section{A}", "b.tex": "\\section{B}"}) is None
    assert find_main_file({"old.tex": "\\documentstyle{article}", "x.tex": "x"}) == "old.tex"


def test_inline_includes_in_order_with_missing_and_cycle() -> None:
    files = {
        "main.tex": "\\documentclass{article}\n\\input{sec/a}\n\\include{b.tex}\n\\input c\n\\input{missing}",
        "sec/a.tex": "A-text \\input{main}",
        "b.tex": "B-text",
        "c.tex": "C-text",
    }
    warnings: list[str] = []
    text, included = inline_includes("main.tex", files, LatexOptions(), warnings)
    assert included == ["sec/a.tex", "b.tex", "c.tex"]
    assert text.index("A-text") < text.index("B-text") < text.index("C-text")
    assert "\\input" not in text and "\\include" not in text
    assert any("missing" in w for w in warnings) and any("cycle" in w for w in warnings)


def test_commented_out_input_is_not_inlined() -> None:
    files = {"main.tex": "\\documentclass{article}\n\\section{S}\n% \\input{appendix}\nbody",
             "appendix.tex": "APPENDIX TEXT"}
    assert "APPENDIX" not in (clean_paper(files).text or "")


def test_split_paper_cleans_like_the_same_paper_in_one_file() -> None:
    head, rest = PAPER.split("\\section{Introduction}", 1)
    split = {"main.tex": head + "\\input{intro}\n", "intro.tex": "\\section{Introduction}" + rest}
    assert clean_paper(split).text == clean_tex(PAPER).text


# -- cuts -----------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["part", "chapter", "section", "subsection", "subsubsection",
                                     "paragraph", "subparagraph"])
def test_each_sectioning_command_starts_the_text(command: str) -> None:
    text = f"preamble junk \\{command}*[short]{{Title}} body"
    assert cut_preamble(text) == f"\\{command}*[short]{{Title}} body"


def test_lone_paragraph_is_found_unlike_redpajamas_regex() -> None:
    # RedPajama's pattern lacked "|" between paragraph and subparagraph, so a paper whose only
    # sectioning command is \paragraph had no match there.
    result = clean_tex("\\documentclass{article}\\begin{document}\\paragraph{Setup} We begin.\\end{document}")
    assert result.text is not None and result.text.startswith("\\paragraph{Setup} We begin.")


def test_section_lookalikes_do_not_end_the_preamble() -> None:
    text = "\\titleformat{\\section}{x} \\renewcommand{\\chaptermark}[1]{} \\sectionmark \\section{Real} ok"
    assert cut_preamble(text) == "\\section{Real} ok"


def test_no_sectioning_command_is_a_reasoned_drop() -> None:
    result = clean_tex("\\documentclass{article}\\begin{document}Just text.\\end{document}")
    assert result.text is None and result.drop_reason == "no_section"


def test_sectioning_inside_a_preamble_macro_does_not_count() -> None:
    paper = ("\\documentclass{book}\n\\newcommand{\\notes}{\\section*{Notes}}\n\\begin{document}\n"
             "front matter\n\\chapter{One}\ntext \\notes\n\\end{document}")
    text = clean_tex(paper).text or ""
    assert text.startswith("\\chapter{One}") and "\\section*{Notes}" in text


@pytest.mark.parametrize("bibliography", ["\\begin{thebibliography}{9}\\bibitem{a} A.\\end{thebibliography}",
                                          "\\bibliography{refs}", "\\begin{references}x\\end{references}",
                                          "\\printbibliography"])
def test_bibliography_and_what_follows_are_removed(bibliography: str) -> None:
    paper = f"\\documentclass{{article}}\\section{{A}} body\n{bibliography}\n\\section{{Appendix}} tail"
    assert clean_tex(paper).text == "\\section{A} body"


def test_appendix_cut_is_optional() -> None:
    paper = "\\documentclass{article}\\section{A} body\n\\appendix\n\\section{Proofs} proofs"
    assert "proofs" in (clean_tex(paper).text or "")
    assert clean_tex(paper, LatexOptions(cut_appendix=True)).text == "\\section{A} body"


# -- macros -----------------------------------------------------------------------------------
def test_paper_end_to_end() -> None:
    result = clean_tex(PAPER)
    assert result.text is not None
    assert result.title == "A Paper"
    text = result.text
    assert text.startswith("\\section{Introduction}")
    assert "\\left\\| \\mathbf{v} \\right\\|" in text and "\\mathbb{R}^n" in text and "\\textsc{Ours}" in text
    assert "\\langle a, b \\rangle" in text
    assert "f_{x}(y)" in text and "f_{z}(y)" in text
    assert "50\\% hold" in text
    for gone in ("remark", "whole-line", "\\newcommand", "\\def", "abstract", "After the bibliography", "Gone"):
        assert gone not in text


def test_renewcommand_let_providecommand_and_math_operators() -> None:
    text = ("\\newcommand{\\a}{first}\\renewcommand{\\a}{second}\\providecommand{\\a}{third}"
            "\\providecommand{\\b}{bee}\\let\\c=\\a\\DeclareMathOperator{\\tr}{tr}"
            "\\DeclareMathOperator*{\\argmax}{arg\\,max}\n\\section{S} \\a \\b \\c $\\tr A, \\argmax_x$")
    assert clean_tex(text).text == "\\section{S} second bee second $\\operatorname{tr} A, \\operatorname*{arg\\,max}_x$"


def test_let_copies_a_macro_with_arguments() -> None:
    text = "\\newcommand{\\ap}[1]{\\mathsf{ap}_{#1}}\\let\\apfunc\\ap\n\\section{S} $\\apfunc{f}$"
    assert clean_tex(text).text == "\\section{S} $\\mathsf{ap}_{f}$"


def test_a_body_ending_in_a_call_takes_its_arguments_from_the_text() -> None:
    # HoTT's \newcommand{\cd}{\tproj0}: \cd{A} means \tproj0{A}.
    text = ("\\newcommand{\\tproj}[3][]{|#3|_{#2}^{#1}}\\newcommand{\\cd}{\\tproj0}\n"
            "\\section{S} $\\cd{A}$ and $\\cd B$")
    assert clean_tex(text).text == "\\section{S} $|A|_{0}^{}$ and $|B|_{0}^{}$"


def test_protected_and_programming_macros_are_not_expanded() -> None:
    text = ("\\renewcommand{\\section}[1]{BROKEN}\\newcommand{\\cond}{\\ifmmode x\\else y\\fi}"
            "\\def\\delim#1.{(#1)}\\makeatletter\\def\\inner@x{z}\\makeatother\n"
            "\\section{S} \\cond \\delim a.")
    result = clean_tex(text)
    assert result.text == "\\section{S} \\cond \\delim a."


def test_line_break_before_a_macro_name_is_not_a_use() -> None:
    text = "\\newcommand{\\foo}{FOO}\n\\section{S} a \\\\foo b \\\\\\foo"
    assert clean_tex(text).text == "\\section{S} a \\\\foo b \\\\FOO"


def test_expansion_keeps_control_words_apart_from_following_letters() -> None:
    text = "\\newcommand{\\al}[1]{#1\\alpha}\n\\section{S} $\\al{x}y$"
    assert clean_tex(text).text == "\\section{S} $x\\alpha y$"


def test_self_recursive_def_stops_at_the_depth_bound() -> None:
    text = "\\def\\loop{x\\loop}\n\\section{S} \\loop end"
    result = clean_tex(text, LatexOptions(max_macro_depth=5))
    assert result.text == "\\section{S} xxxxx\\loop end"
    assert any("recursion limit" in w for w in result.warnings)


def test_exponential_expansion_is_a_reasoned_drop() -> None:
    defs = "".join(f"\\def\\m{chr(97 + i)}{{\\m{chr(98 + i)}\\m{chr(98 + i)}\\m{chr(98 + i)}}}" for i in range(7))
    text = defs + "\\def\\mh{xxxxxxxxxx}\n\\section{S} \\ma"
    result = clean_tex(text, LatexOptions(max_output_chars=10_000))
    assert result.text is None and result.drop_reason == "macro_expansion_limit"
    assert "10000" in result.detail


@pytest.mark.parametrize("broken", [
    "\\newcommand{\\x}{unclosed body\n\\section{S} text \\x",
    "\\newcommand{\\x}[1]{<#1>}\n\\section{S} text \\x{unclosed argument",
    "\\section{S} }}}} {{{{ \\def\\y",
    "\\def\\x#1{\n\\section{S} \\x",
])
def test_unbalanced_braces_never_raise(broken: str) -> None:
    result = clean_tex(broken)
    assert result.text is not None and "\\section{S}" in result.text


def test_unparsable_definition_is_reported() -> None:
    warnings: list[str] = []
    _, text = collect_macros("\\newcommand{\\x}{never closed", LatexOptions(), warnings)
    assert text == "\\newcommand{\\x}{never closed" and warnings


def test_decode_tex_falls_back_to_latin1_and_normalizes_newlines() -> None:
    assert decode_tex("caf\xe9\r\nx".encode("latin-1")) == "café\nx"
    assert decode_tex("\ufeffcafé\rx".encode()) == "café\nx"


# -- properties -------------------------------------------------------------------------------
LATEX_ALPHABET = st.sampled_from([*list("ab \n{}[]#%\\"), "\\section{", "\\def\\a", "\\newcommand{\\b}", "#1", "\\a", "\\b", "\\input{x}", "\\verb|"])


@settings(max_examples=150, deadline=None)
@given(st.lists(LATEX_ALPHABET, max_size=60).map("".join))
def test_cleaning_arbitrary_latex_never_raises(text: str) -> None:
    result = clean_paper({"main.tex": "\\documentclass{article}" + text, "x.tex": text},
                         LatexOptions(max_output_chars=200_000, max_expansions=5_000))
    assert (result.text is None) == (result.drop_reason is not None)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([*list("ab c\n{}\\%"), "\\%", "\\\\", "%x"]), max_size=40).map("".join))
def test_no_comment_survives_strip_comments(text: str) -> None:
    out = strip_comments(text)
    for line in out.split("\n"):
        assert re.search(r"(?<!\\)(?:\\\\)*%", line) is None


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="abc xyz.,\n", max_size=200))
def test_plain_text_after_a_section_passes_through(body: str) -> None:
    result = clean_tex("\\documentclass{article}\\section{S}\n" + body)
    expected = re.sub(r"\n[ \t]*(?:\n[ \t]*)+\n", "\n\n", re.sub(r"[ \t]+\n", "\n", "\\section{S}\n" + body)).strip()
    assert result.text == expected


def test_expander_without_macros_is_identity() -> None:
    assert MacroExpander({}, LatexOptions(), []).expand("\\a{b}") == "\\a{b}"
    assert list(iter_macro_uses("\\x \\\\x \\xy", {"x": Macro("x", 0, "")})) == ["x"]


# -- the real samples ---------------------------------------------------------------------
def _tar_sources(path: Path) -> dict[str, str]:
    files = {}
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("./")
            if member.isfile() and name.endswith(".tex") and not name.rsplit("/", 1)[-1].startswith("._"):
                files[name] = decode_tex(tar.extractfile(member).read())  # type: ignore[union-attr]
    return files


def _assert_clean(text: str) -> None:
    assert "\\newcommand" not in text and "\\renewcommand" not in text and "\\bibitem" not in text
    assert re.search(r"(?<!\\)%", text) is None
    assert "\\documentclass" not in text and "\\usepackage" not in text


@pytest.mark.realdata
def test_real_arxiv_paper_with_input_tree(realdata: Path) -> None:
    files = _tar_sources(realdata / "latex" / "arxiv-2004.14974.tar.gz")
    result = clean_paper(files)
    assert result.main_file == "emnlp2020.tex" and result.text is not None
    _assert_clean(result.text)
    assert result.text.startswith("\\section{Introduction}")
    # commands.tex: \newcommand{\ours}{\textsc{SciFact}\xspace}
    assert "\\ours" not in result.text and "\\textsc{SciFact}\\xspace" in result.text
    assert "Fact-checking" in result.text
    assert "annotation guide" not in result.text.lower()  # the appendix follows \bibliography


@pytest.mark.realdata
def test_real_arxiv_single_file_paper(realdata: Path) -> None:
    result = clean_paper(_tar_sources(realdata / "latex" / "arxiv-1911.02782.tar.gz"))
    assert result.text is not None and result.macros_defined >= 15 and result.macros_expanded > 100
    _assert_clean(result.text)
    assert "\\xspace" in result.text  # the bodies of S2ORC's \textsc{...}\xspace macros


@pytest.mark.realdata
def test_real_book_with_include_tree_and_400_macros(realdata: Path) -> None:
    book = realdata / "latex" / "hott-book"
    files = {p.name: decode_tex(p.read_bytes()) for p in sorted(book.glob("*.tex"))}
    result = clean_paper(files)
    assert result.main_file == "main.tex" and len(result.included) > 15
    assert result.text is not None and result.macros_defined > 400
    _assert_clean(result.text)
    # \newcommand{\jdeq}{\equiv} and \newcommand{\mapfunc}[1]{\ensuremath{\mathsf{ap}_{#1}}\xspace}
    assert "\\jdeq" not in result.text and "\\mapfunc" not in result.text
    assert "\\ensuremath{\\mathsf{ap}_{f}}\\xspace" in result.text
    sources = {p: strip_comments(t) for p, t in files.items()}
    inlined, _ = inline_includes("main.tex", sources, LatexOptions(), [])
    table, _ = collect_macros(inlined, LatexOptions(), [])
    assert not list(iter_macro_uses(result.text, table.expandable()))
