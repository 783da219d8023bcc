"""The tokenize flows' shard task, and the fan-outs that submit one task per shard, file or host.

(Named ``tokenization``, not ``tokenize``: a module named like the standard library's ``tokenize``
breaks ``import tokenize`` once its folder is on ``sys.path``.) One task per document shard
(:func:`loader.tensor_writer.tokenize_shard`), per dataset file (:mod:`tasks.tokenize_external`)
or per host (:mod:`tasks.tokenize_hosts`); each fan-out submits all of them before awaiting any,
so the flows in ``flows/tokenization.py`` read as their stages.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from loader.tensor_writer import InputShard, TokenizeSettings, tokenize_shard
from sources.formats.datasets_text import DatasetFile
from tasks.tokenize_external import ExternalJob, tokenize_file_task
from tasks.tokenize_hosts import HostPlan, fetch_metadata_task, host_command, run_host_task


@task(name="tokenize-shard", cache_policy=NO_CACHE, task_run_name="tokenize {shard.rel_path}")
def tokenize_task(data: Path, shard: InputShard, out: Path, settings: TokenizeSettings) -> dict[str, Any]:
    """One document shard -> its train/holdout tensors (see :func:`loader.tensor_writer.tokenize_shard`)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one process per core, one thread each
    return tokenize_shard(data, shard, out, settings)


def tokenize_shards(data: Path, shards: list[InputShard], out: Path, settings: TokenizeSettings) -> list[dict[str, Any]]:
    """Every shard's record, in shard order; a failed shard is logged and its record says why."""
    records = [f.result() for f in [tokenize_task.submit(data, shard, out, settings) for shard in shards]]
    for rec in records:
        if rec["status"] != "done":
            get_run_logger().error("shard failed: %s", rec["error"])
    return records


def tokenize_files(files: list[DatasetFile], job: ExternalJob) -> list[dict[str, Any]]:
    """Every dataset file's record, in file order (failed ones included: the flow reports them)."""
    return [f.result() for f in [tokenize_file_task.submit(file, job) for file in files]]


def launch_hosts(plans: list[HostPlan], settings: dict[str, Any], python: str, workdir: str,
                 out: Path) -> dict[str, dict[str, Any]]:
    """Run every host's share at once (``settings`` spelled out as ``--set``); each host's log under ``out/hosts``."""
    futures = [run_host_task.submit(plan, host_command(plan, python, workdir, settings),
                                    out / "hosts" / plan.folder / "run.log") for plan in plans]
    return {r["host"]: r for r in (f.result() for f in futures)}


def fetch_hosts(plans: list[HostPlan]) -> dict[str, dict[str, Any]]:
    """Every host's ``metadata.json``, or why it cannot be read, by host name."""
    return {plan.name: f.result() for plan, f in zip(plans, [fetch_metadata_task.submit(plan) for plan in plans],
                                                      strict=True)}
