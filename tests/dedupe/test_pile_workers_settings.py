"""How the Pile index hands its parts to Dask workers: largest shard first, on a quiet cluster.

Byte identity of the index across worker counts (with these settings and this order) is proven
by ``test_pile_workers.py``; here the two choices themselves, fast.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flows.pile_index import largest_first
from flows.runtime.dask_settings import QUIET_CLUSTER, quiet_cluster

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")


@pytest.fixture(autouse=True)
def _environment_restored():
    """A nanny writes its ``pre-spawn-environ`` into the environment of the process that runs it
    (here the test process; in a run, the flow process), so later workers inherit it: undo that."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_parts_go_out_largest_shard_first_ties_in_part_order(tmp_path: Path) -> None:
    sizes = {"00.jsonl.zst": 30, "01.jsonl.zst": 500, "02.jsonl.zst": 30, "03.jsonl.zst": 90}
    planned = []
    for no, (name, size) in enumerate(sizes.items()):
        (tmp_path / name).write_bytes(b"x" * size)
        planned.append((tmp_path / name, no, f"{no:05d}-{name}"))
    assert [no for _, no, _ in largest_first(planned)] == [1, 3, 0, 2]
    assert sorted(largest_first(planned), key=lambda item: item[1]) == planned  # same parts, same names


def test_quiet_settings_hold_for_a_dask_run_only_and_are_undone() -> None:
    before = {key: dask.config.get(key) for key in QUIET_CLUSTER}
    with quiet_cluster("process"):
        assert {key: dask.config.get(key) for key in QUIET_CLUSTER} == before
    with quiet_cluster("dask"):
        assert {key: dask.config.get(key) for key in QUIET_CLUSTER} == QUIET_CLUSTER
    assert {key: dask.config.get(key) for key in QUIET_CLUSTER} == before


def test_a_setting_the_user_made_is_kept() -> None:
    with dask.config.set({"distributed.admin.tick.interval": "7ms"}), quiet_cluster("dask"):
        assert dask.config.get("distributed.admin.tick.interval") == "7ms"
        assert dask.config.get("distributed.worker.profile.enabled") is False


def test_a_local_clusters_worker_process_runs_with_the_quiet_settings() -> None:
    """The settings are made in the flow process; the worker is another process, started by its nanny."""
    with quiet_cluster("dask"), distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                                         dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        seen = client.run(lambda: (os.getpid(), {key: dask.config.get(key) for key in QUIET_CLUSTER},
                                   os.environ.get("MALLOC_TRIM_THRESHOLD_")))
    (pid, settings, trim), = seen.values()
    assert pid != os.getpid()
    assert settings == QUIET_CLUSTER
    assert trim is None  # glibc's own thresholds: no mmap and page faults for every batch's buffers


def test_without_the_settings_a_worker_gets_dasks_trim_threshold() -> None:
    """What the quiet settings undo (if Dask stops setting it, the setting can go)."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        trims = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert list(trims.values()) == ["65536"]


def test_a_run_that_joins_a_cluster_leaves_dask_config_alone() -> None:
    before = {key: dask.config.get(key) for key in QUIET_CLUSTER}
    with quiet_cluster("dask", "tcp://elsewhere:8786"):
        assert {key: dask.config.get(key) for key in QUIET_CLUSTER} == before


def test_every_flow_command_runs_its_local_cluster_quiet(monkeypatch) -> None:
    """Not only the Pile index: any flow's ``--runner dask`` run starts its cluster inside the settings."""
    from flows import wikipedia

    seen = {}

    def fake_flow_call(config):  # stands for the flow call: where Prefect enters the task runner
        seen.update({key: dask.config.get(key) for key in QUIET_CLUSTER})
        return None

    cli = wikipedia.cli
    monkeypatch.setattr(cli, "_runner", fake_flow_call)
    cli.run(cli.config_cls(runner="dask"))
    assert seen == QUIET_CLUSTER


def _flattened(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flattened(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def test_the_documented_config_for_your_own_cluster_unsets_the_trim_threshold() -> None:
    """docs/dedup.md's YAML for a cluster started by the user, read as Dask reads a config file."""
    import yaml

    text = (Path(__file__).resolve().parents[2] / "docs" / "dedup.md").read_text(encoding="utf-8")
    snippet = text.split("distributed.yaml`:\n\n```yaml\n", 1)[1].split("```", 1)[0]
    with dask.config.set(_flattened(yaml.safe_load(snippet))), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        trims = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert list(trims.values()) == [None]
