"""The one helper life cycle: messages streamed without loss, the mark read after a crash, restarts.

The helpers run this module's functions (imported by file name from its folder, as a helper
imports any ``"module:function"`` on the parent's ``sys.path``).
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from core import helper_process
from core.helper_process import Channel, HelperEnded, HelperSlot, HelperStartError, HelperTimeout

TARGETS = Path(__file__).stem


def stream_then_abort(channel: Channel) -> None:
    """Answer a count with that many messages back to back, then abort on the item marked."""
    count = channel.recv()
    for number in range(count):
        channel.send(("item", number))
    channel.send(("end", None))
    channel.mark(channel.recv())
    os.abort()


def wait_forever(channel: Channel) -> None:
    channel.recv()
    signal.pause()


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


def test_streamed_messages_arrive_whole_and_the_mark_outlives_a_crash() -> None:
    slot = HelperSlot(f"{TARGETS}:stream_then_abort", mark=True)
    helper, started = slot.running()
    assert started and helper.marked == -1
    helper.send(200)  # many frames in the pipe at once: none may be read past and lost
    assert [helper.receive(60) for _ in range(201)] == [("item", n) for n in range(200)] + [("end", None)]
    helper.send(7)
    with pytest.raises(HelperEnded):
        helper.receive(60)
    assert helper.exit_code() == -signal.SIGABRT and helper.marked == 7  # which item killed it
    again, started = slot.running()
    assert started and again is not helper and slot.starts == 2 and again.marked == -1
    slot.kill()
    assert not again.alive


def test_a_helper_past_its_deadline_is_killed_and_replaced() -> None:
    slot = HelperSlot(f"{TARGETS}:wait_forever")
    helper, _ = slot.running()
    helper.send("go")
    with pytest.raises(HelperTimeout):
        helper.receive(0.2)
    slot.kill()
    assert helper.exit_code() == -signal.SIGKILL
    assert slot.running()[1] and slot.starts == 2
    slot.close()


def test_a_helper_that_dies_at_once_leaves_no_process_or_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up message fails (the child exited): the child is reaped and both pipes closed."""
    started: list[subprocess.Popen[bytes]] = []

    class Recorded(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    monkeypatch.setattr(helper_process, "_BOOTSTRAP", "import os;os._exit(3)")
    target = "x" * (4 << 20)  # a start-up message larger than the pipe: the write meets the closed end
    with pytest.raises(HelperStartError, match=r"ended before it took its start-up message \(exit 3\)"):
        HelperSlot(target, mark=True).running()
    [process] = started
    assert process.returncode == 3 and process.stdin is not None and process.stdout is not None
    assert process.stdin.closed and process.stdout.closed
