"""StackExchange: Posts.xml (plain or in .7z) -> question threads, numeric score order, safe XML."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.document import Document, Drop, InputSpec
from core.steps import StepStats, run_steps
from sources.stackexchange import (
    PostsSink,
    SiteSize,
    StackExchangeRecipe,
    count_posts,
    html_to_text,
    is_meta_site,
    parse_tags,
    posts_bytes,
    select_sites,
    site_file,
    site_language,
)
from tests.fixed import write_7z


def row(**attrs: object) -> str:
    """A Posts.xml row as the dumps write it (newlines in attributes as ``&#xA;``)."""
    def attr(value: object) -> str:
        return html.escape(str(value), quote=True).replace("\n", "&#xA;")
    return "  <row " + " ".join(f'{k}="{attr(v)}"' for k, v in attrs.items()) + " />\n"


def posts_xml(rows: list[str], prolog: str = "") -> bytes:
    return ('<?xml version="1.0" encoding="utf-8"?>\n' + prolog + "<posts>\n" + "".join(rows) + "</posts>\n").encode()


ROWS = [
    row(Id=1, PostTypeId=1, Score=5, Title="How to brew?", Tags="<brewing><espresso>", CreationDate="2015-01-27T23:22:28.207",
        Body="<p>I want <b>good</b> coffee.</p><ul><li>fast</li><li>cheap<ul><li>very</li></ul></li></ul>"),
    row(Id=2, PostTypeId=2, ParentId=1, Score=9, Body="<p>Nine.</p>"),
    row(Id=3, PostTypeId=2, ParentId=1, Score=10, Body="<p>Ten &amp; best.</p><pre><code>x  =  1\n  y</code></pre>"),
    row(Id=4, PostTypeId=2, ParentId=1, Score=-1, Body="<p>Negative.</p>"),
    row(Id=5, PostTypeId=1, Score=0, Title="Unanswered", Body="<p>Anyone?</p>"),
    row(Id=6, PostTypeId=2, ParentId=99, Score=3, Body="<p>Orphan.</p>"),
    row(Id=7, PostTypeId=4, Score=0, Body="<p>Tag wiki excerpt.</p>"),
    row(Id="x", PostTypeId=1, Score=0, Title="Bad id", Body="<p>?</p>"),
    row(Id=8, PostTypeId=2, ParentId=1, Score=9, Body="<p>Nine again, later id.</p>"),
]


def read(path: Path, recipe: StackExchangeRecipe | None = None) -> tuple[list[Document], list[Drop], StepStats]:
    recipe = recipe or StackExchangeRecipe(memory_limit="256MB")
    stats = StepStats()
    records = list(recipe.read(InputSpec(str(path), path, path.name)))
    docs = list(run_steps(iter(records), recipe.steps(), stats))
    return docs, [r for r in records if isinstance(r, Drop)], stats


def make_7z(path: Path, files: dict[str, bytes]) -> Path:
    return write_7z(path, files)


def test_threads_in_numeric_score_order(tmp_path: Path) -> None:
    path = tmp_path / "coffee.stackexchange.com-Posts.xml"
    path.write_bytes(posts_xml(ROWS))
    docs, drops, stats = read(path)
    assert [d.meta["question_id"] for d in docs] == [1, 5]
    first = docs[0]
    # 10 before 9 (RedPajama's string sort put "9" first), ties by id, negatives last
    assert first.meta["answer_scores"] == [10, 9, 9, -1]
    assert first.text == (
        "Q: How to brew?\nI want good coffee.\n\n* fast\n* cheap\n  * very\n\n"
        "A: Ten & best.\n\nx  =  1\n  y\n\nA: Nine.\n\nA: Nine again, later id.\n\nA: Negative."
    )
    assert first.meta | {"timestamp": None} == first.meta | {
        "site": "coffee.stackexchange.com", "url": "https://coffee.stackexchange.com/questions/1", "score": 5,
        "tags": ["brewing", "espresso"], "language": "en", "answer_count": 4, "timestamp": None}
    assert docs[1].text == "Q: Unanswered\nAnyone?"
    assert sorted(d.reason for d in drops) == ["malformed_row", "orphan_answer", "other_post_type"]
    assert stats.records_in == 5 and stats.balanced()


def test_7z_site_dump_reads_like_the_extracted_xml(tmp_path: Path) -> None:
    xml = tmp_path / "coffee.stackexchange.com-Posts.xml"
    xml.write_bytes(posts_xml(ROWS))
    archive = make_7z(tmp_path / "coffee.stackexchange.com.7z",
                      {"Users.xml": b"<users/>", "Posts.xml": posts_xml(ROWS), "Tags.xml": b"<tags/>"})
    from_xml, from_7z = read(xml)[0], read(archive)[0]
    assert [d.text for d in from_7z] == [d.text for d in from_xml]
    assert [d.id for d in from_7z] == [d.id for d in from_xml]
    assert count_posts(archive) == count_posts(xml) == len(ROWS)
    assert posts_bytes(archive) == len(posts_xml(ROWS)) == posts_bytes(xml)


def test_min_answers_filter(tmp_path: Path) -> None:
    path = tmp_path / "coffee.stackexchange.com-Posts.xml"
    path.write_bytes(posts_xml(ROWS))
    docs, _, stats = read(path, StackExchangeRecipe(min_answers=1, memory_limit="256MB"))
    assert [d.meta["question_id"] for d in docs] == [1]
    assert stats.drops[("min_answers", "too_few_answers", "en")] == 1 and stats.balanced()


def test_truncated_7z_is_a_reasoned_drop(tmp_path: Path) -> None:
    whole = make_7z(tmp_path / "full.7z", {"Posts.xml": posts_xml(ROWS * 50)}).read_bytes()
    cut = tmp_path / "cut.stackexchange.com.7z"
    cut.write_bytes(whole[: len(whole) // 2])
    docs, drops, stats = read(cut)
    assert not docs and [d.reason for d in drops] == ["truncated_input"]
    assert drops[0].detail and stats.balanced()


def test_truncated_xml_keeps_the_rows_before_the_cut(tmp_path: Path) -> None:
    data = posts_xml(ROWS)
    path = tmp_path / "cut.stackexchange.com-Posts.xml"
    path.write_bytes(data[: data.index(b'Id="5"') + 20])
    docs, drops, stats = read(path)
    assert [d.meta["question_id"] for d in docs] == [1]
    assert "truncated_input" in [d.reason for d in drops] and stats.balanced()


def test_external_entity_is_never_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    prolog = f'<!DOCTYPE posts [<!ENTITY xxe SYSTEM "file://{secret}">]>\n'
    rows = [row(Id=1, PostTypeId=1, Score=1, Title="t", Body="<p>ok</p>"),
            '  <row Id="2" PostTypeId="1" Score="1" Title="t" Body="&xxe;" />\n']
    path = tmp_path / "evil.stackexchange.com-Posts.xml"
    path.write_bytes(posts_xml(rows, prolog))
    docs, drops, stats = read(path)
    assert not docs and [d.reason for d in drops] == ["xml_entity_declared"]
    assert "ENTITY" in drops[0].detail and stats.balanced()
    assert all("TOP-SECRET" not in d.text for d in docs)


def test_external_dtd_and_billion_laughs_are_refused(tmp_path: Path) -> None:
    laughs = '<!DOCTYPE posts [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>\n'
    dtd = '<!DOCTYPE posts SYSTEM "http://127.0.0.1:9/evil.dtd">\n'
    for name, prolog, body in [("laughs", laughs, "&b;"), ("dtd", dtd, "ok")]:
        path = tmp_path / f"{name}.stackexchange.com-Posts.xml"
        path.write_bytes(posts_xml([f'  <row Id="1" PostTypeId="1" Score="1" Title="t" Body="{body}" />\n'], prolog))
        docs, drops, stats = read(path)
        if name == "laughs":
            assert not docs and [d.reason for d in drops] == ["xml_entity_declared"]
        else:  # an external DTD reference is neither fetched nor needed
            assert [d.text for d in docs] == ["Q: t\nok"]
        assert stats.balanced()


def test_archive_without_posts_xml(tmp_path: Path) -> None:
    path = make_7z(tmp_path / "x.stackexchange.com.7z", {"Users.xml": b"<users/>"})
    assert [d.reason for d in read(path)[1]] == ["no_posts_xml"]


def test_sink_memory_stays_bounded(tmp_path: Path) -> None:
    sink = PostsSink(tmp_path, batch_rows=100)
    data = posts_xml([row(Id=i, PostTypeId=1, Score=0, Title="t", Body="<p>b</p>") for i in range(1, 2001)])
    for start in range(0, len(data), 4096):
        sink.feed(data[start:start + 4096])
    assert len(sink.columns["id"]) < 100  # flushed in batches, not held
    assert sink.max_buffered < 200  # between chunks only the unfinished row stays buffered
    sink.finish()
    assert sink.rows == 2000 and (tmp_path / "rows.parquet").exists()


# -- pieces ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "site", "table"), [
    ("coffee.stackexchange.com.7z", "coffee.stackexchange.com", None),
    ("stackoverflow.com-Posts.7z", "stackoverflow.com", "Posts"),
    ("stackoverflow.com-Users.7z", "stackoverflow.com", "Users"),
    ("coffee.stackexchange.com-Posts.xml", "coffee.stackexchange.com", "Posts"),
    ("coffee.stackexchange.com-Posts.xml.bz2", "coffee.stackexchange.com", "Posts"),
    ("ru.stackoverflow.com.7z", "ru.stackoverflow.com", None),
])
def test_site_file_names(name: str, site: str, table: str | None) -> None:
    assert site_file(Path("/dumps") / name) == type(site_file(Path(name)))(site, table)


def test_site_from_folder_and_languages() -> None:
    assert site_file(Path("dumps/coffee.stackexchange.com/Posts.xml")).site == "coffee.stackexchange.com"
    assert site_language("ru.stackoverflow.com") == "ru" and site_language("math.stackexchange.com") == "en"
    assert is_meta_site("meta.stackoverflow.com") and is_meta_site("coffee.meta.stackexchange.com")
    assert not is_meta_site("metal.stackexchange.com")
    assert parse_tags("<a><b-c>") == ["a", "b-c"] == parse_tags("|a|b-c|")


def test_select_sites_ranks_and_gives_reasons() -> None:
    sizes = [SiteSize("big.7z", "big.stackexchange.com", True, 900), SiteSize("mid.7z", "mid.stackexchange.com", True, 500),
             SiteSize("tie.7z", "aaa.stackexchange.com", True, 500), SiteSize("small.7z", "small.stackexchange.com", True, 10),
             SiteSize("meta.7z", "meta.stackoverflow.com", True, 10_000), SiteSize("so-Users.7z", "stackoverflow.com", False, 1),
             SiteSize("big-Posts.xml", "big.stackexchange.com", True, 900), SiteSize("bad.7z", "bad.stackexchange.com", True, 0, "Bad7zFile")]
    keep, skipped = select_sites(sizes, top=2)
    assert keep == ["big-Posts.xml", "tie.7z"]
    assert skipped["mid.7z"].startswith("not_in_top_sites: rank 3 of 4")
    assert skipped["small.7z"].startswith("not_in_top_sites: rank 4")
    assert skipped["meta.7z"].startswith("meta_site") and skipped["so-Users.7z"].startswith("not_posts_table")
    assert skipped["big.7z"].startswith("duplicate_site") and skipped["bad.7z"].startswith("unreadable")
    assert set(keep) | set(skipped) == {s.key for s in sizes}
    assert len(select_sites(sizes, top=0)[0]) == 4 and "meta.7z" in select_sites(sizes, 0, include_meta=True)[0]


def test_html_to_text_cases() -> None:
    assert html_to_text("<p>a</p><p>b<br>c</p>") == "a\n\nb\nc"
    assert html_to_text("<ol><li>one</li><li>two</li></ol>after") == "1. one\n2. two\n\nafter"
    assert html_to_text("<blockquote><p>quoted</p></blockquote><p>x &lt;y&gt; <a href='u'>link</a></p>") == \
        "quoted\n\nx <y> link"
    assert html_to_text("<script>alert(1)</script>text<style>p{}</style> more") == "text more"
    assert html_to_text("plain   text") == "plain text" and html_to_text("") == ""
    assert html_to_text("<p>unclosed <b>bold") == "unclosed bold"
    assert html_to_text("<p>before<!-- note --> after</p>") == "before after"  # text version 2


def test_post_with_html_comment_keeps_text_after_it(tmp_path: Path) -> None:
    """Text version 2: the reader uses the shared converter; version 1 lost what followed a comment."""
    path = tmp_path / "coffee.stackexchange.com-Posts.xml"
    path.write_bytes(posts_xml([
        row(Id=1, PostTypeId=1, Score=1, Title="Grind?", Body="<p>Fine<!-- or coarse? --> grind.</p><p>Why?</p>"),
        row(Id=2, PostTypeId=2, ParentId=1, Score=2, Body="<!-- x --><ul><li>taste</li></ul>"),
    ]))
    docs, _, _ = read(path)
    assert [d.text for d in docs] == ["Q: Grind?\nFine grind.\n\nWhy?\n\nA: * taste"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["<p>", "</p>", "<li>", "</li>", "<ul>", "</ul>", "<pre>", "</pre>", "<br>",
                                 "a", " b ", "&amp;", "<", ">", "\n", "<!-- c -->", "<script>", "</script>"]),
                max_size=30).map("".join))
def test_html_to_text_never_raises_and_has_no_tags(body: str) -> None:
    text = html_to_text(body)
    assert "<p>" not in text and "<li>" not in text and "\n\n\n" not in text and text == text.strip()


@pytest.mark.realdata
def test_real_coffee_dump(realdata: Path, tmp_path: Path) -> None:
    xml = realdata / "stackexchange" / "coffee.stackexchange.com-Posts.xml"
    docs, drops, stats = read(xml)
    assert len(docs) == 225 and stats.balanced()
    assert [d.reason for d in drops] == ["other_post_type"] * 40
    assert sum(d.meta["answer_count"] for d in docs) == 327
    for doc in docs:
        assert doc.meta["answer_scores"] == sorted(doc.meta["answer_scores"], reverse=True)
        assert doc.text.startswith("Q: ") and doc.text.count("\nA: ") + doc.text.startswith("A: ") == doc.meta["answer_count"]
        assert "<p>" not in doc.text and "&amp;" not in doc.text
    assert any("\n* " in d.text for d in docs)  # list items became bullets
    archive = make_7z(tmp_path / "coffee.stackexchange.com.7z", {"Posts.xml": xml.read_bytes()})
    assert [d.text for d in read(archive)[0]] == [d.text for d in docs]
    assert count_posts(archive) == 592
