"""The Wikipedia flow through Prefect: artifacts, manifest, URLs, and a real kill-and-resume."""

from __future__ import annotations

import functools
import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.manifest import Manifest
from flows.wikipedia import WikipediaConfig, parse_args, run
from kinda.cli import main as kinda_main
from sources.samples.wikipedia import write_sample_dumps

pytestmark = pytest.mark.prefect
REPO = Path(__file__).resolve().parents[2]


def _tree(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted((out / "docs").rglob("*.parquet"))}


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_sample_dumps(tmp_path_factory.mktemp("dumps"), pages=120, seed=7)


@pytest.fixture(scope="module")
def served(dumps: list[Path]):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(dumps[0].parent))
    handler.log_message = lambda *a: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_flow_publishes_artifacts_and_manifest(prefect_api_url: str, dumps: list[Path], served: str,
                                               tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from prefect.client.orchestration import get_client

    out = tmp_path / "out"
    url = f"{served}/{dumps[1].name}"  # the German dump over HTTP, through the download cache
    config = parse_args(["--dump", str(dumps[0]), "--dump", url, "--out", str(out), "--workers", "2"])
    summary = run(config)
    assert summary.kept > 0 and not summary.failed
    assert [p.name for p in (out / "cache").rglob("*.bz2")] == [dumps[1].name]
    manifest = Manifest.for_output(out)
    _, rows = manifest.query("SELECT language, sum(docs) FROM shards GROUP BY 1 ORDER BY 1")
    assert [r[0] for r in rows] == ["de", "en"] and sum(r[1] for r in rows) == summary.kept
    _, rows = manifest.query("SELECT status FROM runs")
    assert rows == [("completed",)]
    _, rows = manifest.query("SELECT location FROM inputs ORDER BY location")
    assert url in [r[0] for r in rows]
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(summary.run_id)
        artifacts = client.read_artifacts(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id])))
    assert flow_run.state is not None and flow_run.state.is_completed()
    table = next(a for a in artifacts if a.key == "source-counts")
    assert "duplicate_exact" in str(table.data) and "redirect" in str(table.data)

    # the CLI over the same output
    assert kinda_main(["--out", str(out), "manifest", "summary"]) == 0
    assert kinda_main(["--out", str(out), "manifest", "sql", "SELECT language, sum(docs) FROM shards GROUP BY 1"]) == 0
    assert kinda_main(["--out", str(out), "manifest", "verify"]) == 0
    printed = capsys.readouterr().out
    assert "Drops by reason" in printed and "shards ok" in printed
    next((out / "docs").rglob("*.parquet")).write_bytes(b"corrupt")
    assert kinda_main(["--out", str(out), "manifest", "verify"]) == 1


def test_killed_run_resumes_byte_identical(prefect_api_url: str, dumps: list[Path], tmp_path: Path) -> None:
    many = write_sample_dumps(tmp_path / "more", pages=400, seed=8)
    reference_out, out = tmp_path / "reference", tmp_path / "killed"
    args = [f"--dump={d}" for d in many]
    run(parse_args([*args, "--out", str(reference_out), "--runner", "sequential"]))

    env = {**os.environ, "PREFECT_API_URL": prefect_api_url}
    proc = subprocess.Popen([sys.executable, "-m", "flows.wikipedia", *args, "--out", str(out), "--runner",
                             "sequential"], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and not list((out / "_state").rglob("*.stage.json")):
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert list((out / "_state").rglob("*.stage.json")), "the flow never staged an input"
    assert not list((out / "_state").rglob("*.done.json")), "killed too late to test a resume"

    summary = run(parse_args([*args, "--out", str(out), "--runner", "sequential"]))
    assert not summary.failed
    assert _tree(out) == _tree(reference_out)
    _, rows = Manifest.for_output(out).query("SELECT status FROM runs ORDER BY started_at")
    assert rows[-1] == ("completed",)

    # a third run finds everything finished and rewrites nothing
    mtimes = {p: p.stat().st_mtime_ns for p in (out / "docs").rglob("*.parquet")}
    run(parse_args([*args, "--out", str(out), "--runner", "sequential"]))
    assert {p: p.stat().st_mtime_ns for p in (out / "docs").rglob("*.parquet")} == mtimes


def test_cli_help_and_config_overrides(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "flows.wikipedia", "--help"], cwd=REPO, capture_output=True,
                            text=True, check=True)
    assert "--dump" in result.stdout and "--set" in result.stdout
    config = parse_args(["--dump", "x.xml.bz2", "--set", "min_chars=50", "--set", "shards.max_docs=10",
                         "--out", str(tmp_path)])
    assert isinstance(config, WikipediaConfig) and config.min_chars == 50 and config.shards.max_docs == 10
    assert len(config.languages) == 20 and "uk" in config.languages
    assert config.config_hash() == parse_args(["--dump", "other.xml.bz2", "--set", "min_chars=50", "--set",
                                               "shards.max_docs=10"]).config_hash()
    assert config.config_hash() != parse_args(["--dump", "x.xml.bz2"]).config_hash()
    dated = parse_args(["--date", "20220701", "--languages", "de,fr"])
    assert dated.inputs() == [
        "https://dumps.wikimedia.org/dewiki/20220701/dewiki-20220701-pages-articles.xml.bz2",
        "https://dumps.wikimedia.org/frwiki/20220701/frwiki-20220701-pages-articles.xml.bz2",
    ]
    assert dated.checksum_lists()[0].endswith("dewiki-20220701-sha1sums.txt")
