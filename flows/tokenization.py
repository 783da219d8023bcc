"""Tokenize flow: document shards (by label/source) -> data tensors + metadata.json + manifest rows.

    python -m flows.tokenization --data data/ --labels G3 --tokenizer path/to/tokenizer.json --split-digits --out tensors/
    python -m flows.tokenization --data data/ --sources wikipedia,arxiv --tokenizer tok.json --megatron --out tensors/
    python -m flows.tokenization --inputs 'ds/**/*.parquet' --text-column text --id-column id --tokenizer tok.json --out T
    python -m flows.tokenization --inputs 'ds/**/*.parquet' ... --hosts h1,h2 --out T    # launch on hosts over ssh
    kinda manifest sql "SELECT source, sum(tokens) FROM tensors WHERE split = 'train' GROUP BY 1"

One Prefect task per document shard (:mod:`tasks.tokenization`), run in worker processes (the
Rust tokenizer's own threads do not spread over a Dask cluster; processes do). Each task writes
its shard's train/holdout tensors and a marker; a re-run skips shards whose marker matches. The
flow process alone writes ``metadata.json`` and the manifest of the data root
(:mod:`loader.tensor_manifest`): a ``tensors`` table (one row per tensor file of this tensor
root; token counts belong to a root, so ``shards.tokens`` is not written).

With ``--inputs`` it tokenizes any Parquet / JSONL(.gz/.zst) dataset instead (one task per file,
:mod:`tasks.tokenize_external`); the manifest of ``--out`` then records the run, the tensor files
and every file's kept and dropped rows. ``--host-count N --host-index i`` runs one host's share of
the files; ``--hosts h1,h2`` (no index) launches every share through ``ssh`` and collects the
hosts' metadata into the launcher's manifest (:mod:`tasks.tokenize_hosts`, docs/loader.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from core.config import PipelineConfig
from core.locations import has_scheme, missing_locations
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import LazyImport, flow

if TYPE_CHECKING:
    from prefect import get_run_logger
    from prefect.task_runners import ThreadPoolTaskRunner

    from core.atomic import write_json_atomic
    from flows.runtime.recorder import RunRecorder
    from flows.runtime.runner import make_task_runner
    from loader.tensor_manifest import (
        all_done,
        failed_inputs,
        input_record,
        record_tensors,
        source_table,
    )
    from loader.tensor_writer import (
        TokenizeSettings,
        export_megatron_splits,
        find_input_shards,
        write_metadata,
    )
    from sources.formats.datasets_text import ReadOptions, dataset_share
    from tasks import tokenize_hosts as per_host
    from tasks.tokenization import fetch_hosts, launch_hosts, tokenize_files, tokenize_shards
    from tasks.tokenize_external import ExternalJob
else:  # only a run needs them (Prefect, DuckDB, pyarrow, numpy): not --help or a refused command
    get_run_logger = LazyImport("prefect", "get_run_logger")
    ThreadPoolTaskRunner = LazyImport("prefect.task_runners", "ThreadPoolTaskRunner")
    write_json_atomic = LazyImport("core.atomic", "write_json_atomic")
    RunRecorder = LazyImport("flows.runtime.recorder", "RunRecorder")
    make_task_runner = LazyImport("flows.runtime.runner", "make_task_runner")
    all_done = LazyImport("loader.tensor_manifest", "all_done")
    failed_inputs = LazyImport("loader.tensor_manifest", "failed_inputs")
    input_record = LazyImport("loader.tensor_manifest", "input_record")
    record_tensors = LazyImport("loader.tensor_manifest", "record_tensors")
    source_table = LazyImport("loader.tensor_manifest", "source_table")
    TokenizeSettings = LazyImport("loader.tensor_writer", "TokenizeSettings")
    export_megatron_splits = LazyImport("loader.tensor_writer", "export_megatron_splits")
    find_input_shards = LazyImport("loader.tensor_writer", "find_input_shards")
    write_metadata = LazyImport("loader.tensor_writer", "write_metadata")
    ReadOptions = LazyImport("sources.formats.datasets_text", "ReadOptions")
    dataset_share = LazyImport("sources.formats.datasets_text", "dataset_share")
    per_host = LazyImport("tasks.tokenize_hosts")
    fetch_hosts = LazyImport("tasks.tokenization", "fetch_hosts")
    launch_hosts = LazyImport("tasks.tokenization", "launch_hosts")
    tokenize_files = LazyImport("tasks.tokenization", "tokenize_files")
    tokenize_shards = LazyImport("tasks.tokenization", "tokenize_shards")
    ExternalJob = LazyImport("tasks.tokenize_external", "ExternalJob")

REPO_ROOT = Path(__file__).resolve().parent.parent
NO_TOKENIZER = "no tokenizer: give --tokenizer path/to/tokenizer.json"
#: Fields only the launcher uses; a host gets every other field through ``--set``.
LAUNCHER_FIELDS = frozenset({"out", "hosts", "host_count", "host_index", "host_out", "remote", "remote_dir",
                             "remote_python", "collect_only", "dask_address"})


class TokenizeConfig(PipelineConfig):
    """Settings of the tokenize flow (defaults in ``configs/tokenize.yaml``); ``out`` is the tensor root."""

    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {
        "data", "batch_docs", "megatron", "inputs", "hosts", "host_out", "remote", "remote_dir", "remote_python",
        "collect_only"}

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
        "text", description="<work> markers: 'text' (encoded by the existing vocabulary; the default, as "
                            "configs/tokenize.yaml: no new id) or 'added' (two new ids after the last)")
    # -- an external dataset (--inputs) instead of our shards ---------------------------------
    inputs: list[str] = Field(default_factory=list,
                              description="Parquet/JSONL(.gz/.zst) files: globs, folders, fsspec URLs (hf://...)")
    text_column: str = Field("text", min_length=1)
    id_column: str | None = Field(None, description="decides the holdout; none: the file and row")
    source: str = Field("dataset", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                        description="source name of the dataset's tensors (recipes select by it)")
    language: str | None = None
    max_text_chars: int = Field(32 * 1024 * 1024, gt=0, description="longer texts are dropped (text-too-large)")
    max_line_bytes: int = Field(128 * 1024 * 1024, gt=0, description="longer JSON lines are dropped")
    # -- across hosts ---------------------------------------------------------------------------
    hosts: list[str] = Field(default_factory=list, description="host names; without host_index: launch them all")
    host_count: int = Field(0, ge=0, description="hosts sharing the files (0: len(hosts), else 1)")
    host_index: int | None = Field(None, ge=0, description="run only this host's share")
    host_out: str = Field("{out}/{host}", description="each host's output root on its own disk")
    remote: str = Field("ssh {host}", description="command prefix that runs a shell command on {host}")
    remote_dir: str = Field("", description="the repository on the hosts (default: this one's path)")
    remote_python: str = Field("", description="python on the hosts (default: this one's path)")
    collect_only: bool = Field(False, description="launcher: only collect the hosts' metadata")

    def missing_inputs(self) -> list[str]:
        """Local patterns that match nothing; URLs (hf://, s3://) are checked when read."""
        return missing_locations(self.inputs, remote=has_scheme)

    def preflight(self) -> None:
        """Load the tokenizer as the run will (digit splitting, EOS, work tokens), so what every task
        would fail on (no such file, no end-of-document token, a family that cannot be digit-split:
        WordPiece, BPE with an end-of-word suffix) is one line before the run starts.

        A launcher's tokenizer lives on its hosts, and a hub name is fetched by the run: neither is read here.
        """
        if self.is_launcher:
            return
        if not self.tokenizer:
            raise ValueError(NO_TOKENIZER)
        path = Path(self.tokenizer)
        if not path.exists():
            if self.tokenizer.endswith(".json") or self.tokenizer.startswith((".", "/")):
                raise FileNotFoundError(f"no tokenizer.json at {self.tokenizer}")
            return  # a hub name
        from core.tokenizer import load_tokenizer  # the tokenizers library: a run's import, not --help's

        load_tokenizer(path, split_digits=self.split_digits, split_mode=self.split_mode, eos_token=self.eos_token,
                       work_tokens=self.work_tokens)

    @property
    def hosts_total(self) -> int:
        """How many hosts share the files."""
        return self.host_count or len(self.hosts) or 1

    @property
    def is_launcher(self) -> bool:
        """Launch every host's share (no host index given, more than one host)."""
        return bool(self.inputs) and self.host_index is None and self.hosts_total > 1

    def external_job(self, out: Path) -> ExternalJob:
        """What every file's task needs."""
        read = ReadOptions(text_column=self.text_column, id_column=self.id_column, batch_rows=self.batch_docs,
                           max_text_chars=self.max_text_chars, max_line_bytes=self.max_line_bytes)
        return ExternalJob(out, self.source, self.settings(), read, self.language, tuple(self.labels))

    def host_plans(self) -> list[per_host.HostPlan]:
        """Every host of a launch, with its output root and how to reach it."""
        names = self.hosts or [f"host-{i}" for i in range(self.hosts_total)]
        if len(names) != self.hosts_total:
            raise ValueError(f"{len(names)} hosts named but host_count is {self.hosts_total}")
        return [per_host.HostPlan(name, i, self.hosts_total, self.host_out.format(out=self.out, host=name, index=i),
                                  self.remote) for i, name in enumerate(names)]

    def settings(self) -> TokenizeSettings:
        """What every task needs (picklable)."""
        if not self.tokenizer:
            raise ValueError(NO_TOKENIZER)
        return TokenizeSettings(tokenizer=self.tokenizer, split_digits=self.split_digits, split_mode=self.split_mode,
                                eos_token=self.eos_token, holdout_fraction=self.holdout_fraction,
                                batch_docs=self.batch_docs, work_tokens=self.work_tokens)


@flow(name="tokenize", log_prints=True)
def tokenize_flow(config: TokenizeConfig) -> dict[str, Any]:
    """Tokenize the selected shards into data tensors (see the module docstring)."""
    data, out = Path(config.data).resolve(), Path(config.out).resolve()
    settings = config.settings()
    with RunRecorder(data, "tokenize", None, config) as run:
        shards = find_input_shards(data, config.labels, config.sources)
        if not shards:
            raise ValueError(f"no document shards under {data} with labels {config.labels} and sources {config.sources}")
        records = tokenize_shards(data, shards, out, settings)
        metadata = write_metadata(out, records, settings, config.labels)
        if config.megatron:  # an empty split is skipped (megatron-core cannot open it): metadata says so
            exports = export_megatron_splits(out, out / "megatron")
            metadata = write_metadata(out, records, settings, config.labels, extra={"megatron": exports})
        record_tensors(run.manifest, out, run.run_id, records, config.split_digits)
        run.table("tokenize-counts", source_table(records), "Tokens and documents per source and split")
        get_run_logger().info("tokenized %d shards: %s train tokens, %s holdout tokens -> %s", len(records),
                              metadata["totals"]["train"]["tokens"], metadata["totals"]["holdout"]["tokens"], out)
        run.status = "completed" if all_done(records) else "partial"
        return {"out": str(out), "metadata": metadata, "records": records}


@flow(name="tokenize-dataset", log_prints=True)
def tokenize_dataset_flow(config: TokenizeConfig) -> dict[str, Any]:
    """Tokenize this host's share of an external dataset's files (see the module docstring)."""
    from loader.tensor_manifest import EXTERNAL_SHARD_KEYS  # a value, not a call: no lazy stand-in

    logger = get_run_logger()
    out = Path(config.out).resolve()
    job = config.external_job(out)
    with RunRecorder(out, "tokenize-dataset", config.source, config) as run:
        files, mine = dataset_share(config.inputs, config.hosts_total, config.host_index or 0)
        records = tokenize_files(mine, job)
        failed = failed_inputs(records)
        for item in failed:
            logger.error("file failed: %s", item["error"])
        extra = {"dataset": {"source": config.source, "text_column": config.text_column,
                             "id_column": config.id_column},
                 "hosts": {"count": config.hosts_total, "index": config.host_index or 0,
                           "files": [file.rel for file in mine]},
                 "failed": failed}
        metadata = write_metadata(out, records, job.settings, config.labels, extra=extra,
                                  shard_keys=EXTERNAL_SHARD_KEYS)
        run.inputs([input_record(r, config.source, config.language, config.config_hash()) for r in records],
                   recipe="tokenize-dataset")
        record_tensors(run.manifest, out, run.run_id, records, config.split_digits)
        run.table("tokenize-files", source_table(records), "Tokens and documents of the dataset, per split")
        logger.info("host %d/%d: %d of %d files, %s train tokens -> %s", (config.host_index or 0) + 1,
                    config.hosts_total, len(mine), len(files), metadata["totals"]["train"]["tokens"], out)
        run.status = "partial" if failed else "completed"
        return {"out": str(out), "metadata": metadata, "records": records}


@flow(name="tokenize-hosts", log_prints=True)
def tokenize_hosts_flow(config: TokenizeConfig) -> dict[str, Any]:
    """Run every host's share (unless ``collect_only``), then record all hosts' output here."""
    out = Path(config.out).resolve()
    plans = config.host_plans()
    with RunRecorder(out, "tokenize-hosts", config.source, config) as run:
        runs = {} if config.collect_only else launch_hosts(
            plans, config.model_dump(mode="json", exclude=set(LAUNCHER_FIELDS)),
            config.remote_python or sys.executable, config.remote_dir or str(REPO_ROOT), out)
        fetched = fetch_hosts(plans)
        metadata = {name: got["metadata"] for name, got in fetched.items() if "metadata" in got}
        problems = per_host.check_shares(plans, metadata)
        rows = []
        for plan in plans:
            meta = metadata.get(plan.name)
            if meta is not None:
                per_host.save_collected(out, plan, meta)
                run.inputs(per_host.input_records(plan, meta, config.config_hash()), recipe="tokenize-hosts")
                record_tensors(run.manifest, Path(f"{plan.name}:{plan.root}"), run.run_id,
                               per_host.tensor_records(meta), config.split_digits)
            error = per_host.host_error(plan, fetched[plan.name], runs.get(plan.name))
            rows.append(per_host.host_summary(plan, meta, error))
        for problem in [*problems, *(r["error"] for r in rows if r["error"])]:
            get_run_logger().error("%s", problem)
        hosts_doc = per_host.hosts_document(rows, problems)
        write_json_atomic(out / "hosts.json", hosts_doc)
        run.table("tokenize-hosts", rows, "Each host's share: files, tokens and documents per split")
        run.status = "completed" if per_host.hosts_complete(hosts_doc) else "partial"
        return {"out": str(out), "hosts": hosts_doc}


def run_tokenize(config: TokenizeConfig) -> dict[str, Any]:
    """The flow the config asks for: our shards, one host's share of a dataset, or a launch."""
    if config.is_launcher:
        runner: Any = ThreadPoolTaskRunner(max_workers=max(config.hosts_total, 2))  # hosts are subprocesses
        return tokenize_hosts_flow.with_options(task_runner=runner)(config)
    chosen = tokenize_dataset_flow if config.inputs else tokenize_flow
    return chosen.with_options(task_runner=make_task_runner(config))(config)


def report(result: dict[str, Any]) -> int:
    """What the command prints after a run; non-zero when a shard, a file or a host failed."""
    if "hosts" in result:
        doc = result["hosts"]
        for row in doc["hosts"]:
            state = row["error"] or f"{row['files']} files, {row['train_tokens']:,} train tokens"
            print(f"{row['host']:<16} {row['root']}  {state}")
        print(f"\nhosts:    {result['out']}/hosts.json  (manifest: tensors rows per host)")
        for problem in doc["problems"]:
            print(f"problem:  {problem}")
        return 0 if per_host.hosts_complete(doc) else 1
    totals = result["metadata"]["totals"]
    print(f"\ntensors:  {result['out']}  (metadata.json, tokenizer.json)")
    print(f"train:    {totals['train']['tokens']:,} tokens, {totals['train']['docs']:,} documents")
    print(f"holdout:  {totals['holdout']['tokens']:,} tokens, {totals['holdout']['docs']:,} documents")
    dropped = sum(d["count"] for r in result["records"] for d in r.get("drops", []))
    if any("drops" in r for r in result["records"]):
        print(f"dropped:  {dropped:,} rows (kinda manifest sql \"SELECT reason, sum(count) FROM drops GROUP BY 1\")")
    return 1 if any(r["status"] != "done" for r in result["records"]) else 0


cli = FlowCLI(tokenize_flow, TokenizeConfig, "tokenize.yaml", __doc__, report=report, runner=run_tokenize, flags=[
    Flag("--data", "data", "data root with the document shards (default: data)", type=Path),
    Flag("--tokenizer", "tokenizer", "tokenizer.json path"),
    Flag("--labels", "labels", "comma-separated labels every shard must carry, e.g. G3", split=True),
    Flag("--sources", "sources", "comma-separated sources (default: all)", split=True),
    Flag("--split-digits", "split_digits", "split numbers into single digits (LLaMA); default from config",
         boolean=True),
    Flag("--megatron", "megatron", "also export Megatron .bin/.idx", switch=True),
    Flag("--inputs", "inputs", "dataset files instead of --data: globs, folders, hf:// URLs (repeatable)",
         many=True),
    Flag("--text-column", "text_column", "column (Parquet) or key (JSONL) of the text (default: text)"),
    Flag("--id-column", "id_column", "column of the document id; decides the holdout (default: file and row)"),
    Flag("--source", "source", "source name of the dataset's tensors (default: dataset)"),
    Flag("--hosts", "hosts", "comma-separated host names: launch each one's share (ssh) and collect", split=True),
    Flag("--host-count", "host_count", "hosts sharing the files (with --host-index)", type=int),
    Flag("--host-index", "host_index", "run only this host's share (0-based)", type=int),
    Flag("--host-out", "host_out", "each host's output root on its disk: {out} {host} {index} (default {out}/{host})"),
    Flag("--remote", "remote", "prefix running one shell command on {host} (default 'ssh {host}')"),
    Flag("--collect-only", "collect_only", "launcher: only read the hosts' metadata into the manifest",
         switch=True),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main


if __name__ == "__main__":
    sys.exit(main())
