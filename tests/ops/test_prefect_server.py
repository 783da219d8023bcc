"""A real ``prefect server start`` (SQLite) on 127.0.0.1: ``prefect work-pool create`` / ``prefect
--no-prompt deploy --all`` / ``prefect worker start`` / ``prefect deployment run`` of the sample
deployment on the default process-pool runner, seen to complete with a child flow run per stage and
their artifacts over REST (as the UI reads them), and of g1 with its defaults, seen to fail with one
line. About 2 minutes (real server, worker and flow-run processes). One sample run serves both the
deployment and the REST checks: a second run (with the thread runner, tested in test_llama.py) cost
the suite ~45 s."""

from __future__ import annotations

import json
import os
import re
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

#: pytest-timeout's 300 s default would cut the waits below (600 s for a deployment run) short on a busy
#: machine (make test runs the suite on two workers; the deploy test timed out at 300 s at load ~30).
pytestmark = [pytest.mark.prefect, pytest.mark.timeout(1500)]
REPO = Path(__file__).resolve().parents[2]
PREFECT = [sys.executable, "-m", "prefect"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: One REST call's limit. A call waits behind the server's SQLite writes while a worker's run records
#: its task runs and events on the same server: a second `make test` in one clone saw a POST take over
#: 30 s at load ~3, so the limit is the work's, not a quiet machine's round trip.
API_CALL_S = 180


def api(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """GET (no body) or POST JSON to the server's REST API."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}{path}", data=data, headers={"Content-Type": "application/json"},
                                     method="GET" if body is None else "POST")
    with urllib.request.urlopen(request, timeout=API_CALL_S) as response:
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


def sample_sources() -> list[str]:
    """The LLaMA sources the offline sample runs, in the parent flow's stage order."""
    from flows.registry import SOURCES

    return [s.name for s in SOURCES.specs("llama") if s.name == "wikipedia" or s.sample is not None]


def deployment_run(url: str, env: dict[str, str], name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """``prefect deployment run NAME`` (the UI's Run button), then wait for a final state over REST."""
    command = [*PREFECT, "deployment", "run", name] + (["--params", json.dumps(params)] if params else [])
    started = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stdout + started.stderr
    run_id = re.search(r"UUID: ([0-9a-f-]{36})", started.stdout)
    assert run_id, started.stdout
    deadline = time.time() + 600  # the sample runs every LLaMA source and the Pile stage on a loaded machine
    while time.time() < deadline:
        flow_run = api(url, f"/flow_runs/{run_id[1]}")
        if flow_run["state_type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            return flow_run
        time.sleep(1)
    raise AssertionError(f"{name}: no final state in 600 s")


def test_deploy_all_then_a_worker_runs_the_sample_and_refuses_g1_defaults(
        server: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    """The user's path: deploy everything, start a process worker, press Run. The sample deployment
    completes with the default (process pool) runner; g1's defaults, without raw/ inputs or a
    tokenizer, fail with one line that says what is missing, not a traceback."""
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
    sample = next(d for d in declared if d["name"] == "sample")["parameters"]["config"]
    assert sample["sample"] is True and "runner" not in sample  # the default runner: a process pool

    worker_log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen([*PREFECT, "worker", "start", "--pool", pool, "--limit", "1"], cwd=REPO, env=env,
                              stdout=worker_log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        refused = deployment_run(url, env, "llama/g1")  # default parameters: out: data, no raw/, no tokenizer.json
        completed = deployment_run(url, env, "llama/sample",
                                   {"config": {**sample, "out": str(tmp_path / "out"), "sample_pages": 10}})
    finally:
        stop(worker)
        worker_log.close()
    log = (tmp_path / "worker.log").read_text()[-4000:]
    assert refused["state_type"] == "FAILED", log
    message = refused["state"]["message"]
    assert "G1 cannot start: tokenizer 'tokenizer.json' not found" in message and "sample: true" in message
    assert "\n" not in message and "Traceback" not in message and "BrokenProcessPool" not in message

    assert completed["state_type"] == "COMPLETED", log
    artifacts = api(url, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [completed["id"]]}}})
    by_key = {a["key"]: a for a in artifacts if a["key"]}
    assert {"llama-stages", "llama-sources", "llama-totals", "llama-output"} <= set(by_key)
    data = by_key["llama-stages"]["data"]
    stages = json.loads(data) if isinstance(data, str) else data
    assert [(row["stage"], row["status"]) for row in stages] == [
        *[(name, "completed") for name in sample_sources()],
        ("pile_index", "completed"), ("dedup", "completed"), ("decontaminate", "completed"),
        ("labels", "completed"), ("tokenize", "completed")]
    assert (tmp_path / "out" / "tensors" / "g1" / "metadata.json").is_file()
    # over REST, as the UI reads it: a child flow run per stage, each with its artifacts
    expected = [*sample_sources(), "pile_index", "dedup", "decontaminate", "labels", "tokenize"]
    children = api(url, "/flow_runs/filter", {"flow_runs": {"parent_flow_run_id": {"any_": [completed["id"]]}}})
    assert len(children) == len(expected) and {c["state_type"] for c in children} == {"COMPLETED"}
    assert any(a["type"] == "progress" for a in artifacts)
    child_artifacts = api(url, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [c["id"] for c in children]}}})
    assert {"source-counts", "source-output", "dedup-shards", "label-classes", "tokenize-counts"} <= {
        a["key"] for a in child_artifacts}


def test_source_deployments_match_their_configs() -> None:
    """A source deployment's parameters give the config hash of configs/<source>.yaml plus its inputs."""
    from core.config import CONFIG_DIR
    from flows.llama import after_flows
    from flows.registry import SOURCES

    declared = {d["name"]: d for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]}
    after = after_flows()
    checked = 0
    # deployment -> (config class, default YAML, the module of the flow the entrypoint names)
    # a source without a flow module of its own is deployed with the generic flow (flows/source.py)
    stages = {**{s.deployment: (s.config, s.default_yaml, s.config.__module__ if s.run else "flows.source")
                 for s in SOURCES.specs() if s.deployment},
              "dedup": (after["dedup"].config, after["dedup"].default_yaml, "flows.dedup"),
              "label": (after["labels"].config, after["labels"].default_yaml, "flows.label")}
    for name, (config_cls, default_yaml, module) in stages.items():
        params = declared[name]["parameters"]["config"]  # (the generic flow's other parameter: name)
        assert declared[name]["entrypoint"].startswith(module.replace(".", "/") + ".py:"), name
        from_params = config_cls.model_validate(params)
        from_yaml = config_cls.from_yaml(CONFIG_DIR / default_yaml, params)
        assert from_params.config_hash() == from_yaml.config_hash(), name
        checked += 1
    assert checked == len([s for s in SOURCES.specs() if s.deployment]) + 2
