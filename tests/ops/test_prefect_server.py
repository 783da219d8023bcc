"""A real ``prefect server start`` (SQLite) on 127.0.0.1: a flow run and its artifacts over REST, then
``prefect work-pool create`` / ``prefect --no-prompt deploy --all`` / ``prefect worker start`` /
``prefect deployment run``, seen to complete."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sources.wikipedia_sample import write_sample_dumps

pytestmark = pytest.mark.prefect
REPO = Path(__file__).resolve().parents[2]
PREFECT = [sys.executable, "-m", "prefect"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def api(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """GET (no body) or POST JSON to the server's REST API."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}{path}", data=data, headers={"Content-Type": "application/json"},
                                     method="GET" if body is None else "POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process group we started: SIGTERM, then SIGKILL."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def server_env(tmp: Path, url: str | None = None) -> dict[str, str]:
    env = {**os.environ, "PREFECT_HOME": str(tmp / "prefect-home"), "DO_NOT_TRACK": "1",
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT": "false",
           "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{tmp / 'prefect.db'}"}
    env.pop("PREFECT_API_URL", None)
    if url:
        env["PREFECT_API_URL"] = url
    return env


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """``prefect server start`` on a free port; yields the API URL and the environment clients need."""
    tmp = tmp_path_factory.mktemp("prefect-server")
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen([*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                            env=server_env(tmp), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 90
        while True:
            try:
                if api(url, "/health") is True:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"server did not start: {(tmp / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url, server_env(tmp, url)
    finally:
        stop(proc)
        log.close()


def flow_runs(url: str, flow_name: str) -> list[dict[str, Any]]:
    return api(url, "/flow_runs/filter", {"flows": {"name": {"any_": [flow_name]}}, "sort": "START_TIME_DESC"})


def test_flow_run_and_artifacts_over_rest(server: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, env = server
    out = tmp_path / "data"
    result = subprocess.run([sys.executable, "-m", "flows.llama", "--sample", "--sample-pages", "30", "--out", str(out),
                             "--runner", "thread", "--workers", "2"], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Starting temporary server" not in result.stdout + result.stderr  # it used ours
    parents = flow_runs(url, "llama")
    assert len(parents) == 1 and parents[0]["state_type"] == "COMPLETED"
    children = api(url, "/flow_runs/filter", {"flow_runs": {"parent_flow_run_id": {"any_": [parents[0]["id"]]}}})
    assert len(children) == 4 and {c["state_type"] for c in children} == {"COMPLETED"}
    artifacts = api(url, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [parents[0]["id"]]}}})
    by_key = {a["key"]: a for a in artifacts if a["key"]}
    assert {"llama-stages", "llama-sources", "llama-totals", "llama-output"} <= set(by_key)
    stages = json.loads(by_key["llama-stages"]["data"]) if isinstance(by_key["llama-stages"]["data"], str) \
        else by_key["llama-stages"]["data"]
    assert [row["stage"] for row in stages] == ["wikipedia", "dedup", "labels", "tokenize"]
    assert any(a["type"] == "progress" for a in artifacts)
    child_artifacts = api(url, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [c["id"] for c in children]}}})
    assert {"source-counts", "source-output", "dedup-shards", "label-classes", "tokenize-counts"} <= {
        a["key"] for a in child_artifacts}


def test_deploy_all_then_a_worker_runs_a_deployment(server: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, env = server
    declared = yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]
    pool = declared[0]["work_pool"]["name"]
    for command in (["work-pool", "create", pool, "--type", "process", "--overwrite"], ["--no-prompt", "deploy", "--all"]):
        done = subprocess.run([*PREFECT, *command], cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    deployments = api(url, "/deployments/filter", {})
    assert sorted(d["name"] for d in deployments) == sorted(d["name"] for d in declared)
    monthly = next(d for d in deployments if d["name"] == "commoncrawl-monthly")
    assert monthly["schedules"][0]["schedule"]["cron"] == "0 3 8 * *"

    dumps = write_sample_dumps(tmp_path / "dumps", pages=20, seed=3)
    config = {"dumps": [str(d) for d in dumps], "out": str(tmp_path / "out"), "runner": "thread", "workers": 1}
    worker_log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen([*PREFECT, "worker", "start", "--pool", pool, "--limit", "1"], cwd=REPO, env=env,
                              stdout=worker_log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        started = subprocess.run([*PREFECT, "deployment", "run", "wikipedia/wikipedia", "--params",
                                  json.dumps({"config": config})], cwd=REPO, env=env, capture_output=True, text=True,
                                 timeout=60)
        assert started.returncode == 0, started.stdout + started.stderr
        deadline, state = time.time() + 180, None
        while time.time() < deadline:
            runs = flow_runs(url, "wikipedia")
            state = runs[0]["state_type"] if runs else None
            if state in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
                break
            time.sleep(1)
        assert state == "COMPLETED", (tmp_path / "worker.log").read_text()[-4000:]
    finally:
        stop(worker)
        worker_log.close()
    assert list((tmp_path / "out" / "docs" / "wikipedia").rglob("*.parquet"))


def test_source_deployments_match_their_configs() -> None:
    """A source deployment's parameters give the config hash of configs/<source>.yaml plus its inputs."""
    from core.config import CONFIG_DIR
    from flows.llama import AFTER_FLOWS, SOURCE_FLOWS

    declared = {d["name"]: d for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]}
    checked = 0
    for name, spec in {**SOURCE_FLOWS, "dedup": AFTER_FLOWS["dedup"], "label": AFTER_FLOWS["labels"]}.items():
        params = declared[name]["parameters"]["config"]
        module, config_cls = spec.load()
        assert declared[name]["entrypoint"].startswith(module.__name__.replace(".", "/") + ".py:")
        from_params = config_cls.model_validate(params)
        from_yaml = config_cls.from_yaml(CONFIG_DIR / spec.default_yaml, params)
        assert from_params.config_hash() == from_yaml.config_hash(), name
        checked += 1
    assert checked == len(SOURCE_FLOWS) + 2
