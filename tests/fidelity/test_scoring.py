"""The score plugin counts marked cases per source (run in a child pytest, as a user's run would)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_score_counts_matches_and_misses_per_source(tmp_path: Path) -> None:
    case = tmp_path / "test_cases.py"
    case.write_text(
        "import pytest\n"
        "@pytest.mark.fidelity('alpha')\n@pytest.mark.parametrize('x', [1, 2, 3])\n"
        "def test_a(x):\n    assert x != 3\n"
        "@pytest.mark.fidelity('beta')\ndef test_b():\n    assert True\n"
    )
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.fidelity.scoring",
                          "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"), str(case)],
                         cwd=REPO, capture_output=True, text=True, timeout=240)
    assert "alpha: 2/3" in run.stdout, run.stdout + run.stderr
    assert "beta: 1/1" in run.stdout, run.stdout + run.stderr
