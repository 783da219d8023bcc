"""A guard that records and refuses every non-loopback connection and name lookup, in every Python
process started with its folder on ``PYTHONPATH`` (the flow, its Prefect API server, process-pool
workers, the ``kinda`` script).

Why a ``sitecustomize`` and not a mock: the processes to watch are not the test's own, and a
socket call made by any library in any of them (telemetry, a model or data hub download, a
"latest version" check) must be seen, which only a patch loaded at interpreter start-up can do.
Used by the README's sample build (``tests/test_readme.py``: ``make demo``'s job runs offline) and
by ``tests/ops/test_offline.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SITECUSTOMIZE = r'''
import ipaddress, json, os, socket, sys

_LOG = os.environ["KINDA_NET_LOG"]
_connect, _getaddrinfo = socket.socket.connect, socket.getaddrinfo


def _local(host):
    if host in (None, "", "localhost") or str(host).endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(kind, host, port):
    with open(_LOG, "a") as log:
        log.write(json.dumps({"kind": kind, "host": str(host), "port": port, "pid": os.getpid(),
                             "argv": sys.argv[:4]}) + "\n")
    raise OSError(f"blocked by test: {kind} {host}:{port}")


def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
        _refuse("connect", address[0], address[1])
    return _connect(self, address)


def getaddrinfo(host, port, *args, **kwargs):
    if not _local(host if not isinstance(host, bytes) else host.decode()):
        _refuse("getaddrinfo", host, port)
    return _getaddrinfo(host, port, *args, **kwargs)


socket.socket.connect = connect
socket.getaddrinfo = getaddrinfo
'''


def user_env(folder: Path, base: dict[str, str]) -> dict[str, str]:
    """``base`` without any of our Prefect settings (the defaults must come from the code, as on a
    user's machine), its Prefect home in ``folder``."""
    env = {k: v for k, v in base.items() if not k.startswith("PREFECT_") and k != "DO_NOT_TRACK"}
    return {**env, "PREFECT_HOME": str(folder / "prefect-home")}


def guarded_env(folder: Path, base: dict[str, str]) -> tuple[dict[str, str], Path]:
    """``base`` with the guard on: the environment and the log its refusals are written to."""
    site = folder / "net-guard"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = folder / "net.log"
    log.touch()
    path = os.pathsep.join([str(site), base.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**base, "PYTHONPATH": path, "KINDA_NET_LOG": str(log)}, log


def attempts(log: Path) -> list[dict[str, object]]:
    """Every refused connection or lookup recorded so far."""
    return [json.loads(line) for line in log.read_text().splitlines()]
