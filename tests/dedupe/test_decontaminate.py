"""Benchmark decontamination (dedupe.decontaminate): n-gram overlap with evaluation items, on real files.

Exact and case/punctuation-changed items are found (recall 1.0), an overlap of n - 1 words is
not, items shorter than n words are counted and never matched, each evaluation format is read,
and the per-shard attribute names benchmark, item and span and resumes from its metadata.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.document import Document
from core.shards import ShardWriter
from dedupe.decontaminate import (
    EvalIndex,
    EvalPiece,
    EvalSet,
    contamination_path,
    decontaminate_shard,
    find_matches,
    read_eval_items,
    save_index,
)

SENTENCE = ("the lighthouse keeper wrote the time the lamp was lit and the weather in the log book every night "
            "of the year")
HOST = f"Notes from the coast. {SENTENCE.capitalize()}. Then he slept until dawn."


def _doc(doc_id: str, text: str) -> Document:
    return Document(doc_id, text, "c4", {})


def _matches(item: str, docs: list[Document], ngram: int = 13) -> dict[str, str]:
    index = EvalIndex.build([EvalPiece("bench", "1", item)], ngram)
    return {m.id: m.span for m in find_matches(docs, index)[0]}


def test_exact_item_is_found_with_its_span() -> None:
    found = _matches(SENTENCE, [_doc("host", HOST), _doc("other", "Nothing of the kind is written here at all.")])
    assert list(found) == ["host"]
    assert found["host"] == "the lighthouse keeper wrote the time the lamp was lit and the weather"


@pytest.mark.parametrize("changed", [
    SENTENCE.upper(),
    SENTENCE.replace(" and ", ", and ").replace("night", "night!") + "?",
    "“The Lighthouse-Keeper” wrote: the TIME the lamp was lit; and the weather… in the log book every night",
    "The\u00a0lighthouse keeper wrote the time the lamp was lit and the weather in the log book every night",
])
def test_changed_case_and_punctuation_are_found(changed: str) -> None:
    assert list(_matches(changed, [_doc("host", HOST)])) == ["host"]


def test_an_overlap_of_fewer_than_n_words_is_no_match() -> None:
    words = SENTENCE.split()
    twelve = " ".join(words[:12])
    doc = _doc("near", f"Something else entirely. {twelve} but then the story goes somewhere else completely.")
    item = f"{twelve} whereas the evaluation item continues with other words than the document"
    assert _matches(item, [doc]) == {}
    assert list(_matches(item, [doc], ngram=12)) == ["near"]


def test_items_shorter_than_n_words_are_counted_and_never_match() -> None:
    short = "The road plunged at once into a beautiful wood."
    index = EvalIndex.build([EvalPiece("bench", "1", short)])
    assert index.too_short == 1 and len(index.keys) == 0
    assert find_matches([_doc("same", short), _doc("host", f"x {short} y")], index)[0] == []


def test_every_format_and_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "harness"
    (folder / "task").mkdir(parents=True)
    (folder / "task" / "test.jsonl").write_text(json.dumps({"idx": 7, "query": SENTENCE, "label": 1}) + "\n")
    with (folder / "qa.csv").open("w", newline="") as handle:
        csv.DictWriter(handle, ["question", "answer"]).writeheader()
        csv.DictWriter(handle, ["question", "answer"]).writerow({"question": "What?", "answer": SENTENCE.upper()})
    pq.write_table(pa.table({"id": ["p-1"], "text": [SENTENCE]}), folder / "set.parquet")
    (tmp_path / "list.json").write_text(json.dumps({"data": [{"question": SENTENCE}]}))
    pieces = read_eval_items([EvalSet(str(folder)), EvalSet(str(tmp_path / "list.json"), ("question",), "mine")])
    assert sorted({(p.benchmark, p.item) for p in pieces}) == [
        ("mine", "0"), ("qa", "0"), ("set", "p-1"), ("task/test", "7")]
    index = EvalIndex.build(pieces)
    found = find_matches([_doc("host", HOST)], index)[0]
    assert sorted((m.benchmark, m.item) for m in found) == [("mine", "0"), ("qa", "0"), ("set", "p-1"), ("task/test", "7")]
    with pytest.raises(ValueError, match="no field"):
        read_eval_items([EvalSet(str(tmp_path / "list.json"), ("prompt",))])


def test_shard_attribute_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "data"
    with ShardWriter(out, out / "docs" / "c4" / "en", "input", "c4", "en") as writer:
        writer.write(_doc("clean", "A page about gardens, with nothing from any benchmark in it at all."))
        writer.write(_doc("host", HOST))
    shard = writer.finished[0].to_dict()
    index_path = tmp_path / "index.pickle"
    save_index(EvalIndex.build([EvalPiece("bench", "q1", SENTENCE)]), index_path)
    first = decontaminate_shard(out, shard, index_path)
    assert first.error is None and first.contaminated == 1 and first.benchmarks == {"bench": 1} and first.documents == 2
    rows = pq.read_table(contamination_path(out, shard["path"])).to_pylist()
    assert [(r["id"], r["benchmark"], r["item"]) for r in rows] == [("host", "bench", "q1")] and rows[0]["ngrams"] > 1
    again = decontaminate_shard(out, shard, index_path)
    assert again.resumed and again.contaminated == 1 and again.documents == 0
