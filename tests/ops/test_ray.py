"""A flow on a real Ray cluster: ``ray start --head`` on 127.0.0.1 (2 CPUs, its own temp dir), then
``python -m flows.wikipedia --runner ray`` with ``RAY_ADDRESS``, as docs/operations.md tells users.

The shards must equal a ``--runner thread`` run's byte for byte, the cluster's own worker logs must
show the stage tasks (they ran on Ray, not in the flow process), and the Prefect API must hold every
task run as completed. Takes ~40-60 s on 2 busy cores (cluster start-up is most of it).

Without ``RAY_ADDRESS`` a flow starts a private local instance, and a ``kill -9`` of the flow must
take every process of it along, the agents the raylet starts included (30-70 s).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.manifest import Manifest
from sources.samples.wikipedia import write_sample_dumps
from tests.faults.test_kill9 import MARK, _gsm8k_lines, _open_when_read, marked

pytestmark = pytest.mark.prefect
try:
    import prefect_ray  # noqa: F401
    import ray  # noqa: F401
except ImportError as exc:  # a module-level skip with the reason, not a collection error
    pytest.skip(f"ray / prefect-ray not importable ({exc}); install with `pip install -e .[ray]`",
                allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]


#: Ray 2.60's `ray start` turns token authentication on, and a driver then needs the token that the
#: first start wrote to ~/.ray/auth_token (absent or stale on a fresh machine): this throwaway
#: cluster on 127.0.0.1 runs without it, for the head, the probe and the flow alike.
RAY_ENV = {**os.environ, "RAY_AUTH_MODE": "disabled"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group we started (``ray start --block`` stops its daemons), then SIGKILL."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)  # a throwaway cluster: no need to wait for a graceful stop
    deadline = time.monotonic() + 3
    while group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    if group_alive(proc.pid):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    """A one-node Ray cluster on 127.0.0.1, starting in the background (``ready()`` waits for it).

    The temp dir is short (Ray's Unix socket paths must fit in 107 bytes) and private, so the test
    neither joins nor disturbs another cluster on the machine (``/tmp/ray``).
    """
    temp = Path(tempfile.mkdtemp(prefix="kray-"))
    port = free_port()
    ray_bin = str(Path(sys.executable).parent / "ray")
    cmd = [ray_bin, "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port),
           "--num-cpus", "2", "--include-dashboard", "false", "--disable-usage-stats",
           "--ray-client-server-port", str(free_port()), "--dashboard-agent-listen-port", str(free_port()),
           "--temp-dir", str(temp)]
    log = (temp / "start.log").open("wb")
    proc = subprocess.Popen(cmd, cwd=REPO, env=RAY_ENV, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        yield RayCluster(f"127.0.0.1:{port}", temp, proc)
    finally:
        stop_group(proc)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


@dataclass
class RayCluster:
    address: str
    temp: Path  # --temp-dir: session logs under session_latest/logs
    proc: subprocess.Popen[bytes]

    def ready(self, timeout: float = 150) -> str:
        """Block until a driver connects and sees 2 CPUs; skip (with ray's own words) if it cannot start."""
        start_log = self.temp / "start.log"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.skip(f"`ray start --head` exited {self.proc.returncode}: {start_log.read_text()[-800:]}")
            probe = subprocess.run(
                [sys.executable, "-c", f"import ray; ray.init(address={self.address!r}, log_to_driver=False); "
                                       "print(int(ray.cluster_resources().get('CPU', 0)))"],
                capture_output=True, text=True, timeout=120, cwd=REPO, env=RAY_ENV)
            if probe.returncode == 0 and probe.stdout.strip().splitlines()[-1:] == ["2"]:
                return self.address
            time.sleep(2)
        pytest.fail(f"Ray cluster at {self.address} not ready in {timeout:.0f} s: {start_log.read_text()[-800:]}")


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_sample_dumps(tmp_path_factory.mktemp("ray-dumps"), pages=300, seed=3)


def run_flow(dumps: list[Path], out: Path, runner: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "flows.wikipedia", "--out", str(out), "--runner", runner, "--workers", "2"]
    for dump in dumps:
        cmd += ["--dump", str(dump)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, f"--runner {runner} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def tree(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs").rglob("*")) if p.is_file()}


def test_flow_on_a_ray_cluster_equals_a_thread_run(ray_cluster: RayCluster, prefect_api_url: str,
                                                   dumps: list[Path], tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    env = {k: v for k, v in RAY_ENV.items() if k != "RAY_ADDRESS"}
    env["PREFECT_API_URL"] = prefect_api_url  # one API for both runs, as a deployment has
    run_flow(dumps, tmp_path / "thread", "thread", env)  # while the cluster starts
    run_flow(dumps, tmp_path / "ray", "ray", {**env, "RAY_ADDRESS": ray_cluster.ready()})

    reference = tree(tmp_path / "thread")
    assert reference and any(p.endswith(".parquet") for p in reference)
    assert tree(tmp_path / "ray") == reference

    # The stage tasks ran in the cluster's worker processes: their Prefect log lines are in the
    # session's worker logs (stderr: worker-*.err), one task per dump.
    worker_logs = "".join(p.read_text(errors="replace")
                          for p in (ray_cluster.temp / "session_latest" / "logs").glob("worker-*"))
    for dump in dumps:
        assert f"Task run 'stage {dump.name}' - Finished in state Completed()" in worker_logs, dump.name

    # ...and reported to the flow's Prefect API, under the flow run the manifest names.
    run_ids = [row[0] for row in Manifest.for_output(tmp_path / "ray").query(
        "SELECT run_id FROM runs WHERE flow = 'wikipedia'")[1]]
    assert len(run_ids) == 1
    with get_client(sync_client=True) as client:
        task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=run_ids)))
    stages = [t for t in task_runs if t.name.startswith("stage ")]
    assert len(stages) == len(dumps) and all(t.state is not None and t.state.is_completed() for t in stages)


def test_runner_joins_ray_address_or_starts_a_private_local_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never the implicit ``ray.init()`` fallback to the last cluster left in /tmp/ray."""
    from flows.runtime.runner import make_ray_runner

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    local = make_ray_runner(3)
    assert (local.address, local.init_kwargs["num_cpus"]) == ("local", 3)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.7:6379")
    joined = make_ray_runner(3)
    assert joined.address == "10.0.0.7:6379" and "num_cpus" not in joined.init_kwargs


def in_session(session: int) -> dict[int, str]:
    """Live processes of a session: pid -> command line (Ray's agents rewrite their environment, so
    the run's marker is not found in theirs)."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[3]) == session:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):  # gone meanwhile, or not a process
            continue
    return found


def test_kill9_of_the_flow_takes_its_local_ray_instance_along(prefect_api_url: str, tmp_path: Path) -> None:
    """The flow's private instance (no ``RAY_ADDRESS``): its raylet, gcs_server, agents, workers and
    the flow's watchdog are all gone within 10 s of a ``kill -9`` of the flow, mid-input."""
    token = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update({MARK: token, "PREFECT_API_URL": prefect_api_url})
    real, slow = tmp_path / "real.jsonl", tmp_path / "slow.jsonl"
    real.write_text("".join(_gsm8k_lines(0, 20)), encoding="utf-8")
    os.mkfifo(slow)
    logs = tmp_path / "flow.log"
    with open(logs, "wb") as log:
        flow = subprocess.Popen([sys.executable, "-m", "flows.reasoning", "--inputs", str(slow), "--inputs", str(real),
                                 "--runner", "ray", "--workers", "2", "--out", str(tmp_path / "out")],
                                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def run() -> dict[int, str]:
        return {**marked(token), **in_session(flow.pid)}

    try:
        feed = _open_when_read(slow, flow, logs, timeout_s=240)  # a Ray worker is reading it
        os.write(feed, "".join(_gsm8k_lines(1000, 5)).encode())
        deadline = time.monotonic() + 60  # the raylet starts its agents itself, maybe after the workers
        while not all(name in " | ".join(run().values()) for name in ("DashboardAgent", "RuntimeEnvAgent")):
            assert time.monotonic() < deadline, f"no Ray agents: {run()}"
            time.sleep(0.5)
        commands = " | ".join(run().values())
        assert all(name in commands for name in ("raylet", "gcs_server", "ray::stage-input", "core.reaper")), commands
        os.kill(flow.pid, signal.SIGKILL)
        flow.wait(timeout=30)
        deadline = time.monotonic() + 10
        while run() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert run() == {}, f"alive 10 s after the kill: {run()}"
        os.close(feed)
    finally:
        for pid in run():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
