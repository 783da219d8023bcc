"""Prefect tasks of the sources' own phases (:class:`core.driver.SourcePhases`).

A phase submits core functions through the driver's executor; under Prefect,
``tasks.executor.PrefectExecutor`` runs each as the task here that wraps it, so a flow run
shows the same task runs (names, run names, cache policy) as when the phases submitted them
directly. Each task's parameters are its function's, so run names can name them. The source
modules are imported in the task bodies: every source run imports this module, and only
Common Crawl's needs its extractor, only the books' their MinHash.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import task
from prefect.cache_policies import NO_CACHE

if TYPE_CHECKING:
    from core import pipeline
    from core.document import InputSpec
    from core.manifest import InputRecord
    from dedupe.near_books import NearDupSettings
    from sources.commoncrawl import GroupedDedupRecipe
    from sources.stackexchange import SiteSize


@task(name="extract", cache_policy=NO_CACHE, task_run_name="extract {spec.key}")
def extract_task(recipe: GroupedDedupRecipe, spec: InputSpec, ctx: pipeline.RunContext) -> InputRecord:
    """Phase A for one input (see :func:`sources.commoncrawl.extract_input`)."""
    from sources.commoncrawl import extract_input

    return extract_input(recipe, spec, ctx)


@task(name="line-dedup", cache_policy=NO_CACHE)
def group_dedup_task(ctx: pipeline.RunContext, keys: list[str], memory_bytes: int) -> dict[str, Any]:
    """Phase B for one group (see :func:`sources.commoncrawl.dedup_group`)."""
    from sources.commoncrawl import dedup_group

    return dedup_group(ctx, keys, memory_bytes)


@task(name="near-signatures", cache_policy=NO_CACHE, task_run_name="minhash {key}")
def signature_task(out: Path, source: str, key: str, settings: NearDupSettings) -> int:
    """MinHash every staged book of one input (see :func:`dedupe.near_books.write_signatures`)."""
    from dedupe.near_books import write_signatures

    return write_signatures(out, source, key, settings)


@task(name="near-dedup", cache_policy=NO_CACHE)
def near_dedup_task(ctx: pipeline.RunContext, keys: list[str], settings: NearDupSettings) -> int:
    """The run's near-duplicate books (see :func:`dedupe.near_books_phase.match_near_duplicates`)."""
    from dedupe.near_books_phase import match_near_duplicates

    return match_near_duplicates(ctx, keys, settings)


@task(name="site-size", cache_policy=NO_CACHE, task_run_name="size {spec.key}")
def site_size_task(spec: InputSpec, rank_by: str, cache: Path | None = None) -> SiteSize:
    """Size of one site for ranking (see :func:`sources.stackexchange.measure_site`)."""
    from sources.stackexchange import measure_site

    return measure_site(spec, rank_by, cache)


@task(name="pmid-index", cache_policy=NO_CACHE, task_run_name="pmids {key}")
def pmid_index_task(out: Path, source: str, key: str, input_path: Path) -> int:
    """Index one staged MEDLINE input (see :func:`sources.formats.medline.write_pmid_index`)."""
    from sources.formats.medline import write_pmid_index

    return write_pmid_index(out, source, key, input_path)


@task(name="pmid-versions", cache_policy=NO_CACHE)
def pmid_versions_task(ctx: pipeline.RunContext, keys: list[str]) -> int:
    """Put superseded and deleted citations on the run's drop list (see :func:`sources.pubmed.drop_superseded`)."""
    from sources.pubmed import drop_superseded

    return drop_superseded(ctx, keys)


#: The core function each task wraps, by qualified name (``module.function``): naming them by
#: string keeps their modules out of a run that does not use them.
WRAPS: dict[str, Any] = {
    "sources.commoncrawl.extract_input": extract_task,
    "sources.commoncrawl.dedup_group": group_dedup_task,
    "dedupe.near_books.write_signatures": signature_task,
    "dedupe.near_books_phase.match_near_duplicates": near_dedup_task,
    "sources.stackexchange.measure_site": site_size_task,
    "sources.formats.medline.write_pmid_index": pmid_index_task,
    "sources.pubmed.drop_superseded": pmid_versions_task,
}
