"""A single-pass wikitext -> plain text cleaner built from C-speed regexes, with per-page bounds.

Why not a parse tree: building mwparserfromhell's tree was ~70% of the Wikipedia reader's CPU
(32-57 pages/s per core), and it is roughly quadratic on unclosed markup (``'{{a|' * 8000``
takes 30+ s inside its C tokenizer, where no signal can interrupt it). Everything the tree walk
dropped (templates, refs, comments, tables, file/category/interwiki links) and everything it
kept (prose, link text, headings as lines, list items as lines) can be found by patterns that
each run in time linear in the page:

* every pattern is either a bounded repetition (``{0,N}``), or scans forward to a fixed closer
  and, when there is none, consumes to the end of the page (so an unclosed construct costs one
  scan, not one per opener);
* nested constructs (templates in templates, links in file captions) are removed innermost
  first, one linear pass per nesting level, with a fixed number of passes; what is left
  unbalanced is removed by a token scanner (balanced spans; an unclosed one to its line's end).

Removal sites: where markup that *renders as something* is removed (a template, a ``<ref>``, a
table, a file or category link, a bare external link), the cleaner leaves :data:`REMOVED`, a
Unicode noncharacter. The tidy-up (:func:`tidy`) removes only what such a removal left behind, and
only next to one: the brackets around a removed ``{{IPA|…}}`` (``Berlin ({{IPA|…}})`` ->
``Berlin``), a separator orphaned inside them, the space before a mark where a ``<ref>`` stood
(``word <ref>…</ref>.`` -> ``word.``). Text the article has is never touched: ``main()``,
``the .NET platform``, French ``Bonjour !`` pass as written. Comments render as nothing, so they
leave no site. The sentinel is stripped before the text leaves the tidy-up.

Bounds: a page longer than ``max_chars`` is refused (:class:`RecordTooLarge`) before any work,
and the wall time is checked between stages against ``timeout_s`` (:class:`CleanerTimeout`).
Because every stage is linear, a stage cannot overrun by more than its own linear cost.
"""

from __future__ import annotations

import functools
import html
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

#: Tags whose content is not prose (mwparserfromhell's invisible tags plus refs and tables).
DROPPED_TAGS: frozenset[str] = frozenset(
    {"ref", "references", "table", "gallery", "math", "chem", "ce", "timeline", "imagemap", "score",
     "graph", "categorytree", "inputbox", "section", "templatedata", "mapframe", "maplink", "hiero",
     "syntaxhighlight", "source", "poem-ref", "noinclude", "includeonly", "onlyinclude", "nowiki-ref"}
)
#: Tags that end a line when rendered.
LINE_BREAK_TAGS: frozenset[str] = frozenset({"br", "li", "dd", "dt", "p", "div", "tr"})
#: Tag names whose markup is removed (content kept): HTML allowed in wikitext, plus extension tags.
KNOWN_TAGS: frozenset[str] = frozenset(
    {"abbr", "b", "bdi", "bdo", "big", "blockquote", "br", "caption", "center", "cite", "code", "data",
     "dd", "del", "dfn", "div", "dl", "dt", "em", "font", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
     "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "rb", "rp", "rt", "rtc", "ruby", "s", "samp",
     "small", "span", "strike", "strong", "sub", "sup", "table", "td", "th", "time", "tr", "tt", "u",
     "ul", "var", "wbr", "img", "nowiki", "poem", "onlyinclude", "includeonly", "noinclude", "references",
     "ref", "indicator", "templatestyles", "langconvert", "charinsert", "section", "gallery", "math",
     "score", "timeline", "imagemap", "graph", "chem", "ce", "hiero", "syntaxhighlight", "source", "mapframe",
     "maplink", "inputbox", "categorytree", "templatedata", "thead", "tbody", "tfoot", "col", "colgroup",
     "link", "meta"}
)
DEFAULT_MAX_CHARS = 4 * 1024 * 1024  # twice MediaWiki's $wgMaxArticleSize (2 MiB)
DEFAULT_TIMEOUT_S = 5.0
#: Pages below this many characters are cleaned in-process (the helper's round trip would cost
#: more than the cleaning); the worst linear factor of the stages keeps them well under a second.
DEFAULT_INLINE_CHARS = 1 << 20
#: Left where markup that renders as something was removed (see the module docstring): U+FDD0 is a
#: noncharacter, which Unicode reserves for a process's internal use, so it is never article text
#: (one found in the input is dropped on entry, with U+FDD1/U+FDD2 that delimit literal blocks).
REMOVED = "\ufdd0"
#: Tags whose content MediaWiki shows as written, unparsed (code blocks and ``<nowiki>``).
LITERAL_TAGS: tuple[str, ...] = ("nowiki", "pre", "syntaxhighlight", "source")
_NONCHARACTERS = ("\ufdd0", "\ufdd1", "\ufdd2")  # REMOVED and the literal block's start and end
_LITERAL_TOKENS = re.compile(r"<!--|-->|<(/?)(nowiki|pre|syntaxhighlight|source)(?![\w-])[^<>]{0,2000}?(/?)>", re.I)
_LITERAL_BLOCK = re.compile("\ufdd1([^\ufdd2]*)\ufdd2")
#: A literal block's characters are moved to plane 15 (private use), where no markup pattern and
#: no whitespace rule can touch them, and moved back once the page is tidied.
_SHIFT = 0xF0000
_TEMPLATE_PASSES = 20
_LINK_PASSES = 6
_URL = r"(?:https?://|ftp://|ftps://|sftp://|irc://|ircs://|news:|mailto:|gopher://|git://|svn://|//)"

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_DROPPED = re.compile(
    r"<(" + "|".join(sorted((re.escape(t) for t in DROPPED_TAGS), key=len, reverse=True)) + r")(?![\w-])"
    r"(?:[^<>]{0,2000}?/>|[^<>]{0,2000}>.*?(?:</\1\s*>|\Z)|)",  # empty: an opener never closed by ">"
    re.S | re.I,
)
_ARGUMENT = re.compile(r"\{\{\{[^{}]*\}\}\}")
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_BRACE_TOKENS = re.compile(r"\{\{|\}\}")
_TABLE_TOKENS = re.compile(r"\{\||\|\}")
_EXTERNAL = re.compile(r"\[(" + _URL + r"[^\s\[\]<>\"]{0,2000})(?:[^\S\n]+([^\]\n]{0,1000}))?\]", re.I)
_STRAY_BRACKET = re.compile(r"\[(?=" + _URL + ")", re.I)  # an external link's "[" never closed
_UNCLOSED_LINK = re.compile(r"\[\[([^\[\]|\n]{0,1000})[^\n]*")
_LINK = re.compile(r"\[\[([^\[\]|\n]{0,1000})(?:\|([^\[\]]{0,10000}))?\]\]")
_HEADING = re.compile(r"\n(={1,6})[ \t]*(.+?)[ \t]*=+[ \t\ufdd0]*(?=\n)")
_RULE = re.compile(r"\n----+")
_DEFINITION = re.compile(r"\n;([^:\n]*):")
_LIST = re.compile(r"\n[*#:;]+")
_QUOTES = re.compile(r"''+")
#: MediaWiki's behaviour switches (core and the extensions Wikipedia runs; case-insensitive, as there):
#: only these words are markup; ``__FILE__`` or ``__init__`` in an article are text.
_BEHAVIOUR_SWITCH = re.compile(
    r"__(?:NOTOC|FORCETOC|TOC|NOEDITSECTION|NEWSECTIONLINK|NONEWSECTIONLINK|NOGALLERY|HIDDENCAT|"
    r"EXPECTUNUSEDCATEGORY|EXPECTUNUSEDTEMPLATE|NOCONTENTCONVERT|NOCC|NOTITLECONVERT|NOTC|INDEX|NOINDEX|"
    r"STATICREDIRECT|DISAMBIG|EXPECTED_UNCONNECTED_PAGE|NOGLOBAL|ARCHIVEDTALK|NOTALK)__",
    re.I,
)
_SEPARATORS = ",;\uff0c\uff1b\u3001"  # what lists items in a bracket (ASCII, full-width, ideographic)


def _bracket_rules(opener: str, closer: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The two site rules of one bracket pair; each pattern starts with a literal, which ``re``
    finds with a fast scan (a leading class or alternation cost 10x more on real pages).

    * ``opener`` followed only by sites, spaces and separators: the closer matched (group 1)
      means the brackets held nothing but removed markup (``({{IPA|…}}; {{lang|…}})``);
      otherwise the sites and the separators they orphaned are cut from the bracket's head
      (``({{lang|…}}; born 1950)``);
    * for the *reversed* text, so that what precedes a site is matched after it: ``closer``
      after a run of sites, spaces and one orphaned separator (``(born 1950; {{IPA|…}})``).
    """
    sep, o, c = _SEPARATORS + ":", re.escape(opener), re.escape(closer)
    head = re.compile(rf"{o}(?:[ \t]*(?:[{sep}][ \t]*)?\ufdd0)+[ \t\ufdd0]*(?:[{sep}][ \t\ufdd0]*)*({c})?")
    tail = re.compile(rf"{c}(?:[ \t]*\ufdd0)+[ \t\ufdd0]*[{_SEPARATORS}]?")
    return head, tail


_BRACKETS = [(opener, closer, *_bracket_rules(opener, closer)) for opener, closer in ("()", "\uff08\uff09")]
#: For the reversed text: a run of sites (and the spaces before it) directly before a mark, as a
#: ``<ref>`` between a word and its full stop leaves: ``word <ref>…</ref>.``.
_SITES_BEFORE_MARK_REVERSED = re.compile(
    r"\ufdd0(?<=[.,;:!?\u3002\uff0c\uff1b\uff1a\uff01\uff1f]\ufdd0)[ \t\ufdd0]*"
)
_ODD_SPACES = ("\t", "\u00a0", "\u200b")  # collapsed to one space like runs of spaces
_BLANK_LINES = re.compile(r"\n\n\n+")
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]{0,30})(?:\s[^<>]{0,2000}?)?\s*(/?)>")


class RecordTooLarge(Exception):
    """The page is longer than the cleaner's size bound."""


class CleanerTimeout(Exception):
    """Cleaning the page ran past its time bound."""


@dataclass(frozen=True)
class Bounds:
    """Per-page limits: characters of wikitext, and wall seconds.

    The reader runs the cleaner under :class:`core.bounded.BoundedCleaner`: a page of at least
    ``inline_chars`` characters is cleaned in a helper process that is killed at ``timeout_s``;
    a smaller one is cleaned in-process, where every stage is linear with a bounded factor (so
    its time is bounded by its size) and the clock is also checked between stages.
    """

    max_chars: int = DEFAULT_MAX_CHARS
    timeout_s: float = DEFAULT_TIMEOUT_S
    inline_chars: int = DEFAULT_INLINE_CHARS


class _Clock:
    """Raises :class:`CleanerTimeout` once the page's time budget is spent."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def check(self, stage: str) -> None:
        if time.monotonic() > self.deadline:
            raise CleanerTimeout(f"cleaning took more than {self.seconds:g}s (at {stage})")


def remove_balanced(text: str, tokens: re.Pattern[str], opener: str, replacement: str = REMOVED) -> str:
    """Replace ``opener … closer`` spans (nested) found by ``tokens`` with ``replacement``; an
    unclosed one ends at its line's end.

    Openers and closers are paired with a stack in one regex pass (a closer with no opener is
    left alone); the cut spans are then merged in order, so the cost is linear in the text plus
    the number of tokens however many openers stay unclosed.
    """
    stack: list[int] = []
    spans: list[tuple[int, int]] = []
    for match in tokens.finditer(text):
        if match.group() == opener:
            stack.append(match.start())
        elif stack:
            spans.append((stack.pop(), match.end()))
    line_end = -1
    for start in stack:  # ascending; several unclosed openers on one line make one span
        if start < line_end:
            continue
        line_end = text.find("\n", start)
        line_end = len(text) if line_end == -1 else line_end
        spans.append((start, line_end))
    if not spans:
        return text
    spans.sort()
    out: list[str] = []
    position = 0
    for start, end in spans:
        if end <= position:
            continue  # inside a span already cut
        out.append(text[position:max(start, position)])
        out.append(replacement)
        position = end
    out.append(text[position:])
    return "".join(out)


def strip_templates(text: str) -> str:
    """Remove ``{{…}}`` and ``{{{…}}}`` innermost first, one pass per nesting level, then leftovers."""
    for _ in range(_TEMPLATE_PASSES):
        if "{{" not in text:
            return text.replace("}}", "") if "}}" in text else text
        stripped = _TEMPLATE.sub(REMOVED, _ARGUMENT.sub(REMOVED, text))
        if stripped == text:
            break
        text = stripped
    if "{{" in text:
        text = remove_balanced(text, _BRACE_TOKENS, "{{")
    return text.replace("{{", "").replace("}}", "")


def _shift(text: str, by: int) -> str:
    return "".join([chr(ord(char) + by) for char in text])


def protect_literals(text: str) -> str:
    """Encode the content of closed ``<nowiki>``, ``<pre>``, ``<syntaxhighlight>`` and ``<source>``
    elements so that no later stage reads it as markup or tidies its spaces; :func:`tidy` decodes it.

    MediaWiki shows that content as written: ``<code><nowiki>{{x}}</nowiki></code>`` is ``{{x}}``
    on the page, a ``<syntaxhighlight>`` block keeps its indentation. ``<nowiki>`` and ``<pre>``
    decode entities, as MediaWiki does. Blocks (all but ``<nowiki>``) go on their own lines with
    trailing spaces and blank edge lines cut. The tokens are paired in one scan (an opener inside
    a comment or inside another literal is text), so unclosed openers cost nothing extra; an
    unclosed one is left to the later stages, as before.
    """
    out: list[str] = []
    position = 0
    inside: str | None = None  # "comment", a literal tag's name, or None
    content_start = opener_start = 0
    for token in _LITERAL_TOKENS.finditer(text):
        name = (token.group(2) or "").lower()
        if inside == "comment":
            inside = None if token.group() == "-->" else inside
        elif inside is not None:
            if token.group(1) and name == inside:
                out += [text[position:opener_start], _literal(inside, text[content_start:token.start()])]
                position, inside = token.end(), None
        elif token.group() == "<!--":
            inside = "comment"
        elif name and not token.group(1) and not token.group(3):
            inside, opener_start, content_start = name, token.start(), token.end()
    if not out:
        return text
    out.append(text[position:])
    return "".join(out)


def _literal(tag: str, content: str) -> str:
    if tag in ("nowiki", "pre"):
        content = html.unescape(content)
    if any(ord(char) >= _SHIFT for char in content):
        return content  # cannot be shifted into plane 15: left as text (never seen on Wikipedia)
    if tag == "nowiki":
        return "\ufdd1" + _shift(content, _SHIFT) + "\ufdd2"
    lines = [line.rstrip() for line in content.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n\ufdd1" + _shift("\n".join(lines), _SHIFT) + "\ufdd2\n"


def _unshift(match: re.Match[str]) -> str:
    return _shift(match.group(1), -_SHIFT)


def drop_noncharacters(text: str) -> str:
    """Remove the noncharacters the cleaner uses as marks (never article text) from an input page."""
    for mark in _NONCHARACTERS:
        if mark in text:
            text = text.replace(mark, "")
    return text


def _tag_markup(match: re.Match[str]) -> str:
    name = match.group(2).lower()
    if name not in KNOWN_TAGS:
        return match.group(0)
    if name in LINE_BREAK_TAGS:
        return "\n"  # a block starts and ends a line: "three.<div>A note" is not "three.A note"
    return ""


def _external(match: re.Match[str]) -> str:
    return match.group(2) or REMOVED  # a bare [http://…] renders as a numbered link


class FastWikitextCleaner:
    """Wikitext to plain text in a fixed sequence of linear regex stages (see the module docstring)."""

    def __init__(self, is_markup_link: Callable[[str], bool], bounds: Bounds | None = None) -> None:
        self.is_markup_link = is_markup_link
        self.bounds = bounds or Bounds()

    def _link(self, match: re.Match[str]) -> str:
        target, label = match.group(1, 2)
        if ":" not in target:  # most links: no namespace or interwiki prefix to look up
            return label if label is not None else target.strip()
        target = target.strip()
        if self.is_markup_link(target):
            return REMOVED
        return label if label is not None else target.lstrip(":")

    def clean(self, wikitext: str) -> str:
        """Plain text of ``wikitext`` with :data:`REMOVED` at removal sites (not yet :func:`tidy`-ed);
        raises the bound exceptions."""
        if len(wikitext) > self.bounds.max_chars:
            raise RecordTooLarge(f"{len(wikitext)} characters of wikitext (bound {self.bounds.max_chars})")
        clock = _Clock(self.bounds.timeout_s)
        text = drop_noncharacters(wikitext)
        if "<" in text:
            text = protect_literals(text)
        if "<!--" in text:
            text = _COMMENT.sub("", text)  # renders as nothing: no removal site
        if "<" in text:
            text = _DROPPED.sub(REMOVED, text)
        clock.check("tags")
        if "{" in text:
            text = strip_templates(text)
            if "{|" in text:
                text = remove_balanced(text, _TABLE_TOKENS, "{|")
        clock.check("templates")
        if "[" in text:
            text = self._links(text, clock)
        clock.check("links")
        return self._layout(text)

    def _links(self, text: str, clock: _Clock) -> str:
        """Internal links innermost first, then external ones, then internal ones they held.

        Both orders occur in real pages: an external link in a file caption, and an internal
        link in an external link's label (``[http://x a [[B|b]] c]``).
        """
        text = self._internal(text, clock)
        if "[" in text:
            text = _STRAY_BRACKET.sub("", _EXTERNAL.sub(_external, text))
            text = self._internal(text, clock)
        if "[[" in text:  # never closed: a File/Category one is cut to its line's end
            text = _UNCLOSED_LINK.sub(self._unclosed_link, text)
        return text.replace("[[", "").replace("]]", "")

    def _unclosed_link(self, match: re.Match[str]) -> str:
        target = match.group(1).strip()
        return REMOVED if ":" in target and self.is_markup_link(target) else match.group(0)[2:]

    def _internal(self, text: str, clock: _Clock) -> str:
        for _ in range(_LINK_PASSES):
            if "[[" not in text:
                break
            new = _LINK.sub(self._link, text)
            clock.check("links")
            if new == text:
                break
            text = new
        return text

    def _layout(self, text: str) -> str:
        """Headings and list items as lines; quotes, rules and tags out; entities decoded."""
        # line-start patterns anchor on a literal "\n" (found by a fast scan) rather than ``^``
        # under re.M (tried at every position); the leading "\n" covers the first line
        text = "\n" + text + "\n"
        if "=" in text:
            text = _HEADING.sub(lambda m: "\n\n" + m.group(2).strip() + "\n", text)
        text = _RULE.sub("\n", text)
        if "\n;" in text:
            text = _DEFINITION.sub(lambda m: "\n\n" + m.group(1) + "\n", text)
        text = _LIST.sub("\n\n", text)
        if "''" in text:
            text = _QUOTES.sub("", text)
        if "<" in text:
            text = _TAG.sub(_tag_markup, text)
        if "&" in text:
            text = html.unescape(text)
        return text


def _bracket_sites(opener: str, match: re.Match[str]) -> str:
    """Empty brackets become one site; otherwise the opener stays and its head of sites goes."""
    return REMOVED if match.group(1) else opener


def tidy_removal_sites(text: str) -> str:
    """Remove what markup removal left behind at :data:`REMOVED` sites, then the sites themselves.

    Only characters next to a site go, and only these: brackets that held nothing but removed
    markup (and the separators between the removed items), separators orphaned at a bracket's
    head or tail, and the spaces between a word and a mark where a removed ``<ref>`` or template
    stood. ``main()``, ``a ()``, ``the .NET platform`` and French ``Bonjour !`` have no site and
    are left as written; ``mot<ref/> :`` keeps its space, since the site is not next to the mark.
    Nothing is matched across a line end.
    """
    closers = []
    for opener, closer, head, tail in _BRACKETS:
        if opener in text:
            text = head.sub(functools.partial(_bracket_sites, opener), text)
        if closer in text:
            closers.append((closer, tail))
    reversed_text = text[::-1]
    for closer, tail in closers:
        reversed_text = tail.sub(closer, reversed_text)
    reversed_text = _SITES_BEFORE_MARK_REVERSED.sub("", reversed_text)
    return reversed_text[::-1].replace(REMOVED, "")


def tidy(text: str) -> str:
    """The text a reader sees from a cleaner's output: removal sites tidied, then whitespace
    (runs of spaces made one, lines stripped, at most one blank line in a row), then the literal
    blocks of :func:`protect_literals` decoded, their spaces as written.

    Written with ``str.replace`` passes rather than regexes over spaces: in space-separated
    scripts a pattern starting with a space class is tried at every space (a quarter of all
    characters in Vietnamese), which made this function the cleaner's largest cost.
    """
    if "__" in text:
        text = _BEHAVIOUR_SWITCH.sub("", text)  # renders as nothing: no site
    if REMOVED in text:
        text = tidy_removal_sites(text)
    for space in _ODD_SPACES:
        if space in text:
            text = text.replace(space, " ")
    while "  " in text:
        text = text.replace("    ", " ").replace("  ", " ")
    text = "\n".join([line.strip() for line in text.split("\n")])
    text = _BLANK_LINES.sub("\n\n", text).strip()
    return _LITERAL_BLOCK.sub(_unshift, text) if "\ufdd1" in text else text
