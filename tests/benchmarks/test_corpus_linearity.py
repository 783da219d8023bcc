"""Interleaved linearity rounds (benchmarks/corpus_linearity.py) and their verdicts (issue 33).

The verdict arithmetic on made-up costs whose shape is known (fixed plus proportional; quadratic);
the rounds' order, warm-up, resumption and clean-up with a recording ``run_one``; and the script's
``--linearity`` once on C4 at the --quick sizes, one round, through the real flow.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.benchmark_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # benchmarks.corpus_*; appended, it shadows nothing
cost = load_benchmark("corpus_cost")
projection: Any = importlib.import_module("benchmarks.corpus_projection")
linearity: Any = importlib.import_module("benchmarks.corpus_linearity")
GB = 1_000_000_000
SIZES = {"one": 2_000_000, "two": 4_000_000, "quarter": 64_000_000, "full": 256_000_000}
#: Input files per size as arXiv's inputs have them: one 64 MB tar at 1/4, four at full; one and two tiny tars.
ARXIV_FILES = {"one": 1, "two": 2, "quarter": 1, "full": 4}


def _rows(source: str, cost_of: Any, rounds: int = 2, jitter: float = 0.0) -> list[dict[str, Any]]:
    rows = []
    for name, size, number in linearity.plan([source], rounds):
        cpu = cost_of(SIZES[size] / GB) * (1 + (jitter * (1, -1, 0)[number] if size in ("quarter", "full") else 0))
        rows.append({"stage": name, "size": size, "round": number, "input_bytes": SIZES[size], "cpu_s": cpu,
                     "wall_s": cpu, "calibration_ms": 12.0})
    return rows


def test_a_fixed_cost_misses_the_raw_ratio_and_meets_the_net_one() -> None:
    """books as measured: ~9 CPU-s to start a flow, ~200 per GB after: the raw ratio says 0.72, the net 1.00."""
    verdict = projection.linearity_verdicts(_rows("books", lambda gb: 9.0 + 200.0 * gb, jitter=0.05))["books"]
    assert verdict["ratio"] == pytest.approx((9 / 0.256 + 200) / (9 / 0.064 + 200), rel=1e-3)  # 0.69
    assert verdict["ratio"] < 0.9
    assert verdict["fixed"] == pytest.approx(9.0, rel=1e-3) and verdict["marginal"] == pytest.approx(200.0, rel=1e-3)
    assert verdict["net_ratio"] == pytest.approx(1.0, abs=1e-6) and projection.linear(verdict)
    assert verdict["spread"] == pytest.approx(1.05 / 0.95 - 1, rel=1e-6)  # how far the rounds moved
    assert verdict["rounds"] == 2


def test_a_cost_growing_faster_than_its_input_is_not_linear() -> None:
    quadratic = projection.linearity_verdicts(_rows("dedup", lambda gb: 5.0 + 2000.0 * gb * gb))["dedup"]
    assert quadratic["net_ratio"] == pytest.approx(4.0, rel=0.01) and not projection.linear(quadratic)
    slightly = projection.linearity_verdicts(_rows("c4", lambda gb: 5.0 + 400.0 * gb * (1 + gb)))["c4"]
    assert not projection.linear(slightly)  # 400 x (1 + size in GB): 1.2x more per GB at 256 MB than at 64 MB


def test_a_cost_per_input_file_is_not_taken_for_a_fixed_cost() -> None:
    """arXiv as measured: 6.2 CPU-s fixed, 1.28 per tar (two Prefect tasks), 19.8 per GB; one tar at 1/4, four at
    full. A single tiny run (one tar) counted a tar's cost as fixed: net ratio 1.67. ``2 x one - two`` does not."""
    def arxiv(size: str) -> float:
        return 6.2 + 1.28 * ARXIV_FILES[size] + 19.8 * SIZES[size] / GB

    rows = [{"stage": "arxiv", "size": size, "round": number, "input_bytes": SIZES[size], "cpu_s": arxiv(size),
             "wall_s": 1.0} for _, size, number in linearity.plan(["arxiv"], 5)]
    verdict = projection.linearity_verdicts(rows)["arxiv"]
    assert verdict["fixed"] == pytest.approx(6.2, rel=1e-3)
    assert verdict["net_ratio"] == pytest.approx(1.0, abs=1e-6) and projection.linear(verdict)
    assert verdict["ratio"] < 0.5  # the raw figure: a 64 MB run is mostly the fixed cost
    one_tiny_run = arxiv("one") - verdict["marginal"] * SIZES["one"] / GB  # the old estimator
    net = (arxiv("full") - one_tiny_run) / 4 / (arxiv("quarter") - one_tiny_run)
    assert net > 1.5  # what the doc said of arXiv before


def test_a_fixed_cost_pair_whose_two_is_not_twice_one_is_corrected_by_the_marginal_rate() -> None:
    sizes = SIZES | {"two": 4_600_000}  # books: twice the books, not exactly twice the bytes
    rows = [{"stage": "books", "size": size, "round": 0, "input_bytes": sizes[size], "cpu_s": 9.0 + 200.0 * sizes[size] / GB,
             "wall_s": 1.0} for _, size, _ in linearity.plan(["books"], 1)]
    assert projection.linearity_verdicts(rows)["books"]["fixed"] == pytest.approx(9.0, rel=1e-6)


def test_a_source_without_all_its_sizes_has_no_verdict() -> None:
    for missing in ("one", "two", "quarter", "full"):
        rows = [r for r in _rows("arxiv", lambda gb: 7.0 + 50.0 * gb) if r["size"] != missing]
        assert projection.linearity_verdicts(rows) == {}


def test_the_doc_and_the_goals_take_a_source_verdict_from_its_rounds() -> None:
    rows = _rows("books", lambda gb: 9.0 + 200.0 * gb)
    table = projection.interleaved_table(rows)
    assert table[2] == "| books | 2 | 64.0 MB / 256.0 MB | 341 | 235 | 0.69 | 9.0 | 200 | 1.00 | yes | 0% | 12.0 / 12.0 |"
    single = [cost.Stage("books", "quarter", 64_000_000, cpu_s=21.0), cost.Stage("books", "full", 256_000_000, cpu_s=60.7),
              cost.Stage("labels", "quarter", GB, cpu_s=30.0), cost.Stage("labels", "full", 4 * GB, cpu_s=92.0)]
    lines = cost.goals(single, rows)
    assert "linear books (2 interleaved rounds): full/quarter CPU per GB 0.69, 1.00 net of its fixed 9.0 CPU-s " \
           "(met, goal within 10%)" in lines
    assert "linear labels (single pass): full/quarter CPU per GB 0.77 (NOT met, goal within 10%)" in lines
    assert not any(line.startswith("linear books (single pass)") for line in lines)
    results = {"sizes": {"quarter": {"books": 64e6}, "full": {"books": 256e6}}, "pile_bytes": {}, "workers": 2,
               "efficiency": None, "date": "2026-11-30", "load": [1.0] * 3, "cpus": 2, "quick": False,
               "stages": [cost._row(s) for s in single], "linearity": rows}
    doc = projection.render(results)
    assert "| books | 2 | 64.0 MB / 256.0 MB | 341 | 235 | 0.69 | 9.0 | 200 | 1.00 | yes | 0% | 12.0 / 12.0 |" in doc
    assert doc.index("| source | rounds |") < doc.index("| stage | CPU s / input GB at 1/4 |")  # the verdict first


class Recorder:
    """A ``run_one`` that records what it was asked and returns a made-up row."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def __call__(self, source: str, size: str, number: int) -> dict[str, Any]:
        self.calls.append((source, size, number))
        return {"stage": source, "size": size, "round": number, "input_bytes": SIZES[size], "cpu_s": 1.0, "wall_s": 1.0}


def test_each_full_run_sits_between_two_quarter_runs_after_an_unmeasured_warm_up(tmp_path: Path) -> None:
    run = Recorder()
    rows = linearity.run_rounds(tmp_path, ["c4", "books"], 2, lambda s, size: SIZES[size], run, lambda m: None)
    assert run.calls == [("c4", "one", -1),
                         ("c4", "quarter", 0), ("c4", "full", 0), ("c4", "quarter", 1), ("c4", "full", 1),
                         ("c4", "quarter", 2), ("c4", "one", 0), ("c4", "two", 0), ("c4", "one", 1), ("c4", "two", 1),
                         ("books", "quarter", 0), ("books", "full", 0), ("books", "quarter", 1), ("books", "full", 1),
                         ("books", "quarter", 2), ("books", "one", 0), ("books", "two", 0), ("books", "one", 1),
                         ("books", "two", 1)]
    assert [(r["stage"], r["size"], r["round"]) for r in rows] == run.calls[1:]  # the warm-up is not a row
    kept = (tmp_path / linearity.ROWS).read_text().splitlines()
    assert [json.loads(line) for line in kept] == rows


def test_rounds_cut_short_go_on_where_they_stopped(tmp_path: Path) -> None:
    first = Recorder()
    rows = linearity.run_rounds(tmp_path, ["c4"], 1, lambda s, size: SIZES[size], first, lambda m: None)
    path = tmp_path / linearity.ROWS
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:20])  # killed while writing the third row
    again = Recorder()
    assert linearity.run_rounds(tmp_path, ["c4"], 1, lambda s, size: SIZES[size], again, lambda m: None) == rows
    assert again.calls == [("c4", "one", -1), ("c4", "quarter", 1), ("c4", "one", 0), ("c4", "two", 0)]
    done = Recorder()
    linearity.run_rounds(tmp_path, ["c4"], 1, lambda s, size: SIZES[size], done, lambda m: None)
    assert done.calls == []  # all measured: not even the warm-up


def test_rows_of_other_sizes_are_dropped_not_mixed_in(tmp_path: Path) -> None:
    linearity.run_rounds(tmp_path, ["c4", "books"], 1, lambda s, size: SIZES[size], Recorder(), lambda m: None)
    bigger = Recorder()
    rows = linearity.run_rounds(tmp_path, ["c4"], 1, lambda s, size: 2 * SIZES[size], bigger, lambda m: None)
    assert len(bigger.calls) == 6  # warm-up and the five runs: the rows measured at other sizes do not count
    assert [json.loads(line) for line in (tmp_path / linearity.ROWS).read_text().splitlines()] == rows


def test_check_runs_the_stages_in_the_order_they_were_measured() -> None:
    """The doc's JSON sorts its keys; the run's stage list keeps the order the stages ran in."""
    recorded = {"sizes": {"quarter": {"arxiv": 1, "books": 2, "commoncrawl": 3}},
                "stages": [{"stage": "commoncrawl", "size": "quarter"}, {"stage": "books", "size": "quarter"},
                           {"stage": "arxiv", "size": "quarter"}, {"stage": "commoncrawl", "size": "full"}]}
    assert list(cost._measuring_order(recorded).items()) == [("commoncrawl", 3), ("books", 2), ("arxiv", 1)]


@pytest.mark.prefect
@pytest.mark.timeout(900)
def test_linearity_mode_runs_the_real_flow_at_three_sizes(tmp_path: Path) -> None:
    command = [sys.executable, str(ROOT / "benchmarks" / "corpus_cost.py"), "--quick", "--linearity", "--rounds", "1",
               "--sources", "c4", "--workers", "1", "--work", str(tmp_path / "work")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=840, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "work" / linearity.ROWS).read_text().splitlines()]
    assert [(r["stage"], r["size"], r["round"]) for r in rows] == [("c4", "quarter", 0), ("c4", "full", 0),
                                                                    ("c4", "quarter", 1), ("c4", "one", 0),
                                                                    ("c4", "two", 0)]
    sizes = [r["input_bytes"] for r in rows]
    assert sizes[3] < sizes[4] < sizes[0] == sizes[2] < sizes[1]
    assert sizes[4] == pytest.approx(2 * sizes[3], rel=0.1)
    two = sorted((tmp_path / "work" / "inputs" / "two" / "c4").glob("*.json.gz"))
    assert len(two) == 2 * len(list((tmp_path / "work" / "inputs" / "one" / "c4").glob("*.json.gz")))
    assert all(r["calibration_ms"] > 0 for r in rows)  # the speed probed while each ran
    assert all(r["cpu_s"] > 0 and r["output_bytes"] > 0 and r["docs_out"] > 0 for r in rows), rows
    assert "| c4 | 1 |" in done.stdout and "linear c4 (1 interleaved rounds)" in done.stdout
    assert not (tmp_path / "work" / "out-linearity").exists()  # each run's root is removed after it


def test_check_puts_both_figures_at_one_machine_speed() -> None:
    """The same code on a machine running 20% slower: 1.20x the CPU, and 1.20x the calibration."""
    recorded = {"stage": "c4", "cpu_per_in_gb": 400.0, "calibration_ms": 10.0}
    slower = cost.Stage("c4", "quarter", GB, cpu_s=480.0, calibration_ms=12.0)
    ok, line = cost.compared(slower, recorded)
    assert ok and "1.20x; the machine 1.20x as slow as then" in line and "1.00x at one speed ok" in line
    regressed = cost.Stage("c4", "quarter", GB, cpu_s=480.0, calibration_ms=10.0)  # same machine, 20% dearer code
    ok, line = cost.compared(regressed, recorded)
    assert not ok and "1.20x at one speed MORE THAN 15% OFF" in line
    uncalibrated = {"stage": "c4", "cpu_per_in_gb": 400.0}  # a doc written before calibration: raw figures compared
    ok, line = cost.compared(slower, uncalibrated)
    assert not ok and "no speed probe recorded then" in line


def test_calibration_is_a_fixed_workload() -> None:
    calibration: Any = load_benchmark("calibration")
    assert calibration.workload() == calibration.workload() > 300_000  # the same words every pass
    assert calibration._records()[:10] == calibration._records()[:10]
    assert 0 < calibration.cpu_seconds(repeats=1, passes=1) < 60
    assert 0 < calibration.probe() < 1000


def test_a_stage_carries_the_speed_probed_while_it_ran_and_not_the_probes_cpu(tmp_path: Path) -> None:
    stage = cost.Stage("c4", "quarter", GB)
    with cost.measured(stage, [tmp_path]):
        deadline = time.monotonic() + 2.5  # two probes at least (one at the start, one 2 s in)
        while time.monotonic() < deadline:
            time.sleep(0.05)
    assert stage.calibration_ms > 0
    assert stage.cpu_s < 1.0  # asleep: the probes' own CPU is taken out


def test_a_resumed_run_is_dated_from_its_first_day_to_today(tmp_path: Path) -> None:
    today = time.strftime("%Y-%m-%d")
    assert cost.measured_dates(tmp_path) == today  # nothing planned yet
    (tmp_path / "sizes.json").write_text(json.dumps({"date": "2026-11-29"}))
    assert cost.measured_dates(tmp_path) == f"2026-11-29 to {today}"
    (tmp_path / "sizes.json").write_text(json.dumps({"date": today}))
    assert cost.measured_dates(tmp_path) == today


def test_check_compares_medians_of_its_passes_with_the_docs_median_run() -> None:
    """The doc's 1/4 figure for a source is the median of its single-pass run and its interleaved 1/4 runs (on the
    same input); the check's, the median of its passes. One fast or slow run moves neither."""
    quarter = {"stage": "c4", "size": "quarter", "input_bytes": GB, "cpu_s": 520.0, "calibration_ms": 13.0}
    rounds = [{"stage": "c4", "size": "quarter", "round": n, "input_bytes": GB, "cpu_s": cpu, "calibration_ms": probe}
              for n, (cpu, probe) in enumerate([(400.0, 10.0), (410.0, 10.2)])]
    other_size = {"stage": "c4", "size": "quarter", "round": 9, "input_bytes": 2 * GB, "cpu_s": 9999.0}
    full = {"stage": "c4", "size": "full", "input_bytes": 4 * GB, "cpu_s": 1600.0, "calibration_ms": 10.0}
    found = projection.recorded_quarter({"stages": [quarter, full], "linearity": [*rounds, other_size]})
    assert found == {"c4": {"stage": "c4", "runs": 3, "cpu_per_in_gb": 410.0, "calibration_ms": 10.2,
                            "probes": [13.0, 10.0, 10.2], "lowest": 400.0, "highest": 520.0}}
    passes = [cost.Stage("c4", "quarter", GB, cpu_s=cpu, calibration_ms=probe)
              for cpu, probe in [(415.0, 10.1), (700.0, 10.3), (405.0, 10.0)]]  # one pass in a slow spell
    now = cost.median_stage(passes)
    assert (now.cpu_s, now.calibration_ms) == (415.0, 10.1)
    ok, line = cost.compared(now, found["c4"])
    assert ok and "1.01x; the machine 0.99x as slow as then" in line
    unprobed = cost.median_stage([*passes, cost.Stage("c4", "quarter", GB, cpu_s=1.0)])
    assert unprobed.calibration_ms == 0.0  # a pass without a probe: compared raw, not at a made-up speed


def test_check_passes_reverse_the_sources_every_other_time() -> None:
    sizes = {"commoncrawl": 3, "c4": 2, "arxiv": 1}
    assert list(cost.pass_order(sizes, 0)) == ["commoncrawl", "c4", "arxiv"]
    assert list(cost.pass_order(sizes, 1)) == ["arxiv", "c4", "commoncrawl"]
    assert cost.pass_order(sizes, 2) == sizes


def test_check_takes_one_machine_speed_for_the_whole_check() -> None:
    """The median probe of every run behind the doc's figures, and of every stage the check ran: a short stage's
    own few probes do not decide how fast the machine was."""
    reference = {"c4": {"probes": [10.0, 10.4, 10.2]}, "dedup": {"probes": [12.0]}}
    measured = [cost.Stage("c4", "quarter", GB, calibration_ms=p) for p in (12.0, 12.4, 7.0)]
    assert cost.machine_speeds(reference, measured) == (10.3, 12.0)
    assert cost.machine_speeds({"c4": {"probes": [10.0, 0.0]}}, measured) == (0.0, 12.0)  # a run without a probe


def test_arxiv_rounds_run_at_four_times_the_pass_sizes_from_their_own_folders() -> None:
    sizes = cost._rounds_sizes({"arxiv": 64_000_000, "c4": 250_000_000}, {"arxiv": 256_000_000, "c4": GB})
    assert sizes["quarter"] == {"arxiv": 256_000_000, "c4": 250_000_000}
    assert sizes["full"] == {"arxiv": 1_024_000_000, "c4": GB}
    assert sizes["one"]["arxiv"] == 3_000_000 and sizes["two"]["arxiv"] == 6_000_000  # the fixed cost: not scaled
    assert [cost.rounds_folder("arxiv", s) for s in ("quarter", "full", "one")] == ["quarter-x4", "full-x4", "one"]
    assert cost.rounds_folder("c4", "quarter") == "quarter"  # the pass's own input


def test_check_passes_are_kept_and_join_the_docs_quarter_figures(tmp_path: Path) -> None:
    """A stage the pass measured once (dedup) is compared, after a check and a render, with the median of the pass
    and the check's passes: one run in a fast spell no longer decides it."""
    for number, cpu in enumerate((76.0, 74.0)):
        cost.keep_check_pass(tmp_path, [cost.Stage("dedup", "quarter", GB, cpu_s=cpu, calibration_ms=14.0)], number)
    cost.keep_check_pass(tmp_path, [cost.Stage("dedup", "quarter", 2 * GB, cpu_s=1.0, calibration_ms=14.0)], 2)
    kept = cost.kept_check_runs(tmp_path, {"dedup": GB})
    assert [(r["cpu_s"], r["check_pass"]) for r in kept] == [(76.0, 0), (74.0, 1)]  # the other input's is left out
    single = {"stage": "dedup", "size": "quarter", "input_bytes": GB, "cpu_s": 58.0, "calibration_ms": 9.9}
    found = projection.recorded_quarter({"stages": [single], "check_runs": kept})["dedup"]
    assert found["runs"] == 3 and found["cpu_per_in_gb"] == 74.0 and found["calibration_ms"] == 14.0
    assert projection._check_passes({"check_runs": kept}) == 2
    assert (found["lowest"], found["highest"]) == (58.0, 76.0)
    section = projection.check_reference_section({"stages": [single], "check_runs": kept})
    assert "| dedup | 3 | 74 | 58 - 76 | 14.0 |" in section
    assert "2 `--check` pass(es)" in section[2]
    assert projection.check_reference_section({"stages": []}) == []  # nothing at 1/4: no section
