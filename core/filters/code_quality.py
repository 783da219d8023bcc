"""Source-code cleaning and filters (the LLaMA / RedPajama GitHub recipe).

Two kinds of steps:

* :class:`CopyrightHeaderRemover` strips the licence/copyright comment at the top of a file. The
  default mode (``"copyright"``) removes only a *leading* comment block (after an optional
  shebang, ``<?php`` or ``<?xml`` line) that mentions copyright, a licence or an SPDX id, using
  the comment syntax of the file's language. RedPajama's exact behaviour stays available as
  ``mode="redpajama"``: it greedily deletes every leading line starting with ``//``, ``#`` or
  ``--`` (so it also deletes ``#include`` lines of C files, shebangs and Markdown headings) and
  then the first ``/* */`` block of the top 100 lines if it contains "copyright".
* Filters that drop a file on simple statistics: maximum and average line length, fraction of
  alphanumeric characters, alphabetic characters per token. The tokenizer is a setting: a
  GPT-2-style regex pre-tokenizer by default (no model file needed), or any HF ``tokenizer.json``
  (RedPajama counted with the GPT-NeoX-20B tokenizer of Pythia).

Nothing here imports Prefect; every step is picklable (a tokenizer is loaded lazily per worker).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from core.document import Document, Drop
from core.filters.record_bound import INLINE_CHARS, TextBound
from core.steps import Filter, Record, Step

if TYPE_CHECKING:
    from core.filters.text_counts import TextCounts

HeaderMode = Literal["copyright", "redpajama", "off"]


# -- comment syntax ---------------------------------------------------------------------------
@dataclass(frozen=True)
class CommentSyntax:
    """How a language writes comments: line prefixes and (open, close) block delimiters."""

    line: tuple[str, ...] = ()
    block: tuple[tuple[str, str], ...] = ()


_C_LIKE = CommentSyntax(line=("//",), block=(("/*", "*/"),))
_HASH = CommentSyntax(line=("#",))
_MARKUP = CommentSyntax(block=(("<!--", "-->"),))

#: Comment syntax per language name (the names :mod:`sources.github` assigns from extensions).
COMMENT_SYNTAX: dict[str, CommentSyntax] = {
    "c": _C_LIKE, "c++": _C_LIKE, "c#": _C_LIKE, "java": _C_LIKE, "javascript": _C_LIKE,
    "typescript": _C_LIKE, "go": _C_LIKE, "rust": _C_LIKE, "scala": _C_LIKE, "objective-c": _C_LIKE,
    "smali": CommentSyntax(line=("#",)),
    "php": CommentSyntax(line=("//", "#"), block=(("/*", "*/"),)),
    "css": CommentSyntax(block=(("/*", "*/"),)),
    "python": _HASH, "ruby": CommentSyntax(line=("#",), block=(("=begin", "=end"),)),
    "perl": _HASH, "shell": _HASH, "cmake": _HASH, "makefile": _HASH, "dockerfile": _HASH,
    "powershell": CommentSyntax(line=("#",), block=(("<#", "#>"),)),
    "julia": CommentSyntax(line=("#",), block=(("#=", "=#"),)),
    "sql": CommentSyntax(line=("--",), block=(("/*", "*/"),)),
    "lua": CommentSyntax(line=("--",), block=(("--[[", "]]"),)),
    "haskell": CommentSyntax(line=("--",), block=(("{-", "-}"),)),
    "tex": CommentSyntax(line=("%",)),
    "matlab": CommentSyntax(line=("%",), block=(("%{", "%}"),)),
    "assembly": CommentSyntax(line=(";", "#", "//"), block=(("/*", "*/"),)),
    "batchfile": CommentSyntax(line=("REM ", "rem ", "::", "@REM ", "@rem ")),
    "visual basic": CommentSyntax(line=("'", "REM ")),
    "fortran": CommentSyntax(line=("!",)),
    "fortran-fixed": CommentSyntax(line=("!", "C ", "c ", "* ")),
    "html": _MARKUP, "xml": _MARKUP, "markdown": _MARKUP, "restructuredtext": CommentSyntax(line=(".. ",)),
}
_DEFAULT_SYNTAX = _C_LIKE

#: Words that make a leading comment a licence/copyright header.
_HEADER_WORDS = re.compile(r"copyright|\(c\)\s*\d{4}|©|licen[cs]e|spdx-license-identifier|all rights reserved",
                           re.IGNORECASE)
#: Lines kept above a header: they are code, not boilerplate.
_PREAMBLE = re.compile(r"^(#!|<\?php|<\?xml)")
_MAX_HEADER_BLOCKS = 3


class _PastPrefix(Exception):
    """A scan of a file's first characters reached their end: only the whole file can answer."""


def _line_end(text: str, pos: int, prefix: bool = False) -> int:
    """Index just past the newline of the line at ``pos`` (or the end of text).

    ``prefix``: ``text`` is the start of a longer file, so a line running to its end may go on
    (:class:`_PastPrefix`); so for every ``prefix`` argument below.
    """
    end = text.find("\n", pos)
    if end == -1:
        if prefix:
            raise _PastPrefix
        return len(text)
    return end + 1


_NON_SPACE = re.compile(r"\S")  # ``\s`` is ``str.isspace``, as ``str.strip`` uses
_SPACES_TABS = re.compile(r"[ \t]*")  # what ``str.lstrip(" \t")`` removes


def _skip_blank_lines(text: str, pos: int, prefix: bool = False) -> int:
    """Start of the first line at or after ``pos`` (a line start) that is not all whitespace, else ``len(text)``."""
    found = _NON_SPACE.search(text, pos)
    if found is None:
        if prefix:
            raise _PastPrefix
        return len(text)
    return text.rfind("\n", pos, found.start()) + 1 or pos


def _block_comment_end(text: str, pos: int, syntax: CommentSyntax, prefix: bool = False) -> int | None:
    """End (past the closing line) of a block comment starting at ``pos``, if one does."""
    start = _SPACES_TABS.match(text, pos).end()  # type: ignore[union-attr]  # ``[ \t]*`` always matches
    if prefix and start + _LONGEST_OPENER > len(text):
        raise _PastPrefix
    for opener, closer in syntax.block:
        if text.startswith(opener, start):
            close = text.find(closer, start + len(opener))
            if close == -1:
                if prefix:
                    raise _PastPrefix
                return None  # an unclosed comment is not a header we can cut safely
            end = close + len(closer)
            rest_end = _line_end(text, end, prefix)
            return rest_end if not text[end:rest_end].strip() else end
    return None


def _line_comment_end(text: str, pos: int, syntax: CommentSyntax, prefix: bool = False) -> int | None:
    """End of a run of line comments starting at ``pos`` (blank lines inside the run allowed)."""
    end: int | None = None
    cursor = pos
    while cursor < len(text):
        line_end = _line_end(text, cursor, prefix)
        line = text[cursor:line_end].lstrip(" \t")
        if line.startswith(syntax.line) and syntax.line:
            end = line_end
        elif line.strip():
            return end
        cursor = line_end
    if prefix:
        raise _PastPrefix
    return end


def may_have_header(text: str, language: str | None = None) -> bool:
    """False when :func:`remove_copyright_header` cannot remove anything: no comment opens the file.

    Its own first look, without the regex or the scan of a comment: the first non-blank line
    (after a kept shebang, ``<?php`` or ``<?xml`` line) starts with neither a block-comment opener
    nor a line-comment prefix of the language. C-level string scans only, so it needs no bound.
    """
    syntax = COMMENT_SYNTAX.get(language or "", _DEFAULT_SYNTAX)
    if text[:1].isspace() or text.startswith(_PREAMBLE_STARTS):
        pos = _skip_blank_lines(text, 0)
    else:  # the first line is not blank and no preamble: it is the line to look at, unstripped
        return text.startswith(_openers(syntax))
    if _PREAMBLE.match(text[pos:pos + 8]):
        pos = _skip_blank_lines(text, _line_end(text, pos))
    line = text[pos:_line_end(text, pos)].lstrip(" \t")
    return line.startswith(_openers(syntax))


#: What :data:`_PREAMBLE` can match at the start of a text.
_PREAMBLE_STARTS = ("#!", "<?php", "<?xml")
#: Characters a prefix must hold past a position for :data:`_PREAMBLE` (or any block opener of
#: :data:`COMMENT_SYNTAX`) to be told from there.
_LONGEST_PREAMBLE = max(map(len, _PREAMBLE_STARTS))
_LONGEST_OPENER = max(len(opener) for syntax in COMMENT_SYNTAX.values() for opener, _ in syntax.block)


@functools.cache
def _openers(syntax: CommentSyntax) -> tuple[str, ...]:
    """Every way a comment of ``syntax`` can open a line: block openers and line prefixes."""
    return (*(opener for opener, _ in syntax.block), *syntax.line)


def remove_copyright_header(text: str, language: str | None = None) -> str:
    """Remove leading comment blocks that mention copyright or a licence (default mode).

    Only comments at the very top are candidates (after blank lines and an optional shebang,
    ``<?php`` or ``<?xml`` line, which are kept); up to three stacked header blocks go, and the
    first block that does not look like a header stops the search, so a module docstring-like
    comment explaining the code stays.
    """
    return apply_cuts(text, copyright_header_cuts(text, language))


Cuts = tuple[tuple[int, int], ...]


def apply_cuts(text: str, cuts: Cuts) -> str:
    """``text`` without the ``(start, end)`` spans in ``cuts`` (ascending, not overlapping)."""
    if not cuts:
        return text
    pieces, kept_from = [], 0
    for start, end in cuts:
        pieces.append(text[kept_from:start])
        kept_from = end
    pieces.append(text[kept_from:])
    return "".join(pieces)


def copyright_header_cuts(text: str, language: str | None = None, prefix: bool = False) -> Cuts:
    """The span :func:`remove_copyright_header` removes (positions, so the text is never copied).

    ``prefix``: ``text`` is only the start of the file; :class:`_PastPrefix` when the answer
    depends on what follows (see :func:`header_cuts_from_start`).
    """
    syntax = COMMENT_SYNTAX.get(language or "", _DEFAULT_SYNTAX)
    pos = _skip_blank_lines(text, 0, prefix)
    if prefix and pos + _LONGEST_PREAMBLE > len(text):
        raise _PastPrefix
    preamble_end = _line_end(text, pos, prefix) if _PREAMBLE.match(text[pos:pos + 8]) else 0
    cursor, removed = preamble_end, False
    for _ in range(_MAX_HEADER_BLOCKS):
        start = _skip_blank_lines(text, cursor, prefix)
        end = _block_comment_end(text, start, syntax, prefix)
        if end is None:
            end = _line_comment_end(text, start, syntax, prefix)
        if end is None or not _HEADER_WORDS.search(text[start:end]):
            break
        cursor, removed = end, True
    return ((preamble_end, _skip_blank_lines(text, cursor, prefix)),) if removed else ()


def header_cuts_from_start(text: str, language: str | None, chars: int) -> Cuts | None:
    """:func:`copyright_header_cuts` of ``text`` decided from its first ``chars`` characters, or None
    when they do not decide it (a comment or a blank run reaches their end).

    A header is at the top of a file, so a long file's header is almost always found, and the
    search stopped, far inside its first characters: then the file's rest cannot change the
    answer, and a scan as short as an inline document's answers in this process, without a
    round trip of the whole file through the bounded helper. Every read the scan makes past the
    prefix's end is a :class:`_PastPrefix`, so a decided answer is the whole file's.
    """
    if len(text) <= chars:
        return copyright_header_cuts(text, language)
    try:
        return copyright_header_cuts(text[:chars], language, prefix=True)
    except _PastPrefix:
        return None


_RP_BLOCK = re.compile(r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/")
_RP_COPYRIGHT = re.compile("copyright", re.IGNORECASE)


def remove_copyright_header_redpajama(text: str) -> str:
    """RedPajama-v1's ``clean_copyright_comments``, reproduced for comparison runs.

    Kept faithful on purpose, including what we consider bugs: any leading line starting with
    ``#`` (``#include``, ``#!``, a Markdown heading) or ``--`` is deleted whatever the language.
    """
    return apply_cuts(text, redpajama_header_cuts(text))


def redpajama_header_cuts(text: str) -> Cuts:
    """The spans :func:`remove_copyright_header_redpajama` removes: the leading comment/blank
    lines, then the first ``/* ... */`` block of the next 100 lines when it says "copyright"."""
    lines = text.split("\n")
    skipped = 0
    for line in lines:
        if not line or line.lstrip().startswith(("//", "#", "--")):
            skipped += 1
        else:
            break
    rest = lines[skipped:]
    offset = min(len(text), sum(len(line) + 1 for line in lines[:skipped]))
    head_end = offset + sum(len(line) + 1 for line in rest[:100]) - 1 if rest else offset
    cuts = [(0, offset)] if offset else []
    match = _RP_BLOCK.search(text, offset, head_end)
    if match and _RP_COPYRIGHT.search(match.group(0)):
        cuts.append(match.span())
    return tuple(cuts)


def header_cuts(text: str, mode: HeaderMode, language: str | None) -> Cuts:
    """The spans of ``text`` that are its header, according to ``mode`` (what the bounded helper
    runs: it sends back positions, not a copy of the text)."""
    if mode == "redpajama":
        return redpajama_header_cuts(text)
    if mode == "copyright":
        return copyright_header_cuts(text, language)
    return ()


def strip_header(text: str, mode: HeaderMode, language: str | None) -> str:
    """``text`` without its header, according to ``mode``."""
    return apply_cuts(text, header_cuts(text, mode, language))


#: RedPajama's comment pattern rescans from every ``/*`` when none is closed (quadratic): only
#: files this small run it in-process; larger ones go to the bounded helper.
REDPAJAMA_INLINE_CHARS = 4 << 10


class CopyrightHeaderRemover(Step):
    """Rewrites each document without its copyright header; drops files left empty.

    The header removal runs under a time and size bound (:mod:`core.filters.record_bound`):
    a file past it is a ``cleaner_timeout`` or ``record_too_large`` drop.
    """

    name = "copyright_header"

    def __init__(self, mode: HeaderMode = "copyright", bound: TextBound[Cuts] | None = None) -> None:
        self.mode = mode
        inline = REDPAJAMA_INLINE_CHARS if mode == "redpajama" else INLINE_CHARS
        self.bound = bound or TextBound(header_cuts, inline_below=inline)

    def clean(self, doc: Document) -> str:
        """The text of ``doc`` without its header, according to :attr:`mode` (unbounded)."""
        return strip_header(doc.text, self.mode, doc.meta.get("language"))

    def cuts(self, doc: Document) -> Cuts | Drop:
        """The spans of ``doc`` to cut, or the bound's Drop.

        In the default mode most files need no bounded run: one that no comment opens has nothing
        to remove (:func:`may_have_header`), and one longer than the bound's in-process size whose
        header search ends inside its first that many characters is answered from them
        (:func:`header_cuts_from_start`, the same linear work as a document of that size). Only
        the rest (and every file in the other modes) goes through :attr:`bound`.
        """
        text, language, bound = doc.text, doc.meta.get("language"), self.bound
        if self.mode == "copyright" and len(text) <= bound.max_chars:
            if not may_have_header(text, language):
                return ()
            if bound.func is header_cuts and len(text) > bound.inline_below:
                found = header_cuts_from_start(text, language, bound.inline_below)
                if found is not None:
                    return found
        return bound.run(doc, text, self.mode, language)

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        for doc in docs:
            cuts = self.cuts(doc)
            if isinstance(cuts, Drop):
                yield Drop(cuts.reason, _label(doc), cuts.detail, language=doc.language)
                continue
            text = apply_cuts(doc.text, cuts)
            if not text or text.isspace():  # ``not text.strip()`` without copying the text
                yield _drop(doc, "empty_after_header_removal")
            elif text == doc.text:
                yield doc
            else:
                yield dataclasses.replace(doc, text=text, meta={**doc.meta, "header_removed": True})


def _drop(doc: Document, reason: str) -> Record:
    return Drop(reason=reason, record=_label(doc), language=doc.language)


def _label(doc: Document) -> str:
    repo, path = doc.meta.get("repo"), doc.meta.get("path")
    return f"{repo}/{path}" if repo and path else doc.id


# -- statistics -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LineStats:
    """Line statistics as RedPajama computed them (average counts newline characters too).

    The plain definition (the filter counts the same lines through :func:`text_counts`; the
    property test holds the two equal).
    """

    lines: int
    max_line_length: int
    avg_line_length: float

    @classmethod
    def of(cls, text: str) -> LineStats:
        """Stats of ``text``; an empty text has zero lines."""
        lengths = list(map(len, text.splitlines()))
        if not lengths:
            return cls(0, 0, 0.0)
        return cls(len(lengths), max(lengths), len(text) / len(lengths))


def text_counts(text: str) -> TextCounts:
    """:func:`core.filters.text_counts.text_counts` (see :func:`_counter`)."""
    return _counter()(text)


@functools.cache
def _counter() -> Callable[[str], TextCounts]:
    """The counting function, imported on first use.

    Lazily, because this module is also what the bounded header-removal helper imports, and
    that process never counts: it need not pay numpy's import on every start.
    """
    from core.filters.text_counts import text_counts as count

    return count


def _remember_counts(texts: list[str]) -> None:
    """:func:`core.filters.text_counts.remember_counts` (imported on first use, see :func:`_counter`)."""
    from core.filters.text_counts import remember_counts

    remember_counts(texts)


#: A batch of documents counted together: this many, or fewer when their texts reach COUNT_BATCH_CHARS.
COUNT_BATCH_DOCS = 256
COUNT_BATCH_CHARS = 1 << 20


def _batches(docs: Iterable[Document]) -> Iterator[list[Document]]:
    """``docs`` in lists of at most :data:`COUNT_BATCH_DOCS`, closed once their texts pass :data:`COUNT_BATCH_CHARS`."""
    batch: list[Document] = []
    chars = 0
    for doc in docs:
        batch.append(doc)
        chars += len(doc.text)
        if len(batch) >= COUNT_BATCH_DOCS or chars >= COUNT_BATCH_CHARS:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def alphanumeric_fraction(text: str) -> float:
    """Share of characters that are letters or digits (any script): ``str.isalnum`` per character."""
    return text_counts(text).alnum / len(text) if text else 0.0


def alpha_count(text: str) -> int:
    """Number of alphabetic characters (any script): ``str.isalpha`` per character."""
    return text_counts(text).alpha


#: GPT-2-style pre-tokenization: contractions, letter runs, digit runs, punctuation runs, each
#: with one optional leading space; whitespace runs. BPE splits some of these further, so this
#: count is a lower bound of a BPE count and ``alpha_per_token`` comes out a little higher.
_PRETOKEN = re.compile(r"""'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|_+|\s+(?!\S)|\s+""")


# -- tokenizers -------------------------------------------------------------------------------
class TokenCounter(Protocol):
    """Counts tokens of a text."""

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""




class RegexTokenizer:
    """Counts GPT-2-style pre-tokens (matches of :data:`_PRETOKEN`); needs no model file."""

    def count(self, text: str) -> int:
        return text_counts(text).pretokens


@functools.lru_cache(maxsize=4)
def _load_hf_tokenizer(path: str) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(path)


class HFTokenizer:
    """Counts tokens with a Hugging Face ``tokenizer.json`` (loaded once per process)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if not Path(self.path).is_file():
            raise FileNotFoundError(f"tokenizer file not found: {self.path}")

    def count(self, text: str) -> int:
        return len(_load_hf_tokenizer(self.path).encode(text, add_special_tokens=False).ids)


def make_token_counter(spec: str) -> TokenCounter:
    """``"regex"`` for the built-in counter, else a path to a ``tokenizer.json``."""
    return RegexTokenizer() if spec == "regex" else HFTokenizer(spec)


# -- filters ----------------------------------------------------------------------------------
class LineLengthFilter(Filter):
    """Drops generated or minified files: a line over ``max_line_length`` or a long average."""

    name = "line_length"

    def __init__(self, max_line_length: int = 1000, max_avg_line_length: float = 100.0) -> None:
        self.max_line_length = max_line_length
        self.max_avg_line_length = max_avg_line_length

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        """Decide a batch at a time: the batch's texts are counted together, once for all three filters.

        :func:`remember_counts` counts the batch in one numpy pass and keeps the counts where
        :func:`text_counts` finds them, so this filter and the two after it (alphanumeric
        fraction, alpha per token) pay no per-document counting.
        """
        for batch in _batches(docs):
            _remember_counts([doc.text for doc in batch])
            yield from super().run(batch)

    def decide(self, doc: Document) -> str | None:
        counts = text_counts(doc.text)  # the lines of LineStats.of, counted in numpy
        if counts.lines == 0:
            return "empty"
        if counts.max_line_length > self.max_line_length:
            return "max_line_length"
        if len(doc.text) / counts.lines > self.max_avg_line_length:
            return "avg_line_length"
        return None


class AlphanumericFractionFilter(Filter):
    """Drops files that are mostly symbols or whitespace (data tables, ASCII art, encoded blobs)."""

    name = "alphanumeric_fraction"

    def __init__(self, min_fraction: float = 0.25) -> None:
        self.min_fraction = min_fraction

    def decide(self, doc: Document) -> str | None:
        return "alphanumeric_fraction" if alphanumeric_fraction(doc.text) < self.min_fraction else None


class AlphaPerTokenFilter(Filter):
    """Drops files with few letters per token (hex dumps, number arrays): letters/tokens < min."""

    name = "alpha_per_token"

    def __init__(self, min_ratio: float = 1.5, tokenizer: str = "regex") -> None:
        self.min_ratio = min_ratio
        self.tokenizer = tokenizer
        self._counter: TokenCounter | None = None

    def __getstate__(self) -> dict[str, object]:
        return {"min_ratio": self.min_ratio, "tokenizer": self.tokenizer, "_counter": None}

    def ratio(self, text: str) -> float | None:
        """Alphabetic characters per token, or None for a text with no tokens."""
        if self._counter is None:
            self._counter = make_token_counter(self.tokenizer)
        if isinstance(self._counter, RegexTokenizer):  # both counts from one lookup
            counts = text_counts(text)
            return counts.alpha / counts.pretokens if counts.pretokens else None
        tokens = self._counter.count(text)
        return alpha_count(text) / tokens if tokens else None

    def decide(self, doc: Document) -> str | None:
        ratio = self.ratio(doc.text)
        if ratio is None:
            return "empty"
        return "alpha_per_token" if ratio < self.min_ratio else None


@dataclass(frozen=True)
class CodeFilterSettings:
    """Thresholds of the code filters (RedPajama's values by default)."""

    header_mode: HeaderMode = "copyright"
    max_line_length: int = 1000
    max_avg_line_length: float = 100.0
    min_alphanumeric_fraction: float = 0.25
    min_alpha_per_token: float = 1.5
    tokenizer: str = "regex"


def code_steps(settings: CodeFilterSettings) -> list[Step]:
    """The GitHub recipe's steps, in order: header removal, then the cheap filters first."""
    return [
        CopyrightHeaderRemover(settings.header_mode),
        LineLengthFilter(settings.max_line_length, settings.max_avg_line_length),
        AlphanumericFractionFilter(settings.min_alphanumeric_fraction),
        AlphaPerTokenFilter(settings.min_alpha_per_token, settings.tokenizer),
    ]
