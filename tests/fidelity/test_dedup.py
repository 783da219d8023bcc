"""Fidelity corpus, dedup: pairs that must be near duplicates, and pairs that must not.

Each case is one pair, written by hand: an article and its copy as another site, scan or editor
would have typed it (curly quotes, dashes, ellipses, capitals, other spaces, full-width forms,
ligatures, decomposed accents, soft hyphens), or a text whose *content* differs. A pair matches
when both the definition (exact Jaccard of :func:`dedupe.shingles.shingle_items`) and the batch
path every dedup stage runs (:class:`dedupe.minhash.MinHasher` signatures from the compiled
kernel) put it on the right side of the near-duplicate threshold (0.8, the flows' default).
Issue 31's case 10 (the same article with smart typography, Jaccard 0.117 before the fix) also
runs through the Pile matching path (reference index, document shard, LSH, verification).
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import zstandard

from core.document import Document
from core.shards import ShardWriter
from dedupe.lsh import BandLayout, JoinSettings
from dedupe.minhash import MinHashConfig, MinHasher, estimated_jaccard
from dedupe.reference import (
    ReferenceIndex,
    best_reference_matches,
    index_pile_shard,
    reference_band_pairs,
    sign_document_shard,
)
from dedupe.shingles import shingle_items

THRESHOLD = 0.8
#: Case 10's article (ASCII typography), as its make.py writes it.
ARTICLE = (
    "The old lighthouse keeper's logbook was found in a trunk at the harbour museum last spring. \"We didn't "
    "expect anything like it,\" said the curator. \"It's a day-by-day account - storms, ships, even what he ate.\" "
    "The keeper wrote that he couldn't sleep on stormy nights... \"The lamp won't wait for me,\" one entry reads, "
    "\"and the sea doesn't care if I'm tired.\" Volunteers who've transcribed the pages say it's the town's best "
    "record of the 1890s. \"He'd note every ship - the ones that passed and the ones that didn't,\" a volunteer "
    "said. \"You can't read it without feeling the cold.\" The museum's director said they'll put the logbook on "
    "display next year. \"It isn't just a diary - it's the harbour's memory,\" she said. \"We're lucky it wasn't "
    "thrown away.\" Visitors won't be able to touch it, but they'll see scans of every page on a screen beside the "
    "case, and the museum's website will publish the transcription for anyone who'd like to read it at home.")
OTHER = (
    "Rainfall in the upper valley was twice the seasonal average this year, and farmers say the wheat harvest "
    "will be late. The cooperative's report lists 14 fields under water in March and 9 in April; most were "
    "replanted by May. \"We've seen floods before, but not three in one spring,\" one grower said. The district "
    "council has asked the water board to clear the drainage ditches before the autumn rains begin, and to "
    "publish the river gauge readings every week so families on the low roads can plan ahead.")

GREEK = ("\u039f \u03c6\u03ac\u03c1\u03bf\u03c2 \u03c4\u03bf\u03c5 \u03bb\u03b9\u03bc\u03b1\u03bd\u03b9\u03bf\u03cd "
         "\u03c7\u03c4\u03af\u03c3\u03c4\u03b7\u03ba\u03b5 \u03c4\u03bf 1890 \u03ba\u03b1\u03b9 \u03bf "
         "\u03c6\u03cd\u03bb\u03b1\u03ba\u03b1\u03c2 \u03ba\u03c1\u03b1\u03c4\u03bf\u03cd\u03c3\u03b5 "
         "\u03b7\u03bc\u03b5\u03c1\u03bf\u03bb\u03cc\u03b3\u03b9\u03bf \u03ba\u03ac\u03b8\u03b5 "
         "\u03bd\u03cd\u03c7\u03c4\u03b1\u03c2.")


def smart(text: str) -> str:
    """Curly quotes and apostrophes, em dashes and an ellipsis character, as case 10 builds them."""
    text = text.replace("'", "\u2019").replace(" - ", " \u2014 ").replace("...", "\u2026")
    out, opening = [], True
    for char in text:
        if char == '"':
            out.append("\u201c" if opening else "\u201d")
            opening = not opening
        else:
            out.append(char)
    return "".join(out)


def full_width(text: str) -> str:
    """ASCII letters and digits as their full-width forms (East Asian typesetting)."""
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in text)


#: (name, text, copy): pairs that must be near duplicates.
SAME = [
    ("curly-quotes-dashes-ellipsis", ARTICLE, smart(ARTICLE)),
    ("curly-apostrophes-only", ARTICLE, ARTICLE.replace("'", "\u2019")),
    ("en-dashes-and-hyphens", ARTICLE, ARTICLE.replace(" - ", " \u2013 ").replace("day-by-day", "day\u2010by\u2010day")),
    ("guillemets-and-low-quotes", ARTICLE, ARTICLE.replace("\"", "\u00ab", 1).replace("\"", "\u201e")),
    ("upper-case", ARTICLE, ARTICLE.upper()),
    ("title-case", ARTICLE, ARTICLE.title()),
    ("no-break-and-thin-spaces", ARTICLE, ARTICLE.replace(" ", "\u00a0", 40).replace(". ", ".\u2009")),
    ("ideographic-and-em-spaces", ARTICLE, ARTICLE.replace(" the ", "\u3000the\u2003")),
    ("tabs-and-newlines", ARTICLE, ARTICLE.replace(". ", ".\n\n").replace(", ", ",\t")),
    ("full-width-forms", ARTICLE, full_width(ARTICLE)),
    ("ligatures", ARTICLE + " The figures fill the final file.",
     ARTICLE + " The \ufb01gures \ufb01ll the \ufb01nal \ufb01le."),
    ("decomposed-accents", ARTICLE + " Caf\u00e9 na\u00efve r\u00e9sum\u00e9 se\u00f1or.",
     unicodedata.normalize("NFD", ARTICLE + " Caf\u00e9 na\u00efve r\u00e9sum\u00e9 se\u00f1or.")),
    ("soft-hyphens-and-zero-width", ARTICLE, ARTICLE.replace("lighthouse", "light\u00adhouse")
     .replace("transcribed", "tran\u00adscribed").replace(" the ", " the\u200b ")),
    ("superscripts-and-fractions", ARTICLE + " It covers 12 m2 and 1/2 of the room.",
     ARTICLE + " It covers \u00b9\u00b2 m\u00b2 and \u00bd of the room."),
    ("german-sharp-s", "Die Stra\u00dfe am Hafen wurde 1890 gebaut und war die gro\u00dfe Stra\u00dfe der Stadt, "
     "an der alle Schiffe anlegten und wo die H\u00e4ndler ihre Waren verkauften.",
     "DIE STRASSE AM HAFEN WURDE 1890 GEBAUT UND WAR DIE GROSSE STRASSE DER STADT, "
     "AN DER ALLE SCHIFFE ANLEGTEN UND WO DIE H\u00c4NDLER IHRE WAREN VERKAUFTEN."),
    ("greek-final-sigma", GREEK, GREEK.upper()),  # ς and σ both fold to σ; Σ too
    ("everything-at-once", ARTICLE, full_width(smart(ARTICLE).upper()).replace(" ", "\u00a0", 30)),
    ("one-word-changed-control", ARTICLE, ARTICLE.replace("last spring", "last summer")),
]
#: (name, text, other): pairs whose content differs, which must not be near duplicates.
DIFFERENT = [
    ("another-article-same-typography", smart(ARTICLE), smart(OTHER)),
    ("half-rewritten", ARTICLE, " ".join(w if i % 2 else "changed" for i, w in enumerate(ARTICLE.split()))),
    ("every-number-changed", " ".join(f"Match {i}: home {i % 7} away {(i * 3) % 5}, crowd {1000 + i * 37}."
                                      for i in range(40)),
     " ".join(f"Match {i}: home {(i + 3) % 7} away {(i * 3 + 2) % 5}, crowd {2000 + i * 41}." for i in range(40))),
    ("accents-are-letters", "r\u00e9sum\u00e9 " * 3 + "p\u00e2te c\u00f4te m\u00e1s s\u00ed \u00e9l t\u00fa",
     "resume " * 3 + "pate cote mas si el tu"),
    ("first-half-only", ARTICLE, ARTICLE[: len(ARTICLE) // 3]),
]


def _jaccard(a: str, b: str) -> float:
    left, right = set(shingle_items(a)), set(shingle_items(b))
    return len(left & right) / len(left | right)


@pytest.mark.fidelity("dedup")
@pytest.mark.parametrize(("name", "text", "copy"), SAME, ids=[case[0] for case in SAME])
def test_pair_is_a_near_duplicate(name: str, text: str, copy: str) -> None:
    assert _jaccard(text, copy) >= THRESHOLD + 0.1, name
    signatures = MinHasher(MinHashConfig()).signatures([text, copy])
    assert estimated_jaccard(signatures[0], signatures[1]) >= THRESHOLD, name


@pytest.mark.fidelity("dedup")
@pytest.mark.parametrize(("name", "text", "other"), DIFFERENT, ids=[case[0] for case in DIFFERENT])
def test_pair_is_not_a_near_duplicate(name: str, text: str, other: str) -> None:
    assert _jaccard(text, other) < THRESHOLD - 0.2, name
    signatures = MinHasher(MinHashConfig()).signatures([text, other])
    assert estimated_jaccard(signatures[0], signatures[1]) < THRESHOLD, name


@pytest.mark.fidelity("dedup")
def test_case_10_smart_copy_matches_the_pile_line(tmp_path: Path) -> None:
    """Case 10 through Pile matching: the ASCII article indexed; its smart copy and the one-word
    control are both near matches of that line, and an unrelated article is not."""
    pile = tmp_path / "pile" / "00.jsonl.zst"
    pile.parent.mkdir()
    lines = [json.dumps({"text": t, "meta": {"pile_set_name": "Pile-CC"}}) for t in (OTHER, ARTICLE)]
    pile.write_bytes(zstandard.ZstdCompressor().compress("".join(line + "\n" for line in lines).encode()))
    layout = BandLayout.named("0.8")
    index = ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), [layout])
    index.commit([index_pile_shard(s, index.root, no, name, index.minhash, index.layouts) for s, no, name in index.plan([pile])])
    out = tmp_path / "data"
    docs = [smart(ARTICLE), ARTICLE.replace("last spring", "last summer"), smart(OTHER.replace("wheat", "barley"))[:200]]
    with ShardWriter(out, out / "docs" / "wikipedia" / "en", "x", "wikipedia") as writer:
        for i, text in enumerate(docs):
            writer.write(Document(f"wiki-{i}", text, "wikipedia"))
    work = tmp_path / "work"
    part = sign_document_shard(out, writer.finished[0].path, work, "00000", 0, index.minhash, [layout])
    part["source"] = "wikipedia"
    pairs = [reference_band_pairs(work, index, layout, band, work, JoinSettings()) for band in range(layout.bands)]
    matches = pq.read_table(best_reference_matches(work, [part], index, layout, pairs, work, JoinSettings())).to_pylist()
    found = {m["doc"]: m for m in matches}
    assert sorted(found) == [0, 1]
    assert all(found[d]["ref"] == 1 and found[d]["kind"] == "near" for d in (0, 1))
    assert np.isclose(found[0]["jaccard"], 1.0) and found[1]["jaccard"] >= THRESHOLD
