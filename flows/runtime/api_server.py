"""The run's own Prefect API server, started when no ``PREFECT_API_URL`` is configured.

Prefect's temporary server (``SubprocessASGIServer``) is a new interpreter that imports Prefect
and its server application again (~2 + ~3.5 CPU-s on a loaded 2-core machine) while the flow
process has just imported Prefect, and registering it as Prefect's ephemeral instance made the
flow process import the server's code too (~3 CPU-s). For a short run (re-labeling the G.2
sample with a new threshold: ~1 CPU-s of work) that was most of the command's CPU. So here:

* The flow process listens on a free loopback port itself and **forks**: the child already has
  Prefect imported (shared copy-on-write), imports only the server application, and serves the
  socket with uvicorn, as Prefect's own command line would. The flow process never imports
  ``prefect.server``. Forking needs a process with no other Python thread (the command line,
  where the server starts before the run's threads); anywhere else (a test session, a second
  run in one process) the same server main runs in a fresh interpreter
  (``python -m flows.runtime.api_server <fd>``, the listening socket passed down).
* Prefect's own threads that look for the API outside the run's settings context (the pool's
  message forwarder, the events and log workers) find it in the process-global settings context,
  swapped for the run's (:mod:`flows.runtime.prefect_internals`, ``global-settings-context``), so none asks
  for an ephemeral server of its own.
* The server runs Prefect's ephemeral services less two no run of ours needs: automations
  (the triggers and actions services: evaluating every event against automations nobody defined
  for a server that lives as long as one run) and block auto-registration (which first imports
  every installed Prefect collection, Dask and Ray included, to register block types no flow
  here saves). Task runs, events and logs are recorded as before, in ``PREFECT_HOME``'s database
  (persistent: its migrations run once, a later start only checks them).
* It dies with the flow: the child arms the death signal first (:func:`core.lifeline.die_with_parent`,
  ``kill -9`` of the flow included), and replaces every descriptor it inherited, except the socket
  and the standard streams, with ``/dev/null``: a forked server must not hold the output root's
  lock (a ``flock`` on an inherited descriptor) or any file of the run open.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
from typing import Any

from core import lifeline
from flows.runtime import prefect_internals

#: What the server sees besides the flow's environment and Prefect's own temporary-server switches
#: (:func:`flows.runtime.prefect_internals.ephemeral_server_switches`): the services left out (module docstring).
SERVER_ENV = {
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
    "PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
    "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false",
}
#: The name the server process shows in ``ps -o comm`` and ``/proc/<pid>/comm`` (a forked one has
#: the flow's command line; at most 15 characters).
PROCESS_NAME = "prefect-api"
APP = "prefect.server.api.server:create_app"


class _Forked:
    """A forked child as much of ``subprocess.Popen`` as :func:`core.lifeline.reap` and :class:`EmbeddedServer` use."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0)
            time.sleep(0.02)
        assert self.returncode is not None  # set by poll
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def can_fork() -> bool:
    """Whether the server may be forked from this process: Linux, and no other Python thread.

    Native threads of extension modules (jemalloc's and Arrow's, once ``pyarrow`` is imported)
    do not count: they hold no lock the child takes (malloc is fork-safe through its own
    ``atfork`` handlers) and the child never calls into Arrow.
    """
    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1


class EmbeddedServer:
    """One Prefect API server for one run, on a loopback port of its own (see the module docstring)."""

    def __init__(self) -> None:
        self.process: Any = None
        self.port = 0
        self.forked = False

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def start(self, timeout_s: float) -> None:
        """Start serving and wait until ``/api/health`` answers (RuntimeError naming the cause otherwise)."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1024)
            self.port = listener.getsockname()[1]
            self.forked = can_fork()
            self.process = _fork(listener) if self.forked else _spawn(listener)
        finally:
            listener.close()  # the server holds its own copy
        self._wait_healthy(timeout_s)

    def _wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through an HTTP(S)_PROXY
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the temporary Prefect API server exited with code {self.process.returncode} "
                                   "before answering (its error is above)")
            try:  # the socket listens already: this waits in its backlog until the application is up
                with direct.open(f"{self.api_url}/health", timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the temporary Prefect API server did not answer within {timeout_s:.0f} s")

    def stop(self) -> None:
        """Stop the server (SIGTERM: it finishes its requests and flushes its services) and reap it."""
        if self.process is not None:
            lifeline.reap(self.process)
            self.process = None


def _fork(listener: socket.socket) -> _Forked:
    """The server in a forked child (Prefect's imports shared with this process)."""
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            lifeline.die_with_parent(parent)
            _forget_inherited(keep={listener.fileno()})
            serve(listener, _server_environment())
            code = 0
        except BaseException:  # the child's last word: it must not return into the flow's code
            traceback.print_exc()
        finally:
            os._exit(code)
    return _Forked(pid)


def _spawn(listener: socket.socket) -> subprocess.Popen[bytes]:
    """The server in a fresh interpreter (this process runs other threads: forking it is not safe)."""
    fd = listener.fileno()
    return subprocess.Popen([sys.executable, "-m", "flows.runtime.api_server", str(fd)], pass_fds=(fd,),
                            env=lifeline.child_env(_server_environment()))


def _server_environment() -> dict[str, str]:
    """The flow's environment, the Prefect settings it runs under (as Prefect passes them to its own
    temporary server: a ``temporary_settings`` block included) and :data:`SERVER_ENV`."""
    from prefect.settings import get_current_settings

    return {**os.environ, **get_current_settings().to_environment_variables(exclude_unset=True),
            **prefect_internals.ephemeral_server_switches(), **SERVER_ENV}


def _forget_inherited(keep: set[int]) -> None:
    """In a forked child: every inherited descriptor but ``keep`` and 0-2 made ``/dev/null``.

    Replaced, not closed: a Python object of the flow's that still names the number closes
    ``/dev/null`` if it is ever collected here, never a file the server opened under that number.
    """
    null = os.open(os.devnull, os.O_RDWR)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != null and fd not in keep:
            with contextlib.suppress(OSError):
                os.dup2(null, fd, inheritable=False)
    os.close(null)


def serve(listener: socket.socket, environment: dict[str, str]) -> None:
    """Run Prefect's server application on ``listener`` until SIGTERM/SIGINT (uvicorn stops it gracefully)."""
    _name_process()
    for sig in (signal.SIGTERM, signal.SIGINT):  # the flow's handlers are not the server's
        signal.signal(sig, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(environment)
    prefect_internals.reload_global_settings()  # from the environment just set (a forked child had the flow's)
    import uvicorn

    config = uvicorn.Config(APP, factory=True, log_level="error", lifespan="on")
    uvicorn.Server(config).run(sockets=[listener])


def _name_process() -> None:
    """Show :data:`PROCESS_NAME` as the process's name (Linux; elsewhere nothing)."""
    with contextlib.suppress(OSError), open("/proc/self/comm", "w", encoding="ascii") as comm:
        comm.write(PROCESS_NAME)


def main(argv: list[str]) -> int:
    """``python -m flows.runtime.api_server <fd>``: serve the listening socket inherited as ``fd``."""
    lifeline.die_with_parent()
    import flows  # noqa: F401 - the project's Prefect defaults, before Prefect is imported

    listener = socket.socket(fileno=int(argv[0]))
    serve(listener, dict(os.environ))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
