"""Shared test fixtures: real-data samples, offline Prefect settings, the toy tokenizer, the CPU clock."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# Hypothesis fails an example that takes over 200 ms of wall time by default: a wall-clock bound
# that a loaded machine (load 10 on 2 cores) breaks. No deadline, for every property test
# (``@settings(...)`` on a test keeps this unless it sets ``deadline`` itself).
settings.register_profile("kinda", deadline=None)
settings.load_profile("kinda")

REPO_ROOT = Path(__file__).resolve().parent.parent
REALDATA = Path(os.environ.get("KINDA_REALDATA", REPO_ROOT.parent / "shared" / "realdata"))

# Tests get their own Prefect home (its SQLite database, settings), not the user's project-local one.
os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="kinda-test-prefect-")
os.environ.setdefault("DO_NOT_TRACK", "1")
# A loaded 2-core machine can take more than the default to start Prefect's temporary server.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT", "false")

# Prefect binds its console log handler to the sys.stderr of the moment it is first imported. The
# flows import it on first use (flows.runtime.lazy), which inside a test using capsys would bind it to
# that test's stream, closed when the test ends ("I/O operation on closed file" in later tests).
import prefect  # noqa: E402, F401

# The fidelity corpus's per-source score (tests/fidelity/scoring.py): hooks found here by name, so the
# xdist controller, which loads this conftest but collects nothing, prints the table.
from tests.fidelity.scoring import (  # noqa: E402, F401
    pytest_runtest_logreport,
    pytest_runtest_makereport,
    pytest_terminal_summary,
)
from tests.toy import toy_texts, train_toy_tokenizer  # noqa: E402

#: ``make test`` runs the suite on two workers (pytest-xdist, ``--dist loadfile``: a module's tests
#: and its module fixtures stay on one worker) that take the test files in collection order
#: (``--no-loadscope-reorder``: xdist's default reorders by test count, a 1-test file last); the
#: longest go first so that the many short ones fill in at the end, and neither worker is left
#: alone with a long file when the other runs out. The longest files, longest first (a serial run's
#: durations, 2026-11-25; re-ranked 2026-11-29 from make test's), then the other files that start a Prefect API, then the rest.
SLOWEST_FILES = ("ops/test_install.py", "test_readme.py", "flows/test_adding_a_source.py", "ops/test_prefect_server.py",
                 "flows/test_llama.py", "benchmarks/test_corpus_cost.py", "ops/test_ray.py", "faults/test_kill9.py",
                 "flows/test_llama_g2_sample.py", "loader/test_exit.py", "ops/test_dask.py", "ops/test_slurm.py",
                 "sources/test_wikipedia.py", "sources/test_wikipedia_multistream.py", "sources/test_scibooks.py",
                 "dedupe/test_pile_workers.py")
TESTS = Path(__file__).resolve().parent


def _file_rank(item: pytest.Item) -> int:
    """Where ``item``'s file goes: its place in :data:`SLOWEST_FILES`, then Prefect's, then the rest."""
    name = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
    if name in SLOWEST_FILES:
        return SLOWEST_FILES.index(name)
    return len(SLOWEST_FILES) + (0 if item.get_closest_marker("prefect") else 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the test files by :func:`_file_rank`: a stable sort, so each file's tests keep their order."""
    rank: dict[Path, int] = {}
    for item in items:
        rank[item.path] = min(rank.get(item.path, len(SLOWEST_FILES) + 1), _file_rank(item))
    items.sort(key=lambda item: rank[item.path])


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The ``../shared/realdata`` folder; tests using it skip cleanly where it is absent."""
    if not REALDATA.is_dir():
        pytest.skip(f"real-data samples not found at {REALDATA}")
    return REALDATA


@pytest.fixture(scope="session")
def prefect_api_url():
    """One embedded Prefect API for every in-process flow test (starting one costs ~10 s)."""
    from flows.runtime.runner import prefect_api

    with prefect_api() as url:
        yield url


@pytest.fixture(scope="session")
def toy_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real byte-level BPE (300 ids, EOS ``<|endoftext|>``), trained once for every test that needs
    *a* tokenizer (``tests/toy.py``). Read-only: a test that edits a tokenizer copies it first."""
    return train_toy_tokenizer(tmp_path_factory.mktemp("toy-tokenizer") / "tokenizer.json", toy_texts(200, seed=99))


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and every child it started, finished or not.

    Bound tests read this clock, not the wall: a loaded machine (load 10 on 2 cores) stretches
    wall time several-fold, but a cleaner killed at its deadline cannot have burnt more CPU than
    the deadline, whatever the load. Finished children count through ``os.times()`` (a reaped
    helper's whole life), live ones through ``/proc/<pid>/stat`` (their own time plus the children
    they reaped), so a difference of two readings is what the process tree spent in between, even
    when a helper alive at the first reading is killed and reaped before the second.
    """
    own = os.times()
    total = own.user + own.system + own.children_user + own.children_system
    tick = os.sysconf("SC_CLK_TCK")
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process ended while we looked
            continue
        fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        if int(fields[1]) == me:
            total += sum(int(ticks) for ticks in fields[11:15]) / tick  # utime stime cutime cstime
    return total


@pytest.fixture
def cpu_clock():
    """:func:`tree_cpu_seconds`, for tests of per-record time bounds (see its docstring)."""
    return tree_cpu_seconds
