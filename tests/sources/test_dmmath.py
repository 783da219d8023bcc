"""DeepMind Mathematics reader on the real released excerpts, generated files, Pile shards and bad input."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from core.document import Document, Drop
from sources.dmmath import DmMathSettings, Pair, chunk_documents, iter_dmmath
from sources.samples.dmmath import write_pile_shard

TRAIN = DmMathSettings()
ALL = DmMathSettings(splits=("train-easy", "train-medium", "train-hard", "interpolate", "extrapolate"))


def _split(records: list[Document | Drop]) -> tuple[list[Document], Counter[str]]:
    docs = [r for r in records if isinstance(r, Document)]
    return docs, Counter(r.reason for r in records if isinstance(r, Drop))


def test_real_released_excerpt_without_final_newline(realdata: Path) -> None:
    path = realdata / "dmmath" / "released_excerpts" / "train-easy" / "numbers__gcd.txt"
    docs, drops = _split(list(iter_dmmath(path, TRAIN)))
    assert not drops and len(docs) == 1
    doc = docs[0]
    assert (doc.meta["module"], doc.meta["difficulty"], doc.meta["split"], doc.meta["pairs"]) == (
        "numbers__gcd", "easy", "train-easy", 10)
    assert doc.text == path.read_text(encoding="utf-8") + "\n"
    assert doc.text.startswith("Calculate the highest common divisor of 1300 and 300.\n100\n")


def test_real_excerpts_every_module(realdata: Path) -> None:
    for path in sorted((realdata / "dmmath" / "released_excerpts" / "train-easy").glob("*.txt")):
        docs, drops = _split(list(iter_dmmath(path, TRAIN)))
        assert not drops and sum(d.meta["pairs"] for d in docs) == 10, path.name
        assert docs[0].meta["module"] == path.stem


def test_real_notes_layout_all_modules(realdata: Path) -> None:
    docs, drops = _split(list(iter_dmmath(realdata / "dmmath" / "released_excerpts" / "samples_from_all_modules.txt",
                                          TRAIN)))
    assert not drops and len(docs) == 167
    assert {d.meta["difficulty"] for d in docs} == {"easy", "medium", "hard"}
    first = docs[0]
    assert (first.meta["module"], first.meta["split"]) == ("algebra__linear_1d", "train-easy")
    assert first.text.startswith("Solve 0 = 4*b + b + 15 for b.\n-3\n") and "\t" not in first.text


def test_generated_files_grouping_round_trip_and_test_splits(realdata: Path) -> None:
    root = realdata / "dmmath" / "generated.DERIVED"
    path = root / "train-hard" / "calculus__differentiate_composed.DERIVED.txt"
    docs, drops = _split(list(iter_dmmath(path, TRAIN)))
    assert not drops and "".join(d.text for d in docs) == path.read_text(encoding="utf-8")
    assert all(len(d.text) >= 8192 for d in docs[:-1]) and sum(d.meta["pairs"] for d in docs) == 100
    assert docs[0].meta["module"] == "calculus__differentiate_composed" and docs[0].meta["difficulty"] == "hard"
    interpolate = root / "interpolate" / "numbers__gcd.DERIVED.txt"
    assert _split(list(iter_dmmath(interpolate, TRAIN)))[1] == {"split_not_selected": 1}
    docs, _ = _split(list(iter_dmmath(interpolate, ALL)))
    assert docs[0].meta["difficulty"] == "interpolate"


def test_pile_shard_selects_dm_mathematics(realdata: Path, tmp_path: Path) -> None:
    real = realdata / "pile" / "mini-pile-v1-format.DERIVED.jsonl.zst"
    docs, drops = _split(list(iter_dmmath(real, TRAIN)))
    # no DM Mathematics in the mini Pile; its 12 empty texts are the Pile reader's own drops
    assert not docs and drops == {"pile_set_not_selected": 441, "empty_text": 12}
    text = (realdata / "dmmath" / "released_excerpts" / "train-easy" / "numbers__lcm.txt").read_text() + "\n"
    shard = write_pile_shard(tmp_path / "00.jsonl.zst", [("DM Mathematics", text), ("ArXiv", "a paper")])
    docs, drops = _split(list(iter_dmmath(shard, TRAIN)))
    assert [d.text for d in docs] == [text] and drops == {"pile_set_not_selected": 1}
    assert docs[0].meta["origin"] == "pile" and docs[0].meta["line"] == 1 and docs[0].meta["pairs"] == 10


def test_release_package_streamed(realdata: Path, tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for split in ("train-easy", "interpolate"):
            data = (realdata / "dmmath" / "released_excerpts" / "train-easy" / "numbers__gcd.txt").read_bytes()
            info = tarfile.TarInfo(f"mathematics_dataset-v1.0/{split}/numbers__gcd.txt")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    package = tmp_path / "mathematics_dataset-v1.0.tar.gz"
    package.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))
    docs, drops = _split(list(iter_dmmath(package, TRAIN)))
    assert len(docs) == 1 and drops == {"split_not_selected": 1}
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(package.read_bytes()[:300])
    assert _split(list(iter_dmmath(cut, TRAIN)))[1]["truncated_input"] == 1


def test_bad_lines_are_counted(tmp_path: Path) -> None:
    folder = tmp_path / "train-easy"
    folder.mkdir()
    path = folder / "numbers__gcd.txt"
    path.write_bytes(b"What is 2+2?\n4\nBad \xff line?\n1\n" + b"x" * 20 + b"\n\nLast question?\n")
    docs, drops = _split(list(iter_dmmath(path, DmMathSettings(max_line_chars=15))))
    assert drops == {"invalid_utf8": 1, "line_too_long": 1, "unpaired_question": 1} and docs[0].meta["pairs"] == 1
    gz = folder / "numbers__lcm.txt.gz"
    whole = gzip.compress("".join(f"What is {i} times {i + 7}?\n{i * (i + 7)}\n" for i in range(3000)).encode(), mtime=0)
    gz.write_bytes(whole[: len(whole) // 2])
    docs, drops = _split(list(iter_dmmath(gz, TRAIN)))
    assert drops["truncated_input"] == 1 and docs and docs[0].meta["module"] == "numbers__lcm"
    broken_list = tmp_path / "x.dmmath.json"
    broken_list.write_text(json.dumps({"nofiles": []}))
    assert _split(list(iter_dmmath(broken_list, TRAIN)))[1] == {"bad_input_list": 1}


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.text("abc 12+*=?", min_size=1, max_size=60).map(str.strip).filter(bool),
                          st.text("0123456789-", min_size=1, max_size=20)), min_size=1, max_size=60),
       st.integers(min_value=16, max_value=600))
def test_grouping_never_splits_a_pair_and_loses_nothing(pairs: list[tuple[str, str]], chunk: int) -> None:
    items = [Pair(q, a, 2 * i + 1) for i, (q, a) in enumerate(pairs)]
    docs = [d for d in chunk_documents(items, "m__x", "train-easy", "f", DmMathSettings(chunk_chars=chunk))
            if isinstance(d, Document)]
    assert "".join(d.text for d in docs) == "".join(f"{q}\n{a}\n" for q, a in pairs)
    assert sum(d.meta["pairs"] for d in docs) == len(pairs)
    assert all(len(d.text) >= chunk for d in docs[:-1])
    # a document ends at the first pair that reaches the bound: without its last pair it is below it
    assert all(len(d.text) - len(d.text.rstrip("\n").rsplit("\n", 2)[-2]) - len(d.text.rstrip("\n").rsplit("\n", 1)[-1])
               - 2 < chunk for d in docs)
