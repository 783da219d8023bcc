"""benchmarks/corpus_cost.py (issue 33): the projection's arithmetic, the goals' verdicts, and ``--quick`` run.

The pure parts (projection, linearity, goals, the figures docs/cost.md carries for ``--check``)
are checked on made-up measurements; the script itself runs once, ``--quick --full-only`` on C4
alone (the source flow, Pile index, dedup, labels and tokens into a fresh root under one embedded
Prefect API): every stage must be measured, with CPU, memory and bytes that are not zero.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.benchmark_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # benchmarks.corpus_projection; appended, it shadows nothing
cost = load_benchmark("corpus_cost")
projection: Any = importlib.import_module("benchmarks.corpus_projection")
GB = 1_000_000_000


def _stage(name: str, size: str, input_bytes: float, cpu: float, **extra: Any) -> dict[str, Any]:
    stage = {"stage": name, "size": size, "input_bytes": input_bytes, "output_bytes": input_bytes / 2, "cpu_s": cpu,
             "wall_s": cpu, "peak_rss": 300e6, "peak_rss_role": "worker", "server_rss": 200e6, "scratch_bytes": 0,
             "docs_out": 1, "rss_by_role": {"worker": 300e6, "flow": 400e6}} | extra
    return stage | {"cpu_per_in_gb": cpu / (input_bytes / GB), "cpu_per_out_gb": cpu / (stage["output_bytes"] / GB)}


def _results(stages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"sizes": {"quarter": {"c4": GB / 4}, "full": {"c4": GB}}, "pile_bytes": {"quarter": 1, "full": 4},
            "workers": 2, "efficiency": {"speedup": 1.8, "efficiency": 0.9, "load": 2.0}, "date": "2026-11-29",
            "load": [2.0, 2.0, 2.0], "cpus": 2, "quick": False, "stages": stages}


def test_projection_uses_the_full_size_cpu_per_gb_and_the_published_input_size() -> None:
    # 1/4 GB in 300 s, 1 GB in 1,050 s: 50 s of fixed cost, 1,000 s per GB at the margin
    results = _results([_stage("c4", "quarter", GB / 4, 300.0), _stage("c4", "full", GB, 1050.0)])
    assert projection.marginal(results)["c4"] == pytest.approx(1000.0)
    _, hours = projection.projection(results)
    assert hours == {"c4": pytest.approx(1050.0 * 305 / 3600)}  # allenai/c4 en: 305 GB of json.gz
    text = projection.render(results)
    assert "| c4 | 305.0 GB |" in text and "not measured" in text  # the sources that did not run say so
    assert "| c4 | 1200 | 1050 | 0.88 | no | 1000 | 50.0 |" in projection.linearity_table(results)


def test_doc_carries_the_figures_check_compares(tmp_path: Path) -> None:
    results = _results([_stage("c4", "quarter", GB / 4, 300.0), _stage("c4", "full", GB, 1050.0)])
    doc = tmp_path / "cost.md"
    doc.write_text(projection.render(results), encoding="utf-8")
    assert cost._load_results(doc) == json.loads(json.dumps(results))


def test_a_doc_rendered_from_the_quarter_pass_alone_says_so() -> None:
    """``--render`` after a run cut short between its passes: the sizes named are the 1/4 size's."""
    both = projection.render(_results([_stage("c4", "quarter", GB / 4, 300.0), _stage("c4", "full", GB, 1050.0)]))
    assert "c4 1.0 GB at full, a quarter of each at 1/4." in both and "not measured yet" not in both
    cut = projection.render(_results([_stage("c4", "quarter", GB / 4, 300.0)]))
    assert "Sizes run (bytes of input as stored): c4 250.0 MB (the 1/4 size; the full size, c4 1.0 GB, is not " \
           "measured yet" in cut
    assert "| c4 | 305.0 GB |" in cut and "1200 CPU-s per input GB" in cut  # the 1/4 figure projects


#: A forkserver pool in its own interpreter (the forkserver is a process-wide singleton: started here, its
#: made-up preload list would serve every later pool of the test process).
POOL_CHILD = """
import multiprocessing, os, sys
context = multiprocessing.get_context("forkserver")
context.set_forkserver_preload(["prefect_task_engine_preloaded_by_the_server"])  # absent: ignored
with context.Pool(1) as pool:
    print(pool.apply(os.getpid), flush=True)
    sys.stdin.read()
"""


def test_processes_are_told_apart_by_what_they_are() -> None:
    """The API server by its name, the fork server and its pool workers by their command line: the workers'
    command line names Prefect's modules and "forkserver", and a first version called them the API server."""
    import psutil

    server = subprocess.Popen([sys.executable, "-c", "open('/proc/self/comm', 'w').write('prefect-api'); "
                               "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    pool = subprocess.Popen([sys.executable, "-c", POOL_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert pool.stdout is not None
        worker = psutil.Process(int(pool.stdout.readline()))
        assert "prefect" in " ".join(worker.cmdline()) and "server" in " ".join(worker.cmdline())
        deadline = time.monotonic() + 60
        while psutil.Process(server.pid).name() != "prefect-api" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cost._role(worker) == "worker"
        assert cost._role(worker.parent()) == "forkserver"
        assert cost._role(psutil.Process(server.pid)) == "prefect-server"
        assert cost._role(psutil.Process()) == "flow"
    finally:
        server.communicate(b"", timeout=60)
        pool.communicate("", timeout=60)


def test_rows_labelled_by_the_first_role_version_are_relabelled() -> None:
    old = _stage("c4", "full", GB, 300.0) | {"peak_rss": 210e6, "peak_rss_role": "worker", "server_rss": 1139e6,
                                              "rss_by_role": {"flow": 400e6, "worker": 210e6, "prefect-server": 1139e6}}
    new = cost.upgrade_row(old)
    assert new["rss_by_role"] == {"flow": 400e6, "worker": 1139e6, "server-or-helper": 210e6}
    assert (new["peak_rss"], new["peak_rss_role"], new["server_rss"]) == (1139e6, "worker", 210e6)
    assert cost.upgrade_row(new) == new  # a row of the current version stays as it is
    assert cost.Stage(**{k: v for k, v in new.items() if k in cost.Stage.__dataclass_fields__}).roles == 2


def test_goals_name_what_is_not_met() -> None:
    stages = [cost.Stage("c4", "quarter", GB // 4, cpu_s=250.0),
              cost.Stage("c4", "full", GB, cpu_s=1200.0, peak_rss=3 * 1024**3, peak_rss_role="worker",
                         output_bytes=100, scratch_bytes=500)]
    lines = cost.goals(stages)
    assert any("linear c4" in line and "1.20" in line and "NOT met" in line for line in lines)
    assert any("peak RSS" in line and "NOT met" in line for line in lines)
    assert any("scratch c4" in line and "NOT met" in line for line in lines)
    fine = [cost.Stage("c4", "quarter", GB // 4, cpu_s=250.0),
            cost.Stage("c4", "full", GB, cpu_s=1040.0, peak_rss=10**9, output_bytes=100, scratch_bytes=150)]
    assert not any("NOT met" in line for line in cost.goals(fine))
    # dedup writes attributes beside the corpus: its scratch is stated against its input, not its output
    dedup = cost.Stage("dedup", "full", 8 * GB, cpu_s=600.0, output_bytes=70_000_000, scratch_bytes=1_800_000_000)
    lines = cost.goals([*fine, dedup])
    assert "scratch dedup: 1800.0 MB, 0.23x its input (70.0 MB written)" in lines
    assert not any("NOT met" in line for line in lines)


def test_render_of_a_run_cut_short_keeps_the_measured_efficiency(tmp_path: Path) -> None:
    """sizes.json is written before the run; the 1-vs-2-worker figure it measured is in efficiency.json."""
    (tmp_path / "sizes.json").write_text(json.dumps(_results([]) | {"efficiency": None}))
    (tmp_path / "stages.jsonl").write_text(json.dumps(_stage("c4", "full", GB, 400.0)) + "\n")
    (tmp_path / "efficiency.json").write_text(json.dumps({"speedup": 1.7, "efficiency": 0.85, "load": 2.1}))
    doc = tmp_path / "cost.md"
    assert cost.render_kept(argparse.Namespace(work=tmp_path, doc=doc)) == 0  # main() would move TMPDIR
    assert "at 0.85 per-worker efficiency (measured here)" in doc.read_text()


def test_render_reports_the_load_when_the_measurements_ended_not_when_it_runs(tmp_path: Path) -> None:
    """The doc's "load average ... at the end" is the last measured stage's, recorded in its row; rows from
    before ``load_end`` was kept fall back to the load now."""
    rows = [_stage("c4", "quarter", GB // 4, 100.0, load_end=7.25), _stage("c4", "full", GB, 400.0, load_end=3.5)]
    assert cost.measured_load(rows) == [3.5, 3.5, 3.5]
    (tmp_path / "sizes.json").write_text(json.dumps(_results([])))
    (tmp_path / "stages.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    doc = tmp_path / "cost.md"
    assert cost.render_kept(argparse.Namespace(work=tmp_path, doc=doc)) == 0
    assert "load average 3.5 at the end" in doc.read_text()
    (tmp_path / "stages.jsonl").write_text(json.dumps(_stage("c4", "full", GB, 400.0)) + "\n")
    assert cost.render_kept(argparse.Namespace(work=tmp_path, doc=doc)) == 0
    assert "when this file was rendered)" in doc.read_text()  # rows from before load_end was kept


def test_a_measured_stage_records_the_load_it_ended_at(tmp_path: Path) -> None:
    stage = cost.Stage("c4", "quarter", GB)
    with cost.measured(stage, [tmp_path]):
        pass
    assert stage.load_end > 0 or os.getloadavg()[0] == 0
    assert cost._row(stage)["load_end"] == stage.load_end


@pytest.mark.prefect
@pytest.mark.timeout(900)  # ~1.5 min on a quiet 2-core machine; 5+ min at load 30 (Prefect's API alone took 100 s)
def test_quick_mode_measures_every_stage_and_resumes_after_a_kill(tmp_path: Path) -> None:
    """The run is killed (-9, its whole session) once its first stage is measured; ``--resume`` keeps
    that stage's figures, takes the output root back to where it left it, and measures the rest."""
    out, log = tmp_path / "results.json", tmp_path / "first.log"
    command = [sys.executable, str(ROOT / "benchmarks" / "corpus_cost.py"), "--quick", "--full-only", "--sources", "c4",
               "--no-efficiency", "--resume", "--work", str(tmp_path / "work"), "--json", str(out),
               "--doc", str(tmp_path / "x.md")]
    kept = tmp_path / "work" / "stages.jsonl"
    with open(log, "wb") as handle:
        first = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 840
    while first.poll() is None and time.monotonic() < deadline and not (kept.is_file() and kept.read_text().strip()):
        time.sleep(0.2)
    killed = first.poll() is None
    if killed:
        os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=60)
    assert killed or first.returncode == 0, log.read_text()[-3000:]
    before = [json.loads(line) for line in kept.read_text().splitlines()]
    assert before and before[0]["stage"] == "c4", log.read_text()[-3000:]

    done = subprocess.run(command, capture_output=True, text=True, timeout=840, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"resuming: {len(before)} stage(s) measured before" in done.stdout
    results = json.loads(out.read_text())
    stages = {s["stage"]: s for s in results["stages"]}
    assert list(stages) == ["c4", "pile_index", "dedup", "labels", "tokenize"]
    assert stages["c4"] == before[0]  # kept, not measured again
    for stage in stages.values():
        assert stage["cpu_s"] > 0 and stage["input_bytes"] > 0 and stage["peak_rss"] > 50e6, stage
    assert stages["c4"]["output_bytes"] > 0 and stages["tokenize"]["output_bytes"] > 0
    assert stages["c4"]["docs_out"] > 0
    assert not (tmp_path / "x.md").exists()  # --quick writes no projection
    assert "peak RSS" in done.stdout
    assert not list((tmp_path / "work").glob("out-*.before-stage*"))  # no snapshot left behind
    _check_against(results, tmp_path, command[:2])


def _check_against(results: dict[str, Any], tmp_path: Path, script: list[str]) -> None:
    """``--check`` under the measuring run's ``--work``: a stage line each and a verdict against the doc, and
    the run's own rows untouched (the check once appended its rows to them; ``--render`` then listed both)."""
    quarter = results | {"sizes": {"quarter": results["sizes"]["full"], "full": results["sizes"]["full"]},
                         "pile_bytes": {"quarter": results["pile_bytes"]["full"], "full": results["pile_bytes"]["full"]},
                         "stages": [s | {"size": "quarter"} for s in results["stages"]]}
    doc = tmp_path / "measured.md"
    doc.write_text(projection.render(quarter), encoding="utf-8")
    kept = tmp_path / "work" / "stages.jsonl"
    rows = kept.read_bytes()
    checked = subprocess.run([*script, "--check", "--check-rounds", "2", "--doc", str(doc), "--work",
                              str(tmp_path / "work")], capture_output=True, text=True, timeout=840, check=False)
    lines = [line for line in checked.stdout.splitlines() if "in docs/cost.md" in line]
    assert [line.split()[0] for line in lines] == ["c4", "pile_index", "dedup", "labels", "tokenize"], checked.stdout
    assert all(line.endswith("(median of 2 pass(es) now, of 1 run(s) then)") for line in lines), lines
    verdict = "every stage within 15% of docs/cost.md" in checked.stdout
    assert (checked.returncode, verdict) in ((0, True), (1, False)), checked.stdout[-2000:] + checked.stderr[-2000:]
    assert kept.read_bytes() == rows
    passes = [json.loads(line) for line in (tmp_path / "work" / "check.jsonl").read_text().splitlines()]
    assert [(r["check_pass"], r["stage"]) for r in passes] == [(n, s) for n in (0, 1) for s in
                                                              ("c4", "pile_index", "dedup", "labels", "tokenize")]


def test_a_restored_root_is_the_root_before_the_stage(tmp_path: Path) -> None:
    """A snapshot survives what a stage does to its root: files renamed over, new files, the manifest
    written in place; restoring it gives back the bytes from before the stage."""
    out = tmp_path / "out-full"
    (out / "docs" / "c4").mkdir(parents=True)
    (out / "docs" / "c4" / "a.parquet").write_bytes(b"shard a")
    (out / "manifest.duckdb").write_bytes(b"manifest before")
    cost.snapshot_root(out, "c4")
    replacement = out / "docs" / "c4" / "a.parquet.tmp"
    replacement.write_bytes(b"shard a, rewritten")
    replacement.rename(out / "docs" / "c4" / "a.parquet")  # the atomic write of a stage
    with open(out / "manifest.duckdb", "r+b") as handle:  # DuckDB writes in place
        handle.write(b"MANIFEST")
    (out / "docs" / "c4" / "b.parquet").write_bytes(b"a stage's new shard")
    after = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert cost.restore_root(out, {"commoncrawl"})
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == {
        "docs/c4/a.parquet": b"shard a", "manifest.duckdb": b"manifest before"}
    assert not list(tmp_path.glob("out-full.before-stage*"))
    assert not cost.restore_root(tmp_path / "out-quarter", set())  # nothing to resume there
    # cut after the stage was recorded but before its snapshot was dropped: the root stays as the stage left it
    cost.snapshot_root(out, "c4")
    for name, data in after.items():
        (out / name).write_bytes(data)
    assert cost.restore_root(out, {"commoncrawl", "c4"})
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == after
    assert not list(tmp_path.glob("out-full.before-stage*"))


def test_resume_ignores_stages_measured_with_other_sizes(tmp_path: Path) -> None:
    planned = _results([]) | {"quick": False}
    (tmp_path / "sizes.json").write_text(json.dumps(planned))
    row = _stage("c4", "full", GB, 100.0)
    (tmp_path / "stages.jsonl").write_text(json.dumps(row) + "\n" + '{"stage": "pile_')  # the last line cut
    assert list(cost.recorded_stages(tmp_path, planned)) == [("c4", "full")]
    assert cost.recorded_stages(tmp_path, planned)[("c4", "full")].cpu_s == 100.0
    assert cost.recorded_stages(tmp_path, planned | {"workers": 1}) == {}
    assert cost.recorded_stages(tmp_path, planned | {"sizes": {"full": {"c4": GB / 2}}}) == {}


def test_a_size_started_afresh_leaves_no_rows_of_its_own(tmp_path: Path) -> None:
    """A size whose root is gone is measured again from its first stage: its old rows go (they were listed
    beside the new ones), the other size's stay, and a row written after a line cut by a crash counts."""
    planned = _results([]) | {"quick": False}
    (tmp_path / "sizes.json").write_text(json.dumps(planned))
    rows = [_stage("c4", "quarter", GB / 4, 25.0), _stage("commoncrawl", "full", GB, 400.0)]
    cut = '{"stage": "c4", "si'
    text = json.dumps(rows[0]) + "\n" + cut + "\n" + json.dumps(rows[1]) + "\n"
    (tmp_path / "stages.jsonl").write_text(text)
    assert set(cost.recorded_stages(tmp_path, planned)) == {("c4", "quarter"), ("commoncrawl", "full")}
    cost._forget(tmp_path, "full")
    assert (tmp_path / "stages.jsonl").read_text() == json.dumps(rows[0]) + "\n"
    cost._forget(tmp_path, "full")  # nothing of it left: the file stays as it is
    assert set(cost.recorded_stages(tmp_path, planned)) == {("c4", "quarter")}


def test_an_input_folder_is_reused_only_while_every_file_is_intact(tmp_path: Path) -> None:
    """The stamp names each file with its size: a file gone (another run's clean-up) or an old bare stamp
    means the folder is written again, with the same bytes (the generators are seeded)."""
    directory = tmp_path / "inputs" / "full" / "books"
    files = cost.generate("books", directory, 300_000)[1]
    first = {name: Path(name).read_bytes() for name in files}
    assert json.loads((directory / ".done-300000").read_text()) == {name: len(data) for name, data in first.items()}
    stamp_time = (directory / ".done-300000").stat().st_mtime_ns
    assert cost.generate("books", directory, 300_000)[1] == files
    assert (directory / ".done-300000").stat().st_mtime_ns == stamp_time  # reused, not written again
    Path(files[0]).unlink()
    assert cost.generate("books", directory, 300_000)[1] == files
    assert {name: Path(name).read_bytes() for name in files} == first
    (directory / ".done-300000").write_text("")  # a stamp that vouches for nothing
    assert cost.generate("books", directory, 300_000)[1] == files
    assert json.loads((directory / ".done-300000").read_text()) == {name: len(data) for name, data in first.items()}


def test_two_runs_generating_one_folder_take_turns(tmp_path: Path) -> None:
    """Two runs into one --work: the second waits for the first's folder and reuses it, nothing half deleted."""
    directory = tmp_path / "inputs" / "quarter" / "books"
    found: list[list[str]] = []
    threads = [threading.Thread(target=lambda: found.append(cost.generate("books", directory, 300_000)[1]))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(found) == 2 and found[0] == found[1]
    assert all(Path(name).is_file() for name in found[0])
    assert cost._kept_files(directory, 300_000) == found[0]


def test_the_pile_reference_is_kept_and_checked_like_a_source_input(tmp_path: Path) -> None:
    c4_files = cost.generate("c4", tmp_path / "c4", 300_000)[1]
    shards = cost._pile_inputs(tmp_path / "pile", 500_000, c4_files)
    assert shards and all(shard.is_file() and shard.name.endswith(".jsonl.zst") for shard in shards)
    first = {shard: shard.read_bytes() for shard in shards}
    shards[0].unlink()  # another run's clean-up: the folder is written again, with the same bytes
    assert cost._pile_inputs(tmp_path / "pile", 500_000, c4_files) == shards
    assert {shard: shard.read_bytes() for shard in shards} == first
