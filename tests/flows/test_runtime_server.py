"""The run's own Prefect API server (:mod:`flows.runtime.api_server`), as a command line starts it.

A fresh interpreter (as ``python -m flows.<name>`` is) holds a ``flock`` like the output root's
lock and enters :func:`flows.runtime.runner.prefect_api` twice: first with another Python thread
alive, where the server must run in a fresh interpreter, then single-threaded, where it is forked
and shares the imports. It reports what each server is; the test checks them, then ``kill -9``s
the interpreter and sees the forked server gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.prefect, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="walks /proc")]
REPO = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import fcntl, json, os, sys, threading, time, urllib.request
import flows
from flows.runtime.runner import prefect_api

held = open(sys.argv[1], "w")
fcntl.flock(held, fcntl.LOCK_EX)  # as the output root's lock is held during a run

def server():
    """This process's child named prefect-api: what it is and what it holds."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            if int(stat[1]) != os.getpid() or open(f"/proc/{entry}/comm").read().strip() != "prefect-api":
                continue
            fds = [os.readlink(f"/proc/{entry}/fd/{fd}") for fd in os.listdir(f"/proc/{entry}/fd")]
            command = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        return {"pid": int(entry), "command": command, "fds": fds}
    return None

def settings(url):
    with urllib.request.urlopen(url + "/admin/settings", timeout=30) as response:
        body = json.load(response)
    return {"triggers": body["server"]["services"]["triggers"]["enabled"], "ui": body["server"]["ui"]["enabled"]}

report = {"flow": os.getpid()}
stop = threading.Event()
other = threading.Thread(target=stop.wait, daemon=True)
other.start()
try:
    with prefect_api() as url:
        report["spawned"] = {**server(), **settings(url)}
finally:
    stop.set()
    other.join()
report["spawned_alive_after"] = os.path.exists(f"/proc/{report['spawned']['pid']}")
with prefect_api() as url:
    report["forked"] = {**server(), **settings(url)}
    report["server_modules"] = sorted(name for name in sys.modules if name.startswith("prefect.server"))
    print(json.dumps(report), flush=True)
    time.sleep(600)
'''


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.timeout(900)
def test_the_run_server_forked_when_it_can_spawned_when_not_and_gone_with_a_kill9(tmp_path: Path) -> None:
    lock = tmp_path / ".kinda.lock"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(lock)], cwd=REPO, env={**env, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    server_pid = None
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            proc.wait(timeout=60)
            raise AssertionError(proc.stderr.read()[-3000:] if proc.stderr else "no report")
        report = json.loads(line)
        spawned, forked = report["spawned"], report["forked"]
        server_pid = forked["pid"]
        # another thread alive: a fresh interpreter running the server's main, reaped when the run ended
        assert "-m flows.runtime.api_server" in spawned["command"], spawned
        assert not report["spawned_alive_after"]
        # single-threaded: forked (the flow's own command line), the imports shared
        assert forked["command"].startswith(sys.executable) and " -c " in forked["command"], forked
        assert report["server_modules"] == []  # the flow process never imported Prefect's server
        for server in (spawned, forked):
            assert server["triggers"] is False and server["ui"] is False, server  # services left out, no UI
            assert str(lock) not in server["fds"], server["fds"]  # the run's lock is not held by its server
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 5
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(server_pid), "the forked server outlived a kill -9 of its flow by 5 s"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if server_pid is not None and _alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)
