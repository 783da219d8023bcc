"""Per-step traffic and CPU time (core.steps.StepStats.step_rows) and their manifest table
(``step_stats``): documents and characters in and out of every step, the CPU a step spent itself
(not its predecessors'), the rows of a split input's ranges summed, and a real C4 file staged
through core.pipeline with its rows beside its drop counts."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from core import pipeline
from core.document import Document, Drop, InputSpec
from core.filters.basic import MinLength, NonEmpty
from core.manifest import Manifest
from core.shards import ShardLimits
from core.steps import Record, Step, StepStats, chain_step_rows, run_steps, sum_step_rows
from sources.c4 import C4Recipe

BURN_S = 0.02


class Shout(Step):
    """A transform: upper case plus one character, so chars_out differs from chars_in."""

    name = "shout"

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        for doc in docs:
            yield Document(doc.id, doc.text.upper() + "!", doc.source, doc.meta)


class Burn(Step):
    """A step that spends ``BURN_S`` of CPU per document (thread CPU, whatever the machine's load)."""

    name = "burn"

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        for doc in docs:
            until = time.thread_time() + BURN_S
            while time.thread_time() < until:
                pass
            yield doc


def docs() -> list[Record]:
    return [Document("a", "hello", "t"), Drop("bad_row", "f: line 2", "not JSON"), Document("b", " ", "t"),
            Document("c", "hello there", "t"), Document("d", "hi", "t")]


def test_each_step_counts_what_went_in_and_out() -> None:
    stats = StepStats()
    kept = [d.text for d in run_steps(iter(docs()), [NonEmpty(), Shout(), MinLength(6)], stats)]
    assert kept == ["HELLO!", "HELLO THERE!"]
    rows = [{k: v for k, v in r.items() if k != "cpu_seconds"} for r in stats.step_rows()]
    assert rows == [
        {"position": 0, "step": "reader", "docs_in": 5, "docs_out": 4, "chars_in": None, "chars_out": 19},
        {"position": 1, "step": "non_empty", "docs_in": 4, "docs_out": 3, "chars_in": 19, "chars_out": 18},
        {"position": 2, "step": "shout", "docs_in": 3, "docs_out": 3, "chars_in": 18, "chars_out": 21},
        {"position": 3, "step": "min_length", "docs_in": 3, "docs_out": 2, "chars_in": 21, "chars_out": 18},
    ]
    dropped = {step: 0 for step in ("reader", "non_empty", "shout", "min_length")}
    for (step, _, _), count in stats.drops.items():
        dropped[step] += count
    assert all(r["docs_in"] - r["docs_out"] == dropped[r["step"]] for r in rows)  # beside the drop counts


def test_cpu_time_goes_to_the_step_that_spent_it() -> None:
    stats = StepStats()
    list(run_steps(iter(docs()), [NonEmpty(), Burn(), Shout()], stats))
    cpu = {r["step"]: r["cpu_seconds"] for r in stats.step_rows()}
    assert cpu["burn"] >= 3 * BURN_S * 0.95  # three documents reach it
    assert cpu["shout"] < BURN_S and cpu["non_empty"] < BURN_S and cpu["reader"] < BURN_S  # not the burn's


def test_rows_of_ranges_add_and_phases_chain() -> None:
    first, second = StepStats(), StepStats()
    list(run_steps(iter(docs()[:3]), [NonEmpty()], first))
    list(run_steps(iter(docs()[3:]), [NonEmpty()], second))
    summed = sum_step_rows([first.step_rows(), second.step_rows()])
    assert [(r["step"], r["docs_in"], r["docs_out"], r["chars_in"], r["chars_out"]) for r in summed] == [
        ("reader", 5, 4, None, 19), ("non_empty", 4, 3, 19, 18)]
    chained = chain_step_rows(first.step_rows(), second.step_rows())
    assert [(r["position"], r["step"]) for r in chained] == [(0, "reader"), (1, "non_empty"), (2, "reader"),
                                                             (3, "non_empty")]


def test_a_staged_c4_file_records_its_steps_in_the_manifest(tmp_path: Path) -> None:
    lines = [json.dumps({"text": f"page {n} " * 20, "url": f"https://x.example/{n}"}) for n in range(8)]
    lines[3] = "{not json"
    lines[5] = json.dumps({"text": "   "})
    source = tmp_path / "c4-train.00000-of-01024.json.gz"
    source.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    spec = InputSpec(str(source), source, source.name)
    out, recipe = tmp_path / "data", C4Recipe()
    ctx = pipeline.RunContext(out, "c4", "cfg", ShardLimits(), "c4")
    staged = pipeline.stage_input(recipe, spec, ctx)
    pipeline.find_exact_duplicates(ctx, [spec.key])
    record = pipeline.finalize_input(recipe, spec, ctx, pipeline.scope_hash([spec.key], "cfg"), staged)
    assert [s["step"] for s in record.steps] == ["c4_reader", "non_empty"]

    manifest = Manifest.for_output(out)
    manifest.start_run("run-1", "c4", "c4", "cfg", {}, "0.1.0")
    manifest.record_inputs("run-1", [record], recipe="c4", code_version="0.1.0")
    manifest.record_inputs("run-1", [record], recipe="c4", code_version="0.1.0")  # a re-record replaces its rows
    _, rows = manifest.query("SELECT s.step, s.docs_in, s.docs_out, s.chars_in IS NULL, s.cpu_seconds >= 0, "
                             "coalesce(sum(d.count), 0) FROM latest_step_stats s LEFT JOIN drops d "
                             "ON d.run_id = s.run_id AND d.input_key = s.input_key AND d.step = s.step "
                             "GROUP BY ALL ORDER BY any_value(s.position)")
    assert rows == [("c4_reader", 8, 7, True, True, 1), ("non_empty", 7, 6, False, True, 1)]
