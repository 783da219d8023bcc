"""``kinda filters apply`` labels as the label flow does, byte for byte, without Prefect.

Two identical output roots (one c4 shard with its real signals and dedup attributes, recorded in a
manifest): one labeled by the Prefect label flow, the other by ``kinda filters apply``, with a
threshold and then with it lifted again (a released shard re-labeled from its class shards). The
class shards are the same bytes each time; the command's run is a ``label`` run in the manifest
with no Prefect flow run behind it, and the command never imports Prefect (the point of it: a
Prefect run's fixed cost is most of a small re-label's CPU, docs/curation.md).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import CONFIG_DIR
from core.manifest import Manifest
from flows import label
from kinda.cli import main as kinda_main
from tests.dedupe.test_relabel import DOCS, DUPLICATE, THRESHOLD, _root

REPO = Path(__file__).resolve().parents[2]


def _output_root(out: Path) -> Path:
    shard = _root(out)
    Manifest.for_output(out).record_shards("seed-run", [shard], "cfg", "c4", "test")
    return out


def _digests(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "labeled").rglob("*.parquet"))}


def _flow(out: Path, *sets: str) -> None:
    results = label.run(label.parse_args(["--data", str(out), "--runner", "thread",
                                          *(arg for s in sets for arg in ("--set", s))]))
    assert [r.error for r in results] == [None]


def _apply(capsys: pytest.CaptureFixture[str], out: Path, *sets: str) -> str:
    status = kinda_main(["filters", "apply", "--out", str(out), *(arg for s in sets for arg in ("--set", s))])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return captured.out


@pytest.mark.prefect
def test_apply_writes_the_label_flows_bytes(tmp_path: Path, prefect_api_url: str,
                                            capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    by_flow, by_kinda = _output_root(tmp_path / "flow"), _output_root(tmp_path / "kinda")
    short = {d for d, words in DOCS if words < THRESHOLD and d != DUPLICATE}

    _flow(by_flow, f"filters.gopher.words_min={THRESHOLD}")
    text = _apply(capsys, by_kinda, f"gopher.words_min={THRESHOLD}")
    assert f"'filtered': {len(short)}" in text and f"'gopher.words_min': {len(short)}" in text
    assert _digests(by_kinda) == _digests(by_flow) and any("/filtered/" in p for p in _digests(by_flow))

    _flow(by_flow)  # lifted: both re-label their released shard from its class shards
    monkeypatch.setattr(label, "INLINE_SHARDS", 0)  # a run too large for one process: the worker pool
    text = _apply(capsys, by_kinda)
    assert "filtered" not in text
    assert _digests(by_kinda) == _digests(by_flow) and not any("/filtered/" in p for p in _digests(by_flow))

    _, runs = Manifest.for_output(by_kinda).query(
        "SELECT status, prefect_flow_run_id FROM runs WHERE flow = 'label' ORDER BY started_at")
    assert runs == [("completed", None), ("completed", None)]
    _, runs = Manifest.for_output(by_flow).query("SELECT count(prefect_flow_run_id) FROM runs WHERE flow = 'label'")
    assert runs == [(2,)]


def test_apply_never_imports_prefect(tmp_path: Path) -> None:
    out = _output_root(tmp_path / "data")
    code = ("import sys; from kinda.cli import main; "
            f"status = main(['filters', 'apply', '--out', {str(out)!r}, '--set', 'gopher.words_min={THRESHOLD}']); "
            "sys.exit(status or ('prefect' in sys.modules and 'prefect imported'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "documents failing each filter rule: {'gopher.words_min':" in done.stdout


def test_apply_refuses_a_bad_threshold_and_a_root_without_a_manifest(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = _output_root(tmp_path / "data")
    assert kinda_main(["filters", "apply", "--out", str(out), "--set", "gopher.words_min=many"]) == 2
    assert "the value must be a number or null" in capsys.readouterr().err
    assert kinda_main(["filters", "apply", "--out", str(out), "--set", "gopher.no_such_signal_min=3"]) == 2
    assert "no_such_signal" in capsys.readouterr().err
    assert kinda_main(["filters", "apply", "--out", str(tmp_path / "empty")]) == 2
    assert "no manifest" in capsys.readouterr().err
    labels_yaml = str(CONFIG_DIR / "labels.yaml")  # the stage's own file, not a dataset file: not ignored in silence
    for command in ("apply", "preview"):
        assert kinda_main(["filters", command, "--out", str(out), "--config", labels_yaml,
                           "--set", "gopher.words_min=80"]) == 2
        assert "not a dataset file (no 'dataset:' key)" in capsys.readouterr().err
    assert not (out / "labeled").exists()  # nothing labeled by a refused command
