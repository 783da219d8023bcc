"""Ubuntu Dialogue Corpus (JSON array, v2 CSV in nested zips), DailyDialog (nested zips), archive bounds."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sources.dialogue as dialogue
from core.document import Document, Drop, InputSpec
from sources.dialogue import (
    DialogueReader,
    DialogueRecipe,
    ZipLimits,
    detokenize,
    input_kind,
    iter_json_array,
)
from tests.fixed import zip_info


def read(path: Path, **kwargs: object) -> tuple[list[Document], list[Drop]]:
    records = list(DialogueReader(InputSpec(str(path), path, path.name), **kwargs))  # type: ignore[arg-type]
    return [r for r in records if isinstance(r, Document)], [r for r in records if isinstance(r, Drop)]


def members(path: Path) -> dict[str, bytes]:
    """Every file member, nested zips opened (independently of the reader)."""
    out: dict[str, bytes] = {}

    def walk(archive: zipfile.ZipFile, prefix: str) -> None:
        for info in archive.infolist():
            if info.is_dir():
                continue
            data = archive.read(info)
            if info.filename.endswith(".zip"):
                walk(zipfile.ZipFile(io.BytesIO(data)), f"{prefix}{info.filename}!")
            else:
                out[prefix + info.filename] = data

    walk(zipfile.ZipFile(path), "")
    return out


def test_real_ubuntu_json(realdata: Path) -> None:
    path = realdata / "dialogue/ubuntu/dialogues_small.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    docs, drops = read(path)
    assert input_kind(path) == "ubuntu_json"
    expected = [i for i in items if sum(1 for line in i["text"].split("\n") if line.strip()) >= 2]
    assert len(docs) + len(drops) == len(items) and len(docs) == len(expected)
    for doc, item in zip(docs, expected, strict=True):
        lines = [" ".join(line.split()) for line in item["text"].split("\n") if line.strip()]
        assert doc.meta["dialogue_id"] == item["dialogue_id"] and doc.meta["turns"] == len(lines)
        assert doc.text == "\n\n".join(f"?: {line}" for line in lines)
        assert doc.meta["corpus"] == "ubuntu" and doc.meta["speakers_known"] is False


def test_real_ubuntu_v2_csv_in_zips(realdata: Path) -> None:
    for name in ("hf_dummy_ubuntu_dialogs_corpus_train_2.0.0.zip", "hf_dummy_ubuntu_dialogs_corpus_dev_test_2.0.0.zip"):
        path = realdata / "dialogue/ubuntu" / name
        docs, drops = read(path)
        assert not drops
        rows = []
        for member, data in sorted(members(path).items()):
            rows += [(member, row) for row in csv.DictReader(io.StringIO(data.decode()))]
        assert len(docs) == len(rows)
        for doc, (_member, row) in zip(docs, rows, strict=True):
            context_turns = [t for t in row["Context"].split("__eot__") if t.strip()]
            response = row.get("Ground Truth Utterance") or (row["Utterance"] if row.get("Label") == "1" else None)
            assert doc.meta["turns"] == len(context_turns) + (response is not None)
            assert doc.meta["speakers"] == ["A", "B"] * (doc.meta["turns"] // 2) + ["A"] * (doc.meta["turns"] % 2)
            if response is not None:
                utterances = [detokenize(u) for u in response.split("__eou__") if u.strip()]
                assert doc.text.endswith(": " + "\n".join(utterances))
            for distractor in (v for k, v in row.items() if k.startswith("Distractor")):
                assert detokenize(distractor.replace("__eou__", "")) not in doc.text.split("\n\n")[-1]


def test_real_dailydialog_nested_zips(realdata: Path) -> None:
    path = realdata / "dialogue/dailydialog/hf_dummy_daily_dialog_1.0.0.zip"
    docs, drops = read(path)
    texts = {m: d.decode() for m, d in members(path).items() if m.rsplit("/", 1)[-1].startswith("dialogues_")}
    dialogues = [(m, line) for m, t in sorted(texts.items()) if "_act_" not in m and "_emotion_" not in m
                 for line in t.splitlines() if line.strip()]
    assert len(docs) == len(dialogues) and len(docs) >= 5
    assert sorted(d.reason for d in drops) == ["annotation_member"] * 6
    for doc, (member, line) in zip(docs, dialogues, strict=True):
        turns = [t for t in line.split("__eou__") if t.strip()]
        assert doc.meta["turns"] == len(turns) and doc.meta["split"] in member
        assert doc.text.split("\n\n")[0] == "A: " + detokenize(turns[0])
        assert " ," not in doc.text and " ?" not in doc.text
    assert docs[0].text.startswith("A: ") and "\n\nB: " in docs[0].text


def test_detokenize() -> None:
    assert detokenize("Say , Jim , how about it ? Let ' s go . I do n't ( really ) know !") == \
        "Say, Jim, how about it? Let's go. I don't (really) know!"


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(zip_info(name), data)
    return buffer.getvalue()


def test_zip_bounds_and_member_names(tmp_path: Path) -> None:
    dialog = b"Hi . __eou__ Hello ! __eou__\n"
    deep = zip_bytes({"l3.zip": zip_bytes({"dialogues_train.txt": dialog})})
    path = tmp_path / "bomb.zip"
    path.write_bytes(zip_bytes({
        "../../escape/dialogues_train.txt": dialog,  # read in memory: the name is never a path on disk
        "big/dialogues_big.txt": dialog * 2000,
        "deep/l2.zip": deep,
        "notes/readme.md": b"# not a dialogue",
    }))
    docs, drops = read(path, zip_limits=ZipLimits(max_member_bytes=10_000, max_depth=2))
    assert [d.meta["dialogue_id"] for d in docs] == ["train/1"]
    reasons = {d.record.rsplit("!", 1)[-1]: d.reason for d in drops}
    assert reasons == {"big/dialogues_big.txt": "zip_member_too_large", "l3.zip": "zip_too_deep",
                       "notes/readme.md": "unknown_format"}
    assert not (tmp_path.parent / "escape").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bomb.zip"]


def test_actual_size_bound_when_the_header_lies(tmp_path: Path) -> None:
    """A member whose declared size is small but which decompresses to more is stopped while read."""
    data = zip_bytes({"dialogues_train.txt": b"Hi . __eou__ Hello ! __eou__\n" * 500})
    header = data.index(b"PK\x01\x02")  # the central directory entry: patch its uncompressed size
    size_at = header + 24
    patched = data[:size_at] + (100).to_bytes(4, "little") + data[size_at + 4:]
    path = tmp_path / "liar.zip"
    path.write_bytes(patched)
    docs, drops = read(path, zip_limits=ZipLimits(max_member_bytes=1000))
    assert {d.reason for d in drops} <= {"zip_member_too_large", "corrupt_archive"} and drops
    assert len(docs) < 500


def test_truncated_and_malformed_json_array(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dialogue, "READ_BYTES", 7)  # item boundaries fall inside reads
    items = [{"dialogue_id": f"d{i}", "timestamp": "t", "text": f"hi {i}\nhello {i}"} for i in range(5)]
    text = json.dumps(items, indent=2)
    assert list(iter_json_array(io.BytesIO(text.encode()), 1000)) == items
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) - 40], encoding="utf-8")
    docs, drops = read(path)
    assert [d.meta["dialogue_id"] for d in docs] == ["d0", "d1", "d2", "d3"]
    assert [d.reason for d in drops] == ["truncated_input"] and "item 4" in drops[0].record
    bad = tmp_path / "bad.json"
    bad.write_text('[{"text": "a\\nb"}, 5, {"dialogue_id": "x", "text": "only one"}]', encoding="utf-8")
    docs, drops = read(bad)
    assert len(docs) == 1 and [d.reason for d in drops] == ["malformed_record", "too_few_turns"]


@settings(max_examples=40, deadline=None)
@given(read_bytes=st.integers(min_value=1, max_value=300), indent=st.sampled_from([None, 0, 2]),
       texts=st.lists(st.text(max_size=40), max_size=12))
def test_json_array_items_do_not_depend_on_the_read_size(read_bytes: int, indent: int | None, texts: list[str]) -> None:
    items = [{"dialogue_id": f"d{i}", "text": text} for i, text in enumerate(texts)]
    data = json.dumps(items, indent=indent, ensure_ascii=False).encode()
    original = dialogue.READ_BYTES
    dialogue.READ_BYTES = read_bytes
    try:
        assert list(iter_json_array(io.BytesIO(data), 10_000)) == items
    finally:
        dialogue.READ_BYTES = original


def test_recipe_dispatches_by_content(tmp_path: Path) -> None:
    renamed = tmp_path / "no_hint.bin"
    renamed.write_bytes(b"Hi . __eou__ Hello ! __eou__\n")
    assert input_kind(renamed) == "dailydialog"
    records = list(DialogueRecipe().read(InputSpec(str(renamed), renamed, "x")))
    assert [r.meta["corpus"] for r in records if isinstance(r, Document)] == ["dailydialog"]
    unknown = tmp_path / "RS_2006-01.zst"
    unknown.write_bytes(b"")
    records = list(DialogueRecipe().read(InputSpec(str(unknown), unknown, "y")))
    assert [r.reason for r in records if isinstance(r, Drop)] == ["submissions_file"] and len(records) == 1
