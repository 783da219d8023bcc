"""Pile index flow: build a reference index from Pile ``*.jsonl.zst`` shards, or add shards to one.

    python -m flows.pile_index --inputs 'pile/train/*.jsonl.zst' --index indexes/pile-v1
    python -m flows.pile_index --inputs 'pile/train/2[0-9].jsonl.zst' --index indexes/pile-v1   # add later

One task per Pile shard (signatures, exact hashes, band keys for every layout in
``index_layouts``); shards already in the index are skipped, finished parts of an interrupted
run are reused; the flow process alone rewrites ``index.json``. Parts are handed out largest
shard first, so the workers run out of parts at about the same time (the last part is a small
one); part numbers and names follow the shards' order, so the index's bytes do not depend on the
worker count. On ``--runner dask`` a local cluster runs with Dask's housekeeping slowed down
(:mod:`flows.runtime.dask_settings`, as for every flow): with as many workers as cores it competes with the parts.
Parameters come from ``configs/dedup.yaml`` (``minhash``, ``index_layouts``) so the dedup flow matches them.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.dedup_config import DedupConfig
from flows.runtime.lazy import NO_CACHE, LazyImport, flow, task
from flows.runtime.source_flow import expand_locations

if TYPE_CHECKING:
    from prefect import get_run_logger
    from prefect.artifacts import create_table_artifact

    from dedupe.lsh import BandLayout
    from dedupe.minhash import MinHashConfig
    from dedupe.reference import ReferenceIndex, index_pile_shard
else:  # only a run needs them (Prefect, pyarrow, DuckDB, numpy): not --help or a refused command
    get_run_logger = LazyImport("prefect", "get_run_logger")
    create_table_artifact = LazyImport("prefect.artifacts", "create_table_artifact")
    BandLayout = LazyImport("dedupe.lsh", "BandLayout")
    MinHashConfig = LazyImport("dedupe.minhash", "MinHashConfig")
    ReferenceIndex = LazyImport("dedupe.reference", "ReferenceIndex")
    index_pile_shard = LazyImport("dedupe.reference", "index_pile_shard")


class PileIndexConfig(DedupConfig):
    """Settings of the index flow: the dedup settings plus inputs and the index directory."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs",)

    inputs: list[str] = Field(default_factory=list)
    index: Path = Path("indexes/pile-v1")


@task(name="pile-index-shard", cache_policy=NO_CACHE, task_run_name="index {part}")
def index_task(shard: Path, root: Path, part_no: int, part: str, minhash: MinHashConfig,
               layouts: list[BandLayout], max_line_bytes: int, signature_bits: int) -> dict[str, Any]:
    """Index one Pile shard as one part."""
    return index_pile_shard(shard, root, part_no, part, minhash, layouts, max_line_bytes, signature_bits)


@flow(name="pile-index", log_prints=True)
def pile_index_flow(config: PileIndexConfig) -> ReferenceIndex:
    """Add the configured Pile shards to the index (see the module docstring)."""
    logger = get_run_logger()
    if not config.inputs:
        raise ValueError("no input: give --inputs (path or glob of *.jsonl.zst)")
    layouts = [BandLayout.named(name) for name in config.index_layouts]
    index = ReferenceIndex.open_or_create(Path(config.index), config.minhash.config(), layouts)
    shards = [Path(p) for p in expand_locations(config.inputs)]
    planned = index.plan(shards)
    logger.info("%d of %d shards are new to %s", len(planned), len(shards), config.index)
    futures = {no: index_task.submit(shard, index.root, no, name, index.minhash, index.layouts,
                                     config.pile_max_line_bytes, index.signature_bits)
               for shard, no, name in largest_first(planned)}
    parts = []
    for _, future in sorted(futures.items()):
        try:
            parts.append(future.result())
        except Exception as exc:  # one unreadable shard must not lose the others
            logger.error("shard failed: %s", exc)
    index.commit(parts)
    drops: Counter[str] = Counter()
    for part in parts:
        drops.update(part["drops"])
    rows = [{"shard": p["shard"], "part": p["part"], "lines": p["lines"], "documents": p["count"],
             "no_shingles": p["empty"], "dropped": sum(p["drops"].values()),
             "drop_reasons": ", ".join(f"{k}={v}" for k, v in sorted(p["drops"].items()))} for p in parts]
    if rows:
        create_table_artifact(rows, key="pile-index-parts", description="Pile shards added to the index")
    logger.info("index %s: %d parts, %d documents (added %d parts; drops %s)", config.index, len(index.parts),
                index.documents, len(parts), dict(drops))
    if len(parts) < len(planned):
        raise RuntimeError(f"{len(planned) - len(parts)} shard(s) failed; re-run to retry them")
    return index


def largest_first(planned: list[tuple[Path, int, str]]) -> list[tuple[Path, int, str]]:
    """The planned parts by shard size, largest first (equal sizes in part order).

    With parts taken in this order by whichever worker is free, the last ones to start are the
    smallest, so no worker is left building one large part while the others have nothing to do.
    """
    return sorted(planned, key=lambda item: (-item[0].stat().st_size, item[1]))


def report(index: ReferenceIndex) -> int:
    """What the command prints after a run."""
    print(f"index {index.root}: {len(index.parts)} parts, {index.documents} documents")
    return 0


cli = FlowCLI(pile_index_flow, PileIndexConfig, "dedup.yaml", __doc__, report=report,
              out_is_root=False, flags=[
    Flag("--inputs", "inputs", "Pile shard path or glob (repeatable)", many=True),
    Flag("--index", "index", "index directory (created if absent)", type=Path),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main


if __name__ == "__main__":
    sys.exit(main())
