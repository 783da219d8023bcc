"""Prefect task wrappers over :mod:`core.pipeline` and :mod:`core.download`.

Each task works on one whole input file (or the whole run for the dedup query), never on one
document: Prefect costs milliseconds per task run and its server records a few dozen task runs
per second. Resume does not rely on Prefect's result cache (which needs a result store shared
by every worker): each phase writes its own marker next to its output, keyed by config hash,
recipe version and input fingerprint, so a new flow run skips finished inputs on any runner.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from core import pipeline
from core.document import InputSpec
from core.download import Downloaded, download
from core.manifest import InputRecord


@task(name="download", retries=2, retry_delay_seconds=10, cache_policy=NO_CACHE,
      task_run_name="download {url}")
def download_task(url: str, cache_dir: Path, expected: dict[str, str] | None = None) -> Downloaded:
    """Fetch one input into the cache (resuming partial downloads), verified when sums are known."""
    return download(url, cache_dir, expected=expected)


@task(name="stage-input", cache_policy=NO_CACHE, task_run_name="stage {spec.key}")
def stage_task(
    recipe: pipeline.SourceRecipe, spec: InputSpec, ctx: pipeline.RunContext, hash_input: bool = True,
) -> InputRecord:
    """Phase 1 for one input file or range of one (see :func:`core.pipeline.stage_input`)."""
    return pipeline.stage_input(recipe, spec, ctx, hash_input)


@task(name="exact-dedup", cache_policy=NO_CACHE)
def dedup_task(ctx: pipeline.RunContext, keys: list[str]) -> dict[str, int]:
    """Phase 2 across the run (see :func:`core.pipeline.find_exact_duplicates`)."""
    return pipeline.find_exact_duplicates(ctx, keys)


@task(name="finalize-input", cache_policy=NO_CACHE, task_run_name="finalize {spec.key}")
def finalize_task(
    recipe: pipeline.SourceRecipe, spec: InputSpec, ctx: pipeline.RunContext, scope: str,
    staged: InputRecord,
) -> InputRecord:
    """Phase 3 for one input file (see :func:`core.pipeline.finalize_input`)."""
    return pipeline.finalize_input(recipe, spec, ctx, scope, staged)
