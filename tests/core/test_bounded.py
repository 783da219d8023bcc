"""The per-record bound: C code that never returns, huge records, crashes; the input goes on.

The cleaners here are standard-library callables (``re.fullmatch`` with a catastrophic pattern
backtracks inside the C regex engine, where no signal can interrupt it), so the helper process
imports them exactly as it would a source's cleaner.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

from core.bounded import BoundedCleaner, CleanerError
from core.document import Drop

#: Exponential backtracking in C: ``(a+)+b`` against a run of a's without a b.
CATASTROPHIC = functools.partial(re.sub, r"(a+)+b", "X")


def _hang_then_continue() -> list[str]:
    """A hanging record between two good ones, as a reader in any runner would see them."""
    with BoundedCleaner(CATASTROPHIC, timeout_s=0.5) as cleaner:
        results = [cleaner.run(f"r{i}", text) for i, text in enumerate(["aab", "a" * 60, "ab"])]
    return [r.reason if isinstance(r, Drop) else r for r in results]


def test_c_loop_times_out_and_next_record_is_cleaned(cpu_clock) -> None:
    started, wall = cpu_clock(), time.monotonic()
    with BoundedCleaner(CATASTROPHIC, timeout_s=0.5) as cleaner:
        first = cleaner.run("page 1", "aab")
        stuck = cleaner.run("page 2 (catastrophic)", "a" * 60)
        after = cleaner.run("page 3", "aaab")
        assert cleaner.starts == 2  # killed and restarted once
    assert first == "X"
    assert isinstance(stuck, Drop)
    assert stuck.reason == "cleaner_timeout" and stuck.record == "page 2 (catastrophic)"
    assert "0.5 s" in stuck.detail
    assert after == "X"
    assert cpu_clock() - started < 5  # two helper start-ups and the 0.5 s bound; unbounded it never ends
    assert time.monotonic() - wall < 60  # generous: a loaded machine stretches wall time


def test_sleeping_cleaner_is_stopped_at_its_deadline() -> None:
    with BoundedCleaner(time.sleep, timeout_s=0.3) as cleaner:
        started = time.monotonic()
        result = cleaner.run("slow", 600, size=0)
        elapsed = time.monotonic() - started
    assert isinstance(result, Drop) and result.reason == "cleaner_timeout"
    assert 0.3 <= elapsed < 30  # a sleep burns no CPU, so wall it is: generous for a loaded machine


def test_huge_record_is_dropped_without_reaching_the_cleaner() -> None:
    with BoundedCleaner(str.upper, max_input=1000) as cleaner:
        huge = cleaner.run("post 7", "x" * 5000)
        assert cleaner.starts == 0  # the cleaner never saw it
        small = cleaner.run("post 8", "ok")
    assert isinstance(huge, Drop) and huge.reason == "record_too_large" and huge.record == "post 7"
    assert "5,000" in huge.detail
    assert small == "OK"


def test_crash_costs_one_record() -> None:
    with BoundedCleaner(os._exit) as cleaner:
        crashed = cleaner.run("bad", 3, size=0)
    assert isinstance(crashed, Drop) and crashed.reason == "cleaner_crashed"
    assert "exit 3" in crashed.detail
    with BoundedCleaner(abs) as cleaner:
        assert cleaner.run("good", -2, size=0) == 2


def test_cleaner_exceptions_are_raised_to_the_caller() -> None:
    with BoundedCleaner(int) as cleaner, pytest.raises(ValueError, match="invalid literal"):
        cleaner.run("row", "not a number")


def test_memory_bound_turns_a_blow_up_into_a_drop() -> None:
    with BoundedCleaner(bytearray, memory_limit=1 << 30) as cleaner:
        blown = cleaner.run("macro bomb", 8 << 30, size=0)
        assert isinstance(blown, Drop) and blown.reason == "record_too_large"
        assert cleaner.run("fine", 3, size=0) == bytearray(3)


def test_running_out_of_memory_without_a_bound_is_a_drop_too() -> None:
    with BoundedCleaner(bytearray) as cleaner:  # no memory_limit: the allocation itself fails
        blown = cleaner.run("macro bomb", 1 << 62, size=0)
        assert isinstance(blown, Drop) and blown.reason == "record_too_large" and "out of memory" in blown.detail
        assert cleaner.run("fine", 2, size=0) == bytearray(2)


def test_a_helper_that_dies_while_loading_says_so(tmp_path, monkeypatch) -> None:
    """Not a made-up timeout: the error names the exit (a bound too small to map a library, say)."""
    (tmp_path / "dies_on_import.py").write_text("import os\nos._exit(3)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))  # the helper takes the parent's sys.path
    with BoundedCleaner(str.upper, preload=("dies_on_import",)) as cleaner, \
            pytest.raises(CleanerError, match=r"exited while loading \(exit 3\)"):
        cleaner.run("first", "x" * 100, size=100)


def test_cleaner_output_on_stdout_does_not_corrupt_answers() -> None:
    with BoundedCleaner(print) as cleaner:
        assert cleaner.run("noisy", "hello from the cleaner") is None
        assert cleaner.run("noisy 2", "again") is None


def test_inline_fast_path_runs_small_records_in_process() -> None:
    with BoundedCleaner(str.upper, inline_below=10) as cleaner:
        assert cleaner.run("tiny", "abc") == "ABC"
        assert cleaner.starts == 0
        assert cleaner.run("bigger", "abcdefghijkl") == "ABCDEFGHIJKL"
        assert cleaner.starts == 1


EXPECTED = ["X", "cleaner_timeout", "X"]


def test_works_in_a_thread_pool() -> None:
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(lambda _: _hang_then_continue(), range(2))) == [EXPECTED, EXPECTED]


def test_works_in_a_process_pool_child() -> None:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        assert pool.submit(_hang_then_continue).result(timeout=30) == EXPECTED


def _in_daemon(queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    queue.put(_hang_then_continue())


def test_works_in_a_daemonic_worker_like_dask() -> None:
    """Dask's nanny runs workers as daemonic processes, where multiprocessing cannot start children."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    worker = context.Process(target=_in_daemon, args=(queue,), daemon=True)
    worker.start()
    assert queue.get(timeout=30) == EXPECTED
    worker.join(10)


def test_helper_dies_with_a_killed_parent() -> None:
    """A parent killed while its helper is stuck in C leaves no orphan burning a core."""
    script = textwrap.dedent(
        """
        import functools, re, sys
        from core.bounded import BoundedCleaner, CleanerError
        cleaner = BoundedCleaner(functools.partial(re.sub, r"(a+)+b", ""), timeout_s=600)
        cleaner.run("warm", "ab")
        print(cleaner._holder.helper.process.pid, flush=True)
        cleaner.run("stuck", "a" * 60)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    helper_pid = int(parent.stdout.readline())
    time.sleep(0.3)
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(helper_pid):
        time.sleep(0.05)
    assert not _alive(helper_pid)


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie awaiting its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False



def _shared_pid() -> int:
    cleaner = BoundedCleaner(abs, shared=True)
    assert cleaner.run("r", -5, size=0) == 5
    helper = cleaner._holder.helper
    assert helper is not None
    return helper.process.pid


def test_shared_helper_serves_the_next_reader_of_the_thread() -> None:
    first = _shared_pid()
    again = BoundedCleaner(abs, shared=True)
    assert again.run("r", -1, size=0) == 1
    assert again.starts == 0 and _shared_pid() == first  # no second start-up
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        child = pool.submit(_shared_pid).result(timeout=30)
    assert child != first  # a forked child never talks to its parent's helper
    assert _shared_pid() == first
