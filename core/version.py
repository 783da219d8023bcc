"""Versions: the recipe version (what the pipeline writes) and the code version (plus git commit).

The recipe version lives here, at the bottom of the import graph, so the pure core never has
to import the ``kinda`` command package. Bump it whenever a change alters what the pipeline
writes: resume markers and the manifest key finished work on it (a change that does not alter
output keeps the version, so finished work stays finished).
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

__version__ = "0.2.0"  # 0.2.0: StackExchange bodies through html_text (text after HTML comments kept)

_REPO_ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def git_commit() -> str | None:
    """Return the checkout's commit (with ``-dirty``), or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=_REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def code_version() -> str:
    """Return e.g. ``0.2.0+g1a2b3c4d5e6f``: what produced a row, for lineage in the manifest."""
    commit = git_commit()
    return f"{__version__}+g{commit}" if commit else __version__
