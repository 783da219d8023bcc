"""Tests for book-level near-dedup: shingling, matching modes, determinism, pipeline glue."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from core.layout import duplicates_path
from core.manifest import InputRecord
from dedupe.near_books import (
    BookSignature,
    NearDupSettings,
    NearMatch,
    add_to_duplicate_list,
    find_near_duplicates,
    read_matches,
    relabel_near_duplicates,
    shingle_hashes,
    signature,
    write_matches,
)

WORDS = ["river", "meadow", "angler", "trout", "morning", "quiet", "water", "stream", "willow", "shadow", "bank", "line", "rod", "hook", "bait", "evening", "boat", "oar", "wind", "cloud", "rain", "sun", "field", "hedge", "lane", "village", "church", "bell", "tower", "market", "bread", "cheese"]


def book(seed: int, words: int = 6000) -> str:
    rng = random.Random(seed)
    return "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(60)) for _ in range(words // 60))


def entry(rank: int, ordinal: int, text: str, key: str | None = None) -> BookSignature:
    hashes = shingle_hashes(text)
    values = signature(hashes, NearDupSettings()).hashvalues.astype(np.uint32).tobytes()
    return BookSignature(key or f"in{rank}", rank, ordinal, f"id-{rank}-{ordinal}", f"title {rank}", "en",
                         len(hashes), values)


def drop_paragraphs(text: str, every: int) -> str:
    return "\n\n".join(p for i, p in enumerate(text.split("\n\n")) if i % every)


def test_shingles_ignore_case_and_punctuation() -> None:
    assert np.array_equal(shingle_hashes("The cat, sat on the MAT!"), shingle_hashes("the cat sat on the mat"))
    assert len(shingle_hashes("one two three four five six")) == 2
    assert len(shingle_hashes("too short")) == 1 and len(shingle_hashes("")) == 0


def test_jaccard_drops_later_near_copy_and_records_match() -> None:
    original = book(1)
    books = [entry(0, 0, original), entry(1, 0, book(2)), entry(2, 0, drop_paragraphs(original, 40))]
    matches = find_near_duplicates(books, NearDupSettings())
    assert [(m.doc_id, m.matched_id) for m in matches] == [("id-2-0", "id-0-0")]
    assert matches[0].score >= 0.9 and matches[0].mode == "jaccard"


def test_below_threshold_is_kept() -> None:
    original = book(3)
    half = "\n\n".join(original.split("\n\n")[:50])
    assert find_near_duplicates([entry(0, 0, original), entry(1, 0, half)], NearDupSettings()) == []


def test_containment_keeps_the_larger_book() -> None:
    novel = book(4, 3000)
    collection = novel + "\n\n" + book(5, 6000)
    books = [entry(0, 0, novel), entry(1, 0, collection)]
    matches = find_near_duplicates(books, NearDupSettings(mode="containment"))
    assert [(m.doc_id, m.matched_id) for m in matches] == [("id-0-0", "id-1-0")]
    assert find_near_duplicates(books, NearDupSettings(mode="jaccard")) == []


def test_result_does_not_depend_on_list_order() -> None:
    original = book(6)
    books = [entry(0, 0, original), entry(0, 1, drop_paragraphs(original, 30)), entry(1, 0, original + " coda"),
             entry(1, 1, book(7))]
    expected = find_near_duplicates(books, NearDupSettings())
    assert {m.doc_id for m in expected} == {"id-0-1", "id-1-0"}
    assert find_near_duplicates(list(reversed(books)), NearDupSettings()) == expected


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_exact_copy_always_matches(seed: int) -> None:
    text = book(seed, 1200)
    matches = find_near_duplicates([entry(0, 0, text), entry(1, 0, text)], NearDupSettings())
    assert len(matches) == 1 and matches[0].score == 1.0


def test_real_books_are_not_near_duplicates_of_each_other(realdata: Path) -> None:
    from sources.gutenberg import BookSettings, read_book

    texts = [read_book(p, BookSettings(), str(p)).text for p in sorted((realdata / "books").glob("*.txt"))]  # type: ignore[union-attr]
    planted = drop_paragraphs(texts[0], 25)
    books = [entry(i, 0, t) for i, t in enumerate([*texts, planted])]
    matches = find_near_duplicates(books, NearDupSettings())
    assert [(m.input_key, m.matched_input_key) for m in matches] == [(f"in{len(texts)}", "in0")]


def record_with_dups(n: int) -> InputRecord:
    return InputRecord(input_key="b", source="books", location="b", language=None, config_hash="c", docs_kept=5,
                       drops=[{"step": "dedup_exact", "reason": "duplicate_exact", "language": "en", "count": n}])


def match(ordinal: int) -> NearMatch:
    return NearMatch("b", ordinal, f"id{ordinal}", "T", "en", "a", 0, "id-a", "Orig", 0.95, "jaccard")


def test_relabel_moves_counts_and_names_the_match() -> None:
    fixed = relabel_near_duplicates(record_with_dups(3), [match(1), match(2)])
    reasons = {(d["reason"], d["count"]) for d in fixed.drops}
    assert reasons == {("duplicate_exact", 1), ("near_duplicate", 2)}
    assert fixed.docs_dropped == 3
    assert "matched id-a (Orig" in fixed.errors[0]["detail"] and fixed.errors[0]["reason"] == "near_duplicate"
    assert relabel_near_duplicates(fixed, [match(1), match(2)]) is fixed  # idempotent


def test_duplicate_list_union_and_match_table_round_trip(tmp_path: Path) -> None:
    path = duplicates_path(tmp_path, "books")
    path.parent.mkdir(parents=True)
    pq.write_table(pa.table({"input_key": ["b"], "ordinal": pa.array([4], pa.int64())}), path)
    add_to_duplicate_list(tmp_path, "books", [match(1), match(4)])
    assert pq.read_table(path).to_pylist() == [{"input_key": "b", "ordinal": 1}, {"input_key": "b", "ordinal": 4}]
    write_matches(tmp_path, "books", [match(1)])
    assert read_matches(tmp_path, "books") == [match(1)]
