"""Tokenize flow: document shards (by label/source) -> data tensors + metadata.json + manifest rows.

    python -m flows.tokenization --data data/ --labels G3 --tokenizer path/to/tokenizer.json --split-digits --out tensors/
    python -m flows.tokenization --data data/ --sources wikipedia,arxiv --tokenizer tok.json --megatron --out tensors/
    kinda manifest sql "SELECT source, sum(tokens) FROM tensors WHERE split = 'train' GROUP BY 1"

One Prefect task per document shard, run in worker processes (the Rust tokenizer's own threads
do not spread over a Dask cluster; processes do). Each task writes its shard's train/holdout
tensors and a marker; a re-run skips shards whose marker matches. The flow process alone writes
``metadata.json`` and the manifest of the data root: a ``tensors`` table (one row per tensor
file) and the token count of each input shard in ``shards.tokens``.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, ClassVar, Literal

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from pydantic import Field

from core.config import PipelineConfig
from core.manifest import Manifest
from flows._cli import Flag, FlowCLI
from flows._recorder import RunRecorder
from loader.tensor_writer import (
    InputShard,
    TokenizeSettings,
    export_megatron,
    find_input_shards,
    tokenize_shard,
    write_metadata,
)


class TokenizeConfig(PipelineConfig):
    """Settings of the tokenize flow (defaults in ``configs/tokenize.yaml``); ``out`` is the tensor root."""

    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"data", "batch_docs", "megatron"}

    out: Path = Field(Path("tensors"), description="tensor root: token files, metadata.json")
    data: Path = Field(Path("data"), description="data root holding docs/ or labeled/ shards and the manifest")
    tokenizer: str = Field("", description="tokenizer.json path (or hub name with network)")
    labels: list[str] = Field(default_factory=list, description="shards carrying all of these labels (G1, G3)")
    sources: list[str] = Field(default_factory=list, description="only these sources (empty: all)")
    split_digits: bool = True
    split_mode: Literal["sequence", "regex"] = "sequence"
    eos_token: str | None = None
    holdout_fraction: float = Field(0.001, ge=0, lt=1)
    batch_docs: int = Field(256, gt=0)
    megatron: bool = Field(False, description="also write Megatron .bin/.idx per split under <out>/megatron/")
    work_tokens: Literal["added", "text"] | None = Field(
        None, description="<work> markers: 'text' (encoded by the existing vocabulary) or 'added' (two new ids)")

    def settings(self) -> TokenizeSettings:
        """What every task needs (picklable)."""
        if not self.tokenizer:
            raise ValueError("no tokenizer: give --tokenizer path/to/tokenizer.json")
        return TokenizeSettings(tokenizer=self.tokenizer, split_digits=self.split_digits, split_mode=self.split_mode,
                                eos_token=self.eos_token, holdout_fraction=self.holdout_fraction,
                                batch_docs=self.batch_docs, work_tokens=self.work_tokens)


@task(name="tokenize-shard", cache_policy=NO_CACHE, task_run_name="tokenize {shard.rel_path}")
def tokenize_task(data: Path, shard: InputShard, out: Path, settings: TokenizeSettings) -> dict[str, Any]:
    """One document shard -> its train/holdout tensors (see :func:`loader.tensor_writer.tokenize_shard`)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one process per core, one thread each
    return tokenize_shard(data, shard, out, settings)


def _record_manifest(manifest: Manifest, out: Path, run_id: str, records: list[dict[str, Any]],
                     split_digits: bool) -> None:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    rows = []
    totals: dict[str, int] = defaultdict(int)
    for rec in records:
        if rec["status"] != "done":
            continue
        for split, info in sorted(rec["splits"].items()):
            rows.append([str(out), info["tokens_path"], rec["input"], split, rec["source"], rec["language"],
                         list(rec["labels"]), rec["tokenizer_hash"], split_digits, info["tokens"], info["docs"],
                         info["tokens_bytes"], info["tokens_sha256"], run_id, now])
            totals[rec["input"]] += info["tokens"]
    with manifest.connect() as con:
        con.execute("BEGIN TRANSACTION")
        con.execute("DELETE FROM tensors WHERE tensor_root = ?", [str(out)])
        if rows:
            con.executemany("INSERT INTO tensors VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        con.executemany("UPDATE shards SET tokens = ? WHERE path = ?", [[n, path] for path, n in sorted(totals.items())])
        con.execute("COMMIT")


@flow(name="tokenize", log_prints=True)
def tokenize_flow(config: TokenizeConfig) -> dict[str, Any]:
    """Tokenize the selected shards into data tensors (see the module docstring)."""
    logger = get_run_logger()
    data, out = Path(config.data).resolve(), Path(config.out).resolve()
    settings = config.settings()
    with RunRecorder(data, "tokenize", None, config) as run:
        manifest, run_id = run.manifest, run.run_id
        shards = find_input_shards(data, config.labels, config.sources)
        if not shards:
            raise ValueError(f"no document shards under {data} with labels {config.labels} and sources {config.sources}")
        futures = [tokenize_task.submit(data, shard, out, settings) for shard in shards]
        records = [f.result() for f in futures]
        for rec in records:
            if rec["status"] != "done":
                logger.error("shard failed: %s", rec["error"])
        metadata = write_metadata(out, records, settings, config.labels)
        if config.megatron:
            for split in ("train", "holdout"):
                export_megatron(out, out / "megatron" / f"{split}_text_document", split)
        _record_manifest(manifest, out, run_id, records, config.split_digits)
        table = _source_table(records)
        run.table("tokenize-counts", table, "Tokens and documents per source and split")
        logger.info("tokenized %d shards: %s train tokens, %s holdout tokens -> %s", len(records),
                    metadata["totals"]["train"]["tokens"], metadata["totals"]["holdout"]["tokens"], out)
        run.status = "completed" if all(r["status"] == "done" for r in records) else "partial"
        return {"out": str(out), "metadata": metadata, "records": records}


def _source_table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = defaultdict(lambda: {"shards": 0, "failed": 0, "train_tokens": 0,
                                                          "holdout_tokens": 0, "docs": 0})
    for rec in records:
        row = rows[rec["source"]]
        row["shards"] += 1
        row["failed"] += rec["status"] != "done"
        for split, info in rec["splits"].items():
            row[f"{split}_tokens"] += info["tokens"]
            row["docs"] += info["docs"]
    return [{"source": source, **rows[source]} for source in sorted(rows)]


def report(result: dict[str, Any]) -> int:
    """What the command prints after a run; non-zero when a shard failed."""
    totals = result["metadata"]["totals"]
    print(f"\ntensors:  {result['out']}  (metadata.json, tokenizer.json)")
    print(f"train:    {totals['train']['tokens']:,} tokens, {totals['train']['docs']:,} documents")
    print(f"holdout:  {totals['holdout']['tokens']:,} tokens, {totals['holdout']['docs']:,} documents")
    return 1 if any(r["status"] != "done" for r in result["records"]) else 0


cli = FlowCLI(tokenize_flow, TokenizeConfig, "tokenize.yaml", __doc__, report=report, flags=[
    Flag("--data", "data", "data root with the document shards (default: data)", type=Path),
    Flag("--tokenizer", "tokenizer", "tokenizer.json path"),
    Flag("--labels", "labels", "comma-separated labels every shard must carry, e.g. G3", split=True),
    Flag("--sources", "sources", "comma-separated sources (default: all)", split=True),
    Flag("--split-digits", "split_digits", "split numbers into single digits (LLaMA); default from config",
         boolean=True),
    Flag("--megatron", "megatron", "also export Megatron .bin/.idx", switch=True),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main


if __name__ == "__main__":
    sys.exit(main())
