"""LaTeX cleaning for arXiv papers, as LLaMA describes it: the paper's own source, minus noise.

What a paper becomes (RECIPES.md, "ArXiv"), in this order:

1. every source file of the e-print (``.tex``, and the ``.sty``, ``.cls``, ``.def``, ``.bbl``… that
   TeX may load from it) is decoded (UTF-8, else Latin-1) and its comments removed: full-line
   ``%`` lines vanish, an inline unescaped ``%`` cuts the rest of its line; ``verbatim``-like
   environments and ``\\verb`` keep their ``%``; ``comment`` environments go too;
2. the main file is the ``.tex`` file with ``\\documentclass`` (or LaTeX 2.09's ``\\documentstyle``);
   when several have one, the one that pulls in the most source wins;
3. the paper is read from it in TeX's order (:class:`TexReader`): conditionals are decided the way
   TeX decides them (only real conditionals and ``\\newif`` switches open a level, so ``\\iff`` in
   an ``\\iffalse`` block is text; the false branch goes, the ``\\else`` branch stays; one whose
   value cannot be known here is kept as written); ``\\input`` / ``\\include`` / ``\\subfile``
   are inlined where TeX reads them, depth- and cycle-bounded, so a paper split over 60 files reads
   as one text; ``\\usepackage`` / ``\\RequirePackage`` / ``\\documentclass`` of a file in the
   e-print (the author's ``notation.sty``) read that file for its definitions;
4. user macro definitions (``\\newcommand``, ``\\renewcommand``, ``\\providecommand``, starred forms,
   ``\\def``/``\\gdef``/``\\edef``/``\\xdef``, ``\\let``, ``\\DeclareMathOperator``) are collected as
   they are read, from every file, and removed; this happens *before* the preamble cut because a
   definition can contain ``\\section`` (the HoTT book's ``\\sectionNotes``);
5. everything before the first sectioning command is removed (a paper with none is dropped); the
   regex lists all seven commands, fixing RedPajama's missing ``|`` between ``paragraph`` and
   ``subparagraph`` that made a lone ``\\paragraph`` unrecognised;
6. the bibliography and what follows it are removed, optionally from ``\\appendix`` on, and
   ``\\end{document}`` with whatever follows it (TeX never reads past it);
7. macros are expanded inline, with or without arguments, optional-argument defaults included.

Why a hand-written scanner and not pylatexenc's node tree: the cleaner must keep the LaTeX
source (LLaMA trains on source, not rendered text) and change only what it understands, must
never fail on unbalanced braces (common in real papers), and runs over ~90 GB; a brace-aware
regex scanner does this in linear time, where a full parse costs an order of magnitude more
(``benchmarks/latex.py`` measures it against pylatexenc's ``LatexNodes2Text``).

Expansion is bounded three ways: recursion depth (a self-recursive ``\\def`` stops there and the
call is kept as written), number of expansions, and output size; going past either of the last
two raises :class:`ExpansionLimitError`, which the arXiv reader turns into a reasoned drop.
Macros whose bodies are TeX programming (``\\if…``, ``\\csname``, ``@``-internals, nested
definitions) are not expanded: expanding them yields unreadable fragments, not notation.
"""

from __future__ import annotations

import functools
import posixpath
import re
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

# -- options and results -------------------------------------------------------------------


@dataclass(frozen=True)
class LatexOptions:
    """What to remove and how far macro expansion and include inlining may go."""

    cut_appendix: bool = False
    expand_macros: bool = True
    max_macro_depth: int = 8
    max_expansions: int = 200_000
    max_output_chars: int = 20_000_000
    max_include_depth: int = 16
    max_arg_chars: int = 100_000


@dataclass
class CleanResult:
    """The cleaned text of a paper, or why there is none, plus what was done to get it."""

    text: str | None
    drop_reason: str | None = None
    detail: str = ""
    main_file: str | None = None
    included: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)  # the e-print's own .sty/.cls files it loads
    title: str | None = None
    conditionals: int = 0  # conditionals decided (skipped branches removed)
    unclosed_conditionals: int = 0  # false conditionals never closed, kept as text (warned)
    macros_defined: int = 0
    macros_expanded: int = 0
    warnings: list[str] = field(default_factory=list)


class ExpansionLimitError(Exception):
    """Macro expansion went past the bound on expansions or output size."""


MAX_WARNINGS = 50


def _warn(warnings: list[str], message: str) -> None:
    if len(warnings) < MAX_WARNINGS:
        warnings.append(message)


# -- step 1: decoding and comments ---------------------------------------------------------
VERBATIM_ENVS = ("verbatim", "verbatim*", "Verbatim", "lstlisting", "minted", "alltt", "filecontents",
                 "filecontents*")
_BEGIN_VERBATIM = re.compile(r"\\begin\s*\{(" + "|".join(re.escape(e) for e in VERBATIM_ENVS) + r")\}")
#: In a line: ``\verb<d>…<d>`` (skipped whole), an escaped char (``\%``, ``\\``), or a comment.
_LINE_TOKENS = re.compile(r"\\verb\*?([^A-Za-z\s*])|\\[^A-Za-z]|%")
#: A ``comment`` environment, with its line end when it ends a line (it adds no paragraph break).
_COMMENT_ENV = re.compile(r"\\begin\s*\{comment\}.*?\\end\s*\{comment\}(?:[ \t]*\n)?", re.S)


def decode_tex(data: bytes) -> str:
    """Decode a source file: UTF-8 when valid (BOM dropped), else Latin-1; newlines normalized."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _comment_start(line: str) -> int:
    """Column of the first comment ``%`` in ``line``, or -1."""
    position = 0
    while (match := _LINE_TOKENS.search(line, position)) is not None:
        token = match.group(0)
        if token == "%":
            return match.start()
        if match.group(1) is not None:  # \verb|...|: skip to the closing delimiter
            close = line.find(match.group(1), match.end())
            if close == -1:
                return -1
            position = close + 1
        else:
            position = match.end()
    return -1


def strip_comments(text: str) -> str:
    """Remove ``%`` comments: a comment-only line entirely, otherwise from ``%`` to the line end.

    The newline after an inline comment is kept (a space to a reader); ``\\%`` is a literal
    percent sign, ``\\\\%`` is a line break followed by a comment. Lines inside verbatim-like
    environments are left as they are. Then ``comment`` environments go (the ``comment`` package
    reads them line by line, so nothing inside one counts, not even a ``\\fi``). Conditionals
    (``\\iffalse … \\fi``) are not comments to TeX: :class:`TexReader` skips them in reading order.
    """
    if "%" in text:
        text = _strip_percent_comments(text)
    if "\\begin" in text and "{comment}" in text:
        text = _COMMENT_ENV.sub("", text)
    return text


def _strip_percent_comments(text: str) -> str:
    out: list[str] = []
    verbatim_end: str | None = None
    for line in text.split("\n"):
        if verbatim_end is not None:
            out.append(line)
            if verbatim_end in line:
                verbatim_end = None
            continue
        cut = _comment_start(line) if "%" in line else -1
        if cut == -1:
            out.append(line)
        elif line[:cut].strip():
            out.append(line[:cut])
            line = line[:cut]
        else:
            continue  # a comment-only line disappears with its newline
        if (begin := _BEGIN_VERBATIM.search(line)) is not None:
            end_tag = f"\\end{{{begin.group(1)}}}"
            if end_tag not in line[begin.end():]:
                verbatim_end = end_tag
    return "\n".join(out)


# -- step 2 and 3: main file and includes --------------------------------------------------
#: Files a paper's main file can be (LaTeX sources proper).
MAIN_SUFFIXES = (".tex", ".ltx", ".latex")
#: Files an e-print loads rather than typesets: packages, classes, definition and configuration
#: files, and BibTeX's output (``\\input{paper.bbl}`` puts the bibliography where the cut finds it).
SUPPORT_SUFFIXES = (".sty", ".cls", ".def", ".cfg", ".clo", ".bbl")
SOURCE_SUFFIXES = MAIN_SUFFIXES + SUPPORT_SUFFIXES
_DOCUMENTCLASS = re.compile(r"\\document(?:class|style)(?![A-Za-z@])")
_BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")
_INCLUDE = re.compile(r"\\(input|include|subfile)(?![A-Za-z@])\s*(?:\{([^{}]*)\}|([^\s{}\\%]+))")
PREFERRED_MAIN_NAMES = ("main.tex", "ms.tex", "paper.tex", "article.tex")


def is_main_candidate(path: str) -> bool:
    """Whether ``path`` names a LaTeX source that could be a paper's main file."""
    return path.lower().endswith(MAIN_SUFFIXES)


def _include_target(name: str, base_dir: str, files: Mapping[str, str]) -> str | None:
    """The archive path an ``\\input{name}`` refers to, as TeX resolves it (from the main dir).

    TeX tries ``name.tex`` first, then ``name`` as written (``\\input{macros.sty}``, ``\\input{x.bbl}``).
    """
    name = name.strip().strip('"')
    if not name:
        return None
    for candidate in (name + ".tex", name):
        path = posixpath.normpath(posixpath.join(base_dir, candidate))
        if path in files:
            return path
    return None


def _reachable_size(path: str, files: Mapping[str, str]) -> int:
    """Characters of source a candidate main file pulls in (itself plus its include tree)."""
    base = posixpath.dirname(path)
    seen, stack, total = {path}, [path], 0
    while stack:
        current = stack.pop()
        text = files[current]
        total += len(text)
        for match in _INCLUDE.finditer(text):
            target = _include_target(match.group(2) or match.group(3) or "", base, files)
            if target is not None and target not in seen:
                seen.add(target)
                stack.append(target)
    return total


def find_main_file(files: Mapping[str, str]) -> str | None:
    """The main file of a paper (``files`` maps archive path to comment-free text).

    Among ``.tex`` files with ``\\documentclass``: prefer one with ``\\begin{document}``, then the
    one whose include tree is largest (a book's ``main.tex`` over its errata sheet), then a
    conventional name, then the shortest path and name order, so the choice is deterministic. A
    paper of a single ``.tex`` file is its own main file even without ``\\documentclass``. Packages
    and classes (``.sty``, ``.cls``) are never the main file.
    """
    sources = [path for path in files if is_main_candidate(path)]
    candidates = [path for path in sources if _DOCUMENTCLASS.search(files[path])]
    if not candidates:
        return sources[0] if len(sources) == 1 else None

    def rank(path: str) -> tuple[int, int, int, int, str]:
        return (
            0 if _BEGIN_DOCUMENT.search(files[path]) else 1,
            -_reachable_size(path, files),
            0 if posixpath.basename(path).lower() in PREFERRED_MAIN_NAMES else 1,
            path.count("/"),
            path,
        )

    return min(candidates, key=rank)


def inline_includes(main: str, files: Mapping[str, str], options: LatexOptions,
                    warnings: list[str]) -> tuple[str, list[str]]:
    """The main file's text with ``\\input``/``\\include`` replaced by the files' texts, in order.

    Read as :class:`TexReader` reads (conditionals resolved across files), but with every macro
    definition left in the text and local packages not loaded: the paper as one source file.
    """
    reading = read_document(main, files, options, collect=False)
    warnings.extend(reading.warnings)
    return reading.text, reading.included


# -- brace-aware scanning ------------------------------------------------------------------
_BRACE_TOKENS = re.compile(r"\\.|[{}]", re.S)
_BRACKET_TOKENS = re.compile(r"\\.|[{}\]]", re.S)
_CONTROL_SEQUENCE = re.compile(r"\\(?:[A-Za-z@]+|.)", re.S)
_SPACES = re.compile(r"[ \t]*\n?[ \t]*")


def skip_spaces(text: str, position: int) -> int:
    """Position after spaces and at most one newline (TeX skips these before an argument)."""
    return _SPACES.match(text, position).end()  # type: ignore[union-attr]


#: A group not closed within this many characters is looked up in a brace table (:class:`_BracePairs`).
_PAIRS_MIN_CHARS = 4096
_PAIRS_CACHE: dict[str, _BracePairs] = {}
_SCAN_WORK: dict[str, int] = {}  # characters scanned in long-group scans, per text (bounded)


class _BracePairs:
    """Where each ``{`` of a text closes, from one linear pass (same tokens as :func:`read_group`).

    Scanning from every ``{`` is quadratic on unclosed groups: ``\\f{`` repeated 20,000 times
    after a one-argument ``\\f`` (60 KB) took 238 s, each call scanning to the end again. The
    table answers each group in O(log n); 16 bytes per brace (two sorted integer arrays).
    """

    def __init__(self, text: str) -> None:
        self.opens = array("q")
        self.ends = array("q")  # end of the matching "}" token, -1 when the group never closes
        stack: list[int] = []
        for match in _BRACE_TOKENS.finditer(text):
            token = match.group(0)
            if token == "{":
                stack.append(len(self.opens))
                self.opens.append(match.start())
                self.ends.append(-1)
            elif token == "}" and stack:
                self.ends[stack.pop()] = match.end()

    def end_of(self, position: int) -> int | None:
        """End of the group opened at ``position``; -1 if unclosed; None if no group opens there.

        None happens when ``position`` is inside another token (``\\{``): the caller scans instead.
        """
        index = bisect_left(self.opens, position)
        if index < len(self.opens) and self.opens[index] == position:
            return self.ends[index]
        return None

    @classmethod
    def of(cls, text: str) -> _BracePairs:
        pairs = _PAIRS_CACHE.get(text)
        if pairs is None:
            for cache in (_PAIRS_CACHE, _SCAN_WORK):
                while len(cache) >= 8:
                    cache.pop(next(iter(cache)))
            pairs = _PAIRS_CACHE[text] = cls(text)
        return pairs


def read_group(text: str, position: int, limit: int) -> tuple[str, int] | None:
    """Read ``{…}`` starting at ``position`` (which must hold ``{``): (content, end) or None.

    None when the group is unbalanced or longer than ``limit`` characters: the caller then
    leaves the text as written instead of guessing.
    """
    if position >= len(text) or text[position] != "{":
        return None
    stop = min(len(text), position + limit + 2)
    pairs = _PAIRS_CACHE.get(text)
    if pairs is None:
        quick = min(stop, position + _PAIRS_MIN_CHARS)
        found = _scan_group(text, position, quick)  # most groups are short: a scan is cheapest
        if found is not None or quick == stop:
            return found
        # a long or unclosed group: once such scans have cost as much as the text is long, build
        # the text's brace table (linear, once) and answer this and later groups from it
        if text not in _SCAN_WORK and len(_SCAN_WORK) >= 8:
            _SCAN_WORK.pop(next(iter(_SCAN_WORK)))
        _SCAN_WORK[text] = work = _SCAN_WORK.get(text, 0) + quick - position
        if work < len(text):
            return _scan_group(text, position, stop)
        pairs = _BracePairs.of(text)
    end = pairs.end_of(position)
    if end is None:
        return _scan_group(text, position, stop)
    return (text[position + 1:end - 1], end) if 0 < end <= stop else None


def _scan_group(text: str, position: int, stop: int) -> tuple[str, int] | None:
    depth = 0
    for match in _BRACE_TOKENS.finditer(text, position, stop):
        token = match.group(0)
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                return text[position + 1:match.start()], match.end()
    return None


def read_bracket(text: str, position: int, limit: int) -> tuple[str, int] | None:
    """Read ``[…]`` at ``position``; a ``]`` inside braces does not close it."""
    if position >= len(text) or text[position] != "[":
        return None
    depth = 0
    stop = min(len(text), position + limit + 2)
    for match in _BRACKET_TOKENS.finditer(text, position + 1, stop):
        token = match.group(0)
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth < 0:
                return None
        elif token == "]" and depth == 0:
            return text[position + 1:match.start()], match.end()
    return None


def read_argument(text: str, position: int, limit: int) -> tuple[str, int] | None:
    """Read one undelimited TeX argument: a ``{group}``, a control sequence or one character."""
    position = skip_spaces(text, position)
    if position >= len(text):
        return None
    char = text[position]
    if char == "{":
        return read_group(text, position, limit)
    if char in "}%":
        return None
    if char == "\\":
        match = _CONTROL_SEQUENCE.match(text, position)
        return (match.group(0), match.end()) if match else None
    return char, position + 1


# -- step 4: macro definitions -------------------------------------------------------------
@dataclass(frozen=True)
class Macro:
    """A user macro: ``\\name`` with ``nargs`` arguments, the first optional when ``default`` is set."""

    name: str
    nargs: int
    body: str
    default: str | None = None
    expandable: bool = True


_DEFINITION = re.compile(
    r"\\(newcommand|renewcommand|providecommand|DeclareRobustCommand|DeclareMathOperator"
    r"|newenvironment|renewenvironment|def|gdef|edef|xdef|let)(?![A-Za-z@])(\s*\*)?"
)
_NAME_IN_BRACES = re.compile(r"\{\s*(\\(?:[A-Za-z@]+|.))\s*\}", re.S)
_NAME = re.compile(r"\\(?:[A-Za-z@]+|.)", re.S)
_NARGS = re.compile(r"\s*\[\s*([0-9])\s*\]")
_DEF_PARAMS = re.compile(r"[^{}]{0,256}")
_LET_RHS = re.compile(r"\s*=?\s*(\\(?:[A-Za-z@]+|.)|[^\\\s])", re.S)
#: Bodies that program TeX rather than abbreviate notation; their uses are left as written.
_PROGRAMMING = re.compile(
    r"\\(?:[A-Za-z]*@[A-Za-z@]*|if[A-Za-z]*|else|fi|csname|endcsname|expandafter|futurelet|noexpand"
    r"|afterassignment|def|gdef|edef|xdef|let|newcommand|renewcommand|providecommand)(?![A-Za-z])|##"
)
SECTIONING = ("part", "chapter", "section", "subsection", "subsubsection", "paragraph", "subparagraph")
#: Commands the cleaner itself relies on; a paper's redefinition of them is removed, not applied.
PROTECTED = frozenset(
    {*SECTIONING, "begin", "end", "item", "input", "include", "subfile", "appendix", "bibliography",
     "documentclass", "documentstyle", "usepackage", "label", "ref", "cite", "par", "relax"}
)


@dataclass
class MacroTable:
    """Definitions found in a paper, by name without the backslash (the last one wins)."""

    macros: dict[str, Macro] = field(default_factory=dict)
    definitions: int = 0

    def add(self, macro: Macro, provide: bool = False) -> None:
        """Record ``macro``; ``\\providecommand`` does not replace an existing definition."""
        self.definitions += 1
        if provide and macro.name in self.macros:
            return
        self.macros[macro.name] = macro

    def alias(self, name: str, target: str) -> Macro:
        """``\\let\\name\\target``: a copy of the target's current meaning when it is a user macro.

        Copying (TeX's semantics for ``\\let``) matters when the target takes arguments: an alias
        expanding to a bare ``\\target`` would find no arguments inside its own body.
        """
        known = self.macros.get(target[1:]) if target.startswith("\\") else None
        if known is not None:
            return Macro(name, known.nargs, known.body, known.default,
                         known.expandable and _is_expandable(name, known.body))
        expandable = target.startswith("\\") and target[1:] != name and _is_expandable(name, target)
        return Macro(name, 0, target, None, expandable)

    def expandable(self) -> dict[str, Macro]:
        """The macros whose uses will be replaced by their bodies.

        A macro whose whole body is another user macro taking arguments
        (``\\newcommand{\\ap}{\\mapfunc}``) becomes a copy of it, for the same reason as in :meth:`alias`.
        """
        macros = {name: macro for name, macro in self.macros.items() if macro.expandable}
        for _ in range(4):  # short alias chains
            changed = False
            for name, macro in macros.items():
                match = _NAME.fullmatch(macro.body.strip())
                target = macros.get(match.group(0)[1:]) if match and macro.nargs == 0 else None
                if target is not None and target.nargs > 0 and target.name != name:
                    macros[name] = Macro(name, target.nargs, target.body, target.default)
                    changed = True
            if not changed:
                break
        return macros


def _is_expandable(name: str, body: str) -> bool:
    return (
        name.isascii() and name.isalpha() and name not in PROTECTED and not _PROGRAMMING.search(body)
    )


def _parse_name(text: str, position: int) -> tuple[str, int] | None:
    position = skip_spaces(text, position)
    match = _NAME_IN_BRACES.match(text, position) or _NAME.match(text, position)
    if match is None:
        return None
    raw = match.group(1) if match.re is _NAME_IN_BRACES else match.group(0)
    return raw[1:], match.end()


def _parse_newcommand(text: str, position: int, limit: int) -> tuple[Macro, int] | None:
    """``{\\name}[n][default]{body}`` after ``\\newcommand`` (or a relative)."""
    parsed = _parse_name(text, position)
    if parsed is None:
        return None
    name, position = parsed
    nargs, default = 0, None
    if (match := _NARGS.match(text, position)) is not None:
        nargs, position = int(match.group(1)), match.end()
        after = skip_spaces(text, position)
        if after < len(text) and text[after] == "[":
            bracket = read_bracket(text, after, limit)
            if bracket is None:
                return None
            default, position = bracket
    body = read_argument(text, position, limit)
    if body is None:
        return None
    return Macro(name, nargs, body[0], default, _is_expandable(name, body[0])), body[1]


def _parse_def(text: str, position: int, limit: int) -> tuple[Macro, int] | None:
    """``\\name#1#2{body}`` after ``\\def``; delimited parameters make the macro non-expandable."""
    parsed = _parse_name(text, position)
    if parsed is None:
        return None
    name, position = parsed
    params = _DEF_PARAMS.match(text, position)
    assert params is not None  # matches the empty string at least
    param_text = params.group(0)
    body = read_group(text, params.end(), limit)
    if body is None:
        return None
    nargs = param_text.count("#")
    undelimited = param_text.strip() == "".join(f"#{i}" for i in range(1, nargs + 1))
    return Macro(name, nargs, body[0], None, undelimited and _is_expandable(name, body[0])), body[1]


def _parse_let(text: str, position: int, table: MacroTable) -> tuple[Macro, int] | None:
    """``\\let\\a=\\b``: ``\\a`` becomes a copy of ``\\b`` (only control sequences are aliased)."""
    parsed = _parse_name(text, position)
    if parsed is None:
        return None
    name, position = parsed
    rhs = _LET_RHS.match(text, position)
    if rhs is None:
        return None
    return table.alias(name, rhs.group(1)), rhs.end()


def _parse_math_operator(text: str, position: int, starred: bool, limit: int) -> tuple[Macro, int] | None:
    """``\\DeclareMathOperator{\\name}{text}`` -> ``\\operatorname{text}``."""
    parsed = _parse_name(text, position)
    if parsed is None:
        return None
    name, position = parsed
    body = read_argument(text, position, limit)
    if body is None:
        return None
    star = "*" if starred else ""
    expansion = f"\\operatorname{star}{{{body[0]}}}"
    return Macro(name, 0, expansion, None, _is_expandable(name, body[0])), body[1]


def _parse_environment(text: str, position: int, limit: int) -> tuple[None, int] | None:
    """``{name}[n][default]{begin}{end}`` after ``\\newenvironment``: removed, never expanded."""
    name = read_argument(text, position, limit)
    if name is None:
        return None
    position = name[1]
    if (match := _NARGS.match(text, position)) is not None:
        position = match.end()
        after = skip_spaces(text, position)
        if after < len(text) and text[after] == "[":
            bracket = read_bracket(text, after, limit)
            if bracket is None:
                return None
            position = bracket[1]
    for _ in range(2):
        part = read_argument(text, position, limit)
        if part is None:
            return None
        position = part[1]
    return None, position


def collect_macros(text: str, options: LatexOptions, warnings: list[str]) -> tuple[MacroTable, str]:
    """Find every macro definition in ``text``; return them and the text without them.

    One text, conditionals not decided: :class:`TexReader` does the same while reading a paper.

    A definition that cannot be parsed (unbalanced braces, a body longer than
    ``max_arg_chars``) is left in the text with a warning, and scanning goes on after it.
    """
    table = MacroTable()
    kept: list[str] = []
    position = 0
    search_from = 0
    limit = options.max_arg_chars
    while (match := _DEFINITION.search(text, search_from)) is not None:
        command = match.group(1)
        parsed = _parse_definition(command, bool(match.group(2)), text, match.end(), limit, table)
        if parsed is None:
            _warn(warnings, f"unparsable \\{command} at character {match.start()}")
            search_from = match.end()
            continue
        macro, end = parsed
        if macro is not None:
            table.add(macro, provide=command == "providecommand")
        kept.append(text[position:match.start()])
        position = search_from = end
    kept.append(text[position:])
    return table, "".join(kept)


# -- steps 3 and 4 together: reading the paper in TeX's order ------------------------------
#: TeX's conditionals: the primitives of TeX, e-TeX, pdfTeX, XeTeX and LuaTeX. Only these, the
#: switches a ``\\newif`` (or ``\\let\\ifx\\iftrue``) declares, and the switches of widely used
#: packages open a level; ``\\iff`` (the math arrow) or ``\\ifthenelse`` never do.
CONDITIONAL_PRIMITIVES = frozenset({
    "if", "ifcat", "ifnum", "ifdim", "ifodd", "ifvmode", "ifhmode", "ifmmode", "ifinner", "ifvoid",
    "ifhbox", "ifvbox", "ifx", "ifeof", "iftrue", "iffalse", "ifcase", "ifdefined", "ifcsname",
    "iffontchar", "ifincsname", "ifpdfprimitive", "ifpdfabsnum", "ifpdfabsdim", "ifprimitive",
    "ifabsnum", "ifabsdim", "ifcondition",
})
#: ``\\newif`` switches of packages an e-print loads from the TeX installation (their value is
#: unknown here: both branches are kept as written). Names with ``@`` are kernel and class switches.
PACKAGE_SWITCHES = frozenset({"ifpdf", "ifpdftex", "ifxetex", "ifluatex", "ifvtex", "iftutex", "ifetex"})
PACKAGE_SWITCH_PREFIXES = ("ifCLASSOPTION", "ifCLASSINFO", "if@")
#: Names starting with ``if`` that are macros, not conditionals: symbols and the argument-taking
#: tests of ifthen, etoolbox, xifthen and biblatex (they never pair with ``\\fi``).
NOT_CONDITIONALS = frozenset({
    "iff", "ifthenelse", "ifboolexpr", "ifboolexpe", "ifbool", "ifnotbool", "iftoggle", "ifnottoggle",
    "ifdef", "ifndef", "ifcsdef", "ifcsndef", "ifundef", "ifcsundef", "ifdefmacro", "ifcsmacro",
    "ifdefparam", "ifcsparam", "ifdefprefix", "ifcsprefix", "ifdefprotected", "ifcsprotected",
    "ifdefltxprotect", "ifcsltxprotect", "ifdefempty", "ifcsempty", "ifdefvoid", "ifcsvoid",
    "ifdefequal", "ifcsequal", "ifdefstring", "ifcsstring", "ifdefstrequal", "ifcsstrequal",
    "ifdefcounter", "ifcscounter", "ifltxcounter", "ifdeflength", "ifcslength", "ifdefdimen",
    "ifcsdimen", "ifstrequal", "ifstrempty", "ifblank", "ifnumcomp", "ifnumequal", "ifnumgreater",
    "ifnumless", "ifnumodd", "ifdimcomp", "ifdimequal", "ifdimgreater", "ifdimless", "ifinlist",
    "ifinlistcs", "ifrmnum", "ifdeftok", "ifstrmatch", "ifcommandkey", "iffieldundef",
    "iffieldequals", "iffieldequalstr", "iflistundef", "ifnameundef", "ifentrytype", "ifkeyword",
    "ifcategory", "ifciteseen", "ifentryseen", "ifcitation", "ifbibliography", "iffootnote",
    "ifcurrentfield", "ifcurrentlist", "ifcurrentname", "iffieldint", "iffieldnum", "iffieldxref",
    "ifisdimension", "ifisdimexpr", "ifisnum", "ifisinteger", "ifempty", "ifpackageloaded",
})
#: Commands whose braced arguments TeX may or may not execute (options, package tests): a switch
#: set or a macro defined inside them has an unknown value / an uncertain meaning. Value: arguments.
BRANCH_COMMANDS = {
    "DeclareOption": 2, "@ifpackageloaded": 3, "@ifclassloaded": 3, "@ifundefined": 3,
    "IfFileExists": 3, "IfPackageLoadedTF": 3, "ifthenelse": 3, "ifdef": 3, "ifndef": 3,
    "ifundef": 3, "ifbool": 3, "iftoggle": 3, "ifcsdef": 3, "ifcsundef": 3,
}
#: Package-loading commands and the extension of the file each loads.
_LOADERS = {"usepackage": ".sty", "RequirePackage": ".sty", "RequirePackageWithOptions": ".sty",
            "documentclass": ".cls", "LoadClass": ".cls", "LoadClassWithOptions": ".cls",
            "documentstyle": ".cls"}
_LOAD_ARGS = re.compile(r"\s*(?:\[([^\]]*)\]\s*)?\{([^{}]*)\}")
_READER_ALTERNATIVES = (
    r"(?P<newif>newif)\s*\\(?P<newif_name>if[A-Za-z@]+)"
    r"|let\s*\\(?P<let_name>if[A-Za-z@]+)\s*=?\s*\\(?P<let_value>iftrue|iffalse)(?![A-Za-z@])"
    r"|(?P<cond>if[A-Za-z@]*|else|or|fi)(?![A-Za-z@])"
    r"|(?P<include>input|include|subfile)(?![A-Za-z@])"
    r"|(?P<loader>" + "|".join(_LOADERS) + r")(?![A-Za-z@])"
    r"|(?P<define>newcommand|renewcommand|providecommand|DeclareRobustCommand|DeclareMathOperator"
    r"|newenvironment|renewenvironment|def|gdef|edef|xdef|let)(?![A-Za-z@])(?P<star>\s*\*)?"
    r"|(?P<branch>DeclareOption|@ifpackageloaded|@ifclassloaded|@ifundefined|IfFileExists"
    r"|IfPackageLoadedTF)(?![A-Za-z@])"
    r"|begin\s*\{(?P<verbatim>" + "|".join(re.escape(e) for e in VERBATIM_ENVS) + r")\}"
    r"|verb\*?(?P<verb>[^A-Za-z\s*])"
)
#: First letters of :data:`_READER_ALTERNATIVES`: a lookahead on them rejects most control words at once.
_READER_INITIALS = "bdefgilnoprsuvxDILR@"
#: Switch names a paper declares (``\\newif\\ifdraft``, ``\\let\\ifdraft\\iftrue``): their setters are tokens too.
_SWITCH_DECLARATION = re.compile(
    r"\\newif\s*\\if([A-Za-z@]+)|\\let\s*\\if([A-Za-z@]+)\s*=?\s*\\if(?:true|false)(?![A-Za-z@])"
)


@functools.lru_cache(maxsize=64)
def reader_tokens(switches: tuple[str, ...]) -> re.Pattern[str]:
    """Every token the reader acts on, setters of ``switches`` (``\\drafttrue``) included.

    Naming the setters keeps the scan as fast as before them: a pattern for any control word
    ending in ``true``/``false`` doubled the cost of the whole scan on real papers.
    """
    alternatives = _READER_ALTERNATIVES
    initials = set(_READER_INITIALS)
    if switches:
        names = "|".join(map(re.escape, sorted(switches, key=len, reverse=True)))
        alternatives += r"|(?P<setter>(?:" + names + r")(?:true|false))(?![A-Za-z@])"
        initials.update(name[0] for name in switches)
    return re.compile(r"\\(?=[" + re.escape("".join(sorted(initials))) + r"])(?:" + alternatives + ")")


#: Conditions the reader decides from literals: ``\\ifnum 0=1``, ``\\ifodd 3``, ``\\ifcase 2``.
_NUM_TEST = re.compile(r"\s*(-?\d+)\s*([<=>])\s*(-?\d+) ?")
_ODD_TEST = re.compile(r"\s*(-?\d+) ?")
_CASE_TEST = re.compile(r"\s*(\d+) ?")
#: ``\\newcommand{\\ifsomething}``: an e-print's own macro whose name starts with ``if``.
_IF_MACRO = re.compile(
    r"\\(?:(?:re)?newcommand|providecommand|DeclareRobustCommand|[gex]?def)\s*\*?\s*\{?\s*\\(if[A-Za-z@]*)"
)
_AFTER_REMOVED = re.compile(r"[ \t]*")
#: Rereadings of a paper whose false conditional never closed (each leaves one more opening as text).
MAX_REREADS = 4
KNOWN, UNKNOWN, SKIPPED = "known", "unknown", "skipped"


@dataclass(slots=True)
class _Frame:
    """One open conditional: decided (``KNOWN``), kept as written (``UNKNOWN``) or inside a skipped branch."""

    kind: str
    where: tuple[str, int]  # file and offset of the opening token
    taken: int = 0  # the branch TeX reads (0 = the true branch or \ifcase 0; else the \or count)
    branch: int = 0
    case: bool = False
    on: bool = True  # the current branch is the one TeX reads
    matched: bool = False  # some branch so far was the one TeX reads (\else is then skipped)

    def suppresses(self) -> bool:
        return self.kind == SKIPPED or (self.kind == KNOWN and not self.on)


@dataclass
class Reading:
    """What :func:`read_document` made of a paper: its text in reading order and its definitions."""

    text: str
    table: MacroTable
    included: list[str]
    packages: list[str]
    warnings: list[str]
    conditionals: int = 0  # conditionals decided (their skipped branches removed)
    unclosed: int = 0  # false conditionals that never closed, left in the text as written


class TexReader:
    """Reads a paper as TeX does: files in order, conditionals decided, definitions collected.

    One pass over the tokens that matter (:func:`reader_tokens`):

    - a conditional whose value is known (``\\iftrue``, ``\\iffalse``, a ``\\newif`` switch set by
      ``\\xtrue``/``\\xfalse`` outside any undecided branch, a test of literal numbers) keeps its
      taken branch and drops the rest with its ``\\if``/``\\else``/``\\or``/``\\fi``; one of unknown
      value (``\\ifx``, ``\\ifmmode``, a class's switch) is kept as written, branches and all, since
      the source is what the corpus keeps and guessing would lose text. Inside a skipped branch
      only nesting counts, as when TeX skips: every conditional opens a level, ``\\fi`` closes one;
    - ``\\input``/``\\include``/``\\subfile`` are read in place (only where TeX reads them: an input
      in a false branch is never opened), depth-, cycle- and size-bounded;
    - ``\\usepackage``/``\\RequirePackage``/``\\documentclass``/``\\LoadClass`` of a file in the
      e-print (``notation.sty``, ``mine.cls``) read that file once, at that point, for its
      definitions and switches; its other text is not part of the paper;
    - a macro definition is parsed whole (TeX does not run what a body holds) and, when ``collect``
      is set, recorded and removed. One made inside an undecided branch, an option or a package
      test (:data:`BRANCH_COMMANDS`) is recorded as not expandable: its meaning is uncertain.

    ``ignored`` holds openings (file, offset) to read as plain text: :func:`read_document` rereads
    with the opening of a false conditional that never closed, so a misread never drops the rest;
    ``decide=False`` keeps every conditional as written (its last resort).
    """

    def __init__(self, files: Mapping[str, str], base: str, options: LatexOptions, *, collect: bool = True,
                 ignored: frozenset[tuple[str, int]] = frozenset(), decide: bool = True) -> None:
        self.files = files
        self.decide = decide
        self.base = base
        self.options = options
        self.collect = collect
        self.ignored = ignored
        self.warnings: list[str] = []
        self.table = MacroTable()
        self.switches: dict[str, bool | None] = {}
        self.frames: list[_Frame] = []
        self.suppressing = 0  # frames that hide the text (known and off their branch, or skipped)
        self.undecided = 0  # frames of unknown value and open BRANCH_COMMANDS arguments
        self.out: list[str] = []
        self._line_blank = True  # the output's last line holds only spaces so far
        self.silent = 0  # > 0 while reading a package: its text is not the paper's
        self.included: list[str] = []
        self.packages: list[str] = []
        self.budget = options.max_output_chars
        self.decided = 0
        self._ends: list[int] = []  # ends of the open BRANCH_COMMANDS arguments of the file being read
        declared = {name for text in files.values() if "\\newif" in text or "\\let" in text
                    for pair in _SWITCH_DECLARATION.findall(text) for name in pair if name}
        self.tokens = reader_tokens(tuple(sorted(declared)))
        self.macro_names = {name for text in files.values() if "\\" in text
                            for name in _IF_MACRO.findall(text)}

    # -- output -----------------------------------------------------------------------------
    def _emit(self, piece: str) -> None:
        if piece and not self.silent:
            self.out.append(piece)
            newline = piece.rfind("\n")
            blank = not piece[newline + 1:].strip(" \t")
            self._line_blank = blank if newline >= 0 else self._line_blank and blank

    def _at_line_start(self) -> bool:
        """Whether the output's last line holds only spaces so far (kept by :meth:`_emit`, O(1))."""
        return self._line_blank

    def _resume(self, text: str, position: int) -> int:
        """Where text resumes after a removed token: spaces skipped (as TeX skips them after a
        control word), and the line end too when the token stood alone on its line."""
        position = _AFTER_REMOVED.match(text, position).end()  # type: ignore[union-attr]
        if position < len(text) and text[position] == "\n" and self._at_line_start():
            position += 1
        return position

    # -- conditionals -----------------------------------------------------------------------
    def is_conditional(self, name: str, text: str, after: int) -> bool:
        """Whether ``\\name`` (starting with ``if``) is a TeX conditional, as far as the e-print shows."""
        if name in CONDITIONAL_PRIMITIVES or name in self.switches:
            return True
        if name in NOT_CONDITIONALS or name in self.macro_names:
            return False
        if name in PACKAGE_SWITCHES or name.startswith(PACKAGE_SWITCH_PREFIXES):
            return True
        # a switch of a class or package outside the e-print: a conditional, unless an argument
        # in braces follows (``\\ifsomething{…}{…}`` is a test macro, which never meets a ``\\fi``)
        following = skip_spaces(text, after)
        return not (following < len(text) and text[following] == "{")

    def _value(self, name: str, text: str, after: int) -> tuple[int | None, int, bool]:
        """(branch TeX reads or None when unknown, end of the condition, whether it is ``\\ifcase``)."""
        if name in ("iftrue", "iffalse"):
            return (0 if name == "iftrue" else 1), after, False
        if name == "ifnum" and (match := _NUM_TEST.match(text, after)):
            left, op, right = int(match.group(1)), match.group(2), int(match.group(3))
            holds = left < right if op == "<" else left > right if op == ">" else left == right
            return (0 if holds else 1), match.end(), False
        if name == "ifodd" and (match := _ODD_TEST.match(text, after)):
            return (0 if int(match.group(1)) % 2 else 1), match.end(), False
        if name == "ifcase":
            match = _CASE_TEST.match(text, after)
            return (int(match.group(1)) if match else None), (match.end() if match else after), True
        value = self.switches.get(name)
        if value is None:
            return None, after, False
        return (0 if value else 1), after, False

    def _push(self, frame: _Frame) -> None:
        self.frames.append(frame)
        self.suppressing += frame.suppresses()
        self.undecided += frame.kind == UNKNOWN

    def _open(self, name: str, text: str, path: str, start: int, end: int) -> tuple[int, int] | None:
        """Open a conditional; return the span to remove (a decided one) or None (kept as written)."""
        if self.suppressing:
            self._push(_Frame(SKIPPED, (path, start), case=name == "ifcase"))
            return None
        taken, end, case = self._value(name, text, end) if self.decide else (None, end, name == "ifcase")
        if taken is None:
            self._push(_Frame(UNKNOWN, (path, start), case=case))
            return None
        self.decided += 1
        self._push(_Frame(KNOWN, (path, start), taken=taken, case=case, on=taken == 0, matched=taken == 0))
        return start, end

    def _branch(self, name: str) -> bool | None:
        """``\\else``/``\\or``/``\\fi``: True when the token goes (decided), False when kept, None if stray."""
        if not self.frames or (name == "or" and not self.frames[-1].case):
            return None
        frame = self.frames[-1]
        self.suppressing -= frame.suppresses()
        if name == "fi":
            self.frames.pop()
            self.undecided -= frame.kind == UNKNOWN
            return frame.kind == KNOWN
        if frame.kind == KNOWN:
            frame.branch = frame.branch + 1 if name == "or" else -1
            frame.on = frame.branch == frame.taken if name == "or" else not frame.matched
            frame.matched = frame.matched or frame.on
        self.suppressing += frame.suppresses()
        return frame.kind == KNOWN

    def _set_switch(self, name: str, value: bool, text: str, position: int, start: int,
                    end: int) -> tuple[int, int]:
        """Declare or set a switch. Where TeX may or may not run the command (an undecided branch,
        an option's code), its value becomes unknown and the command stays as written."""
        if self.undecided:
            self.switches[name] = None
            return position, end
        self.switches[name] = value
        return self._remove(text, position, start, end)

    # -- reading ------------------------------------------------------------------------------
    def read(self, main: str) -> str:
        """The paper's text from ``main``, included files inlined, in TeX's reading order."""
        self._read_file(main, 0, (main,))
        return "".join(self.out)

    def _read_file(self, path: str, depth: int, active: tuple[str, ...]) -> None:
        text = self.files[path]
        outer_ends, self._ends = self._ends, []
        position = search = 0
        while (match := self.tokens.search(text, search)) is not None:
            start, search = match.start(), match.end()
            while self._ends and start >= self._ends[-1]:
                self._ends.pop()
                self.undecided -= 1
            if _escaped(text, start):
                search = start + 1
            elif match.group("cond") is not None:
                position = self._conditional(match, text, path, position)
            elif not self.suppressing:
                position, search = self._act(match, text, path, position, depth, active)
        self.undecided -= len(self._ends)
        self._ends = outer_ends
        if not self.suppressing:
            self._emit(text[position:])

    def _conditional(self, match: re.Match[str], text: str, path: str, position: int) -> int:
        """Handle ``\\if…``/``\\else``/``\\or``/``\\fi``; return where unemitted text starts."""
        name, start, end = match.group("cond"), match.start(), match.end()
        was_reading = not self.suppressing
        if name in ("else", "or", "fi"):
            removed = self._branch(name)
            if removed is None:
                _warn(self.warnings, f"{path}: \\{name} with no open conditional at character {start}, kept")
            span = (start, end) if removed else None
        elif (path, start) in self.ignored or not self.is_conditional(name, text, end):
            if was_reading and name in BRANCH_COMMANDS:
                self._open_branches(name, text, end)
            return position
        else:
            span = self._open(name, text, path, start, end)
        if span is None:
            return position
        if was_reading:
            self._emit(text[position:span[0]])
        return self._resume(text, span[1]) if not self.suppressing else span[1]

    def _open_branches(self, name: str, text: str, end: int) -> None:
        """Mark the arguments of a :data:`BRANCH_COMMANDS` command undecided until they end."""
        position = end
        if name == "DeclareOption" and (star := _STAR.match(text, position)):
            position = star.end()
        for _ in range(BRANCH_COMMANDS[name] - (position != end)):
            argument = read_argument(text, position, self.options.max_arg_chars)
            if argument is None:
                return
            position = argument[1]
        self._ends.append(position)
        self.undecided += 1

    def _act(self, match: re.Match[str], text: str, path: str, position: int, depth: int,
             active: tuple[str, ...]) -> tuple[int, int]:
        """Handle a token in text TeX reads; return (where unemitted text starts, where to search on)."""
        start, end = match.start(), match.end()
        if (name := match.group("newif_name")) is not None:
            return self._set_switch(name, False, text, position, start, end)
        if (name := match.group("let_name")) is not None:
            return self._set_switch(name, match.group("let_value") == "iftrue", text, position, start, end)
        if match.re.groups > _PLAIN_GROUPS and (name := match.group("setter")) is not None:
            switch = "if" + name[: -4 if name.endswith("true") else -5]
            if switch not in self.switches:  # set before its \newif: TeX would stop there
                return position, end
            return self._set_switch(switch, name.endswith("true"), text, position, start, end)
        if match.group("include") is not None:
            return self._include(text, path, position, start, depth, active)
        if (command := match.group("loader")) is not None:
            self._load(command, text, end, depth, active)
            return position, end
        if (command := match.group("define")) is not None:
            return self._define(command, bool(match.group("star")), text, position, start, end)
        if (command := match.group("branch")) is not None:
            self._open_branches(command, text, end)
            return position, end
        if (env := match.group("verbatim")) is not None:  # TeX reads it verbatim: nothing in it counts
            close = text.find(f"\\end{{{env}}}", end)
            return position, end if close == -1 else close
        delim = match.group("verb")
        close, newline = text.find(delim, end), text.find("\n", end)
        return position, end if close == -1 or -1 < newline < close else close + 1

    def _remove(self, text: str, position: int, start: int, end: int) -> tuple[int, int]:
        """Emit the text before ``start`` and drop ``text[start:end]`` (a decided token, a definition)."""
        self._emit(text[position:start])
        resume = self._resume(text, end)
        return resume, resume

    def _include(self, text: str, path: str, position: int, start: int, depth: int,
                 active: tuple[str, ...]) -> tuple[int, int]:
        """Read the file an ``\\input``/``\\include``/``\\subfile`` names, in place of the command.

        ``\\input`` adds no line break of its own (``see \\input{n} here`` reads as one sentence);
        ``\\include`` starts a new page, so its text is set off as a paragraph.
        A missing target is removed with a warning (figures' ``.tikz`` are not sources); a cycle,
        depth past ``max_include_depth`` or the size budget stop with a warning.
        """
        match = _INCLUDE.match(text, start)
        if match is None:
            return position, start + 1
        name = match.group(2) or match.group(3) or ""
        target = _include_target(name, self.base, self.files)
        if target is None:
            _warn(self.warnings, f"{path}: \\{match.group(1)}{{{name}}} not found in the archive")
            return self._remove(text, position, start, match.end())
        if not self._may_open(path, target, depth, active):
            return self._remove(text, position, start, match.end())
        self._emit(text[position:start])
        self.included.append(target)
        page = match.group(1) == "include"  # \include starts a new page: a paragraph break
        self._emit("\n" if page else "")
        before = len(self.out)
        self._read_file(target, depth + 1, (*active, target))
        if not page and len(self.out) > before and self.out[-1].endswith("\n"):
            self.out[-1] = self.out[-1][:-1]  # the file's last line end and the \input line's are one space
            self._line_blank = False  # conservative: a line break is dropped only after a known blank line
        self._emit("\n" if page else "")
        return match.end(), match.end()

    def _may_open(self, path: str, target: str, depth: int, active: tuple[str, ...]) -> bool:
        if target in active:
            _warn(self.warnings, f"{path}: include cycle at {target}")
            return False
        if depth >= self.options.max_include_depth:
            _warn(self.warnings, f"{path}: include depth limit at {target}")
            return False
        self.budget -= len(self.files[target])
        if self.budget < 0:
            _warn(self.warnings, f"{path}: include size limit at {target}")
            return False
        return True

    def _load(self, command: str, text: str, end: int, depth: int, active: tuple[str, ...]) -> None:
        """Read the e-print's own files a ``\\usepackage``-like command loads, once each, silently.

        LaTeX 2.09's ``\\documentstyle[opts]{class}`` loads its options as packages.
        """
        match = _LOAD_ARGS.match(text, end)
        if match is None or not self.collect:
            return
        names = [(name, _LOADERS[command]) for name in match.group(2).split(",")]
        if command == "documentstyle" and match.group(1):
            names += [(name, ".sty") for name in match.group(1).split(",")]
        for name, suffix in names:
            target = posixpath.normpath(posixpath.join(self.base, name.strip() + suffix)) if name.strip() else ""
            if target not in self.files or target in self.packages:
                continue
            if self._may_open(active[-1], target, depth, active):
                self.packages.append(target)
                self.silent += 1
                self._read_file(target, depth + 1, (*active, target))
                self.silent -= 1

    def _define(self, command: str, starred: bool, text: str, position: int, start: int,
                end: int) -> tuple[int, int]:
        """Parse a definition whole; record and remove it (``collect``) or leave it as written."""
        parsed = _parse_definition(command, starred, text, end, self.options.max_arg_chars, self.table)
        if parsed is None:
            _warn(self.warnings, f"unparsable \\{command} at character {start}")
            return position, end
        macro, stop = parsed
        if not self.collect:
            return position, stop
        if macro is not None:
            if self.undecided and macro.expandable:  # defined or not depending on what we cannot decide
                macro = Macro(macro.name, macro.nargs, macro.body, macro.default, expandable=False)
            self.table.add(macro, provide=command == "providecommand")
        return self._remove(text, position, start, stop)


_PLAIN_GROUPS = re.compile(_READER_ALTERNATIVES).groups
_STAR = re.compile(r"\s*\*")


def _escaped(text: str, position: int) -> bool:
    """Whether the backslash at ``position`` is the second of a ``\\\\`` pair (an odd run before it)."""
    run = 0
    while position - run > 0 and text[position - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def read_document(main: str, files: Mapping[str, str], options: LatexOptions, *,
                  collect: bool = True) -> Reading:
    """Read ``main`` and what it loads with :class:`TexReader`; reread when a false conditional
    never closed.

    An e-print that compiles closes its conditionals, so one left open at the end means the reader
    took something for a conditional that TeX did not (a macro from a package outside the
    e-print). Rather than drop the rest of the paper silently, the opening is reread as text (the
    outermost first) and counted in ``unclosed`` with a warning. Past :data:`MAX_REREADS`, one
    last reading decides no conditional at all: every one is kept as written.
    """
    ignored: set[tuple[str, int]] = set()
    notes: list[str] = []
    base = posixpath.dirname(main)
    while True:
        decide = len(ignored) < MAX_REREADS
        reader = TexReader(files, base, options, collect=collect, ignored=frozenset(ignored), decide=decide)
        text = reader.read(main)
        hiding = [frame for frame in reader.frames if frame.suppresses()]
        if not hiding:
            break
        where, offset = hiding[0].where
        line = files[where].count("\n", 0, offset) + 1
        _warn(notes, f"{where}:{line}: conditional never closed; its opening kept as text")
        ignored.add(hiding[0].where)
        if len(ignored) == MAX_REREADS:
            _warn(notes, f"{MAX_REREADS} conditionals never closed: no conditional decided in this paper")
    return Reading(text, reader.table, reader.included, reader.packages, notes + reader.warnings,
                   reader.decided, len(ignored))


def resolve_conditionals(text: str, options: LatexOptions | None = None) -> Reading:
    """Read one text as :func:`read_document` does, definitions left in place (for tests and tools)."""
    return read_document("main.tex", {"main.tex": text}, options or LatexOptions(), collect=False)


def _parse_definition(command: str, starred: bool, text: str, position: int, limit: int,
                      table: MacroTable) -> tuple[Macro | None, int] | None:
    """The macro a definition command at ``position`` makes (None for environments) and its end."""
    if command == "let":
        return _parse_let(text, position, table)
    if command in {"def", "gdef", "edef", "xdef"}:
        return _parse_def(text, position, limit)
    if command == "DeclareMathOperator":
        return _parse_math_operator(text, position, starred, limit)
    if command.endswith("environment"):
        return _parse_environment(text, position, limit)
    return _parse_newcommand(text, position, limit)


# -- steps 5 and 6: preamble, bibliography, appendix ----------------------------------------
#: The first sectioning command: one of the seven names (each separated by ``|``, unlike
#: RedPajama's regex), optionally starred, then an optional ``[short title]`` and the ``{``.
SECTION_COMMAND = re.compile(
    r"\\(?:" + "|".join(SECTIONING) + r")(?![A-Za-z@])\s*\*?\s*(?:\[[^\]\n]*\]\s*)?\{"
)
BIBLIOGRAPHY = re.compile(
    r"\\begin\s*\{(?:thebibliography|references)\}|\\bibliography\s*\{|\\printbibliography(?![A-Za-z@])"
)
END_DOCUMENT = re.compile(r"\\end\s*\{document\}")
APPENDIX = re.compile(r"\\appendix(?![A-Za-z@])|\\begin\s*\{appendix(?:ices)?\}")


def cut_preamble(text: str) -> str | None:
    """Text from the first sectioning command on, or None when the text has none."""
    match = SECTION_COMMAND.search(text)
    return text[match.start():] if match else None


def cut_at(text: str, pattern: re.Pattern[str]) -> str:
    """Text before the first match of ``pattern`` (all of it when there is none)."""
    match = pattern.search(text)
    return text[:match.start()] if match else text


# -- step 7: expansion -----------------------------------------------------------------------
_PARAMETER = re.compile(r"#(#|[1-9])")


#: ``_read_args`` result when the text ended before the macro's arguments did.
_OUT_OF_TEXT = "out of text"
#: First window of the enclosing text used to finish a call left open at the end of a body.
_CONTINUATION_WINDOW = 4096


class MacroExpander:
    """Replaces uses of user macros by their bodies, arguments substituted, re-scanning the result.

    Bodies are expanded recursively (depth-bounded). A body may end in a call whose arguments
    follow the use in the enclosing text (``\\newcommand{\\cd}{\\tproj0}`` used as ``\\cd{A}``); such
    an open call is finished with the enclosing text, as TeX's token stream would.
    """

    def __init__(self, macros: Mapping[str, Macro], options: LatexOptions, warnings: list[str]) -> None:
        self.macros = dict(macros)
        self.options = options
        self.warnings = warnings
        self.expansions = 0
        self.produced = 0
        names = sorted(self.macros, key=len, reverse=True)
        # ``\\`` is matched first as a token of its own, so ``\\foo`` (line break, "foo") is not ``\foo``.
        self.pattern = (
            re.compile(r"\\\\|\\(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z@])") if names else None
        )

    def expand(self, text: str) -> str:
        """Expand every macro use in ``text``; raises :class:`ExpansionLimitError` past the bounds."""
        if self.pattern is None:
            return text
        return self._expand(text, 0)[0]

    def _read_args(self, text: str, position: int, macro: Macro) -> tuple[list[str], int] | str | None:
        """The call's arguments and end; ``_OUT_OF_TEXT`` when ``text`` ends first; None if unreadable."""
        limit = self.options.max_arg_chars
        args: list[str] = []
        required = macro.nargs
        if macro.default is not None:
            after = skip_spaces(text, position)
            bracket = read_bracket(text, after, limit) if after < len(text) and text[after] == "[" else None
            if bracket is not None:
                args.append(bracket[0])
                position = bracket[1]
            else:
                args.append(macro.default)
            required -= 1
        for _ in range(required):
            argument = read_argument(text, position, limit)
            if argument is None:
                return _OUT_OF_TEXT if skip_spaces(text, position) >= len(text) else None
            args.append(argument[0])
            position = argument[1]
        return args, position

    def _substitute(self, macro: Macro, args: list[str]) -> str:
        if not args and "#" not in macro.body:
            return macro.body

        def parameter(match: re.Match[str]) -> str:
            token = match.group(1)
            if token == "#":
                return "#"
            index = int(token) - 1
            return args[index] if index < len(args) else match.group(0)

        return _PARAMETER.sub(parameter, macro.body)

    def _charge(self, produced: int) -> None:
        self.expansions += 1
        self.produced += produced
        if self.expansions > self.options.max_expansions:
            raise ExpansionLimitError(f"more than {self.options.max_expansions} macro expansions")
        if self.produced > self.options.max_output_chars:
            raise ExpansionLimitError(f"macro expansion produced over {self.options.max_output_chars} characters")

    def _call(self, macro: Macro, args: list[str], depth: int) -> tuple[str, int | None]:
        """Expand one call: the body with ``args`` substituted, itself expanded one level deeper."""
        body, tail = self._expand(self._substitute(macro, args), depth + 1)
        self._charge(len(body))
        return body, tail

    def _expand(self, text: str, depth: int) -> tuple[str, int | None]:
        """Expand ``text``; also return where an open call at its very end starts (or None)."""
        assert self.pattern is not None
        out: list[str] = []
        position = search_from = 0
        while (match := self.pattern.search(text, search_from)) is not None:
            name = match.group(1)
            if name is None:  # a ``\\`` line break
                search_from = match.end()
                continue
            read = self._read_args(text, match.end(), self.macros[name])
            if read is _OUT_OF_TEXT and depth > 0:
                out.append(text[position:match.start()])
                start = sum(map(len, out))
                out.append(text[match.start():])
                return "".join(out), start
            if not isinstance(read, tuple):
                search_from = match.end()
                continue
            args, end = read
            if depth >= self.options.max_macro_depth:
                _warn(self.warnings, f"\\{name}: recursion limit {self.options.max_macro_depth} reached")
                search_from = end
                continue
            body, tail = self._call(self.macros[name], args, depth)
            if tail is not None:
                finished, consumed, still_open = self._finish_open_call(body[tail:], text, end, depth + 1)
                body, end = body[:tail] + finished, end + consumed
                if still_open and depth > 0:
                    out.append(text[position:match.start()])
                    start = sum(map(len, out)) + tail
                    out.append(body)
                    return "".join(out), start
            out.append(text[position:match.start()])
            out.append(body + " " if _ends_with_control_word(body) and _starts_with_letter(text, end) else body)
            position = search_from = end
        out.append(text[position:])
        return "".join(out), None

    def _finish_open_call(self, open_call: str, text: str, end: int, depth: int) -> tuple[str, int, bool]:
        """Finish ``open_call`` (a macro use missing arguments) with ``text[end:]``.

        Returns the expansion, how many characters of ``text`` it consumed, and whether it is
        still open because ``text`` ended too (the caller's caller may then finish it).
        """
        assert self.pattern is not None
        if depth >= self.options.max_macro_depth:
            _warn(self.warnings, f"open call {open_call[:40]!r}: recursion limit reached")
            return open_call, 0, False
        match = self.pattern.match(open_call)
        assert match is not None and match.group(1) is not None
        macro = self.macros[match.group(1)]
        rest = len(text) - end
        read: tuple[list[str], int] | str | None = _OUT_OF_TEXT
        covered = False
        for window in (_CONTINUATION_WINDOW, self.options.max_arg_chars * (macro.nargs + 1)):
            covered = window >= rest
            read = self._read_args(open_call + text[end:end + window], match.end(), macro)
            if read is not _OUT_OF_TEXT or covered:
                break
        if not isinstance(read, tuple):
            return open_call, 0, read is _OUT_OF_TEXT and covered
        args, stop = read
        consumed = max(0, stop - len(open_call))
        body, tail = self._call(macro, args, depth)
        if tail is None:
            return body, consumed, False
        more, extra, still_open = self._finish_open_call(body[tail:], text, end + consumed, depth + 1)
        return body[:tail] + more, consumed + extra, still_open


_TRAILING_CONTROL_WORD = re.compile(r"\\[A-Za-z@]+$")


def _ends_with_control_word(text: str) -> bool:
    return bool(text) and text[-1].isalpha() and _TRAILING_CONTROL_WORD.search(text) is not None


def _starts_with_letter(text: str, position: int) -> bool:
    return position < len(text) and text[position].isalpha()


# -- the whole paper -------------------------------------------------------------------------
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")
_TRAILING_SPACE = re.compile(r"[ \t]+\n")
_TITLE = re.compile(r"\\title\s*(?:\[[^\]]*\]\s*)?(?=\{)")


def tidy(text: str) -> str:
    """Trailing spaces removed, runs of blank lines made one blank line, ends stripped."""
    return _BLANK_LINES.sub("\n\n", _TRAILING_SPACE.sub("\n", text)).strip()


def find_title(text: str, limit: int) -> str | None:
    """The argument of ``\\title{…}``, whitespace collapsed, if there is one."""
    match = _TITLE.search(text)
    if match is None:
        return None
    group = read_group(text, match.end(), limit)
    return " ".join(group[0].split()) if group else None


def clean_paper(files: Mapping[str, str], options: LatexOptions | None = None) -> CleanResult:
    """Clean a paper given as ``{archive path: decoded text}`` of its source files.

    ``files`` holds the ``.tex`` files and whatever else of the e-print TeX may read (``.sty``,
    ``.cls``, ``.def``, ``.bbl``: :data:`SOURCE_SUFFIXES`). Never raises for bad LaTeX: the result
    carries ``drop_reason`` (``no_tex_files``, ``no_main_file``, ``no_section``,
    ``macro_expansion_limit``, ``empty_after_cleaning``) when there is no text to keep.
    """
    options = options or LatexOptions()
    if not any(map(is_main_candidate, files)):
        return CleanResult(None, "no_tex_files")
    sources = {path: strip_comments(text) for path, text in files.items()}
    main = find_main_file(sources)
    if main is None:
        tex_files = sum(map(is_main_candidate, files))
        return CleanResult(None, "no_main_file", detail=f"{tex_files} .tex files, none with \\documentclass")
    result = CleanResult(None, main_file=main)
    reading = read_document(main, sources, options)
    text, table = reading.text, reading.table
    result.included, result.packages, result.warnings = reading.included, reading.packages, reading.warnings
    result.conditionals, result.unclosed_conditionals = reading.conditionals, reading.unclosed
    result.macros_defined = table.definitions
    expander = MacroExpander(table.expandable() if options.expand_macros else {}, options, result.warnings)
    title = find_title(text, options.max_arg_chars)
    body = cut_preamble(text)
    if body is None:
        result.drop_reason = "no_section"
        return result
    body = cut_at(cut_at(body, END_DOCUMENT), BIBLIOGRAPHY)  # TeX ignores what follows \\end{document}
    if options.cut_appendix:
        body = cut_at(body, APPENDIX)
    try:
        body = expander.expand(body)
        result.title = expander.expand(title) if title else None
    except ExpansionLimitError as exc:
        result.drop_reason, result.detail = "macro_expansion_limit", str(exc)
        return result
    result.macros_expanded = expander.expansions
    body = tidy(body)
    if not body:
        result.drop_reason = "empty_after_cleaning"
        return result
    result.text = body
    return result


def clean_tex(text: str, options: LatexOptions | None = None) -> CleanResult:
    """Clean a single-file paper (convenience for tests and tools)."""
    return clean_paper({"main.tex": text}, options)


def iter_macro_uses(text: str, names: Mapping[str, Macro]) -> Iterator[str]:
    """Names of user macros still used in ``text`` (for tests and quality checks)."""
    if not names:
        return
    pattern = re.compile(r"\\\\|\\(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
                         + r")(?![A-Za-z@])")
    for match in pattern.finditer(text):
        if match.group(1):
            yield match.group(1)
