"""README benchmark figures and benchmarks/check_readme.py stay in step.

The check script re-runs every README row (minutes to hours, so not in the suite); these tests
keep its table honest: every row of the README's benchmark table is either checked or listed as
not re-run with a reason, every checked figure is stated in its row as the script expects, and
every checked metric is one its benchmark prints.
"""

from __future__ import annotations

from pathlib import Path

from tests.benchmark_modules import load_benchmark

REPO = Path(__file__).resolve().parent.parent


def _check_readme():
    return load_benchmark("check_readme")


def test_every_readme_row_is_checked_or_explained() -> None:
    check = _check_readme()
    rows = check.readme_rows(REPO / "README.md")
    covered = {c.row for c in check.CHECKS} | set(check.NOT_RERUN)
    assert rows and set(rows) <= covered, f"README rows neither checked nor explained: {set(rows) - covered}"


def test_every_checked_figure_is_stated_in_its_row() -> None:
    check = _check_readme()
    rows = check.readme_rows(REPO / "README.md")
    missing = [(c.row, c.readme) for c in check.CHECKS if c.readme not in rows.get(c.row, "")]
    assert not missing, f"README rows do not state these figures: {missing}"


def test_every_checked_metric_is_printed_by_its_benchmark() -> None:
    """The metric names are built from the benchmarks' own labels: the label must be in the source."""
    check = _check_readme()
    for c in check.CHECKS:
        source = (REPO / "benchmarks" / c.run.script).read_text(encoding="utf-8")
        assert "RESULT" in source, c.run.script
        ours = c.metric.split(" vs ")[0].split(" ")[-1]
        assert ours in source, (c.run.script, c.metric)


def test_results_are_parsed_per_metric_and_pooled() -> None:
    check = _check_readme()
    output = ("table line\nRESULT {\"metric\": \"ours vs peer\", \"values\": [1.5, 2.0]}\n"
              "RESULT {\"metric\": \"ours vs peer\", \"input\": \"b\", \"values\": [3]}\nRESULT not json-ish\n")
    assert check.results(output) == {"ours vs peer": [1.5, 2.0, 3.0], "ours vs peer [b]": [3.0]}
    claim = check.Check("x.py", "ours vs peer", 2.0, "2.0x", check.RUNS["latex"])
    assert check.verdict(claim, [1.9, 2.0, 2.2], 0.15)[0] == "ok"
    assert check.verdict(claim, [1.5, 1.6, 1.7], 0.15)[0] == "FIX"


def test_rows_not_measured_are_reported(capsys) -> None:
    """The output accounts for the whole table: rows never re-run and rows left out by --rows."""
    check = _check_readme()
    rows = check.readme_rows(REPO / "README.md")
    check.report_unchecked(rows, {"latex.py"})
    lines = capsys.readouterr().out.splitlines()
    for row in check.NOT_RERUN:
        assert any(line.startswith(row) and "not re-run" in line for line in lines), row
    assert any("not selected" in line and "wikipedia.py" in line for line in lines)
    assert not any(line.startswith("latex.py") for line in lines)


def test_replay_reads_each_invocation_of_a_log(tmp_path: Path) -> None:
    """--replay judges the values an earlier run logged: each `$ command` line opens one invocation."""
    check = _check_readme()
    log = tmp_path / "check.log"
    result = "RESULT {\"metric\": \"ours vs pylatexenc\", \"values\": [%s]}\n"
    log.write_text(f"$ python /r/benchmarks/latex.py --repeat 2  (rc 0, 9 s)\n{result % '30, 32'}\n"
                   f"$ python /r/benchmarks/latex.py --repeat 2  (rc 0, 9 s)\nnoise\n{result % '34'}\n", encoding="utf-8")
    measured, invocations = check.replayed([log])
    assert measured == {check.RUNS["latex"]: {"ours vs pylatexenc": [30.0, 32.0, 34.0]}}
    assert invocations == {check.RUNS["latex"]: 2}
