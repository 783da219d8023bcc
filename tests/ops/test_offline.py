"""Nothing calls the internet unless asked: the guard that proves it catches a real attempt, and our
default settings turn Prefect's analytics off.

The main job itself (``make demo``: the whole recipe on its sample) runs under the guard in
``tests/test_readme.py``, whose README build is that job: one sample run checked for both the
README and the network, where two runs cost the suite ~85 s more."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.offline_guard import attempts, guarded_env, user_env


@pytest.fixture
def guarded(tmp_path: Path) -> tuple[dict[str, str], Path]:
    return guarded_env(tmp_path, user_env(tmp_path, dict(os.environ)))


def test_the_guard_catches_a_real_attempt(guarded: tuple[dict[str, str], Path]) -> None:
    env, log = guarded
    code = "import socket\ntry:\n    socket.create_connection(('192.0.2.1', 443), timeout=1)\nexcept OSError:\n    pass"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    assert attempts(log)[0]["host"] == "192.0.2.1"


def test_default_settings_turn_analytics_off(tmp_path: Path) -> None:
    code = ("import flows, os\nfrom prefect.settings import get_current_settings as s\n"
            "print(os.environ['DO_NOT_TRACK'], s().server.analytics_enabled, s().server.ui.show_promotional_content,"
            " s().home)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=user_env(tmp_path, dict(os.environ)),
                          capture_output=True, text=True, check=True, timeout=60)
    dnt, analytics, promo, _ = done.stdout.split()
    assert (dnt, analytics, promo) == ("1", "False", "False")
