"""The fidelity corpus's score: per source, how many hand-written cases keep exactly the expected text.

Every case is one test marked ``@pytest.mark.fidelity("<source>")``. The worker that runs a case tags
its report with the source (``user_properties`` travel from pytest-xdist workers to the controller);
whichever process prints the summary counts the call-phase outcomes and prints one table, so a
regression shows as a score, not only as a red test id (issue 31: "prints a per-source score").
Imported by tests/conftest.py, where pytest finds the hooks by name.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Generator
from typing import Any

import pytest

_PROPERTY = "fidelity_source"
_SCORES: dict[str, list[int]] = defaultdict(lambda: [0, 0])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Tag each phase's report of a fidelity case with its source."""
    outcome = yield
    marker = item.get_closest_marker("fidelity")
    if marker is not None and marker.args:
        outcome.get_result().user_properties.append((_PROPERTY, str(marker.args[0])))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count a case once: on its call phase, or on a setup that failed (a case that could not run is a miss)."""
    source = dict(report.user_properties).get(_PROPERTY)
    if source is None:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed and not report.skipped):
        score = _SCORES[str(source)]
        score[1] += 1
        score[0] += int(report.passed)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print ``source: matched/total`` for every source whose fidelity cases ran."""
    if not _SCORES:
        return
    terminalreporter.section("fidelity corpus: cases whose kept text matches the expected text")
    for source in sorted(_SCORES):
        matched, total = _SCORES[source]
        terminalreporter.write_line(f"{source:>14}: {matched}/{total}")
