"""GSM8K -> Galactica `<work>` documents: real rows, annotations strip/keep, Socratic, commas, bad input."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from core.document import Document, InputSpec
from core.steps import StepStats, run_steps
from sources.reasoning import (
    ANNOTATION,
    ReasoningRecipe,
    ReasoningSettings,
    Solution,
    answer_number,
    format_work_document,
    parse_answer,
    row_record,
)
from sources.samples.reasoning import write_sample_inputs

DOC = re.compile(r"\AQuestion: (?P<q>.+?)\n\n<work>\n(?P<work>.*?)\n</work>\n\nAnswer: (?P<a>[^\n]+)\Z", re.DOTALL)


def run(path: Path, annotations: str = "strip") -> tuple[list[Document], StepStats]:
    recipe = ReasoningRecipe(ReasoningSettings(annotations=annotations))  # type: ignore[arg-type]
    stats = StepStats()
    docs = list(run_steps(recipe.read(InputSpec(str(path), path, path.name)), recipe.steps(), stats))
    assert stats.balanced()
    return docs, stats


def reasons(stats: StepStats) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for (_, reason, _), n in stats.drops.items():
        counts[reason] += n
    return dict(counts)


def test_real_gsm8k_rows_become_work_documents(realdata: Path) -> None:
    path = realdata / "reasoning" / "gsm8k_test.first500.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    docs, stats = run(path)
    assert len(docs) == len(rows) == 500 and stats.dropped == 0
    assert len({d.id for d in docs}) == 500
    for doc, row in zip(docs, rows, strict=True):
        match = DOC.match(doc.text)
        assert match, doc.text
        assert match["q"] == row["question"].strip()  # \u2019 and friends decoded, text as written
        final = row["answer"].rstrip().rsplit("\n", 1)[1]
        assert final == f"#### {match['a']}" and doc.meta["answer"] == match["a"]
        assert "<<" not in doc.text and ">>" not in doc.text and "####" not in doc.text
        assert doc.text.count("<work>") == 1 and doc.text.count("</work>") == 1
        expected = ANNOTATION.sub("", row["answer"]).rstrip().rsplit("\n", 1)[0]
        assert match["work"] == "\n".join(line.strip() for line in expected.split("\n") if line.strip())
        assert doc.meta["calculator_annotations"] == len(ANNOTATION.findall(row["answer"]))
    janet = docs[0]
    assert "Janet\u2019s ducks" in janet.text and "16 - 3 - 4 = 9 duck eggs" in janet.text
    with_commas = [d for d in docs if "," in d.meta["answer"]]
    assert with_commas and all(d.meta["answer_number"] == d.meta["answer"].replace(",", "") for d in with_commas)
    assert all(re.fullmatch(r"-?\d+(\.\d+)?", d.meta["answer_number"]) for d in docs)


def test_real_rows_keep_mode_keeps_each_annotation_inside_work(realdata: Path) -> None:
    path = realdata / "reasoning" / "gsm8k_test.first500.jsonl"
    docs, _ = run(path, annotations="keep")
    for doc in docs:
        work = DOC.match(doc.text)["work"]  # type: ignore[index]
        assert len(ANNOTATION.findall(work)) == doc.meta["calculator_annotations"]
        assert len(ANNOTATION.findall(doc.text)) == len(ANNOTATION.findall(work))  # none outside the block
    assert "16 - 3 - 4 = <<16-3-4=9>>9 duck eggs" in docs[0].text


def test_sample_has_socratic_rows_and_counted_drops(tmp_path: Path) -> None:
    [path] = [Path(p) for p in write_sample_inputs(tmp_path)]
    docs, stats = run(path)
    assert reasons(stats) == {"malformed_json": 1, "no_final_answer": 1}
    assert stats.errors[0]["record"].endswith("gsm8k-sample.jsonl: line 4")
    socratic = [d for d in docs if d.meta["variant"] == "socratic"]
    assert len(socratic) == 2
    maria = next(d for d in socratic if "Maria" in d.text)
    assert ("<work>\nHow much do the notebooks cost?\nThe notebooks cost 3 * 4 = $12.\n"
            "How much does she spend in all?\nShe spends 12 + 2 = $14.\n</work>\n\nAnswer: 14") in maria.text
    farm = next(d for d in docs if "apple" in d.text)
    assert farm.text.endswith("Answer: 180,000") and farm.meta["answer_number"] == "180000"
    assert ReasoningRecipe().partition(maria) == "socratic" and ReasoningRecipe().partition(farm) == "main"


def test_bad_rows_are_counted_drops(tmp_path: Path) -> None:
    good = {"question": "What is 6 * 7?", "answer": "6 * 7 = <<6*7=42>>42\n#### 42"}
    lines = [
        json.dumps(good), "[1]", '{"question": 1, "answer": "x"}', json.dumps({"question": "q?"}),
        json.dumps({"question": "q?", "answer": "no final line"}),
        json.dumps({"question": "q?", "answer": "a <<1+1=2 b\n#### 2"}),
        json.dumps({"question": "q <work>?", "answer": "1\n#### 1"}),
        json.dumps({"question": "q?", "answer": "#### 1\nmore\n#### 2"}),
        json.dumps({"question": "q?", "answer": "x" * 200_000 + "\n#### 1"}),
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    docs, stats = run(path)
    assert len(docs) == 1 and docs[0].text.endswith("<work>\n6 * 7 = 42\n</work>\n\nAnswer: 42")
    assert reasons(stats) == {"malformed_json": 1, "malformed_row": 2, "no_final_answer": 2,
                              "malformed_annotation": 1, "work_token_in_text": 1, "too_large": 1}
    packed = gzip.compress(path.read_bytes(), mtime=0)
    (tmp_path / "cut.jsonl.gz").write_bytes(packed[:-40])
    _, cut = run(tmp_path / "cut.jsonl.gz")
    assert reasons(cut).get("truncated_input") == 1


def test_parquet_export_and_missing_column(tmp_path: Path) -> None:
    table = pa.table({"question": ["What is 2 + 3?", "What is 10 - 4?"],
                      "answer": ["2 + 3 = <<2+3=5>>5\n#### 5", "10 - 4 = <<10-4=6>>6\n#### 6"]})
    pq.write_table(table, tmp_path / "test-00000-of-00001.parquet", row_group_size=1)
    docs, _ = run(tmp_path / "test-00000-of-00001.parquet")
    assert [d.meta["answer"] for d in docs] == ["5", "6"]
    pq.write_table(table.drop_columns(["answer"]), tmp_path / "broken.parquet")
    _, stats = run(tmp_path / "broken.parquet")
    assert reasons(stats) == {"missing_column": 2}
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 nope")
    assert reasons(run(tmp_path / "junk.parquet")[1]) == {"unreadable_input": 1}


def test_answer_number() -> None:
    assert answer_number("1,234,567") == "1234567"
    assert answer_number("-3,000.5") == "-3000.5"
    assert answer_number("12") == "12"


STEP = st.text(alphabet=st.sampled_from(list("abc xyz0123456789+-*/=$.,?")), min_size=1, max_size=30) \
    .map(str.strip).filter(lambda s: bool(s) and not s.startswith("####") and " ** " not in s)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(STEP, st.integers(0, 10**6)), min_size=1, max_size=6),
       st.integers(-10**6, 10**6), st.booleans())
def test_format_then_parse_recovers_the_steps(steps: list[tuple[str, int]], final: int, annotate: bool) -> None:
    lines = [f"{s} <<{n}+0={n}>>{n}" if annotate else s for s, n in steps]
    answer = "\n".join(lines) + f"\n#### {final:,}"
    solution = parse_answer(answer)
    assert isinstance(solution, Solution) and solution.steps == tuple(lines)
    record = row_record({"question": "Q?", "answer": answer}, "mem", ReasoningSettings(annotations="keep"))
    assert isinstance(record, Document)
    match = DOC.match(record.text)
    assert match and match["work"].split("\n") == lines and match["a"] == f"{final:,}"
    stripped = format_work_document("Q?", solution, "strip")
    assert "<<" not in stripped and answer_number(f"{final:,}") == str(final)
