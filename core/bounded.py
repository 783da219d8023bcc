"""Run a per-record cleaner under a wall-time and an input-size bound.

The cleaners that stall are C code (mwparserfromhell's tokenizer is roughly quadratic on
unclosed markup; ``re`` backtracks exponentially; lxml loops inside C), so the bound is a helper
process that can be killed (:mod:`core.helper_process`: the one life cycle of every helper).
:class:`BoundedCleaner` keeps one persistent helper per cleaner, streams records to it and waits
for each answer with a deadline. A record past the deadline becomes
``Drop("cleaner_timeout", record)``; the helper is killed and a fresh one starts for the next
record, so the input goes on. A record larger than ``max_input`` never reaches the cleaner:
``Drop("record_too_large", record)``. A helper that dies (segfault, out of memory) costs the one
record (``cleaner_crashed``), again without ending the input. The HTML extractor
(:func:`sources.formats.html_text.bounded_extractor`) is such a cleaner too.

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

import importlib
import pickle
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from core.document import Drop
from core.helper_process import Channel, HelperEnded, HelperProcess, HelperSlot, HelperTimeout, thread_helper

R = TypeVar("R")

#: Defaults sized for document cleaners: a page, a paper or a web page cleans in well under a
#: second; 30 s is ~1000x a normal record and still lets a whole input finish.
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_INPUT = 16 << 20
#: How long a new helper may take to start and import the cleaner's module (not a record's time).
STARTUP_TIMEOUT_S = 120.0
#: What the helper runs (:func:`_serve`).
_TARGET = f"{__name__}:_serve"


class CleanerError(RuntimeError):
    """The cleaner raised an exception that could not be sent back as itself (not picklable)."""


def payload_size(args: tuple[Any, ...]) -> int:
    """Size of a record for the input bound: characters or bytes of its str/bytes arguments."""
    return sum(len(arg) for arg in args if isinstance(arg, str | bytes | bytearray | memoryview))


def _serve(channel: Channel) -> None:
    """Helper main loop: read (func, args, kwargs) frames, answer ("ok", result) or ("err", exc)."""
    functions: dict[bytes, Callable[..., Any]] = {}
    while True:
        try:
            func_key, args, kwargs = pickle.loads(channel.recv_bytes())
        except EOFError:
            return
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
        channel.send_bytes(data)


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
        self._holder: HelperSlot
        if shared:
            self._holder = thread_helper((_TARGET, self._func_key, memory_limit, preload),
                                         lambda: HelperSlot(_TARGET, memory_limit=memory_limit))
        else:
            self._holder = HelperSlot(_TARGET, memory_limit=memory_limit)
            weakref.finalize(self, self._holder.close)
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
            self._holder.close()

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

    def _helper(self) -> HelperProcess:
        helper, started = self._holder.running()
        if started:
            self.starts += 1
            self._load(helper)
        return helper

    def _load(self, helper: HelperProcess) -> None:
        """Import the cleaner in a new helper before any record's clock starts.

        Importing a cleaner's module (lxml, duckdb, mwparserfromhell) can take seconds on a busy
        machine; charged to the first record, it would turn into a false ``cleaner_timeout``.
        """
        request = pickle.dumps((self._func_key, None, list(self.preload)), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            helper.send_bytes(request)
            status, value = helper.receive(STARTUP_TIMEOUT_S)
        except HelperTimeout:
            status, value = "dead", f"no answer within {STARTUP_TIMEOUT_S:g} s"
        except HelperEnded:  # e.g. an address-space bound too small to map a native library
            status, value = "dead", f"the helper exited while loading (exit {helper.exit_code()})"
        if status == "oom":
            value = "it ran out of memory importing its modules"
        if status != "ok":
            self._holder.kill()
            raise CleanerError(f"the cleaner {self.func!r} could not be loaded in its helper: {value}")

    def _round_trip(self, record: str, request: bytes) -> R | Drop:
        helper = self._helper()
        try:
            helper.send_bytes(request)
            status, value = helper.receive(self.timeout_s)
        except HelperTimeout:
            self._holder.kill()
            return Drop("cleaner_timeout", record, f"cleaner ran past {self.timeout_s:g} s; stopped")
        except HelperEnded:
            self._holder.kill()
            return Drop("cleaner_crashed", record, f"cleaner process died (exit {helper.process.returncode})")
        if status == "ok":
            return value
        if status == "oom":
            self._holder.kill()
            bound = f"its {self.memory_limit:,}-byte memory bound" if self.memory_limit is not None else "memory"
            return Drop("record_too_large", record, f"cleaner ran out of {bound}")
        raise value


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
