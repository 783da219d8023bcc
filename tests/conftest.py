"""Shared test fixtures: where the optional real-data samples are, and offline Prefect settings."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
REALDATA = Path(os.environ.get("KINDA_REALDATA", REPO_ROOT.parent / "shared" / "realdata"))

# Tests get their own Prefect home (its SQLite database, settings), not the user's project-local one.
os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="kinda-test-prefect-")
os.environ.setdefault("DO_NOT_TRACK", "1")
# A loaded 2-core machine can take more than the default to start Prefect's temporary server.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT", "false")


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The ``../shared/realdata`` folder; tests using it skip cleanly where it is absent."""
    if not REALDATA.is_dir():
        pytest.skip(f"real-data samples not found at {REALDATA}")
    return REALDATA


@pytest.fixture(scope="session")
def prefect_api_url():
    """One embedded Prefect API for every in-process flow test (starting one costs ~10 s)."""
    from flows._runtime import prefect_api

    with prefect_api() as url:
        yield url
