"""A flow on a real single-node SLURM: munged, slurmctld and slurmd (Debian's ``munge`` and ``slurm-wlm``)
configured for 127.0.0.1 in a private temp dir, then dask-jobqueue's ``SLURMCluster`` submits the Dask
workers as a batch job and ``--runner dask --dask-address <its scheduler>`` runs the Wikipedia flow,
as docs/operations.md tells users.

Checks: the workers are SLURM job steps (``SLURM_JOB_ID`` in their environment, the job in
``squeue``), the stage tasks ran there (their Prefect log lines in the job's ``#SBATCH -e`` file),
the shards equal a sequential run's byte for byte, and closing the cluster ends the job. Needs root
(slurmd launches jobs) and skips with the reason where the daemons are missing or do not start.
Takes ~40-70 s on 2 busy cores.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from core.manifest import Manifest
from flows.wikipedia import WikipediaConfig, run
from sources.samples.wikipedia import write_sample_dumps

pytestmark = pytest.mark.prefect
pytest.importorskip("prefect_dask")
pytest.importorskip("dask_jobqueue", reason="dask-jobqueue not installed: `pip install -e .[slurm]`")
REPO = Path(__file__).resolve().parents[2]
DAEMONS = ("munged", "munge", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel")
NODE = "kinda-node"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def slurm_conf(root: Path, cpus: int, memory_mb: int) -> str:
    """A localhost cluster: one node, one partition, no cgroups/accounting (nothing outside ``root``)."""
    return "\n".join([
        "ClusterName=kinda-test",
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={free_port()}",
        f"SlurmdPort={free_port()}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root / 'munge.socket'}",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "ReturnToService=2",
        f"NodeName={NODE} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN",
        f"PartitionName=debug Nodes={NODE} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


@dataclass
class Slurm:
    root: Path
    env: dict[str, str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, name: str, *args: str) -> None:
        log = (self.root / f"{name}.out").open("wb")
        self.procs.append(subprocess.Popen([name, *args], stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                           start_new_session=True))
        log.close()

    def tail(self) -> str:
        logs = sorted(self.root.glob("*.out")) + sorted(self.root.glob("*.log"))
        return " | ".join(f"{p.name}: {p.read_text(errors='replace')[-400:]}" for p in logs)

    def cli(self, *args: str) -> str:
        return subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=30, check=True).stdout

    def stop(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.cli("scancel", "--full", "--partition", "debug")
        for proc in reversed(self.procs):  # slurmd, slurmctld, then munged: each its own session
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def wait_for(check: Any, timeout: float, slurm: Slurm, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dead = [p.args[0] for p in slurm.procs if p.poll() is not None]
        if dead:
            pytest.skip(f"SLURM could not start ({', '.join(dead)} exited): {slurm.tail()}")
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            if check():
                return
        time.sleep(0.5)
    pytest.skip(f"SLURM could not start ({what} not ready in {timeout:.0f} s): {slurm.tail()}")


@pytest.fixture(scope="module")
def slurm() -> Iterator[Slurm]:
    """munged + slurmctld + slurmd for localhost, all state and sockets in a private temp dir."""
    missing = [name for name in DAEMONS if shutil.which(name) is None]
    if missing:
        pytest.skip(f"SLURM not installed (missing {', '.join(missing)}): apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        pytest.skip("slurmd must run as root to launch jobs (CI runs as root)")
    root = Path(tempfile.mkdtemp(prefix="kslurm-"))
    root.chmod(0o755)  # munged refuses a socket directory others cannot traverse
    for sub in ("state", "spool", "jobs"):
        (root / sub).mkdir()
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    cpus = os.cpu_count() or 1
    memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20 * 9 // 10
    conf = root / "slurm.conf"
    conf.write_text(slurm_conf(root, cpus, memory_mb))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    cluster = Slurm(root, env)
    try:
        cluster.start("munged", "--foreground", f"--socket={root / 'munge.socket'}", f"--key-file={key}",
                      f"--log-file={root / 'munged.log'}", f"--pid-file={root / 'munged.pid'}",
                      f"--seed-file={root / 'munged.seed'}")
        wait_for(lambda: (root / "munge.socket").exists(), 30, cluster, "munged")
        cluster.start("slurmctld", "-D", "-i", "-f", str(conf))
        cluster.start("slurmd", "-D", "-N", NODE, "-f", str(conf))
        wait_for(lambda: cluster.cli("sinfo", "-h", "-n", NODE, "-o", "%T").strip() == "idle", 60, cluster,
                 f"node {NODE} idle")
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def tree(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs").rglob("*")) if p.is_file()}


def config(dumps: list[Path], out: Path, **kwargs: Any) -> WikipediaConfig:
    return WikipediaConfig(dumps=[str(d) for d in dumps], out=out, progress=False, **kwargs)


def test_flow_on_dask_workers_submitted_to_slurm(slurm: Slurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 request: pytest.FixtureRequest) -> None:
    from dask_jobqueue import SLURMCluster
    from distributed import Client
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    prefect_api_url = request.getfixturevalue("prefect_api_url")  # after the skip checks: it takes seconds
    monkeypatch.setenv("SLURM_CONF", slurm.env["SLURM_CONF"])  # sbatch/squeue/scancel find our cluster
    dumps = write_sample_dumps(tmp_path / "dumps", pages=200, seed=5)
    reference = tmp_path / "reference"

    workers = min(2, os.cpu_count() or 1)
    logs = slurm.root / "jobs"
    # The docs' SLURMCluster, on loopback: a worker job reaches the scheduler (and Prefect) at 127.0.0.1.
    with SLURMCluster(queue="debug", cores=workers, processes=workers, memory="2GB", walltime="00:10:00",
                      interface="lo", scheduler_options={"dashboard_address": ":0"}, log_directory=str(logs),
                      python=sys.executable,
                      job_script_prologue=[f"cd {REPO}", f"export PREFECT_API_URL={prefect_api_url} DO_NOT_TRACK=1"],
                      ) as cluster:
        assert "#SBATCH -p debug" in cluster.job_script()
        cluster.scale(jobs=1)
        assert not run(config(dumps, reference, runner="sequential")).failed  # while the job starts
        with Client(cluster) as client:
            client.wait_for_workers(workers, timeout=120)
            job_ids = set(client.run(lambda: os.environ.get("SLURM_JOB_ID")).values())
        assert len(job_ids) == 1 and None not in job_ids, job_ids
        (job_id,) = job_ids
        assert job_id in slurm.cli("squeue", "-h", "-o", "%i").split()

        summary = run(config(dumps, tmp_path / "out", runner="dask", dask_address=cluster.scheduler_address))
        assert not summary.failed

    assert tree(tmp_path / "out") == tree(reference) and tree(reference)
    worker_log = (logs / f"dask-worker-{job_id}.err").read_text(errors="replace")
    for dump in dumps:
        assert f"Task run 'stage {dump.name}' - Finished in state Completed()" in worker_log, dump.name
    with get_client(sync_client=True) as api:
        task_runs = api.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[summary.run_id])))
    stages = [t for t in task_runs if t.name.startswith("stage ")]
    assert len(stages) == len(dumps) and all(t.state is not None and t.state.is_completed() for t in stages)
    # Closing the cluster cancels its job: nothing is left running on the node.
    deadline = time.monotonic() + 30
    while job_id in slurm.cli("squeue", "-h", "-o", "%i").split() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert job_id not in slurm.cli("squeue", "-h", "-o", "%i").split()
    assert Manifest.for_output(tmp_path / "out").query("SELECT count(*) FROM runs")[1] == [(1,)]


# -- `kinda slurm`: a generated batch script (scheduler + srun workers + the flow in one job) -------------
def kinda_slurm(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinda.cli_slurm", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=env)


def test_no_submit_prints_a_valid_batch_script(tmp_path: Path) -> None:
    """No SLURM needed: the script is printed, parses as bash, and carries the allocation and command."""
    env = {**os.environ, "PREFECT_API_URL": "http://prefect.example:4200/api"}
    done = kinda_slurm("--partition", "cpu", "--nodes", "3", "--cpus-per-node", "16", "--mem", "64G",
                       "--time", "02:00:00", "--log-dir", str(tmp_path / "logs"), "--prologue", "module load x",
                       "--sbatch=--qos=long", "--no-submit", "--", "python", "-m", "flows.wikipedia", "--dump",
                       "raw/*.bz2", "--out", "/shared/data", env=env)
    assert done.returncode == 0, done.stderr
    script = done.stdout
    for directive in ("--job-name=kinda-wikipedia", "--nodes=3", "--ntasks-per-node=1", "--cpus-per-task=16",
                      "--time=02:00:00", "--partition=cpu", "--mem=64G", "--qos=long",
                      f"--output={tmp_path / 'logs'}/%x-%j.out"):
        assert f"#SBATCH {directive}\n" in script, directive
    assert "export PREFECT_API_URL=http://prefect.example:4200/api\n" in script and "module load x\n" in script
    assert f"{sys.executable} -m flows.wikipedia --dump 'raw/*.bz2' --out /shared/data --runner dask " \
           '--dask-address "$address"' in script
    assert 'srun --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1' in script
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    assert not (tmp_path / "logs").exists()  # --no-submit writes nothing
    bad = kinda_slurm("--job-name", "a b", "--no-submit", "--", "python", "-m", "flows.wikipedia")
    assert bad.returncode == 2 and "--job-name" in bad.stderr and "Traceback" not in bad.stderr
    empty = kinda_slurm("--no-submit")
    assert empty.returncode == 2 and "after `--`" in empty.stderr


def job_state(slurm: Slurm, job_id: str) -> str:
    match = re.search(r"JobState=(\w+)", slurm.cli("scontrol", "-o", "show", "job", job_id))
    return match.group(1) if match else "UNKNOWN"


def test_kinda_slurm_job_runs_the_flow_on_srun_workers(slurm: Slurm, tmp_path: Path,
                                                       request: pytest.FixtureRequest) -> None:
    prefect_api_url = request.getfixturevalue("prefect_api_url")
    dumps = write_sample_dumps(tmp_path / "dumps", pages=200, seed=6)
    env = {**slurm.env, "PREFECT_API_URL": prefect_api_url}  # the job's flow reports to this API
    logs = tmp_path / "slurm"
    done = kinda_slurm("--partition", "debug", "--cpus-per-node", str(min(2, os.cpu_count() or 1)),
                       "--time", "00:10:00", "--log-dir", str(logs), "--interface", "lo", "--",
                       "python", "-m", "flows.wikipedia", *(f"--dump={d}" for d in dumps), "--out", "out",
                       env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    job_id = re.fullmatch(r"submitted batch job (\d+): .*\nlog: .*\n", done.stdout, re.S).group(1)  # type: ignore[union-attr]

    reference = tmp_path / "reference"
    assert not run(config(dumps, reference, runner="sequential")).failed  # while the job runs
    deadline = time.monotonic() + 180
    while (state := job_state(slurm, job_id)) in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING") \
            and time.monotonic() < deadline:
        time.sleep(1)
    log = (logs / f"kinda-wikipedia-{job_id}.out").read_text(errors="replace")
    assert state == "COMPLETED", f"job {job_id} {state}:\n{log[-3000:]}"
    assert tree(tmp_path / "out") == tree(reference) and tree(reference)  # relative --out: the submit dir
    assert "Scheduler at:" in log and "Start worker at" in log  # the job's own scheduler, srun's workers
    assert "Task run 'stage " in log  # the stage tasks ran in the job (the flow's API is the test's)
    assert (logs / "kinda-wikipedia.sbatch").read_text().startswith("#!/usr/bin/env bash\n#SBATCH")


def test_the_jobs_dask_workers_get_glibcs_own_malloc_thresholds(tmp_path: Path) -> None:
    """The script's Dask config file reaches every process it starts: a nanny there leaves
    MALLOC_TRIM_THRESHOLD_ unset (Dask's 65536 made workers ~30% slower on large batches),
    and a DASK_CONFIG the user exported is kept."""
    done = kinda_slurm("--log-dir", str(tmp_path / "logs"), "--no-submit", "--", "python", "-m", "flows.wikipedia")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    setup = "\n".join(lines[lines.index(next(x for x in lines if x.startswith("dask_config="))):
                             lines.index(next(x for x in lines if x.startswith("export DASK_CONFIG="))) + 1])
    probe = (f"{sys.executable} -c 'import dask, distributed; "
             "print(dask.config.get(\"distributed.nanny.pre-spawn-environ\").get(\"MALLOC_TRIM_THRESHOLD_\"))'")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", f"{setup}\n{probe}"], capture_output=True, text=True,
                         timeout=120, env={**env, "SLURM_JOB_ID": "42"})
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "None"
    assert (tmp_path / "logs" / "dask-config-42" / "kinda.yaml").is_file()
    mine = tmp_path / "mine"
    mine.mkdir()
    kept = subprocess.run(["bash", "-euo", "pipefail", "-c", f"{setup}\n{probe}"], capture_output=True, text=True,
                          timeout=120, env={**env, "SLURM_JOB_ID": "43", "DASK_CONFIG": str(mine)})
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout.strip() == "65536"
