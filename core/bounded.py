"""Run a per-record cleaner under a wall-time and an input-size bound.

Why a helper process: the cleaners that stall are C code (mwparserfromhell's tokenizer is roughly
quadratic on unclosed markup; ``re`` backtracks exponentially; lxml and PDF libraries loop inside
C). Code like that never returns to the interpreter, so ``SIGALRM`` cannot interrupt it, and a
thread cannot be killed at all. The only bound that always works is to run the cleaner in a
process that can be killed. :class:`BoundedCleaner` keeps one persistent helper interpreter per
cleaner (started on first use with :mod:`subprocess`, not :mod:`multiprocessing`, so it works in
a process-pool child, a thread-pool thread and a daemonic Dask worker alike, where
``multiprocessing`` refuses to start children), streams records to it over a pipe and waits for
each answer with a deadline. A record past the deadline becomes
``Drop("cleaner_timeout", record)``; the helper is killed and a fresh one starts for the next
record, so the input goes on. A record larger than ``max_input`` never reaches the cleaner:
``Drop("record_too_large", record)``. A helper that dies (segfault, out of memory) costs the one
record (``cleaner_crashed``), again without ending the input.

The helper dies with its parent: it exits on end of input on its stdin, and asks the kernel
(:func:`core.lifeline.die_with_parent`) to kill it if the parent is killed while it is busy in C.

Cost (measured with ``python -m core.bounded``, identity cleaner, on a 2-core machine shared
with other jobs, so ranges): a round trip costs 15-70 us for a 100-character record, 35-85 us
for a 10 KB one and 3-6 ms for 1 MB; a helper starts in 45-180 ms (plus the cleaner's own
imports, which are not charged to any record), paid once per reader and again after each
timeout. Typical cleaners spend
milliseconds per record (mwparserfromhell on an article, a LaTeX paper, a web page), so the bound
costs a few per cent at most. For cleaners that are cheaper than a round trip and whose time is
known to be bounded for small inputs (polynomial, not backtracking), ``inline_below`` runs
records below that size in this process without the helper; it is off by default because it is
only as safe as that claim.

A :class:`BoundedCleaner` is not shared between threads: make one per reader (it holds a lock
anyway, so sharing is correct, only serial).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import IO, Any, Generic, TypeVar

from core import lifeline
from core.document import Drop

R = TypeVar("R")

#: Length prefix of every frame on the pipe (unsigned 64-bit, big-endian).
_HEADER = struct.Struct(">Q")

#: Defaults sized for document cleaners: a page, a paper or a web page cleans in well under a
#: second; 30 s is ~1000x a normal record and still lets a whole input finish.
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_INPUT = 16 << 20
#: How long a new helper may take to start and import the cleaner's module (not a record's time).
STARTUP_TIMEOUT_S = 120.0

#: The helper's bootstrap: take the parent's ``sys.path`` from the first frame, so it imports
#: exactly what the parent would, then serve. Kept tiny because it runs before any import.
_BOOTSTRAP = (
    "import sys,pickle,struct;"
    "h=sys.stdin.buffer.read(8);"
    "sys.path[:]=pickle.loads(sys.stdin.buffer.read(struct.unpack('>Q',h)[0]));"
    "from core.bounded import _serve;_serve()"
)


class CleanerError(RuntimeError):
    """The cleaner raised an exception that could not be sent back as itself (not picklable)."""


def payload_size(args: tuple[Any, ...]) -> int:
    """Size of a record for the input bound: characters or bytes of its str/bytes arguments."""
    return sum(len(arg) for arg in args if isinstance(arg, str | bytes | bytearray | memoryview))


def _write_frame(stream: IO[bytes], data: bytes) -> None:
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


def _serve() -> None:
    """Helper main loop: read (func, args, kwargs) frames, answer ("ok", result) or ("err", exc).

    The protocol pipe is moved off fd 1 first, so a cleaner that prints cannot corrupt it.
    """
    lifeline.die_with_parent()
    _set_memory_limit()
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    functions: dict[bytes, Callable[..., Any]] = {}
    while True:
        header = _read_exact(requests, _HEADER.size)
        if header is None:
            return
        body = _read_exact(requests, _HEADER.unpack(header)[0])
        if body is None:
            return
        func_key, args, kwargs = pickle.loads(body)
        answer: tuple[str, Any]
        try:
            func = functions.get(func_key)
            if func is None:
                func = functions[func_key] = pickle.loads(func_key)
            if args is None:  # the load request: import the cleaner and what it names to preload
                for module in kwargs:
                    importlib.import_module(module)
                answer = ("ok", None)
            else:
                answer = ("ok", func(*args, **kwargs))
        except MemoryError:
            answer = ("oom", None)
        except Exception as exc:  # the cleaner's own error goes back to the caller
            answer = ("err", exc)
        try:
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an unpicklable result or exception
            data = pickle.dumps(("err", CleanerError(f"{type(exc).__name__}: {exc}; {answer[1]!r}"[:2000])))
        _write_frame(answers, data)


class _Helper:
    """One running helper interpreter and the pipes to it."""

    def __init__(self, memory_limit: int | None) -> None:
        env = lifeline.child_env()  # the helper arms its death signal against this process
        if memory_limit:
            env["KINDA_BOUNDED_MEMORY"] = str(memory_limit)
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            close_fds=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests: IO[bytes] = self.process.stdin
        self.answers: IO[bytes] = self.process.stdout
        for stream in (self.requests, self.answers):
            _widen_pipe(stream.fileno())
        _write_frame(self.requests, pickle.dumps(list(sys.path)))
        #: True once the helper closed its end (it died) rather than ran out of time.
        self.ended = False

    def send(self, data: bytes) -> bool:
        """Send one request; False when the helper is gone."""
        try:
            _write_frame(self.requests, data)
        except (BrokenPipeError, OSError):
            self.ended = True
            return False
        return True

    def receive(self, deadline: float) -> bytes | None:
        """The next answer frame, or None on timeout or when the helper died."""
        fd = self.answers.fileno()
        buffer = bytearray()
        needed = _HEADER.size
        have_header = False
        while True:
            while len(buffer) < needed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                ready, _, _ = select.select([fd], [], [], remaining)
                if not ready:
                    return None
                chunk = os.read(fd, max(needed - len(buffer), 1 << 16))
                if not chunk:
                    self.ended = True
                    return None
                buffer += chunk
            if have_header:
                return bytes(buffer)
            needed = _HEADER.unpack(buffer[: _HEADER.size])[0]
            del buffer[: _HEADER.size]
            have_header = True

    def kill(self) -> None:
        """Kill the helper and reap it (a stuck C loop ignores everything but SIGKILL)."""
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.process.wait(timeout=5)
        for stream in (self.requests, self.answers):
            with contextlib.suppress(OSError):
                stream.close()

    def close(self) -> None:
        """Ask the helper to exit (end of input), kill it if it does not."""
        with contextlib.suppress(OSError):
            self.requests.close()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()
        with contextlib.suppress(OSError):
            self.answers.close()


def _widen_pipe(fd: int) -> None:
    """Grow a pipe to 1 MiB (Linux) so a large record crosses in a few system calls, not hundreds."""
    with contextlib.suppress(Exception):
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)


_SHARED = threading.local()


def _shared_holder(key: tuple[Any, ...]) -> list[_Helper | None]:
    """This thread's helper slot for ``key``; a forked child starts afresh.

    A child forked from a process pool inherits this thread's slots, and with them the pipes
    of the parent's helpers: talking to those would interleave two processes' records on one
    pipe, so a different process id means new, empty slots.
    """
    if getattr(_SHARED, "pid", None) != os.getpid():
        _SHARED.pid, _SHARED.holders = os.getpid(), {}
    holders: dict[tuple[Any, ...], list[_Helper | None]] = _SHARED.holders
    return holders.setdefault(key, [None])


def _close_helper(holder: list[_Helper | None]) -> None:
    helper = holder[0]
    holder[0] = None
    if helper is not None:
        helper.close()


class BoundedCleaner(Generic[R]):
    """Call ``func(*args)`` for one record at a time, each under a time and input-size bound.

    ``run(record, *args)`` returns the cleaner's result, or a :class:`Drop` (``cleaner_timeout``,
    ``record_too_large``, ``cleaner_crashed``) naming ``record``. Exceptions the cleaner raises
    are raised again here, so callers keep their own error handling. ``func`` and the arguments
    must pickle (a module-level function, or a ``functools.partial`` of one). ``shared`` keeps
    the helper for the next cleaner of the same function in the same thread (a worker reading
    many small inputs, one e-print each, pays the start-up once, not per input). ``preload`` names
    modules the cleaner imports lazily (``trafilatura``): a new helper imports them before its
    first record, so the import is not charged to that record's time.
    """

    def __init__(
        self,
        func: Callable[..., R],
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_input: int = DEFAULT_MAX_INPUT,
        inline_below: int = 0,
        memory_limit: int | None = None,
        preload: tuple[str, ...] = (),
        shared: bool = False,
    ) -> None:
        self.func = func
        self.shared = shared
        self.preload = preload
        self.timeout_s = timeout_s
        self.max_input = max_input
        self.inline_below = inline_below
        self.memory_limit = memory_limit
        self._func_key = pickle.dumps(func, protocol=pickle.HIGHEST_PROTOCOL)
        self._lock = threading.Lock()
        self._holder: list[_Helper | None]
        if shared:
            self._holder = _shared_holder((self._func_key, memory_limit, preload))
        else:
            self._holder = [None]
            weakref.finalize(self, _close_helper, self._holder)
        #: How many helpers were started (1 + restarts); tests and logs read it.
        self.starts = 0

    def __enter__(self) -> BoundedCleaner[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the helper (a shared one stays for the thread's next reader); ``run`` restarts it."""
        if self.shared:
            return
        with self._lock:
            _close_helper(self._holder)

    def run(self, record: str, *args: Any, size: int | None = None, **kwargs: Any) -> R | Drop:
        """Clean one record: the cleaner's result, or a Drop naming ``record`` if it was bounded."""
        size = payload_size(args) if size is None else size
        if size > self.max_input:
            return Drop("record_too_large", record, f"{size:,} > {self.max_input:,} (cleaner input bound)")
        if size < self.inline_below:
            return self.func(*args, **kwargs)
        request = pickle.dumps((self._func_key, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            return self._round_trip(record, request)

    def _helper(self) -> _Helper:
        helper = self._holder[0]
        if helper is None or helper.process.poll() is not None:
            if helper is not None:
                helper.kill()
            helper = self._holder[0] = _Helper(self.memory_limit)
            self.starts += 1
            self._load(helper)
        return helper

    def _load(self, helper: _Helper) -> None:
        """Import the cleaner in a new helper before any record's clock starts.

        Importing a cleaner's module (lxml, duckdb, mwparserfromhell) can take seconds on a busy
        machine; charged to the first record, it would turn into a false ``cleaner_timeout``.
        """
        request = pickle.dumps((self._func_key, None, list(self.preload)), protocol=pickle.HIGHEST_PROTOCOL)
        answer = helper.receive(time.monotonic() + STARTUP_TIMEOUT_S) if helper.send(request) else None
        status, value = pickle.loads(answer) if answer is not None else ("dead", None)
        if status != "ok":
            helper.kill()
            self._holder[0] = None
            detail = value if status == "err" else f"no answer within {STARTUP_TIMEOUT_S:g} s"
            raise CleanerError(f"the cleaner {self.func!r} could not be loaded in its helper: {detail}")

    def _round_trip(self, record: str, request: bytes) -> R | Drop:
        helper = self._helper()
        deadline = time.monotonic() + self.timeout_s
        answer = helper.receive(deadline) if helper.send(request) else None
        if answer is None:
            helper.kill()
            self._holder[0] = None
            if not helper.ended:
                return Drop("cleaner_timeout", record, f"cleaner ran past {self.timeout_s:g} s; stopped")
            return Drop("cleaner_crashed", record, f"cleaner process died (exit {helper.process.returncode})")
        status, value = pickle.loads(answer)
        if status == "ok":
            return value
        if status == "oom":
            helper.kill()
            self._holder[0] = None
            return Drop("record_too_large", record, f"cleaner ran out of its {self.memory_limit:,}-byte memory bound")
        raise value


def _set_memory_limit() -> None:
    """In the helper: cap its address space when the parent asked for a memory bound."""
    limit = os.environ.get("KINDA_BOUNDED_MEMORY")
    if limit:
        limit_address_space(int(limit))


def address_space_in_use() -> int:
    """This process's address space now, in bytes (Linux ``/proc/self/statm``; 0 elsewhere).

    A worker started by ``multiprocessing``'s spawn imports its parent's main module (a flow
    pulls in Prefect, pydantic, DuckDB...), so its bound is set above what it already maps.
    """
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def limit_address_space(limit: int | None) -> None:
    """Cap this process's address space (``RLIMIT_AS``, soft limit) at ``limit`` bytes; None lifts it.

    The one memory bound of every helper process (this module's helpers and the PDF worker of
    :mod:`sources.formats.pdf_text`): past it an allocation fails, so Python raises ``MemoryError`` and C
    libraries abort, and the caller turns that record into one drop instead of the machine
    swapping or the OOM killer ending the run. Only the soft limit moves (up to the hard one), so
    a persistent worker can take each request's bound.
    """
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = resource.RLIM_INFINITY if limit is None else limit
    if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft > hard):
        soft = hard
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _benchmark(rounds: int = 2000) -> None:
    """Print the per-record overhead of a round trip (``python -m core.bounded``)."""
    cleaner: BoundedCleaner[str] = BoundedCleaner(str.strip)
    started = time.perf_counter()
    cleaner.run("warm-up", "x")
    print(f"helper start + first record: {1000 * (time.perf_counter() - started):.1f} ms")
    for size in (100, 10_000, 1_000_000):
        text = "a" * size
        count = rounds if size < 1_000_000 else 50
        started = time.perf_counter()
        for _ in range(count):
            cleaner.run("r", text)
        per = (time.perf_counter() - started) / count
        print(f"{size:>9,} chars: {1e6 * per:8.1f} us per record")
    cleaner.close()


if __name__ == "__main__":
    _benchmark()
