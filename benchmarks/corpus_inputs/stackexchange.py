"""StackExchange at scale: whole-site dumps ``site<N>.stackexchange.com.7z`` (the Internet Archive layout).

Each archive is what :mod:`sources.samples.stackexchange` writes, grown: a 7z (fixed member
times, :func:`sources.samples.stackexchange.write_7z`) of ``Posts.xml`` with one ``<row>`` per
post (HTML bodies escaped in attributes, ``&#xA;`` newlines, titles, ``<tag>`` lists, scores,
accepted answers) and the small ``Users.xml``/``Comments.xml``/``Tags.xml`` the reader skips.

Bodies are real: HTML blocks (``<p>``, ``<pre><code>``, lists, blockquotes) of the real
``coffee.stackexchange.com`` posts (``realdata/stackexchange``; the sample site's without it),
drawn at random, a log-normal number of characters per post (median 600, sigma 0.9: the coffee
site's posts have a median of ~560). Answers per question: 0 to 6, mean ~1.45 (the coffee site:
327 answers to 225 questions). Titles are real titles with a number.

Duplicates: 0.5% of questions repost an earlier thread exactly (dropped by exact dedup) and 0.5%
with one title word changed (MinHash in ``flows.dedup``); an assumption: StackExchange closes
duplicate questions, which differ in words, and publishes no repost rate.
"""

from __future__ import annotations

import html
import random
import re
from functools import cache
from pathlib import Path

import py7zr

from sources.samples.stackexchange import SITE, other_tables, posts_xml, write_7z

from ._text import lognormal_chars, realdata

PER_FILE = 32_000_000
EXACT_RATE, NEAR_RATE = 0.005, 0.005
ANSWERS = (0, 1, 1, 1, 1, 2, 2, 2, 3, 4, 6)
#: LZMA2 with a 1 MiB dictionary: the real text pool is a few MB, so a large dictionary would find the
#: repeats of its blocks and pack the XML ~40x; with 1 MiB the archive packs ~5x, as real sites do
#: (stackoverflow.com-Posts.7z: ~19 GB for ~95 GB of XML).
FILTERS = [{"id": py7zr.FILTER_LZMA2, "preset": 2, "dict_size": 1 << 20}]


@cache
def pool() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(HTML blocks, titles, tags) of the real site's posts."""
    path = realdata("stackexchange", "coffee.stackexchange.com-Posts.xml")
    data = path.read_text(encoding="utf-8-sig") if path is not None else posts_xml().decode("utf-8")
    bodies = [html.unescape(m) for m in re.findall(r' Body="([^"]*)"', data)]
    blocks = [b.strip() for body in bodies for b in re.split(r"\n\n+", body) if len(b) > 40]
    titles = [html.unescape(m) for m in re.findall(r' Title="([^"]*)"', data)]
    tags = sorted({t for m in re.findall(r' Tags="([^"]*)"', data) for t in re.findall(r"<([^>]+)>", html.unescape(m))})
    return tuple(blocks), tuple(titles), tuple(tags or ["coffee"])


def _body(rng: random.Random) -> str:
    blocks, _, _ = pool()
    want, parts, size = lognormal_chars(rng, 600, 0.9, 60, 40_000), [], 0
    while size < want:
        part = rng.choice(blocks)
        parts.append(part)
        size += len(part)
    return "\n\n".join(parts) + "\n"


def _attr(value: str) -> str:
    return html.escape(value, quote=True).replace("\n", "&#xA;")


def _row(attrs: dict[str, str]) -> str:
    return "  <row " + " ".join(f'{k}="{_attr(v)}"' for k, v in attrs.items()) + " />\n"


def _thread(rng: random.Random, first_id: int, when: str) -> list[dict[str, str]]:
    """A question and its answers as ``Posts.xml`` attribute maps (ids from ``first_id``)."""
    _, titles, tags = pool()
    answers = rng.choice(ANSWERS)
    question = {"Id": str(first_id), "PostTypeId": "1", "CreationDate": when, "Score": str(rng.randrange(-2, 40)),
                "Body": _body(rng), "OwnerUserId": str(rng.randrange(1, 5000)), "LastActivityDate": when,
                "Title": f"{rng.choice(titles)} ({first_id})", "Tags": "".join(f"<{t}>" for t in rng.sample(tags, 2)),
                "AnswerCount": str(answers), "ContentLicense": "CC BY-SA 3.0"}
    if answers:
        question = {"Id": question["Id"], "PostTypeId": "1", "AcceptedAnswerId": str(first_id + 1),
                    **{k: v for k, v in question.items() if k not in ("Id", "PostTypeId")}}
    rows = [question]
    for n in range(answers):
        rows.append({"Id": str(first_id + 1 + n), "PostTypeId": "2", "ParentId": str(first_id), "CreationDate": when,
                     "Score": str(rng.randrange(-1, 60)), "Body": _body(rng), "OwnerUserId": str(rng.randrange(1, 5000)),
                     "LastActivityDate": when, "ContentLicense": "CC BY-SA 3.0"})
    return rows


def _repost(rng: random.Random, thread: list[dict[str, str]], first_id: int, near: bool) -> list[dict[str, str]]:
    """``thread`` again under new ids; ``near``: one word of its title changed."""
    rows = []
    for offset, row in enumerate(thread):
        copy = dict(row, Id=str(first_id + offset))
        if "ParentId" in copy:
            copy["ParentId"] = str(first_id)
        if "AcceptedAnswerId" in copy:
            copy["AcceptedAnswerId"] = str(first_id + 1)
        if "Title" in copy:
            words = copy["Title"].split(" ")
            if near:
                words[0] = "Why" if words[0] != "Why" else "How"
            copy["Title"] = " ".join([*words[:-1], f"({first_id})"])
        rows.append(copy)
    return rows


def site_posts(rng: random.Random, budget: int) -> bytes:
    """``Posts.xml`` of about ``budget`` bytes."""
    out = ['<?xml version="1.0" encoding="utf-8"?>\n<posts>\n']
    size, next_id, recent = 0, 1, []
    while size < budget:
        when = f"20{10 + next_id % 12:02d}-0{1 + next_id % 9}-1{next_id % 10}T12:{next_id % 60:02d}:00.000"
        draw = rng.random()
        if recent and draw < EXACT_RATE + NEAR_RATE:
            thread = _repost(rng, rng.choice(recent), next_id, near=draw >= EXACT_RATE)
        else:
            thread = _thread(rng, next_id, when)
            recent = ([*recent, thread])[-100:]
        next_id += len(thread) + rng.randrange(3)  # deleted posts leave gaps in the ids
        for row in thread:
            line = _row(row)
            out.append(line)
            size += len(line)
    out.append("</posts>\n")
    return "".join(out).encode("utf-8")


def write(directory: Path, size: int, seed: int = 0, per_file: int = PER_FILE) -> list[str]:
    """Site archives of about ``size`` bytes of 7z in all under ``directory``; their paths."""
    rng = random.Random(f"stackexchange/{seed}")
    directory.mkdir(parents=True, exist_ok=True)
    written, total, number = [], 0, 0
    ratio = 5.0  # XML bytes per 7z byte, corrected after each site
    while total < size:
        budget = min(per_file, size - total)
        xml = site_posts(rng, int(budget * ratio))
        target = directory / f"site{number:03d}.{SITE}.7z"
        write_7z(target, {"Posts.xml": xml, **other_tables()}, FILTERS)
        packed = target.stat().st_size
        ratio = max(1.5, len(xml) / max(packed, 1))
        total += packed
        written.append(str(target))
        number += 1
    return written
