"""The one helper life cycle: messages streamed without loss, the mark read after a crash, restarts.

The helpers run this module's functions (imported by file name from its folder, as a helper
imports any ``"module:function"`` on the parent's ``sys.path``).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from core.helper_process import Channel, HelperEnded, HelperSlot, HelperTimeout

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
