"""One time budget per slow test, shared by pytest-timeout and the subprocesses the test waits for.

Why: pytest-timeout ends a test at its limit (300 s unless marked) whatever the subprocess limits
inside it say; a test that gives its subprocess 600 s under a 300 s test limit is ended with no
message of its own halfway (``tests/ops/test_offline.py``, issue 34), and a test whose steps each
have their own fixed limit fails at an arbitrary step on a loaded machine while most of its time is
left (the fresh-venv ``pip install`` hit its 900 s at load 6-29). Here the test's mark comes from
its budget (:func:`timeout_for`: the budget plus a margin for set-up and the failure report), and
each wait takes what is left of that budget (:meth:`Deadline.left`), so the two agree by
construction: a step may run as long as the test still has time, never longer.
"""

from __future__ import annotations

import time

import pytest

#: Beyond a test's budget: fixtures, teardown, and the failure message of a step that ran out.
MARGIN_S = 60


def timeout_for(budget_s: float) -> pytest.MarkDecorator:
    """pytest-timeout's mark for a test whose waits share ``budget_s`` seconds."""
    return pytest.mark.timeout(int(budget_s + MARGIN_S))


class Deadline:
    """The time left of a test's budget; started when the test starts waiting."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self.end = time.monotonic() + budget_s

    def left(self, cap: float | None = None) -> float:
        """Seconds the next wait may take: what is left (at most ``cap``); fails the test when none is."""
        left = self.end - time.monotonic()
        if left <= 1:
            pytest.fail(f"the test's {self.budget_s:.0f} s budget is spent")
        return left if cap is None else min(cap, left)
