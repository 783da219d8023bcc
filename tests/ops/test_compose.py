"""docker-compose.yml is valid for a compose client (no engine needed) and wires the stack together."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def compose_command() -> list[str]:
    """``docker-compose`` (Debian's v1 package) or the ``docker compose`` v2 plugin, else skip."""
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    pytest.skip("no compose client (Debian: apt-get install -y docker-compose)")


@pytest.fixture(scope="module")
def resolved() -> dict:
    """The file as the compose client reads it: anchors, merges and defaults applied."""
    done = subprocess.run([*compose_command(), "-f", str(REPO / "docker-compose.yml"), "config"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def test_stack_has_every_service(resolved: dict) -> None:
    services = resolved["services"]
    assert set(services) == {"postgres", "prefect-server", "worker", "dask-scheduler", "dask-worker-1", "dask-worker-2"}
    server = services["prefect-server"]
    assert "postgresql+asyncpg://" in server["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"]
    assert server["environment"]["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert set(resolved["volumes"]) == {"data", "pgdata"}


def test_worker_and_dask_processes_share_code_environment_and_data(resolved: dict) -> None:
    services = resolved["services"]
    ours = ["worker", "dask-scheduler", "dask-worker-1", "dask-worker-2"]
    assert {services[name]["image"] for name in ours} == {"kinda-llama:latest"}
    for name in ours:
        env = services[name]["environment"]
        assert env["PREFECT_API_URL"] == "http://prefect-server:4200/api" and env["DO_NOT_TRACK"] == "1"
    for name in ("worker", "dask-worker-1", "dask-worker-2"):
        targets = {v["target"] if isinstance(v, dict) else v.split(":")[1] for v in services[name]["volumes"]}
        assert {"/data", "/app/raw"} <= targets
        command = services[name]["command"]
        if name != "worker":
            assert "tcp://dask-scheduler:8786" in (command if isinstance(command, str) else " ".join(command))


def test_dockerfile_installs_the_project_with_dask() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert "FROM python:3.11" in text and 'pip install --no-deps -e ".[dask]"' in text
    assert "WORKDIR /app" in text and "DO_NOT_TRACK=1" in text
