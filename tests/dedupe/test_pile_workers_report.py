"""``benchmarks/pile_scale.py --compare-workers`` tells the parts' CPU from everything else's.

The split is what the worker comparison reports (the parts' window, the CPU of each other
process during it); these tests run it on a real process tree and on known samples, fast.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.benchmark_modules import load_benchmark

REPO = Path(__file__).resolve().parents[2]
pytest.importorskip("psutil")

#: A stand-in for a Dask worker (its command line names ``spawn_main``, as a nanny's child's does):
#: its main thread and one other thread each burn a known amount of CPU, the other thread first.
FAKE_WORKER = """
import threading, time
spawn_main = 'stand-in'
def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
other = threading.Thread(target=burn, args=(0.6,))
other.start(); other.join()
burn(0.3)
time.sleep(0.5)
"""


def _pile_scale() -> ModuleType:
    """The benchmark script as a module, loaded by its file (``benchmarks/`` stays off ``sys.path``)."""
    return load_benchmark("pile_scale")


def test_a_workers_main_thread_is_told_from_its_task_threads() -> None:
    pile_scale = _pile_scale()
    launcher = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])",
                                 sys.executable, "-c", FAKE_WORKER])
    with pile_scale.TreeSampler(launcher.pid, every_s=0.1) as sampler:
        launcher.wait()
    split = pile_scale.cpu_split(pile_scale.Measured(0.0, 0.0, 0.0, 0, "", sampler.samples)).total
    assert set(sampler.roles.values()) == {"dask worker"}
    assert split[pile_scale.TASKS] == pytest.approx(0.6, abs=0.15)
    assert split[pile_scale.WORKER_MAIN] >= 0.3  # its burn, and the interpreter's start before it


def test_the_window_is_where_the_parts_ran_and_the_rest_is_counted_in_it() -> None:
    pile_scale = _pile_scale()
    Sample, Measured = pile_scale.Sample, pile_scale.Measured
    # flow pid 1, server pid 2, one worker pid 3 (process CPU, main thread CPU)
    rows = [(0.0, 1.0, 1.0, 0.0, 0.0), (1.0, 2.0, 2.0, 1.0, 1.0), (2.0, 2.1, 2.1, 1.5, 1.2),
            (3.0, 2.2, 2.2, 4.5, 1.2), (4.0, 2.3, 2.3, 7.5, 1.3), (5.0, 3.0, 2.4, 7.6, 1.4)]
    samples = [Sample(at, {1: ("flow", flow, flow), 2: ("prefect server", server, server),
                           3: ("dask worker", worker, main)}) for at, flow, server, worker, main in rows]
    split = pile_scale.cpu_split(Measured(14.0, 5.5, 1.0, 0, "", samples))
    assert split.window_s == pytest.approx(3.0)  # from the last poll with no part CPU to the first with all of it
    assert split.in_window["flow"] == pytest.approx(0.3)
    assert split.in_window[pile_scale.TASKS] == pytest.approx(6.2)
    assert split.in_window[pile_scale.WORKER_MAIN] == pytest.approx(0.3)
    assert split.total[pile_scale.TASKS] == pytest.approx(6.2)
    assert split.total[pile_scale.UNSAMPLED] == pytest.approx(14.0 - 3.0 - 2.4 - 7.6)


def test_a_process_that_ended_keeps_its_last_poll() -> None:
    pile_scale = _pile_scale()
    Sample, Measured = pile_scale.Sample, pile_scale.Measured
    samples = [Sample(0.0, {1: ("flow", 1.0, 1.0), 3: ("dask worker", 0.5, 0.5)}),
               Sample(1.0, {1: ("flow", 1.5, 1.5), 3: ("dask worker", 3.5, 0.5)}),
               Sample(2.0, {1: ("flow", 2.0, 2.0)})]  # the worker has exited
    split = pile_scale.cpu_split(Measured(6.0, 2.0, 1.0, 0, "", samples))
    assert split.total[pile_scale.TASKS] == pytest.approx(3.0)
    assert split.total["flow"] == pytest.approx(2.0)


def test_the_marginal_build_rate_cancels_the_fixed_cost() -> None:
    """Two sizes that share a fixed cost of 20 CPU-s and index at 80 MB/CPU-s give 80 at the margin,
    where the whole runs' rates (40 and ~67) do not."""
    pile_scale = _pile_scale()
    small = {"text_mb": 1600, "build_cpu_s": 20 + 1600 / 80}
    large = {"text_mb": 8000, "build_cpu_s": 20 + 8000 / 80}
    assert pile_scale.marginal_rate(small, large) == pytest.approx(80.0)
    assert pile_scale.marginal_rate(large, large) != pile_scale.marginal_rate(large, large)  # no extra CPU: NaN
