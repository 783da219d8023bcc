"""Decontamination flow: mark the documents that share a 13-word n-gram with a named evaluation set.

    python -m flows.decontaminate --data data/ --eval evals/mmlu.jsonl --eval evals/lm-eval-harness/
    kinda manifest sql "SELECT * FROM read_parquet('data/attributes/decontamination/**/*.parquet')"

The matching (evaluation files, normalization, n-gram hashes, the per-shard attribute) is
:mod:`dedupe.decontaminate` (pure logic); this module is the Prefect part: the index built once
and saved under ``_state/decontaminate/``, one task per final document shard (a released shard is
read from its class shards), the artifact. The label stage then leaves marked documents out of
every set (class ``contaminated``; ``drop_contaminated: false`` keeps them) and ``kinda report``
counts them per source and benchmark. Without evaluation sets the flow checks nothing.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, field_validator

from core.config import PipelineConfig
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import NO_CACHE, LazyImport, flow, task

if TYPE_CHECKING:
    from prefect import get_run_logger

    from dedupe.decontaminate import ShardCheck
    from flows.runtime.recorder import RunRecorder
else:  # a run needs them (Prefect, DuckDB, numba): not --help
    get_run_logger = LazyImport("prefect", "get_run_logger")
    RunRecorder = LazyImport("flows.runtime.recorder", "RunRecorder")
    ShardCheck = LazyImport("dedupe.decontaminate", "ShardCheck")


class EvalSetConfig(BaseModel):
    """One evaluation set: a file (JSON lines, JSON, Parquet, CSV) or a folder of them."""

    path: str
    fields: list[str] = Field(default_factory=list, description="text fields to check (default: every string field)")
    name: str | None = Field(None, description="benchmark name (default: the file's name, or its path in the folder)")


class DecontaminateConfig(PipelineConfig):
    """Settings of the decontamination flow (defaults in ``configs/decontaminate.yaml``)."""

    evals: list[EvalSetConfig] = Field(default_factory=list, description="evaluation sets to check documents against")
    ngram: int = Field(13, ge=5, le=64, description="words a shared n-gram has (GPT-3 and datatrove: 13)")

    @field_validator("evals", mode="before")
    @classmethod
    def _paths_alone(cls, value: Any) -> Any:
        """``--eval PATH`` (and a bare path in YAML) is an evaluation set with its default fields."""
        return [{"path": entry} if isinstance(entry, str) else entry for entry in value or []]


@dataclass
class DecontaminateSummary:
    """What the flow returns: per-shard checks and the totals the stage table shows."""

    checks: list[Any] = field(default_factory=list)
    items: int = 0
    too_short: int = 0

    @property
    def documents(self) -> int:
        return sum(c.documents for c in self.checks)

    @property
    def contaminated(self) -> int:
        return sum(c.contaminated for c in self.checks)

    @property
    def failed(self) -> list[str]:
        return [c.error for c in self.checks if c.error]

    def by_source(self) -> dict[tuple[str, str], int]:
        """(source, benchmark) -> contaminated documents."""
        counts: Counter[tuple[str, str]] = Counter()
        for check in self.checks:
            for benchmark, docs in check.benchmarks.items():
                counts[(check.source, benchmark)] += docs
        return dict(sorted(counts.items()))


@task(name="decontaminate-shard", cache_policy=NO_CACHE, task_run_name="decontaminate {path}")
def decontaminate_task(out: Path, path: str, shard: dict[str, Any], index_path: Path) -> ShardCheck:
    """One final document shard -> its decontamination attribute."""
    from dedupe.decontaminate import decontaminate_shard

    return decontaminate_shard(out, shard, index_path)


@flow(name="decontaminate", log_prints=True)
def decontaminate_flow(config: DecontaminateConfig) -> DecontaminateSummary:
    """Check every final document shard against the evaluation sets (see the module docstring)."""
    from dedupe.decontaminate import EvalIndex, EvalSet, read_eval_items, save_index

    logger = get_run_logger()
    out = Path(config.out).resolve()
    summary = DecontaminateSummary()
    with RunRecorder(out, "decontaminate", None, config) as run:
        if not config.evals:
            logger.info("no evaluation sets named (evals): nothing checked")
            run.status = "completed"
            return summary
        pieces = read_eval_items([EvalSet(e.path, tuple(e.fields), e.name) for e in config.evals])
        index = EvalIndex.build(pieces, config.ngram)
        summary.items, summary.too_short = len(index.items), index.too_short
        index_path = out / "_state" / "decontaminate" / f"index-{index.fingerprint}.pickle"
        save_index(index, index_path)
        shards = run.manifest.final_shards()
        futures = [decontaminate_task.submit(out, s["path"], s, index_path) for s in shards]
        summary.checks = [f.result() for f in futures]
        for error in summary.failed:
            logger.error("%s", error)
        run.table("decontamination", [{"source": s, "benchmark": b, "contaminated documents": n}
                                      for (s, b), n in summary.by_source().items()],
                  "Documents sharing an n-gram with an evaluation item, per source and benchmark")
        logger.info("decontamination: %d items (%d text pieces under %d words not checkable), %d of %d shards "
                    "checked, %d documents contaminated", summary.items, summary.too_short, config.ngram,
                    len(shards) - len(summary.failed), len(shards), summary.contaminated)
        run.status = "partial" if summary.failed else "completed"
    return summary


def report(summary: DecontaminateSummary) -> int:
    """What the command prints after a run; exit 1 when a shard could not be checked."""
    for error in summary.failed:
        print(f"error: {error}", file=sys.stderr)
    print(f"evaluation items: {summary.items}; documents contaminated: {summary.contaminated}")
    for (source, benchmark), docs in summary.by_source().items():
        print(f"  {source:<20} {benchmark:<30} {docs}")
    return 1 if summary.failed else 0


cli = FlowCLI(decontaminate_flow, DecontaminateConfig, "decontaminate.yaml", __doc__, report=report, flags=[
    Flag("--data", "out", "output root (same as --out)", type=Path),
    Flag("--eval", "evals", "an evaluation file or folder (repeatable)", many=True),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main


if __name__ == "__main__":
    sys.exit(main())
