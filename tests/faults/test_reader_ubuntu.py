"""Fault injection, the Ubuntu Dialogue Corpus JSON array (issue 24 item 3): one bad item costs itself.

The files are JSON arrays as the corpus ships them (``json.dump(..., indent=4)``, one object per
dialogue with ``dialogue_id``, ``timestamp``, ``text``); the real sample is used when
``../shared/realdata`` has it. The truth is the intact array: every other item is kept, the
broken one is one drop that names it.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from core.document import Document, Drop, InputSpec
from sources.dialogue import DialogueRecipe

ITEMS = 2002


def _item(n: int) -> dict[str, str]:
    return {"dialogue_id": f"{n // 100}/{n}.tsv", "timestamp": "2004-07-05T12:42:00.000Z",
            "text": f"is the {n}th kernel patch merged?\nnot yet, it needs a review\nok, I will ask on the list"}


def _array(items: list[dict[str, str]]) -> bytes:
    return json.dumps(items, indent=4).encode()


def _read(path: Path) -> tuple[list[Document], list[Drop]]:
    records = list(DialogueRecipe().read(InputSpec(str(path), path, path.name)))
    return [r for r in records if isinstance(r, Document)], [r for r in records if isinstance(r, Drop)]


def _ids(docs: list[Document]) -> list[str]:
    return [str(d.meta["dialogue_id"]) for d in docs]


def _expected(skip: int) -> list[str]:
    return [_item(n)["dialogue_id"] for n in range(ITEMS) if n != skip]


def test_one_bad_byte_costs_its_item_alone(tmp_path: Path) -> None:
    data = _array([_item(n) for n in range(ITEMS)])
    at = data.index(b"is the 50th kernel")
    path = tmp_path / "dialogues.json"
    path.write_bytes(data[:at] + b"\xff\xfe" + data[at:])  # item 51 (the 50th, counted from 0)
    docs, drops = _read(path)
    assert [(d.reason, d.record) for d in drops] == [("invalid_utf8", f"{path}: item 51")]
    assert _ids(docs) == _expected(50)


def test_a_broken_item_101_costs_itself_not_the_remaining_1900(tmp_path: Path) -> None:
    data = _array([_item(n) for n in range(ITEMS)])
    start = data.index(b'"text": "is the 100th kernel')
    end = data.index(b'list"', start) + len(b"list")
    path = tmp_path / "dialogues.json"
    path.write_bytes(data[:end] + data[end + 1:])  # the text's closing quote is gone: the string never ends
    docs, drops = _read(path)
    assert [(d.reason, d.record) for d in drops] == [("malformed_json", f"{path}: item 101")]
    assert _ids(docs) == _expected(100)


def test_a_missing_comma_between_fields_is_one_drop(tmp_path: Path) -> None:
    data = _array([_item(n) for n in range(ITEMS)])
    at = data.index(b'"timestamp"', data.index(b'"2/200.tsv"'))
    path = tmp_path / "dialogues.json"
    path.write_bytes(data[:at].rstrip().rstrip(b",") + b"\n        " + data[at:])
    docs, drops = _read(path)
    assert [(d.reason, d.record) for d in drops] == [("malformed_json", f"{path}: item 201")]
    assert _ids(docs) == _expected(200)


def test_a_50_mb_item_is_one_drop_in_bounded_memory(tmp_path: Path) -> None:
    items = [_item(n) for n in range(20)]
    items[7]["text"] = "one more line of a very long dialogue\n" * 1_300_000  # 50 MB
    path = tmp_path / "dialogues.json"
    path.write_bytes(_array(items))
    del items
    tracemalloc.start()
    try:
        docs, drops = _read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(d.reason, d.record) for d in drops] == [("record_too_large", f"{path}: item 8")]
    assert _ids(docs) == [_item(n)["dialogue_id"] for n in range(20) if n != 7]
    assert peak < 200 << 20, f"peak {peak / 2**20:.0f} MiB of Python allocations for a 50 MB item"


def test_a_cut_array_keeps_the_items_before_the_cut(tmp_path: Path) -> None:
    data = _array([_item(n) for n in range(30)])
    path = tmp_path / "dialogues.json"
    path.write_bytes(data[: data.index(b"is the 20th kernel")])
    docs, drops = _read(path)
    assert [(d.reason, d.record) for d in drops] == [("truncated_input", f"{path}: after item 20")]
    assert _ids(docs) == [_item(n)["dialogue_id"] for n in range(20)]


def test_real_sample_with_a_bad_byte_keeps_everything_else(realdata: Path, tmp_path: Path) -> None:
    data = (realdata / "dialogue" / "ubuntu" / "dialogues_small.json").read_bytes()
    intact = tmp_path / "intact.json"
    intact.write_bytes(data)
    docs_before, drops_before = _read(intact)
    second = data.index(b'"text"', data.index(b'"text"') + 1)
    broken = tmp_path / "dialogues_small.json"
    broken.write_bytes(data[:second + 10] + b"\xff" + data[second + 10:])
    docs, drops = _read(broken)
    assert [(d.reason, d.record) for d in drops if d.reason == "invalid_utf8"] == [("invalid_utf8", f"{broken}: item 2")]
    assert len(docs) == len(docs_before) - 1 and len(drops) == len(drops_before) + 1


def test_ubuntu_v2_csv_bad_byte_or_huge_field_costs_its_row_alone(tmp_path: Path) -> None:
    rows = [f'"i cannot mount the {n}th disk __eou__ __eot__ which filesystem ? __eou__ __eot__",'
            f'"ext3 , i think __eou__",1' for n in range(50)]
    rows[9] = rows[9].replace("mount the", "mount \udcff the")
    rows[30] = '"' + "x " * 9_000_000 + '",y,1'  # an 18 MB field: over the CSV field bound
    data = ("Context,Utterance,Label\r\n" + "\r\n".join(rows) + "\r\n").encode("utf-8", "surrogateescape")
    path = tmp_path / "train.csv"
    path.write_bytes(data)
    docs, drops = _read(path)
    assert [(d.reason, d.record) for d in drops] == [("invalid_utf8", f"{path}: row 10"),
                                                     ("too_large", f"{path}: row 31")]
    assert len(docs) == 48
