"""The one life cycle of a helper process: start, bound in time and memory, kill, start again.

Why helper processes: the code that stalls or blows up on a bad record is C (pdfium, lxml,
mwparserfromhell's tokenizer, ``re`` backtracking). Code like that never returns to the
interpreter, so ``SIGALRM`` cannot interrupt it, and a thread cannot be killed at all: the only
bound that always works is a process that can be killed. Every bounded piece of the pipeline
(:class:`core.bounded.BoundedCleaner` for per-record cleaners and the HTML extractor, the PDF
worker of :mod:`sources.formats.pdf_text`) runs its work in a :class:`HelperProcess`:

- **start**: a fresh interpreter (:mod:`subprocess`, not :mod:`multiprocessing`, so it starts from
  a process-pool child, a thread and a daemonic Dask worker alike, where ``multiprocessing``
  refuses to start children). It takes the parent's ``sys.path`` and runs one function named
  ``"module:function"``, given a :class:`Channel`; it never imports the parent's ``__main__``
  (a flow with Prefect, pydantic, DuckDB: seconds of start-up on a loaded machine).
- **bound in time**: :meth:`HelperProcess.receive` waits for the next message until a deadline
  (:class:`HelperTimeout`); the caller then kills the helper. A helper that dies (segfault, abort
  under its memory bound) is :class:`HelperEnded`, with its exit status.
- **bound in memory**: :func:`limit_address_space` caps the helper's address space, at start
  (``memory_limit``) or per request by the helper itself (the PDF worker adds its bound to what
  its imports map).
- **kill**: SIGKILL and reap (:meth:`HelperProcess.kill`); a helper also dies with its parent
  (:func:`core.lifeline.die_with_parent`), so a ``kill -9`` of a flow leaves no helper burning a core.
- **start again**: :class:`HelperSlot` holds a user's helper and starts a new one when the last
  was killed or died, counting the starts.

Messages are pickled frames (an 8-byte length, then the pickle) on the helper's stdin and a
dup of its stdout; the helper's fd 1 then points at stderr, so a library that prints cannot
corrupt the answers. An optional shared 8-byte ``mark`` lets a helper say what it is working on
(the PDF worker: the page), readable by the parent after the helper died on it.
"""

from __future__ import annotations

import contextlib
import importlib
import mmap
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Hashable
from typing import IO, Any, TypeVar

from core import lifeline

T = TypeVar("T")
#: Length prefix of every frame on the pipes (unsigned 64-bit, big-endian).
_HEADER = struct.Struct(">Q")
#: The shared mark: one signed 64-bit integer.
_MARK = struct.Struct("q")
#: Environment variables the parent sets for the helper it starts.
MEMORY_ENV = "KINDA_BOUNDED_MEMORY"
MARK_ENV = "KINDA_HELPER_MARK_FD"

#: The helper's bootstrap: take the parent's ``sys.path`` and the function to run from the first
#: frame, so it imports exactly what the parent would. Kept tiny because it runs before any import.
_BOOTSTRAP = (
    "import sys,pickle,struct;"
    "h=sys.stdin.buffer.read(8);"
    "sys.path[:],t=pickle.loads(sys.stdin.buffer.read(struct.unpack('>Q',h)[0]));"
    "from core.helper_process import serve;serve(t)"
)


class HelperTimeout(Exception):
    """No message from the helper before the deadline (it is still running: kill it)."""


class HelperEnded(Exception):
    """The helper closed its end: it exited or died (segfault, abort, killed)."""


class HelperStartError(RuntimeError):
    """A new helper died before it took its start-up message (killed, reaped, pipes closed).

    Not a :class:`HelperEnded`: no record was sent to it, so no record is to blame; a helper that
    cannot start fails the work that needs it.
    """


def write_frame(stream: IO[bytes], data: bytes) -> None:
    """One frame: the length, then the bytes."""
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read_exact(stream: IO[bytes], size: int) -> bytes | None:
    """Read exactly ``size`` bytes, or None when the stream ends first."""
    parts: list[bytes] = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _widen_pipe(fd: int) -> None:
    """Grow a pipe to 1 MiB (Linux) so a large record crosses in a few system calls, not hundreds."""
    with contextlib.suppress(Exception):
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)


# -- in the helper ----------------------------------------------------------------------------
class Channel:
    """The helper's side: requests from the parent, answers to it, and the shared mark."""

    def __init__(self, requests: IO[bytes], answers: IO[bytes], mark: mmap.mmap | None) -> None:
        self.requests, self.answers, self._mark = requests, answers, mark

    def recv_bytes(self) -> bytes:
        """The next request frame; EOFError when the parent closed its end (end of work)."""
        header = _read_exact(self.requests, _HEADER.size)
        body = _read_exact(self.requests, _HEADER.unpack(header)[0]) if header is not None else None
        if body is None:
            raise EOFError("the parent closed the helper's input")
        return body

    def recv(self) -> Any:
        """The next request, unpickled."""
        return pickle.loads(self.recv_bytes())

    def send_bytes(self, data: bytes) -> None:
        """Send one answer frame."""
        write_frame(self.answers, data)

    def send(self, message: Any) -> None:
        """Send one answer, pickled."""
        self.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def mark(self, value: int) -> None:
        """Say what the helper works on now (read by the parent if the helper dies on it)."""
        if self._mark is not None:
            _MARK.pack_into(self._mark, 0, value)


def serve(target: str) -> None:
    """The helper's main: die with the parent, take the memory bound, run ``target(channel)``."""
    lifeline.die_with_parent()
    limit = os.environ.pop(MEMORY_ENV, None)  # popped: not inherited by what the helper runs
    if limit:
        limit_address_space(int(limit))
    mark_fd = os.environ.pop(MARK_ENV, None)
    mark = mmap.mmap(int(mark_fd), _MARK.size) if mark_fd else None
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the code prints goes to stderr, not into the answers
    module, function = target.split(":")
    getattr(importlib.import_module(module), function)(Channel(sys.stdin.buffer, answers, mark))


# -- in the parent ----------------------------------------------------------------------------
def _shared_mark() -> tuple[int, mmap.mmap]:
    """An 8-byte memory shared with a helper (a memfd, or a temporary file off Linux), set to -1."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kinda-helper-mark")
    else:
        with tempfile.TemporaryFile() as handle:
            fd = os.dup(handle.fileno())
    os.ftruncate(fd, _MARK.size)
    shared = mmap.mmap(fd, _MARK.size)
    _MARK.pack_into(shared, 0, -1)
    return fd, shared


class HelperProcess:
    """One running helper interpreter serving ``target`` (``"module:function"``), and the pipes to it.

    ``memory_limit``: the helper's address space, in bytes (None: unbounded). ``mark``: share an
    8-byte mark with it (:meth:`Channel.mark`, :attr:`marked`).
    """

    def __init__(self, target: str, memory_limit: int | None = None, mark: bool = False) -> None:
        env = lifeline.child_env()  # the helper arms its death signal against this process
        if memory_limit:
            env[MEMORY_ENV] = str(memory_limit)
        fds: tuple[int, ...] = ()
        self._mark: mmap.mmap | None = None
        if mark:
            fd, self._mark = _shared_mark()
            env[MARK_ENV], fds = str(fd), (fd,)
        try:
            self.process = subprocess.Popen([sys.executable, "-c", _BOOTSTRAP], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, env=env, close_fds=True, pass_fds=fds)
        finally:
            for fd in fds:
                os.close(fd)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests: IO[bytes] = self.process.stdin
        self.answers: IO[bytes] = self.process.stdout
        try:
            for stream in (self.requests, self.answers):
                _widen_pipe(stream.fileno())
            write_frame(self.requests, pickle.dumps((list(sys.path), target)))
        except BaseException as exc:  # e.g. the child died at once: no process or pipe may outlive the error
            self.kill()
            if isinstance(exc, OSError):
                raise HelperStartError(f"the helper for {target[:200]!r} ended before it took its start-up "
                                       f"message (exit {self.process.returncode}): {exc}") from exc
            raise

    @property
    def alive(self) -> bool:
        """Still running (not exited, not killed)."""
        return self.process.poll() is None

    @property
    def marked(self) -> int:
        """The helper's last :meth:`Channel.mark` (-1 before any; readable after it died, until closed)."""
        return _MARK.unpack_from(self._mark, 0)[0] if self._mark is not None else -1

    def send_bytes(self, data: bytes) -> None:
        """Send one request frame; :class:`HelperEnded` when the helper is gone."""
        try:
            write_frame(self.requests, data)
        except (BrokenPipeError, OSError) as exc:
            raise HelperEnded("the helper's input is closed") from exc

    def send(self, message: Any) -> None:
        """Send one request, pickled."""
        self.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def receive_bytes(self, timeout_s: float) -> bytes:
        """The next answer frame within ``timeout_s`` (:class:`HelperTimeout`), or :class:`HelperEnded`.

        After a timeout the stream may hold part of a frame: the helper must be killed, not read on.
        """
        deadline = time.monotonic() + timeout_s
        fd = self.answers.fileno()
        buffer = bytearray()
        needed, have_header = _HEADER.size, False
        while True:
            while len(buffer) < needed:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                    raise HelperTimeout(f"no answer within {timeout_s:g} s")
                chunk = os.read(fd, needed - len(buffer))  # never past this frame: the next may follow
                if not chunk:
                    raise HelperEnded("the helper closed its output")
                buffer += chunk
            if have_header:
                return bytes(buffer)
            needed = _HEADER.unpack(buffer[: _HEADER.size])[0]
            del buffer[: _HEADER.size]
            have_header = True

    def receive(self, timeout_s: float) -> Any:
        """The next answer, unpickled (see :meth:`receive_bytes`)."""
        return pickle.loads(self.receive_bytes(timeout_s))

    def exit_code(self, wait_s: float = 5.0) -> int | None:
        """The exit status once the helper ended (negative: the signal that ended it); None if it runs on."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=wait_s)
        return self.process.returncode

    def kill(self) -> None:
        """Kill the helper and reap it (a stuck C loop ignores everything but SIGKILL)."""
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.process.wait(timeout=5)
        self._release()

    def close(self) -> None:
        """Ask the helper to exit (end of its input), kill it if it does not within 2 s."""
        with contextlib.suppress(OSError):
            self.requests.close()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()
        self._release()

    def _release(self) -> None:
        for stream in (self.requests, self.answers):
            with contextlib.suppress(OSError):
                stream.close()
        if self._mark is not None:
            self._mark.close()
            self._mark = None


class HelperSlot:
    """A user's helper: started on first use, started again after it was killed or died."""

    def __init__(self, target: str, memory_limit: int | None = None, mark: bool = False) -> None:
        self.target, self.memory_limit, self.mark = target, memory_limit, mark
        self.helper: HelperProcess | None = None
        #: How many helpers were started (1 + restarts).
        self.starts = 0

    def running(self) -> tuple[HelperProcess, bool]:
        """The live helper, and whether it was started just now (a dead one is reaped first)."""
        helper = self.helper
        if helper is not None and helper.alive:
            return helper, False
        if helper is not None:
            self.helper = None  # reaped: a failed start below must not leave it in the slot
            helper.kill()
        self.helper = HelperProcess(self.target, self.memory_limit, self.mark)
        self.starts += 1
        return self.helper, True

    def kill(self) -> None:
        """Kill the helper now (past its deadline, or its stream is out of step); the next use starts one."""
        helper, self.helper = self.helper, None
        if helper is not None:
            helper.kill()

    def close(self) -> None:
        """Let the helper exit at the end of its input (killed if it does not)."""
        helper, self.helper = self.helper, None
        if helper is not None:
            helper.close()


_PER_THREAD = threading.local()


def thread_helper(key: Hashable, make: Callable[[], T]) -> T:
    """This thread's shared helper object for ``key`` (made on first use); a forked child starts afresh.

    Per thread: two threads' requests on one helper's pipe would interleave (a thread runner's
    tasks once crossed their PDF pages). Per process: a child forked from a process pool inherits
    this thread's objects and with them the parent's pipes, so a different process id means new,
    empty ones. A finished thread's objects go with it: their pipes close and the helpers exit.
    """
    if getattr(_PER_THREAD, "pid", None) != os.getpid():
        _PER_THREAD.pid, _PER_THREAD.objects = os.getpid(), {}
    objects: dict[Hashable, Any] = _PER_THREAD.objects
    if key not in objects:
        objects[key] = make()
    found: T = objects[key]
    return found


def thread_helpers() -> list[Any]:
    """This thread's shared helper objects (:func:`thread_helper`) in this process."""
    if getattr(_PER_THREAD, "pid", None) != os.getpid():
        return []
    return list(_PER_THREAD.objects.values())


def close_thread_helpers() -> None:
    """Let this thread's shared helpers exit (they start again on next use).

    Benchmarks call it so that ``RUSAGE_CHILDREN``, which counts only children waited for,
    includes the helpers' CPU time.
    """
    for helper in thread_helpers():
        helper.close()


def address_space_in_use() -> int:
    """This process's address space now, in bytes (Linux ``/proc/self/statm``; 0 elsewhere).

    A helper maps its imports before it serves (the PDF worker: pdfium), so a per-request bound
    is set above what it already maps.
    """
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def limit_address_space(limit: int | None) -> None:
    """Cap this process's address space (``RLIMIT_AS``, soft limit) at ``limit`` bytes; None lifts it.

    The one memory bound of every helper process: past it an allocation fails, so Python raises
    ``MemoryError`` and C libraries abort, and the caller turns that record into one drop instead
    of the machine swapping or the OOM killer ending the run. Only the soft limit moves (up to
    the hard one), so a persistent helper can take each request's bound.
    """
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = resource.RLIM_INFINITY if limit is None else limit
    if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft > hard):
        soft = hard
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
