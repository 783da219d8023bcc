"""Prefect's home is the checkout's ``.prefect/``, never the folder a command is started from (issue 25 item 4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_prefect_home_is_the_checkouts_not_the_current_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_HOME"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", "import os, flows; print(os.environ['PREFECT_HOME'])"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True)
    assert Path(done.stdout.strip()) == REPO / ".prefect"
    assert list(tmp_path.iterdir()) == []


def test_a_users_prefect_home_is_kept(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PREFECT_HOME": str(tmp_path / "mine")}
    done = subprocess.run([sys.executable, "-c", "import os, flows; print(os.environ['PREFECT_HOME'])"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == str(tmp_path / "mine")
