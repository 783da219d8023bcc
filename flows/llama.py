"""The whole recipe in one flow: every configured source as a sub-flow, then dedup, labels, tokens.

    python -m flows.llama --config configs/g1.yaml --out data/
    python -m flows.llama --config configs/g3.yaml --runner dask --dask-address tcp://scheduler:8786
    python -m flows.llama --config configs/g1.yaml --sources wikipedia,books --stages sources,dedup
    python -m flows.llama --sample --out data/     # offline: generated Wikipedia dumps + a toy tokenizer

Stages, in order: ``sources`` (one sub-flow per source, LLaMA table order), ``pile_index``,
``dedup``, ``labels``, ``tokenize``. Each stage is the stage's own flow, configured by its own
YAML (``configs/<stage>.yaml``) with the dataset file's section deep-merged on top, so
``python -m flows.wikipedia`` and this flow produce the same shards. A section set to ``null``
(or absent, for ``pile_index`` and ``tokenize``) skips the stage.

A re-run resumes: sources skip finished inputs through their own markers, and after a stage
completes this flow writes ``<out>/_state/llama/<stage>.json`` with a fingerprint of what the
stage read (the previous stage's fingerprint, the stage's config hash, the document shards);
a later run with the same fingerprint and the stage's outputs still on disk skips the stage.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import re
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml
from prefect import flow, get_run_logger
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from pydantic import Field

from core.atomic import sha256_file, write_json_atomic
from core.config import CONFIG_DIR, PipelineConfig
from core.lock import OutputLock
from core.manifest import Manifest
from core.released import recreated
from core.version import code_version
from flows._cli import Flag, FlowCLI
from flows._recorder import current_run_id
from flows._runtime import worker_count

STAGES = ("sources", "pile_index", "dedup", "labels", "tokenize")


@dataclass(frozen=True)
class StageFlow:
    """Where a stage's flow lives: module (with ``run(config)``), config class, default YAML."""

    module: str
    config_class: str
    default_yaml: str

    def load(self) -> tuple[Any, type[PipelineConfig]]:
        """Import lazily, so one unfinished module costs only its own stage."""
        module = importlib.import_module(self.module)
        return module, getattr(module, self.config_class)


#: The seven LLaMA sources in the paper's table 1 order (the run order: biggest first).
SOURCE_FLOWS: dict[str, StageFlow] = {
    "commoncrawl": StageFlow("flows.commoncrawl", "CommonCrawlConfig", "commoncrawl.yaml"),
    "c4": StageFlow("flows.c4", "C4Config", "c4.yaml"),
    "github": StageFlow("flows.github", "GithubConfig", "github.yaml"),
    "wikipedia": StageFlow("flows.wikipedia", "WikipediaConfig", "wikipedia.yaml"),
    "books": StageFlow("flows.books", "BooksConfig", "books.yaml"),
    "arxiv": StageFlow("flows.arxiv", "ArxivConfig", "arxiv.yaml"),
    "stackexchange": StageFlow("flows.stackexchange", "StackExchangeConfig", "stackexchange.yaml"),
    # G.2 extension sources (configs/g2.yaml)
    "pubmed": StageFlow("flows.pubmed", "PubmedConfig", "pubmed.yaml"),
    "science_books": StageFlow("flows.science_books", "ScienceBooksConfig", "science_books.yaml"),
    "dm_math": StageFlow("flows.dm_math", "DmMathConfig", "dm_math.yaml"),
    "stack_code": StageFlow("flows.stack_code", "StackCodeConfig", "stack_code.yaml"),
    "dialogue": StageFlow("flows.dialogue", "DialogueConfig", "dialogue.yaml"),
    "reasoning": StageFlow("flows.reasoning", "ReasoningConfig", "reasoning.yaml"),
}
AFTER_FLOWS: dict[str, StageFlow] = {
    "pile_index": StageFlow("flows.pile_index", "PileIndexConfig", "dedup.yaml"),
    "dedup": StageFlow("flows.dedup", "DedupConfig", "dedup.yaml"),
    "labels": StageFlow("flows.label", "LabelConfig", "labels.yaml"),
    "tokenize": StageFlow("flows.tokenization", "TokenizeConfig", "tokenize.yaml"),
}
#: Where and how a run executes is the parent's decision; a section cannot move one stage elsewhere.
PARENT_ONLY = ("out", "runner", "dask_address")
#: In a Common Crawl input list, the newest crawl (looked up when the run starts: monthly schedules).
LATEST_CRAWL = "CC-MAIN-latest"
#: Runtime settings a section may override for its stage (e.g. fewer workers for a memory-hungry one).
INHERITED = ("workers", "cache_dir", "keep_staging", "progress")


# -- config ---------------------------------------------------------------------------------
def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: mappings merge key by key, anything else (lists too) replaces.

    A dotted key (``latex.cut_appendix``) addresses a nested field, as ``--set`` does.
    """
    merged = dict(base)
    for key, value in top.items():
        if "." in key:
            head, rest = key.split(".", 1)
            value, key = {rest: value}, head
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_layered(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A dataset file with its ``extends`` chain resolved (``g3.yaml`` extends ``g1.yaml``)."""
    path = Path(path).resolve()
    if path in seen:
        raise ValueError(f"{path}: 'extends' loops back to itself")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    parent = data.pop("extends", None)
    if parent is None:
        return data
    return deep_merge(load_layered(resolve_config_path(parent, path.parent), (*seen, path)), data)


def resolve_config_path(name: str | Path, relative_to: Path | None = None) -> Path:
    """A config path as written: absolute, next to the file naming it, under cwd, or in ``configs/``."""
    candidate = Path(name)
    for base in ([relative_to] if relative_to else []) + [Path.cwd(), CONFIG_DIR]:
        if candidate.is_absolute() or (base / candidate).exists():
            return candidate if candidate.is_absolute() else base / candidate
    raise FileNotFoundError(f"config not found: {name}")


class LlamaConfig(PipelineConfig):
    """A dataset (G1, G2, G3): which sources and stages run, each section over the stage's YAML."""

    #: Sections say what each stage writes; their own config hashes track that, stage by stage.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {
        "extends", "only_sources", "stages", "skip_missing", "continue_on_error", "crawl_index_url"}

    extends: Path | None = Field(None, description="dataset file loaded first; the fields given here go on top")
    dataset: str = Field("G1", description="the label tokenization selects (G1, G2, G3)")
    sources: dict[str, dict[str, Any] | None] = Field(
        default_factory=dict, description="source -> overrides on configs/<source>.yaml; null = not run")
    pile_index: dict[str, Any] | None = Field(None, description="overrides on configs/dedup.yaml; null = no index")
    dedup: dict[str, Any] | None = Field(default_factory=dict, description="overrides on configs/dedup.yaml")
    labels: dict[str, Any] | None = Field(default_factory=dict, description="overrides on configs/labels.yaml")
    tokenize: dict[str, Any] | None = Field(None, description="overrides on configs/tokenize.yaml; needs a tokenizer")
    only_sources: list[str] = Field(default_factory=list, description="run only these of the configured sources")
    stages: list[str] = Field(default_factory=lambda: list(STAGES), description="stages to run, of " + ", ".join(STAGES))
    skip_missing: bool = Field(False, description="skip a source whose local inputs match no file")
    continue_on_error: bool = Field(False, description="run later stages even when a source failed")
    crawl_index_url: str = Field("https://index.commoncrawl.org/collinfo.json",
                                 description=f"list of crawls, read only when an input says {LATEST_CRAWL}")

    @classmethod
    def from_yaml(cls, path: Path | None = None, overrides: dict[str, Any] | None = None) -> LlamaConfig:
        """Load ``path`` with its ``extends`` chain, then apply ``overrides`` (dotted keys allowed)."""
        data = load_layered(path) if path is not None else {}
        return cls.model_validate(deep_merge(data, overrides or {}))

    def resolved(self) -> LlamaConfig:
        """Apply ``extends`` when the config came as flow parameters (a deployment), not from a file."""
        if self.extends is None:
            return self
        given = self.model_dump(mode="json", exclude_unset=True, exclude={"extends"})
        return LlamaConfig.model_validate(deep_merge(load_layered(resolve_config_path(self.extends)), given))

    def selected_sources(self) -> list[str]:
        """Configured sources to run, in table order; unknown names are an error, not a silent skip."""
        unknown = sorted(set(self.sources) - set(SOURCE_FLOWS))
        if unknown:
            raise ValueError(f"unknown sources {unknown}; known: {sorted(SOURCE_FLOWS)}")
        missing = sorted(set(self.only_sources) - {k for k, v in self.sources.items() if v is not None})
        if missing:
            raise ValueError(f"--sources {missing} not configured in this dataset")
        return [name for name in SOURCE_FLOWS if self.sources.get(name) is not None
                and (not self.only_sources or name in self.only_sources)]

    def runs_stage(self, stage: str) -> bool:
        """Whether ``stage`` is selected and configured."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
        return stage in self.stages and (stage == "sources" or getattr(self, stage) is not None)

    def stage_config(self, stage: str, section: dict[str, Any], forced: dict[str, Any] | None = None) -> PipelineConfig:
        """The stage's config: its YAML, this run's runtime settings, the section, then ``forced``."""
        spec = SOURCE_FLOWS.get(stage) or AFTER_FLOWS[stage]
        _, config_cls = spec.load()
        clash = sorted(set(section) & set(PARENT_ONLY))
        if clash:
            raise ValueError(f"section {stage!r} sets {clash}; set them for the whole run instead")
        data = yaml.safe_load((CONFIG_DIR / spec.default_yaml).read_text(encoding="utf-8")) or {}
        runtime = {name: getattr(self, name) for name in (*INHERITED, *PARENT_ONLY)}
        runtime = {k: (str(v) if isinstance(v, Path) else v) for k, v in runtime.items() if v is not None}
        merged = deep_merge(deep_merge(data, runtime), section)
        merged = deep_merge(merged, {"out": str(self.out), **(forced or {})})
        return config_cls.model_validate(merged)


# -- resume markers -------------------------------------------------------------------------
def fingerprint(*parts: Any) -> str:
    """A short hash of JSON-able parts."""
    payload = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def document_shards(out: Path) -> list[tuple[str, str]]:
    """``(path, sha256)`` of the final document shards in the manifest: what later stages read."""
    manifest = Manifest.for_output(out)
    if not manifest.path.exists():
        return []
    _, tables = manifest.query("SELECT table_name FROM information_schema.tables")
    released = " UNION SELECT path, sha256 FROM released" if ("released",) in tables else ""
    _, rows = manifest.query(f"SELECT path, sha256 FROM shards WHERE starts_with(path, 'docs/'){released} ORDER BY path")
    return [(p, s) for p, s in rows]


def marker_path(out: Path, stage: str) -> Path:
    """Where a finished stage's fingerprint is kept."""
    return out / "_state" / "llama" / f"{stage}.json"


def stage_is_done(out: Path, stage: str, print_: str) -> bool:
    """Finished before with the same inputs and config, and its outputs are still there."""
    path = marker_path(out, stage)
    if not path.exists():
        return False
    done = json.loads(path.read_text(encoding="utf-8"))
    if stage == "labels" and recreated(out):  # a source wrote released docs/ shards again: release them
        return False
    return done.get("fingerprint") == print_ and all(Path(p).exists() for p in done.get("outputs", []))


def mark_done(out: Path, stage: str, print_: str, outputs: list[Path]) -> None:
    """Record a finished stage (atomically: a crash leaves the old marker or none)."""
    write_json_atomic(marker_path(out, stage), {"fingerprint": print_, "outputs": [str(p) for p in outputs],
                                                "code_version": code_version()})


# -- the run --------------------------------------------------------------------------------
@dataclass
class StageResult:
    """One row of the stage table."""

    stage: str
    status: str  # completed, partial, resumed (skipped: finished before), skipped, failed
    seconds: float = 0.0
    detail: str = ""


@dataclass
class LlamaSummary:
    """What the parent flow returns."""

    run_id: str
    out: Path
    stages: list[StageResult] = field(default_factory=list)
    sources: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> list[StageResult]:
        """Stages that failed or finished with failed inputs."""
        return [s for s in self.stages if s.status in ("failed", "partial")]

    def status(self, stage: str) -> str | None:
        """The status of ``stage`` (first match), or None when it was not reached."""
        return next((s.status for s in self.stages if s.stage == stage), None)


@contextlib.contextmanager
def shared_dask_cluster(config: LlamaConfig) -> Iterator[str | None]:
    """With ``runner: dask`` and no address, one LocalCluster for every sub-flow (not one per stage)."""
    if config.runner != "dask" or config.dask_address:
        yield config.dask_address
        return
    from distributed import LocalCluster

    workers = worker_count(config)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def _missing_inputs(section: dict[str, Any]) -> bool:
    """True when every local input pattern of a source section matches nothing (URLs count as present)."""
    from flows._source_flow import expand_locations

    locations = [x for key in ("inputs", "dumps", "repos", "from_commoncrawl") for x in (section.get(key) or [])]
    if not locations:
        return False
    for location in locations:
        try:
            if expand_locations([location]):
                return False
        except FileNotFoundError:
            continue
    return True


def latest_crawl(index_url: str, timeout: float = 60) -> str:
    """The newest ``CC-MAIN-YYYY-WW`` id in Common Crawl's ``collinfo.json`` (a network call, on request only)."""
    with urllib.request.urlopen(index_url, timeout=timeout) as response:
        crawls = json.load(response)
    ids = sorted(c["id"] for c in crawls if re.fullmatch(r"CC-MAIN-\d{4}-\d{2}", str(c.get("id", ""))))
    if not ids:
        raise ValueError(f"{index_url}: no CC-MAIN-YYYY-WW crawl listed")
    return ids[-1]


def resolve_latest(section: dict[str, Any], index_url: str) -> dict[str, Any]:
    """Replace :data:`LATEST_CRAWL` in a web source's inputs by the newest crawl id."""
    keys = [k for k in ("inputs", "from_commoncrawl") if LATEST_CRAWL in (section.get(k) or [])]
    if not keys:
        return section
    newest = latest_crawl(index_url)
    return section | {k: [newest if x == LATEST_CRAWL else x for x in section[k]] for k in keys}


def _source_row(name: str, summary: Any, seconds: float) -> dict[str, Any]:
    records = list(getattr(summary, "records", []))
    reasons: dict[str, int] = {}
    for rec in records:
        for drop in rec.drops:
            reasons[drop["reason"]] = reasons.get(drop["reason"], 0) + drop["count"]
    text_bytes = sum(s["text_bytes"] for rec in records for s in rec.shards)
    kept = sum(rec.docs_kept for rec in records)
    return {
        "source": name, "inputs": len(records), "records_in": sum(r.records_in for r in records), "kept": kept,
        "dropped": sum(reasons.values()), "drop_reasons": ", ".join(f"{k}={v}" for k, v in sorted(reasons.items())),
        "text_bytes": text_bytes, "seconds": round(seconds, 2),
        "docs_per_s": round(kept / seconds, 1) if seconds else None,
        "text_mb_per_s": round(text_bytes / 1e6 / seconds, 3) if seconds else None,
    }


class _Run:
    """The parent flow's state: config, output root, the stage table, the progress artifact."""

    def __init__(self, config: LlamaConfig, dask_address: str | None) -> None:
        self.config = config
        self.out = Path(config.out).resolve()
        self.logger = get_run_logger()
        self.summary = LlamaSummary(current_run_id(), self.out)
        self.runtime = {"dask_address": dask_address} if dask_address else {}
        self.planned = len(config.selected_sources()) + sum(config.runs_stage(s) for s in STAGES[1:])
        self.progress = create_progress_artifact(0.0, description=f"{config.dataset}: stages finished")
        self.finished = 0
        self.fingerprint = ""
        self.broken = ""

    def step(self) -> None:
        self.finished += 1
        update_progress_artifact(self.progress, progress=100.0 * self.finished / max(self.planned, 1))

    def record(self, result: StageResult) -> StageResult:
        self.summary.stages.append(result)
        log = self.logger.error if result.status in ("failed", "partial") else self.logger.info
        log("stage %s: %s (%.1fs) %s", result.stage, result.status, result.seconds, result.detail)
        return result

    # sources -------------------------------------------------------------------------------
    def run_sources(self) -> None:
        for name in self.config.selected_sources():
            section = dict(self.config.sources[name] or {})
            if self.config.skip_missing and _missing_inputs(section):
                self.record(StageResult(name, "skipped", detail="no local input matches; skip_missing is on"))
                self.step()
                continue
            started = time.perf_counter()
            try:
                module, _ = SOURCE_FLOWS[name].load()
                section = resolve_latest(section, self.config.crawl_index_url)
                summary = module.run(self.config.stage_config(name, section, self.runtime))
            except Exception as exc:  # one source must not lose the others' work
                self.record(StageResult(name, "failed", time.perf_counter() - started, f"{type(exc).__name__}: {exc}"))
                self.step()
                continue
            seconds = time.perf_counter() - started
            self.summary.sources[name] = _source_row(name, summary, seconds)
            failed = [r.location for r in summary.failed]
            self.record(StageResult(name, "partial" if failed else "completed", seconds,
                                    f"{summary.kept} documents kept" + (f"; failed inputs: {failed}" if failed else "")))
            self.step()
        self.fingerprint = fingerprint("sources", document_shards(self.out))

    # later stages --------------------------------------------------------------------------
    def run_stage(self, stage: str, forced: dict[str, Any], outputs: Any, extra: Any = None) -> Any:
        """Run one of pile_index/dedup/labels/tokenize unless its fingerprint says it is done."""
        if self.broken:
            self.record(StageResult(stage, "skipped", detail=f"an earlier stage did not complete: {self.broken}"))
            self.step()
            return None
        section = dict(getattr(self.config, stage) or {})
        started = time.perf_counter()
        try:
            module, _ = AFTER_FLOWS[stage].load()
            config = self.config.stage_config(stage, section, {**self.runtime, **forced})
            print_ = fingerprint(stage, self.fingerprint, config.config_hash(), extra)
            if stage_is_done(self.out, stage, print_):
                self.fingerprint = print_
                self.record(StageResult(stage, "resumed", detail="finished before with the same inputs and config"))
                return None
            result = module.run(config)
            status, detail = _stage_status(stage, result)
        except Exception as exc:  # later stages would read half-finished output: stop, report, re-run resumes
            self.broken = stage
            self.record(StageResult(stage, "failed", time.perf_counter() - started, f"{type(exc).__name__}: {exc}"))
            return None
        finally:
            self.step()
        self.record(StageResult(stage, status, time.perf_counter() - started, detail))
        if status == "completed":
            mark_done(self.out, stage, print_, outputs(config, result))
        else:
            self.broken = stage
        self.fingerprint = print_
        return result


def _stage_status(stage: str, result: Any) -> tuple[str, str]:
    """Completed or partial, and a one-line detail, from what each stage flow returns."""
    if stage == "pile_index":
        return "completed", f"{result.documents} reference documents in {len(result.parts)} parts"
    if stage == "dedup":
        return ("partial" if result.failed else "completed",
                f"{result.documents} documents, {result.duplicates} duplicates, {result.reference_matches} in reference")
    if stage == "labels":
        errors = [r.error for r in result if r.error]
        counts: dict[str, int] = {}
        for r in result:
            for k, v in r.counts.items():
                counts[k] = counts.get(k, 0) + v
        return ("partial" if errors else "completed", json.dumps(dict(sorted(counts.items()))))
    failed = [r["input"] for r in result["records"] if r["status"] != "done"]
    totals = result["metadata"]["totals"]
    return ("partial" if failed else "completed",
            f"{totals['train']['tokens']} train + {totals['holdout']['tokens']} holdout tokens")


def _dedup_outputs(config: Any, result: Any) -> list[Path]:
    return [Path(config.out) / a["attributes"] for a in result.attributes]


def _label_outputs(config: Any, result: Any) -> list[Path]:
    return [Path(config.out) / s["path"] for r in result for s in r.shards]


def _tokenize_outputs(config: Any, result: Any) -> list[Path]:
    return [Path(result["out"]) / "metadata.json"]


def _index_outputs(config: Any, result: Any) -> list[Path]:
    return [Path(result.root) / "index.json"]


def tensors_dir(config: LlamaConfig) -> Path:
    """Default tensor root of a dataset: ``<out>/tensors/<dataset>``."""
    return Path(config.out).resolve() / "tensors" / config.dataset.lower().replace(".", "")


@flow(name="llama", log_prints=True)
def llama_flow(config: LlamaConfig) -> LlamaSummary:
    """Sources, then pile index, dedup, labels and tokenization, as sub-flows (see the module docstring)."""
    config = config.resolved()
    with OutputLock(Path(config.out), "llama", current_run_id()), shared_dask_cluster(config) as address:
        run = _Run(config, address)
        if config.runs_stage("sources"):
            run.run_sources()
        else:
            run.fingerprint = fingerprint("sources", document_shards(run.out))
        blocked = [s for s in run.summary.failed] if not config.continue_on_error else []
        if blocked:
            names = [s.stage for s in blocked]
            for stage in STAGES[1:]:
                if config.runs_stage(stage):
                    run.record(StageResult(stage, "skipped", detail=f"sources failed: {names}; re-run to resume"))
        else:
            _after_sources(run)
    _publish(run)
    if run.summary.failed:
        raise RuntimeError(f"stages failed: {[(s.stage, s.detail) for s in run.summary.failed]}")
    return run.summary


def _after_sources(run: _Run) -> None:
    config = run.config
    index: Path | None = None
    if config.runs_stage("pile_index"):
        built = run.run_stage("pile_index", {}, _index_outputs)
        section = config.pile_index or {}
        index = Path(built.root) if built is not None else Path(section.get("index") or "indexes/pile-v1")
        index = index if index.exists() else None
    if config.runs_stage("dedup"):
        section = config.dedup or {}
        forced: dict[str, Any] = {}
        if "sources" not in section and config.sources:
            forced["sources"] = [name for name in SOURCE_FLOWS if config.sources.get(name) is not None]
        if index is not None and section.get("against") is None:
            forced["against"] = str(index)
        against = forced.get("against") or section.get("against")
        index_print = sha256_file(Path(against) / "index.json") if against else None
        run.run_stage("dedup", forced, _dedup_outputs, index_print)
    if config.runs_stage("labels"):
        run.run_stage("labels", {}, _label_outputs)
    if config.runs_stage("tokenize"):
        section = config.tokenize or {}
        forced = {"out": str(section.get("out") or tensors_dir(config)), "data": str(run.out)}
        if "labels" not in section:
            forced["labels"] = [config.dataset]
        tokenizer = section.get("tokenizer")
        run.run_stage("tokenize", forced, _tokenize_outputs, sha256_file(Path(tokenizer)) if tokenizer else None)


def _publish(run: _Run) -> None:
    """Tables of stages and sources, and where everything is."""
    from kinda.cli_report import report_tables

    create_table_artifact([vars(s) | {"seconds": round(s.seconds, 2)} for s in run.summary.stages],
                          key="llama-stages", description=f"{run.config.dataset}: stages of this run")
    if run.summary.sources:
        create_table_artifact(list(run.summary.sources.values()), key="llama-sources",
                              description="Per source: inputs, kept, dropped by reason, bytes, throughput")
    manifest = Manifest.for_output(run.out)
    tables = report_tables(manifest) if manifest.path.exists() else {}
    if tables.get("sources"):
        create_table_artifact(tables["sources"], key="llama-totals",
                              description="Per source and label: documents, text bytes, tokens (from the manifest)")
    create_markdown_artifact(
        f"# {run.config.dataset}\n\n- output root: `{run.out}`\n- manifest: `{manifest.path}`\n"
        f"- report: `kinda --out {run.out} report --html report.html`\n"
        f"- query: `kinda --out {run.out} manifest summary`\n", key="llama-output")


def run(config: LlamaConfig) -> LlamaSummary:
    """Run the parent flow (sub-flows pick their task runners from the config)."""
    return llama_flow(config)


# -- sample inputs (offline demo) -----------------------------------------------------------
def sample_overrides(out: Path, pages: int = 300) -> dict[str, Any]:
    """Generated Wikipedia dumps and a toy tokenizer trained on them: the whole recipe offline."""
    from sources.wikipedia_sample import write_sample_dumps

    dumps = write_sample_dumps(out / "sample", pages=pages)
    tokenizer = out / "sample" / "tokenizer.json"
    if not tokenizer.exists():
        _train_toy_tokenizer(dumps, tokenizer)
    return {"sources": {name: None for name in SOURCE_FLOWS if name != "wikipedia"}
            | {"wikipedia": {"dumps": [str(d) for d in dumps]}},
            "pile_index": None, "tokenize": {"tokenizer": str(tokenizer)}}


def _train_toy_tokenizer(dumps: list[Path], target: Path) -> None:
    """A 2,000-token byte-level BPE over the sample dumps' text: enough to exercise tokenization."""
    import bz2

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    lines = [line for d in dumps for line in bz2.decompress(d.read_bytes()).decode("utf-8").splitlines()]
    tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=2000, special_tokens=["<|endoftext|>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tok.save(str(tmp))
    tmp.replace(target)


# -- command line ---------------------------------------------------------------------------
def sample_prepare(args: argparse.Namespace) -> dict[str, Any]:
    """``--sample``: generate the sample inputs first, so ``--set`` and flags can still change them."""
    if not args.flag_sample:
        return {}
    layered = load_layered(args.config)
    overrides = sample_overrides(Path(args.out or layered.get("out") or "data"), args.flag_sample_pages or 300)
    if layered.get("dedup", {}) is not None:
        overrides["dedup.against"] = None  # no Pile sample: nothing to match against
    return overrides


def report(summary: LlamaSummary) -> int:
    """The stage table and where the report is."""
    from kinda.summary import format_table

    rows = [(s.stage, s.status, f"{s.seconds:.1f}", s.detail[:100]) for s in summary.stages]
    print(f"\n{summary.out}\n")
    print(format_table(["stage", "status", "seconds", "detail"], rows))
    print(f"\nreport: kinda --out {summary.out} report --html report.html")
    return 0


cli = FlowCLI(llama_flow, LlamaConfig, "g1.yaml", __doc__, report=report, prepare=sample_prepare, runner=run, flags=[
    Flag("--sources", "only_sources", "comma-separated: run only these of the configured sources", split=True),
    Flag("--stages", "stages", f"comma-separated stages to run (default: all of {','.join(STAGES)})", split=True),
    Flag("--tokenizer", "tokenize.tokenizer", "tokenizer.json for the tokenize stage"),
    Flag("--skip-missing", "skip_missing", "skip a source whose local inputs match no file (default: fail it)",
         switch=True),
    Flag("--sample", "", "generate sample inputs and a toy tokenizer under <out>/sample and use them", switch=True),
    Flag("--sample-pages", "", "pages per sample dump (default: 300)", type=int),
])
parse_args, main = cli.parse_args, cli.main


if __name__ == "__main__":
    sys.exit(main())
