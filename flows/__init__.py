"""Prefect flows: thin, top-down recipes over the pure logic in ``sources``, ``tasks`` and ``dedupe``.

Importing this package sets offline-friendly Prefect defaults before Prefect itself is imported
(no telemetry, a project-local PREFECT_HOME), unless the user set them already.
"""

import os
from pathlib import Path


def project_prefect_home() -> Path | None:
    """``.prefect/`` of the source checkout these flows run from, wherever the command is started.

    Never the current folder: a command run from another project's folder must not leave a
    Prefect database there. ``None`` for an installed (non-editable) package, where Prefect's
    own default, ``~/.prefect``, applies.
    """
    root = Path(__file__).resolve().parent.parent
    return root / ".prefect" if (root / "pyproject.toml").is_file() else None


_home = project_prefect_home()
if _home is not None:
    os.environ.setdefault("PREFECT_HOME", str(_home))
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT", "false")
os.environ.setdefault("PREFECT_LOGGING_LOG_PRINTS", "true")
