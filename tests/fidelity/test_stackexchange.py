"""Fidelity corpus, StackExchange: question threads in a site dump's ``Posts.xml`` in a ``.7z``, kept text by hand.

One archive as the dumps ship it (``<site>.7z`` holding ``Posts.xml``, bodies as escaped HTML with
``&#xA;`` newlines) is read once through the recipe; each case is one question with its answers.
What a reader sees (RECIPES.md, StackExchange): ``Q: {Title}`` and the question, then ``A:`` and
each answer, best score first (as numbers); in the bodies, the text a browser shows: code blocks
with their whitespace, list items as ``*`` bullets (nested ones indented), ordered lists numbered,
link text, entities decoded, ``<br>`` as a line break, comments (Stack Snippets) gone.
"""

from __future__ import annotations

import pytest

from core.document import Document, InputSpec
from core.steps import StepStats, run_steps
from sources.stackexchange import StackExchangeRecipe
from tests.sources.test_stackexchange import make_7z, posts_xml, row

pytestmark = pytest.mark.fidelity("stackexchange")

#: question id -> (title, question body HTML, [(answer score, answer body HTML)], expected kept text)
CASES: dict[int, tuple[str, str, list[tuple[int, str]], str]] = {
    1: ("Inline code", "<p>Call <code>main()</code> before the <code>.NET</code> runtime starts.</p>\n", [],
        "Q: Inline code\nCall main() before the .NET runtime starts."),
    2: ("Code block", "<p>Try:</p>\n\n<pre><code>if (a &lt; b &amp;&amp; c) {\n    run();\n\n    stop();\n}\n</code></pre>\n", [],
        "Q: Code block\nTry:\n\nif (a < b && c) {\n    run();\n\n    stop();\n}"),
    3: ("Bullets", "<ul>\n<li>grind fine</li>\n<li>tamp <em>firmly</em></li>\n</ul>\n", [],
        "Q: Bullets\n* grind fine\n* tamp firmly"),
    4: ("Nested bullets", "<ul><li>beans<ul><li>arabica</li><li>robusta</li></ul></li><li>water</li></ul>", [],
        "Q: Nested bullets\n* beans\n  * arabica\n  * robusta\n* water"),
    5: ("Numbered steps", "<ol>\n<li>Heat the water.</li>\n<li>Pour it.</li>\n</ol>\n", [],
        "Q: Numbered steps\n1. Heat the water.\n2. Pour it."),
    6: ("Links", '<p>See <a href="https://example.com/doc" rel="nofollow">the manual</a> or '
        '<a href="https://example.com">https://example.com</a>.</p>', [],
        "Q: Links\nSee the manual or https://example.com."),
    7: ('Entities & "quotes"', "<p>&lt;tag&gt; &amp; &quot;q&quot; &#39;s&#39; &#8212; caf&eacute; &hellip;</p>", [],
        "Q: Entities & \"quotes\"\n<tag> & \"q\" 's' — café …"),
    8: ("Line breaks", "<p>first line<br>second line<br/>third line</p>", [],
        "Q: Line breaks\nfirst line\nsecond line\nthird line"),
    9: ("Quote", "<blockquote>\n  <p>Coffee is a brewed drink.</p>\n</blockquote>\n\n<p>Is that right?</p>", [],
        "Q: Quote\nCoffee is a brewed drink.\n\nIs that right?"),
    10: ("Headings and rule", "<h2>Setup</h2>\n<p>A grinder.</p>\n<hr>\n<h2>Question</h2>\n<p>Which one?</p>", [],
         "Q: Headings and rule\nSetup\n\nA grinder.\n\nQuestion\n\nWhich one?"),
    11: ("Inline markup", "<p>a <strong>b</strong>c <em>d</em> <kbd>Ctrl</kbd>+<kbd>C</kbd> <del>old</del></p>", [],
         "Q: Inline markup\na bc d Ctrl+C old"),
    12: ("Answers by score", "<p>Which roast?</p>",
         [(9, "<p>Nine.</p>"), (10, "<p>Ten.</p>"), (-2, "<p>Minus two.</p>"), (9, "<p>Nine, later.</p>")],
         "Q: Answers by score\nWhich roast?\n\nA: Ten.\n\nA: Nine.\n\nA: Nine, later.\n\nA: Minus two."),
    13: ("Unanswered", "<p>Anyone?</p>", [], "Q: Unanswered\nAnyone?"),
    14: ("Unicode", "<p>Café — naïve 日本語 Ёлка 🙂</p>", [], "Q: Unicode\nCafé — naïve 日本語 Ёлка 🙂"),
    15: ("HTML inside code", "<pre><code>&lt;div class=\"x\"&gt;&lt;/div&gt;\n</code></pre>", [],
         "Q: HTML inside code\n<div class=\"x\"></div>"),
    16: ("Wrapped paragraph", "<p>one\ntwo   three\n  four</p>", [], "Q: Wrapped paragraph\none two three four"),
    17: ("Stack Snippet", "<p>Run:</p>\n<!-- begin snippet: js hide: false -->\n<!-- language: lang-js -->\n"
         "<pre class=\"snippet-code-js lang-js prettyprint-override\"><code>console.log(1 &lt; 2);\n</code></pre>\n"
         "<!-- end snippet -->\n", [], "Q: Stack Snippet\nRun:\n\nconsole.log(1 < 2);"),
    18: ("Definitions", "<dl><dt>Crema</dt><dd>The foam on top.</dd></dl>", [],
         "Q: Definitions\nCrema\n\nThe foam on top."),
    19: ("Code in list", "<ul><li><p>Use:</p><pre><code>x = 1\n</code></pre></li></ul>", [],
         "Q: Code in list\n* Use:\n\nx = 1"),
    20: ("Answer with list and code", "<p>How?</p>",
         [(3, "<p>Steps:</p><ul><li>one</li></ul><pre><code>  indented\n</code></pre>")],
         "Q: Answer with list and code\nHow?\n\nA: Steps:\n\n* one\n\n  indented"),
    21: ("Non-breaking space", "<p>10&nbsp;g of coffee</p>", [], "Q: Non-breaking space\n10 g of coffee"),
    22: ("Title   with  spaces", "<p>x</p>", [], "Q: Title with spaces\nx"),
}


def _rows() -> list[str]:
    rows = []
    next_id = 1000
    for qid, (title, body, answers, _) in sorted(CASES.items()):
        rows.append(row(Id=qid, PostTypeId=1, Score=1, Title=title, Body=body, Tags="<brewing>",
                        CreationDate="2015-01-27T21:23:05.507", AnswerCount=len(answers)))
        for score, answer in answers:
            next_id += 1
            rows.append(row(Id=next_id, PostTypeId=2, ParentId=qid, Score=score, Body=answer,
                            CreationDate="2015-01-28T10:00:00.000"))
    return rows


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> dict[int, str]:
    """Every question's kept text, from one ``.7z`` dump read through the recipe."""
    folder = tmp_path_factory.mktemp("se")
    path = make_7z(folder / "coffee.stackexchange.com.7z", {"Posts.xml": posts_xml(_rows())})
    recipe = StackExchangeRecipe(memory_limit="256MB")
    stats = StepStats()
    docs = run_steps(recipe.read(InputSpec(str(path), path, path.name)), recipe.steps(), stats)
    return {int(d.meta["question_id"]): d.text for d in docs if isinstance(d, Document)}


@pytest.mark.parametrize("question", sorted(CASES))
def test_thread_keeps_what_a_reader_sees(kept: dict[int, str], question: int) -> None:
    assert kept[question] == CASES[question][3]
