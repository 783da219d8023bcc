"""Prefect flows: thin, top-down recipes over the pure logic in ``sources``, ``tasks`` and ``dedupe``.

Importing this package sets offline-friendly Prefect defaults before Prefect itself is imported
(no telemetry, a project-local PREFECT_HOME), unless the user set them already.
"""

import os
from pathlib import Path

os.environ.setdefault("PREFECT_HOME", str(Path.cwd() / ".prefect"))
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT", "false")
os.environ.setdefault("PREFECT_LOGGING_LOG_PRINTS", "true")
