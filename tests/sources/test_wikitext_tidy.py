"""The tidy-up after wikitext markup removal touches only what removal left behind (issue 31, case 06).

Before, it deleted every ``()`` and every space before ``, . ; : ! ?`` in the whole page, so
``<code>main()</code>`` came out as ``main`` and "the .NET platform" as "the.NET platform". Now the
cleaner marks where markup was removed (:data:`REMOVED`) and the tidy-up works only there. The
tables pin that rule on code, French typography, CJK brackets and removed markup at many
positions, on both engines; the properties check that text with no markup loses no character
and that markup inserted between words never costs a character of the text around it.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sources.formats.wikipedia_names import drop_prefixes
from sources.formats.wikitext import REMOVED, tidy, tidy_removal_sites
from sources.wikipedia import WikitextCleaner

FAST = WikitextCleaner(drop_prefixes("en"))
TREE = WikitextCleaner(drop_prefixes("en"), engine="tree")

#: Text the article has: no markup, nothing removed, so nothing but whitespace may change.
CONTENT = [
    "A C program starts when the runtime calls main(), and memory is returned with free().",
    "Programs for the .NET platform are compiled to an intermediate language.",
    "The shell reads the file .profile at start-up; git reads .gitignore .",
    "Call f() or g( ) or h(x, ) and a () b; x.NET and y .NET.",
    "C# (language) and F# (language) ( ) (, ) (; ) ( : ).",
    "Spaced marks as typed : a , b ; c ! d ? e .",
    "« Bonjour ! » dit-il ; puis : « Quoi ? » Il a 3 chats : Tom, Zoé et Max !",
    "Wie geht's? Gut: danke! „Ja“, sagte er.",
    "Привет ! Это тест : да ; нет ?",
    "東京（とうきょう）は日本の首都である。（　）も（、）もそのまま。",
    "The macros __FILE__ and __LINE__ and Python's __init__ are text.",
    "Empty tuple () and call obj.method() return None .",
]


@pytest.mark.parametrize("cleaner", [FAST, TREE], ids=["fast", "tree"])
@pytest.mark.parametrize("text", CONTENT)
def test_text_without_markup_is_kept_as_written(cleaner: WikitextCleaner, text: str) -> None:
    assert cleaner.clean(text) == text


#: (wikitext, what a reader of the rendered page sees once the dropped markup is gone)
REMOVAL_SITES = [
    # the case 06 input: code inside <code>, a mark after a space in the article
    ("calls <code>main()</code>, and <code>free()</code>.", "calls main(), and free()."),
    ("the <code>.NET</code> platform and the file <code>.profile</code>", "the .NET platform and the file .profile"),
    # a space before a mark where a ref or template stood goes; one the author typed stays
    ("A word <ref>Smith 2000.</ref>.", "A word."),
    ("A word<ref name=a/>, next<ref>x</ref>; last {{citation needed}}!", "A word, next; last!"),
    ("A word {{a}} {{b}}<ref>c</ref>: then", "A word: then"),
    ("A word {{cn}} . And {{cn}} , more", "A word . And , more"),
    ("A word <!-- hidden -->.", "A word ."),  # a comment renders as nothing: the space was typed
    # brackets that held only removed markup go, with the separators between the items
    ("Berlin ({{IPA-de|bɛʁˈliːn}}) is big.", "Berlin is big."),
    ("Berlin ({{lang-de|Berlin}}; {{IPA-de|x}}) is big.", "Berlin is big."),
    ("Berlin ({{lang-de|Berlin}}, {{IPA-de|x}}, <ref>r</ref>).", "Berlin."),
    ("Tokyo ({{lang|ja|東京}}).", "Tokyo."),
    ("Tokyo ( {{lang|ja|東京}} ) is", "Tokyo is"),
    # separators orphaned at a bracket's head or tail go; the rest of the bracket stays
    ("Berlin ({{lang-de|Berlin}}; born 1950) is", "Berlin (born 1950) is"),
    ("Berlin ({{lang-de|B}}, {{IPA|x}}, German) is", "Berlin (German) is"),
    ("X (born 1950; {{IPA|x}}).", "X (born 1950)."),
    ("X (see Smith<ref>r</ref>) and (see Jones {{harv|J|2001}})", "X (see Smith) and (see Jones)"),
    ("X (a, b {{c}}) and (f() {{x}})", "X (a, b) and (f())"),
    # code next to removed markup keeps its brackets
    ("Use <code>f()</code>{{sfn|K|1978}} or <code>g()</code><ref>r</ref>.", "Use f() or g()."),
    ("The <code>()</code> operator{{sfn|K}} ()", "The () operator ()"),
    # French: a removed ref between a word and its spaced mark keeps the typed space
    ("Paris<ref>x</ref> : capitale<ref>y</ref> ; « Bonjour<ref>z</ref> ! »", "Paris : capitale ; « Bonjour ! »"),
    ("Il a dit {{citation|oui}} !", "Il a dit !"),
    # CJK full-width brackets and separators
    ("東京（{{lang-en|Tokyo}}）は首都である。", "東京は首都である。"),
    ("東京（とうきょう、{{lang-en|Tokyo}}）は", "東京（とうきょう）は"),
    ("東京（{{lang-en|Tokyo}}、とうきょう）は", "東京（とうきょう）は"),
    # file, category and interwiki links, bare external links, tables, math
    ("[[File:a.jpg|thumb|Cap]] Text (pictured) here.[[Category:X]] [[de:Y]]", "Text (pictured) here."),
    ("See the site [http://example.org].", "See the site."),
    ("Area ({{convert|12|km2}}) and\n{| class=wikitable\n| a\n|} after.", "Area and\nafter."),
    ("where <math>x^2</math>, and <math>y</math>.", "where, and."),
    # behaviour switches are markup only when they are MediaWiki's words
    ("__NOTOC__Text with <code>__FILE__</code> and __notoc__.", "Text with __FILE__ and ."),  # no site either
]


@pytest.mark.parametrize("cleaner", [FAST, TREE], ids=["fast", "tree"])
@pytest.mark.parametrize(("wikitext", "expected"), REMOVAL_SITES)
def test_tidy_works_only_where_markup_was_removed(cleaner: WikitextCleaner, wikitext: str, expected: str) -> None:
    assert cleaner.clean(wikitext) == expected


#: Content MediaWiki shows as written: markup in it is text, and a code block keeps its indentation.
LITERALS = [
    ("Write <code><nowiki>{{cite web}}</nowiki></code> or <nowiki>[[a|b]] &amp; ''x''</nowiki>.",
     "Write {{cite web}} or [[a|b]] & ''x''."),
    ("Example:\n<syntaxhighlight lang=\"python\">\ndef f(x):\n    return  g(x)  # (see [[x]])\n</syntaxhighlight>\nDone.",
     "Example:\n\ndef f(x):\n    return  g(x)  # (see [[x]])\n\nDone."),
    ("<pre>\n  if a &lt; b:\n      {{swap}}\n</pre>", "if a < b:\n      {{swap}}".join(["  ", ""])),
    ("A <!-- <pre> --> b <source lang=c>int main() { return 0; }</source> c", "A b\nint main() { return 0; }\nc"),
    ("<nowiki><!-- shown --></nowiki> and <!-- <nowiki> --> x", "<!-- shown --> and x"),
]


@pytest.mark.parametrize("cleaner", [FAST, TREE], ids=["fast", "tree"])
@pytest.mark.parametrize(("wikitext", "expected"), LITERALS)
def test_literal_content_is_kept_as_written(cleaner: WikitextCleaner, wikitext: str, expected: str) -> None:
    assert cleaner.clean(wikitext) == expected


def test_an_unclosed_literal_is_left_to_the_other_stages() -> None:
    assert FAST.clean("a <pre>unclosed {{t}} [[x|y]]") == "a unclosed y"


def test_a_sentinel_in_the_input_is_dropped_not_tidied() -> None:
    """U+FDD0 is a noncharacter: one in a page is not text and must not act as a removal site."""
    for cleaner in (FAST, TREE):
        assert cleaner.clean(f"calls f(){REMOVED} ({REMOVED}).") == "calls f() ()."
        assert cleaner.clean("a \ufdd1b\ufdd2 (\ufdd1)") == "a b ()"


@pytest.mark.parametrize(
    ("marked", "expected"),
    [
        (f"a {REMOVED}.", "a."),
        (f"a {REMOVED} .", "a  ."),  # whitespace runs are tidy()'s later step
        (f"a{REMOVED} !", "a !"),
        (f"a ({REMOVED})", "a "),
        (f"a ({REMOVED} b)", "a (b)"),
        (f"a (b {REMOVED})", "a (b)"),
        (f"a\n({REMOVED}\nb)", "a\n(\nb)"),  # never across a line end
        (f"{REMOVED}\n{REMOVED}.", "\n."),
    ],
)
def test_site_rules(marked: str, expected: str) -> None:
    assert tidy_removal_sites(marked) == expected


# -- properties ------------------------------------------------------------------------------

#: Tokens of prose with code and typography, none of them wiki markup.
_WORDS = ["main()", "f()", "a", "()", "( )", "(", ")", ".NET", "x.NET", ".gitignore", "C#", "(language)",
          "Bonjour", "!", "?", ":", ";", ",", ".", "«", "»", "„Ja“", "東京", "（", "）", "、", "。", "__FILE__",
          "obj.method()", "1,5", "x;", "Привет", "é", "…", "f(a, b)", "(,)", "-"]
_GAPS = [" ", "  ", "", "\t", "\nw ", "\n\n\nw ", " \n\tw "]  # a line starts with "w": never list markup


def _plain(tokens: list[tuple[str, str]]) -> str:
    return "w " + "".join(word + gap for word, gap in tokens)  # "w " : no line starts with markup


def _whitespace_only(text: str) -> str:
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in text.split("\n")]
    return re.sub(r"\n\n\n+", "\n\n", "\n".join(lines)).strip()


_TOKENS = st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_GAPS)), max_size=40)


@given(_TOKENS)
@settings(max_examples=200, deadline=None)
@example([("main()", ","), ("f()", " "), (".NET", "\nw "), (":", " "), ("(", " "), (")", "")])
def test_text_without_markup_loses_no_character(tokens: list[tuple[str, str]]) -> None:
    """Prose with code and typography but no markup: only whitespace is normalised, by both engines."""
    text = _plain(tokens)
    expected = _whitespace_only(text)
    assert FAST.clean(text) == expected
    assert TREE.clean(text) == expected
    assert tidy(text) == expected


#: Markup that is removed whole (renders as something the corpus drops, or as nothing).
_MARKUP = ["<ref>Smith 2000, p. 3.</ref>", "<ref name=a/>", "{{citation needed|date=May 2022}}", "{{IPA|x}}",
           "<!-- note -->", "[[Category:Things]]", "[[File:a.png|thumb|A (b).]]", "{{a|{{b}}}}",
           "[http://example.org]", "<math>x^2</math>", "__NOTOC__"]


def _between_words(text: str) -> list[int]:
    """Positions whose nearest non-space neighbours on both sides are word characters (or none)."""
    spots = []
    for spot in range(1, len(text) + 1):
        before, after = text[:spot].rstrip(), text[spot:].lstrip()
        if (not before or before[-1].isalnum() or before[-1] == "_") and \
                (not after or after[0].isalnum() or after[0] == "_"):
            spots.append(spot)
    return spots


@given(_TOKENS, st.lists(st.tuples(st.integers(min_value=0, max_value=40), st.sampled_from(_MARKUP)), max_size=8))
@settings(max_examples=200, deadline=None)
@example([("main()", " "), ("a", " "), (".NET", " ")], [(1, "<ref>r</ref>"), (2, "{{x}}")])
def test_markup_between_words_costs_no_character_of_the_text(
    tokens: list[tuple[str, str]], inserts: list[tuple[int, str]]
) -> None:
    """Markup inserted where both neighbours are letters or whitespace: the text around it is kept.

    Only where a removed construct touches a bracket, separator or mark may the tidy-up remove
    something, and the table above pins those cases.
    """
    text = _plain(tokens)
    spots = _between_words(text)
    pieces, last = [], 0
    for index, markup in sorted(inserts):
        if not spots:
            break
        spot = spots[min(index, len(spots) - 1)]
        pieces += [text[last:spot], markup]
        last = spot
    marked = "".join([*pieces, text[last:]])
    kept = FAST.clean(marked)
    assert re.sub(r"\s+", "", kept) == re.sub(r"\s+", "", text)
    assert TREE.clean(marked) == kept
