"""StackExchange sorts a site's rows in a scratch folder under ``--out``, never the system temp folder.

Like Reddit's (issue 24 item 6): a run's files stay under the root its lock guards, what a killed
run left there is swept before staging, and a clean run leaves neither scratch nor ``_staging``.
The site is the offline sample's real ``.7z`` dump (py7zr, ``Posts.xml``), run as a user runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from core.manifest import Manifest
from sources.samples.stackexchange import write_sample_inputs

REPO = Path(__file__).resolve().parent.parent.parent


def test_site_is_grouped_under_out_and_leaves_no_scratch(prefect_api_url: str, tmp_path: Path) -> None:
    sites = write_sample_inputs(tmp_path / "dumps")
    out, tmpdir = tmp_path / "out", tmp_path / "tmp"
    tmpdir.mkdir()
    crashed = out / "_staging" / "stackexchange_scratch" / "stackexchange-killed"  # a kill -9 mid-site
    crashed.mkdir(parents=True)
    (crashed / "rows-00000.parquet").write_bytes(b"PAR1 cut off")
    env = {**os.environ, "PREFECT_API_URL": prefect_api_url, "TMPDIR": str(tmpdir)}
    done = subprocess.run([sys.executable, "-m", "flows.stackexchange", *[a for s in sites for a in ("--inputs", s)],
                           "--out", str(out), "--runner", "sequential"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    _, rows = Manifest.for_output(out).query("SELECT sum(docs_kept) FROM latest_inputs")
    assert rows[0][0] > 0
    assert list(tmpdir.iterdir()) == []
    assert not (out / "_staging").exists()
