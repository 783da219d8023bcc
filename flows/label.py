"""Label flow: partition documents into membership classes and label each class's shards G1/G2/G3.

    python -m flows.label --data data/ --config configs/labels.yaml
    kinda manifest sql "SELECT source, sum(docs) FROM shards WHERE list_contains(labels,'G3') GROUP BY 1"

Each document is stored once, in the shards of its class under ``labeled/<class>/<source>/<part>/``:

=================  =====================================================  ============
class              documents                                              labels
=================  =====================================================  ============
``llama``          LLaMA-source documents without a reference match       G1 G2 G3
``llama-in-ref``   LLaMA-source documents with an exact/near Pile match   G1 G2
``extension``      documents of an extension source                       G2
=================  =====================================================  ============

Duplicates found by ``flows.dedup`` (``duplicate_of`` set) belong to no set; documents of a
source listed in neither list are left out and counted. One task per document shard; the labels
go into each shard's Parquet metadata (``kinda.labels``) and the manifest's ``shards.labels``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from pydantic import Field

from core.atomic import sha256_file, write_json_atomic
from core.config import CONFIG_DIR, PipelineConfig
from core.layout import slug
from core.manifest import Manifest
from core.shards import ShardWriter, read_documents
from core.version import code_version
from dedupe.explain import attributes_path
from flows._runtime import make_task_runner, prefect_api
from flows._source_flow import add_common_arguments, current_run_id, load_config

DEFAULT_CONFIG = CONFIG_DIR / "labels.yaml"
CLASS_LABELS: dict[str, list[str]] = {"llama": ["G1", "G2", "G3"], "llama-in-ref": ["G1", "G2"], "extension": ["G2"]}
LABELED = "labeled"


class LabelConfig(PipelineConfig):
    """Settings of the label flow (defaults in ``configs/labels.yaml``)."""

    llama_sources: list[str] = Field(default_factory=lambda: ["commoncrawl", "c4", "github", "wikipedia", "books",
                                                              "arxiv", "stackexchange"])
    extension_sources: list[str] = Field(default_factory=list)
    drop_duplicates: bool = True
    require_dedup: bool = True


def membership_class(source: str, attributes: dict[str, Any] | None, config: LabelConfig) -> str | None:
    """The class of one document, or the reason it is in no class (``duplicate``, ``unlisted_source``)."""
    if attributes is not None and config.drop_duplicates and attributes.get("duplicate_of"):
        return "duplicate"
    if source in config.llama_sources:
        in_reference = attributes is not None and attributes.get("reference_kind") is not None
        return "llama-in-ref" if in_reference else "llama"
    if source in config.extension_sources:
        return "extension"
    return "unlisted_source"


@dataclass
class LabelResult:
    """What one task did for one document shard."""

    shard: str
    shards: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None


def label_shard(out: Path, shard: str, config: LabelConfig) -> LabelResult:
    """Split one document shard into its classes' shards; resumable through a marker."""
    docs_path = out / shard
    attr_path = attributes_path(out, shard)
    has_attributes = attr_path.exists()
    if not has_attributes and config.require_dedup:
        return LabelResult(shard, error=f"{shard}: no dedup attributes at {attr_path}; run flows.dedup first")
    fingerprint = {"docs": sha256_file(docs_path), "attributes": sha256_file(attr_path) if has_attributes else None,
                   "config": config.config_hash()}
    marker = out / "_state" / LABELED / f"{slug(shard)}.json"
    if marker.exists():
        done = json.loads(marker.read_text(encoding="utf-8"))
        if done["fingerprint"] == fingerprint and all((out / s["path"]).exists() for s in done["shards"]):
            return LabelResult(shard, done["shards"], done["counts"])
    rel = Path(shard).relative_to("docs") if shard.startswith("docs/") else Path(shard)
    writers: dict[str, ShardWriter] = {}
    counts: Counter[str] = Counter()
    attr_rows = pq.ParquetFile(attr_path).iter_batches(batch_size=1000) if has_attributes else None
    pending: list[dict[str, Any]] = []
    try:
        for doc in read_documents(docs_path):
            attributes = None
            if attr_rows is not None:
                if not pending:
                    pending = next(attr_rows).to_pylist()
                attributes = pending.pop(0)
                if attributes["id"] != doc.id:
                    raise ValueError(f"{attr_path} is out of step with {shard} at {doc.id}")
            cls = membership_class(doc.source, attributes, config)
            counts[cls] += 1
            if cls not in CLASS_LABELS:
                continue
            writer = writers.get(cls)
            if writer is None:
                writer = ShardWriter(out, out / LABELED / cls / rel.parent, rel.stem, doc.source, doc.language,
                                     labels=CLASS_LABELS[cls], limits=config.shards.limits(),
                                     file_metadata={"class": cls, "from": shard, "config_hash": config.config_hash()})
                writers[cls] = writer
            writer.write(doc)
        shards = [{**info.to_dict(), "inputs": [shard]} for cls in sorted(writers) for info in writers[cls].close()]
    except Exception as exc:
        for writer in writers.values():
            writer.abort()
        return LabelResult(shard, error=f"{shard}: {type(exc).__name__}: {exc}")
    write_json_atomic(marker, {"fingerprint": fingerprint, "shards": shards, "counts": dict(counts)})
    return LabelResult(shard, shards, dict(counts))


@task(name="label-shard", cache_policy=NO_CACHE, task_run_name="label {shard}")
def label_task(out: Path, shard: str, config: LabelConfig) -> LabelResult:
    """One document shard -> its classes' shards."""
    return label_shard(out, shard, config)


def _remove_stale(out: Path, keep: set[str]) -> list[str]:
    """Delete labeled shards a previous run wrote that this run did not (e.g. after a config change)."""
    removed = []
    for path in sorted((out / LABELED).rglob("*.parquet")):
        rel = path.relative_to(out).as_posix()
        if rel not in keep:
            path.unlink()
            removed.append(rel)
    return removed


@flow(name="label", log_prints=True)
def label_flow(config: LabelConfig) -> list[LabelResult]:
    """Label every document shard of the output root (see the module docstring)."""
    logger = get_run_logger()
    out = Path(config.out).resolve()
    manifest = Manifest.for_output(out)
    run_id = current_run_id()
    manifest.start_run(run_id, "label", None, config.config_hash(), config.output_fields(), code_version(), run_id)
    status = "failed"
    try:
        _, rows = manifest.query("SELECT path FROM shards WHERE starts_with(path, 'docs/') ORDER BY source, path")
        futures = [label_task.submit(out, path, config) for (path,) in rows]
        results = [f.result() for f in futures]
        shards = [s for r in results for s in r.shards]
        _remove_stale(out, {s["path"] for s in shards})
        manifest.record_shards(run_id, shards, config.config_hash(), "label", code_version(),
                               replace_prefix=f"{LABELED}/")
        totals: Counter[str] = Counter()
        for result in results:
            totals.update(result.counts)
            if result.error:
                logger.error("%s", result.error)
        create_table_artifact([{"class": k, "documents": v, "labels": " ".join(CLASS_LABELS.get(k, []))}
                               for k, v in sorted(totals.items())], key="label-classes",
                              description="Documents per membership class")
        logger.info("labels: %s", dict(sorted(totals.items())))
        status = "completed" if not any(r.error for r in results) else "partial"
        return results
    finally:
        manifest.finish_run(run_id, status)


def run(config: LabelConfig) -> list[LabelResult]:
    """Run the flow with the task runner the config names."""
    return label_flow.with_options(task_runner=make_task_runner(config))(config)


def parse_args(argv: list[str] | None = None) -> LabelConfig:
    """Command line -> typed config."""
    parser = argparse.ArgumentParser(prog="python -m flows.label", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="output root (same as --out)")
    add_common_arguments(parser, DEFAULT_CONFIG)
    args = parser.parse_args(argv)
    if args.data is not None and args.out is None:
        args.out = args.data
    return load_config(LabelConfig, args, {})  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    """``python -m flows.label``."""
    config = parse_args(argv)
    with prefect_api():
        results = run(config)
    totals: Counter[str] = Counter()
    for result in results:
        totals.update(result.counts)
    print("documents per class:", dict(sorted(totals.items())))
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
