"""A small offline StackExchange sample: one whole-site dump, ``cooking.stackexchange.com.7z``,
in the layout of the Internet Archive's ``stackexchange`` collection (a 7z of ``Posts.xml``,
``Users.xml``, ``Comments.xml``, ``Tags.xml``; :mod:`sources.stackexchange` reads ``Posts.xml``).

``Posts.xml`` rows carry what real rows carry: HTML bodies escaped in attributes (paragraphs,
lists, inline code, links, entities), ``Score``, ``AcceptedAnswerId``, ``<tag>`` lists, and
answers whose scores do not follow their ids (the reader sorts by score as a number). Planted:

- question 11 reposts question 4 with its answers copied (an exact duplicate thread, dropped by
  the source run's exact dedup);
- question 12 reposts question 1 with one word of the title changed and the answers copied (a
  near duplicate, found by MinHash in ``flows.dedup``);
- answer 30 belongs to a deleted question (``orphan_answer`` drop), and a tag wiki (post types 4
  and 5) is no question (``other_post_type`` drops).

The archive is deterministic: fixed member times (py7zr stamps "now" otherwise), so a second
sample run finds it unchanged and resumes.
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import py7zr
from py7zr.helpers import ArchiveTimestamp

from core.atomic import atomic_path

SITE = "cooking.stackexchange.com"
ARCHIVE_NAME = f"{SITE}.7z"
#: Member time of every file in the archive (2024-03-01, a dump date).
MEMBER_TIME = 1709251200.0


@dataclass(frozen=True)
class Post:
    """One ``<row>`` of ``Posts.xml`` (the attributes the reader uses, plus a few it ignores)."""

    id: int
    type: int
    body: str
    score: int
    created: str
    parent: int | None = None
    title: str | None = None
    tags: tuple[str, ...] = ()
    accepted: int | None = None


BREAD_Q = ("<p>I bake a plain white loaf every weekend, but by Tuesday it is dry and hard. I keep it in the "
           "fridge because I thought that would help. How do I keep bread from going stale so quickly?</p>")
BREAD_A1 = ("<p>Take it <strong>out of the fridge</strong>. Staling is mostly starch retrogradation: the starch "
            "recrystallises and pushes water out, and that happens fastest at refrigerator temperatures, just "
            "above freezing. At room temperature it is slower, and in the freezer it practically stops.</p>\n"
            "<ul>\n<li>For the next two days, keep the loaf cut side down on a board or in a paper bag.</li>\n"
            "<li>Slice the rest and freeze it in a sealed bag; toast the slices straight from frozen.</li>\n"
            "</ul>\n<p>A stale loaf can be revived once: run it under the tap for a second and put it in a hot "
            "oven for five to ten minutes.</p>")
BREAD_A2 = ("<p>Adding a little fat to the dough helps too. A tablespoon of butter or oil per loaf, or "
            "replacing some of the water with milk, gives a softer crumb that stays soft for longer. "
            "Enriched doughs like brioche keep noticeably better than lean ones.</p>")
BREAD_A3 = "<p>Just buy bread with preservatives in it, it lasts for weeks.</p>"
CARAMEL_Q = ("<p>When I make caramel with sugar and water it often turns grainy and solid halfway through "
             "instead of becoming a clear amber syrup. What am I doing wrong?</p>")
CARAMEL_A1 = ("<p>The sugar is crystallising. A single undissolved crystal, for example one stuck to the side of "
              "the pan, can seed the whole batch. Stir only until the sugar has dissolved, then stop stirring "
              "and swirl the pan instead. Brush the sides of the pan with a wet pastry brush to wash stray "
              "crystals back down.</p>")
CARAMEL_A2 = ("<p>Add an interfering agent. A spoonful of corn syrup or a squeeze of lemon juice (the acid "
              "splits some sucrose into glucose and fructose) gets in the way of the crystals forming. "
              "That is why most reliable recipes include one.</p>")
BUTTER_Q = ("<p>My grandmother always kept butter in a covered dish on the counter. Is it actually safe to "
            "leave butter out of the fridge, and for how long?</p>")
BUTTER_A1 = ("<p>Salted butter is safe at room temperature for several days. Butter is about 80% fat and "
             "the water in it is dispersed in tiny droplets, which leaves little room for bacteria to grow, "
             "and salt makes it even less hospitable. What you will notice first is rancidity: the fat "
             "oxidises and picks up off flavours, faster in light and warmth.</p>\n<p>Keep only what you "
             "will use in a few days in a covered dish, away from the stove and the window, and keep the "
             "rest in the fridge. Unsalted butter is better refrigerated.</p>")
BUTTER_A2 = ("<p>A <em>butter bell</em> (French butter crock) works well: the butter sits in an inverted cup "
             "over a little water, which seals it from the air. Change the water every few days.</p>")
KNIFE_Q = ("<p>What is the difference between honing and sharpening a kitchen knife? My knife came with a "
           "steel rod; does that sharpen it?</p>")
KNIFE_A1 = ("<p>Honing realigns the edge, sharpening removes metal to make a new one. The steel rod hones: "
            "after some use the thin edge rolls over to one side, and a few light strokes on the rod push "
            "it straight again. Once the edge is rounded off, no amount of honing helps and you need a "
            "whetstone or a sharpening service. Hone often, sharpen a few times a year.</p>")
RICE_Q = ("<p>Should rice be rinsed before cooking? Recipes disagree and I can't tell whether it makes a "
          "difference for <code>basmati</code>.</p>")

POSTS: list[Post] = [
    Post(1, 1, BREAD_Q, 14, "2010-07-09T19:13:19.603", title="How do I keep bread from going stale so quickly?",
         tags=("bread", "storage-method"), accepted=2),
    Post(2, 2, BREAD_A1, 9, "2010-07-09T19:20:51.110", parent=1),
    Post(3, 2, BREAD_A2, 10, "2010-07-09T20:02:11.437", parent=1),
    Post(4, 1, CARAMEL_Q, 8, "2010-07-10T08:41:05.300", title="Why does my caramel turn grainy?",
         tags=("sugar", "caramel"), accepted=6),
    Post(5, 2, BREAD_A3, -2, "2010-07-10T09:12:40.000", parent=1),
    Post(6, 2, CARAMEL_A1, 11, "2010-07-10T09:30:00.017", parent=4),
    Post(7, 2, CARAMEL_A2, 4, "2010-07-10T11:45:18.220", parent=4),
    Post(8, 1, BUTTER_Q, 21, "2010-07-12T14:03:27.850", title="Is it safe to leave butter out of the fridge?",
         tags=("butter", "food-safety", "storage-method"), accepted=9),
    Post(9, 2, BUTTER_A1, 25, "2010-07-12T14:20:02.593", parent=8),
    Post(10, 2, BUTTER_A2, 6, "2010-07-13T07:55:44.000", parent=8),
    Post(11, 1, CARAMEL_Q, 0, "2011-02-01T16:22:09.117", title="Why does my caramel turn grainy?",
         tags=("caramel",)),
    Post(12, 1, BREAD_Q, 1, "2011-03-15T10:10:10.010", title="How do I keep bread from going stale so fast?",
         tags=("bread",)),
    Post(13, 1, KNIFE_Q, 5, "2011-04-02T12:00:00.000", title="Honing versus sharpening a knife",
         tags=("knives", "equipment")),
    Post(14, 2, KNIFE_A1, 7, "2011-04-02T12:31:00.000", parent=13),
    Post(15, 1, RICE_Q, 2, "2011-05-20T18:30:45.000", title="Should I rinse basmati rice?",
         tags=("rice",)),
    Post(16, 4, "<p>Questions about baking and storing bread.</p>", 0, "2011-06-01T00:00:00.000"),
    Post(17, 5, "<p>Bread is a staple food prepared from a dough of flour and water.</p>", 0,
         "2011-06-01T00:00:00.000"),
    Post(21, 2, CARAMEL_A1, 3, "2011-02-01T17:00:00.000", parent=11),  # the repost's answers, copied
    Post(25, 2, CARAMEL_A2, 1, "2011-02-01T17:05:00.000", parent=11),
    Post(22, 2, BREAD_A2, 10, "2011-03-15T10:30:00.000", parent=12),   # the near repost's answers, copied
    Post(23, 2, BREAD_A1, 9, "2011-03-15T10:40:00.000", parent=12),
    Post(24, 2, BREAD_A3, -2, "2011-03-15T10:50:00.000", parent=12),
    Post(30, 2, "<p>Use a pressure cooker.</p>", 1, "2011-07-07T07:07:07.000", parent=29),  # deleted question
]
#: Where the planted duplicates are (question ids): exact repost -> original, near repost -> original.
EXACT_REPOST = (11, 4)
NEAR_REPOST = (12, 1)


def _attr(value: str) -> str:
    """An XML attribute value as the dumps write it (``&lt;p&gt;``, ``&#xA;`` for newlines)."""
    return html.escape(value, quote=True).replace("\n", "&#xA;")


def posts_xml(posts: list[Post] = POSTS) -> bytes:
    """``Posts.xml`` of ``posts``, one ``<row .../>`` per line (answer counts in one pass: linear in the posts)."""
    answers = Counter(p.parent for p in posts if p.parent is not None)
    rows = []
    for post in posts:
        attrs = {"Id": str(post.id), "PostTypeId": str(post.type)}
        if post.accepted is not None:
            attrs["AcceptedAnswerId"] = str(post.accepted)
        if post.parent is not None:
            attrs["ParentId"] = str(post.parent)
        attrs |= {"CreationDate": post.created, "Score": str(post.score), "Body": post.body,
                  "OwnerUserId": str(100 + post.id % 7), "LastActivityDate": post.created}
        if post.title is not None:
            attrs |= {"Title": post.title, "Tags": "".join(f"<{tag}>" for tag in post.tags),
                      "AnswerCount": str(answers[post.id])}
        attrs["ContentLicense"] = "CC BY-SA 2.5"
        rows.append("  <row " + " ".join(f'{k}="{_attr(v)}"' for k, v in attrs.items()) + " />")
    return ('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "\n".join(rows) + "\n</posts>\n").encode("utf-8")


def other_tables() -> dict[str, bytes]:
    """The site's other tables (the reader skips them; real dumps hold them)."""
    users = "\n".join(f'  <row Id="{100 + i}" Reputation="{10 * (i + 1)}" CreationDate="2010-07-01T00:00:00.000" '
                      f'DisplayName="cook{i}" />' for i in range(7))
    comments = '  <row Id="1" PostId="2" Score="3" Text="Freezing works great, thanks!" CreationDate="2010-07-09T21:00:00.000" />'
    tags = "\n".join(f'  <row Id="{i}" TagName="{t}" Count="{n}" />'
                     for i, (t, n) in enumerate([("bread", 2), ("caramel", 2), ("butter", 1)], start=1))
    head = '<?xml version="1.0" encoding="utf-8"?>\n'
    return {"Users.xml": f"{head}<users>\n{users}\n</users>\n".encode(),
            "Comments.xml": f"{head}<comments>\n{comments}\n</comments>\n".encode(),
            "Tags.xml": f"{head}<tags>\n{tags}\n</tags>\n".encode()}


def write_7z(target: Path, members: dict[str, bytes], filters: list[dict[str, int]] | None = None) -> None:
    """A 7z of ``members`` whose bytes do not depend on the clock (``filters``: py7zr's, default its LZMA2)."""
    with atomic_path(target) as tmp, py7zr.SevenZipFile(tmp, "w", filters=filters) as archive:
        for name, data in members.items():
            archive.writestr(data, name)
            # py7zr stamps each member with "now"; a dump's members carry one fixed time
            info = archive.header.files_info.files[-1]
            info["lastwritetime"] = ArchiveTimestamp.from_datetime(MEMBER_TIME)
            info.pop("creationtime", None)
            info.pop("lastaccesstime", None)


def write_sample_inputs(directory: Path) -> list[str]:
    """Write ``cooking.stackexchange.com.7z`` into ``directory``; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / ARCHIVE_NAME
    write_7z(target, {"Posts.xml": posts_xml(), **other_tables()})
    return [str(target)]
