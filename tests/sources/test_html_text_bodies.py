"""Post bodies to readable text (sources.formats.html_text.html_to_text): lists, code, links kept."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lxml import etree

from sources.formats.html_text import html_to_text


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<p>First <a href="u">link</a> &amp; more.</p>\n<ul>\n<li>one</li>\n<li>two<ul><li>nested</li></ul></li>\n'
         "</ul>\n<pre><code>x = 1\n    y = 2\n</code></pre>\n<p>After</p>",
         "First link & more.\n\n* one\n* two\n  * nested\n\nx = 1\n    y = 2\n\nAfter"),
        ("<!-- c -->text<p>p</p>", "text\n\np"),  # text after a comment is visible text
        ("<script>x</script>after <style>y</style>z", "after z"),
        ("<table><tr><td>a</td><th>b</th></tr></table>", "a b"),
        ("<ol><li>  one  </li></ol><hr>after", "1. one\n\nafter"),  # numbered, as a browser shows it
        ('<ol start="7"><li>seven</li><li>eight<ul><li>x</li></ul></li><li>nine</li></ol>',
         "7. seven\n8. eight\n  * x\n9. nine"),  # a nested list closes without a blank line
        ("<ul><li><p>Use:</p><pre><code>x = 1\n</code></pre></li><li><p>b</p></li></ul>",
         "* Use:\n\nx = 1\n\n* b"),  # an item's first paragraph stays on the bullet's line
        ("<p>unclosed <b>bold", "unclosed bold"),
        ("x<br>  y", "x\ny"),
        ("plain   text\n\n", "plain text"),
        ("", ""),
        ("<h1>T</h1>\t<p> x </p><blockquote><p>q</p></blockquote>", "T\n\nx\n\nq"),
    ],
)
def test_cases(html: str, expected: str) -> None:
    assert html_to_text(html) == expected


@pytest.mark.realdata
def test_real_posts_keep_code_lists_and_no_markup(realdata: Path) -> None:
    posts = realdata / "stackexchange" / "coffee.stackexchange.com-Posts.xml"
    bodies = [row.get("Body", "") for _, row in etree.iterparse(str(posts), tag="row")]
    texts = [html_to_text(body) for body in bodies]
    assert len(texts) > 500
    tag = re.compile(r"</?(?:p|a|ul|ol|li|pre|code|em|strong|blockquote|br|hr|img|h\d)\b[^>]*>")
    assert not any(tag.search(text) for text in texts)
    listed = [t for b, t in zip(bodies, texts, strict=True) if "<li>" in b]
    assert listed and all(re.search(r"(?m)^ *(?:\*|\d+\.) ", t) for t in listed)
    for body, text in zip(bodies, texts, strict=True):  # code blocks keep their line breaks
        for code in re.findall(r"<pre><code>(.*?)</code></pre>", body, re.S):
            first_line = code.split("\n", 1)[0].strip()
            if first_line and "&" not in first_line and "<" not in first_line:
                assert first_line in text
