"""External dataset tokenization in real processes: kill -9 then resume, and two "hosts" from a launcher.

The hosts are two worker processes of the real CLI, started by the launcher through its remote
prefix (``sh -c`` instead of ``ssh {host}``), each writing to its own local output root; the
launcher then collects both hosts' metadata into its manifest. Subprocess tests: about 30-60 s
on a loaded machine (each process imports Prefect).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from core.manifest import Manifest
from flows.tokenization import main
from sources.formats.datasets_text import expand_inputs, host_of

from .test_tokenize_external import write_dataset  # type: ignore[import-not-found,unused-ignore]

pytestmark = pytest.mark.prefect
REPO = Path(__file__).resolve().parents[2]
#: What a run writes that must be byte-identical across runs (markers keep timings; the manifest run ids).
COMPARED = ("*.tokens", "*.docs.npy", "metadata.json", "tokenizer.json")


def _outputs(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for pattern in COMPARED for p in root.rglob(pattern)
            if "hosts" not in p.relative_to(root).parts}


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*.tmp"))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, toy_tokenizer: Path) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hosts")
    write_dataset(root / "ds", files=24, rows=150)
    return root / "ds", toy_tokenizer


def _argv(ds: Path, tokenizer: Path, out: Path, *extra: str) -> list[str]:
    return ["--inputs", f"{ds}/**/*.parquet", "--inputs", f"{ds}/**/*.jsonl.*", "--id-column", "id",
            "--tokenizer", str(tokenizer), "--source", "web", "--out", str(out), "--set", "holdout_fraction=0.02",
            *extra]


def test_kill_9_then_rerun_is_byte_identical(dataset: tuple[Path, Path], tmp_path: Path,
                                             prefect_api_url: str) -> None:
    ds, tokenizer = dataset
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    assert main(_argv(ds, tokenizer, clean, "--runner", "sequential")) == 0
    proc = subprocess.Popen([sys.executable, "-m", "flows.tokenization",
                             *_argv(ds, tokenizer, killed, "--runner", "sequential")],
                            cwd=REPO, env={**os.environ, "PREFECT_API_URL": prefect_api_url},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    while len(list(killed.glob("_state/**/*.json"))) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    markers = len(list(killed.glob("_state/**/*.json")))
    assert 3 <= markers < 27 and not (killed / "metadata.json").exists(), "the kill must land mid-run"
    assert main(_argv(ds, tokenizer, killed, "--runner", "sequential")) == 0
    assert _outputs(killed) == _outputs(clean) and not _leftovers(killed)
    _, rows = Manifest.for_output(killed).query("SELECT status FROM runs ORDER BY started_at")
    assert [r[0] for r in rows] == ["abandoned", "completed"]


def _host_docs(meta: dict[str, Any], split: str) -> int:
    return int(meta["totals"][split]["docs"])


def test_two_hosts_from_one_launcher(dataset: tuple[Path, Path], tmp_path: Path, prefect_api_url: str) -> None:
    ds, tokenizer = dataset
    files = expand_inputs([f"{ds}/**/*.parquet", f"{ds}/**/*.jsonl.*"])
    assert {host_of(f.rel, 2) for f in files} == {0, 1}  # both hosts get work
    single = tmp_path / "single"
    assert main(_argv(ds, tokenizer, single, "--runner", "thread")) == 0
    launcher = tmp_path / "launcher"
    host_out = str(tmp_path / "disk-of-{host}" / "tensors")
    argv = _argv(ds, tokenizer, launcher, "--hosts", "alpha,beta", "--remote", "sh -c",
                 "--host-out", host_out, "--set", "runner=thread")
    assert main(argv) == 0
    roots = {h: tmp_path / f"disk-of-{h}" / "tensors" for h in ("alpha", "beta")}
    metas = {h: json.loads((root / "metadata.json").read_text()) for h, root in roots.items()}
    assert [metas[h]["hosts"]["index"] for h in ("alpha", "beta")] == [0, 1]
    # the union of the two hosts is the single-host run, file for file, byte for byte
    union: dict[str, bytes] = {}
    for root in roots.values():
        union.update({k: v for k, v in _outputs(root).items() if k.endswith((".tokens", ".docs.npy"))})
    assert union == {k: v for k, v in _outputs(single).items() if k.endswith((".tokens", ".docs.npy"))}
    single_meta = json.loads((single / "metadata.json").read_text())
    for split in ("train", "holdout"):
        assert sum(_host_docs(m, split) for m in metas.values()) == _host_docs(single_meta, split)
    # the launcher's manifest records every host's tensor files and every file's rows
    manifest = Manifest.for_output(launcher)
    _, rows = manifest.query("SELECT tensor_root, count(*), sum(docs) FROM tensors GROUP BY 1 ORDER BY 1")
    assert [(r[0], r[1]) for r in rows] == [
        (f"{h}:{roots[h]}", sum(len(s["splits"]) for s in metas[h]["shards"])) for h in ("alpha", "beta")]
    _, rows = manifest.query("SELECT sum(records_in), sum(docs_kept), sum(docs_dropped) FROM latest_inputs")
    _, single_rows = Manifest.for_output(single).query(
        "SELECT sum(records_in), sum(docs_kept), sum(docs_dropped) FROM latest_inputs")
    assert rows == single_rows and rows[0][0] == rows[0][1] + rows[0][2]
    hosts = json.loads((launcher / "hosts.json").read_text())
    assert hosts["problems"] == [] and [r["error"] for r in hosts["hosts"]] == [None, None]
    assert (launcher / "hosts" / "beta" / "metadata.json").read_bytes() == (roots["beta"] / "metadata.json").read_bytes()
    # one host's share re-run alone (another machine, another root) gives the same bytes, holdout included
    alone = tmp_path / "beta-again"
    assert main(_argv(ds, tokenizer, alone, "--host-count", "2", "--host-index", "1", "--runner", "thread")) == 0
    assert _outputs(alone) == _outputs(roots["beta"])
    # collecting again (e.g. after re-running one host) replaces rows, never duplicates them
    assert main([*argv, "--collect-only"]) == 0
    _, rows = manifest.query("SELECT count(*) FROM tensors")
    assert rows[0][0] == sum(len(s["splits"]) for m in metas.values() for s in m["shards"])
