"""Flows on Dask: a LocalCluster of two worker processes, and ``dask scheduler`` + ``dask worker`` on
127.0.0.1 with one worker process SIGKILLed mid-task; shards and manifest equal a sequential run."""

from __future__ import annotations

import hashlib
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.manifest import Manifest
from flows.wikipedia import WikipediaConfig, run
from sources.samples.wikipedia import write_sample_dumps

pytestmark = pytest.mark.prefect
pytest.importorskip("prefect_dask")
REPO = Path(__file__).resolve().parents[2]


def tree(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs").rglob("*")) if p.is_file()}


def manifest_rows(out: Path) -> dict[str, list[tuple[Any, ...]]]:
    """What a run wrote to the manifest, less run ids and times."""
    manifest = Manifest.for_output(out)
    queries = {
        "shards": "SELECT path, source, language, docs, text_bytes, bytes, sha256, inputs FROM shards ORDER BY path",
        "inputs": "SELECT input_key, status, records_in, docs_kept, docs_dropped, sha256 FROM latest_inputs ORDER BY 1",
        "drops": "SELECT input_key, step, reason, count FROM latest_drops ORDER BY 1, 2, 3",
        "errors": "SELECT e.input_key, step, reason, record FROM errors e JOIN latest_inputs l USING (run_id, input_key) "
                  "ORDER BY ALL",
    }
    return {name: manifest.query(sql)[1] for name, sql in queries.items()}


def config(dumps: list[Path], out: Path, **kwargs: Any) -> WikipediaConfig:
    return WikipediaConfig(dumps=[str(d) for d in dumps], out=out, progress=False, **kwargs)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Four dumps (two languages x two seeds), each a few seconds of work: time to kill a worker mid-task."""
    root = tmp_path_factory.mktemp("dask-dumps")
    found = []
    for seed in (1, 2):
        for dump in write_sample_dumps(root / f"seed{seed}", pages=900, seed=seed):
            target = root / dump.name.replace("sample", f"sample{seed}")
            dump.rename(target)
            found.append(target)
    return sorted(found)


@pytest.fixture(scope="module")
def reference(prefect_api_url: str, dumps: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reference")
    assert not run(config(dumps, out, runner="sequential")).failed
    return out


def test_local_cluster_of_two_worker_processes(prefect_api_url: str, dumps: list[Path], reference: Path,
                                               tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    summary = run(config(dumps, tmp_path, runner="dask", workers=2))
    assert not summary.failed
    assert tree(tmp_path) == tree(reference) and manifest_rows(tmp_path) == manifest_rows(reference)
    with get_client(sync_client=True) as client:
        task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[summary.run_id])))
    stages = sorted((t.start_time, t.end_time) for t in task_runs if t.name.startswith("stage "))
    assert len(stages) == 4
    assert any(a_end > b_start for (_, a_end), (b_start, _) in itertools.pairwise(stages)), \
        "no two stage tasks overlapped: the cluster did not run them in parallel"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def dask_cluster(prefect_api_url: str, tmp_path: Path) -> Iterator[str]:
    """``dask scheduler`` and ``dask worker --nworkers 2`` (nannies restart killed workers)."""
    from distributed import Client

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PREFECT_API_URL": prefect_api_url}  # workers report task runs to the same API
    dask = [str(Path(sys.executable).parent / "dask")]  # the venv's console script
    procs = []
    try:
        procs.append(subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                                      env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True))
        procs.append(subprocess.Popen([*dask, "worker", address, "--nworkers", "2", "--nthreads", "1", "--host",
                                       "127.0.0.1", "--no-dashboard"], env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True))
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=90)
        yield address
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


def kill_a_busy_worker(address: str, killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first worker process seen running a stage task, half a second into it."""
    from distributed import Client

    with Client(address, timeout=30) as client:
        while not stop.is_set():
            busy = [w for w, keys in client.processing().items() if any("stage" in str(k) for k in keys)]
            if busy:
                time.sleep(0.5)
                pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.05)


def test_worker_killed_mid_run_gives_the_same_output(dask_cluster: str, dumps: list[Path], reference: Path,
                                                     tmp_path: Path) -> None:
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=kill_a_busy_worker, args=(dask_cluster, killed, stop), daemon=True)
    killer.start()
    try:
        summary = run(config(dumps, tmp_path, runner="dask", dask_address=dask_cluster))
    finally:
        stop.set()
        killer.join(timeout=30)
    assert killed, "no worker was killed: the run finished before a stage task was seen"
    assert not summary.failed
    assert tree(tmp_path) == tree(reference) and manifest_rows(tmp_path) == manifest_rows(reference)
