"""The whole recipe in one flow: every configured source as a sub-flow, then dedup, labels, tokens.

    python -m flows.llama --config configs/g1.yaml --out data/
    python -m flows.llama --config configs/g3.yaml --runner dask --dask-address tcp://scheduler:8786
    python -m flows.llama --config configs/g1.yaml --sources wikipedia,books --stages sources,dedup
    python -m flows.llama --sample --out data/     # offline: every source's sample, the Pile sample, a toy tokenizer
    python -m flows.llama --config configs/g2.yaml --sample --out data/   # + the G.2 extension samples

Stages, in order: ``sources`` (one sub-flow per source, LLaMA table order), ``pile_index``,
``dedup``, ``decontaminate`` (when evaluation sets are named), ``labels``, ``tokenize``. Each
stage is the stage's own flow, configured by its own YAML (``configs/<stage>.yaml``) with the dataset file's section deep-merged on top, so
``python -m flows.wikipedia`` and this flow produce the same shards. A section set to ``null``
(or absent, for ``pile_index`` and ``tokenize``) skips the stage.

Before anything runs, the flow checks what the run needs and cannot get (a tokenizer file, any
source input, the Pile): a run that would fail hours later fails now, with one line saying what
is missing and how to fix it. ``sample: true`` (``--sample``) generates offline inputs first
(:mod:`flows.runtime.sample`).

A re-run resumes: sources skip finished inputs through their own markers, and after a stage
completes this flow writes ``<out>/_state/llama/<stage>.json`` with a fingerprint of what the
stage read (the previous stage's fingerprint, the stage's config hash, the document shards);
a later run with the same fingerprint and the stage's outputs still on disk skips the stage
(:mod:`flows.runtime.llama_stages`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pydantic import Field, ValidationError

from core.atomic import sha256_file
from core.config import (
    PipelineConfig,
    deep_merge,
    load_layered,
    load_yaml_file,
    parse_set_option,
    resolve_config_path,
    stage_yaml,
)
from core.lock import OutputLock
from flows.runtime.cli import Flag, FlowCLI, one_line
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.llama_crawl import LATEST_CRAWL
from flows.runtime.llama_stages import (
    LlamaSummary,
    StageFlow,
    StageResult,
    StageRun,
    decontaminate_outputs,
    dedup_outputs,
    final_shards,
    fingerprint,
    index_outputs,
    label_outputs,
    missing_inputs,
    shared_dask_cluster,
    tokenize_outputs,
)
from flows.runtime.logs import say
from flows.runtime.runner import worker_pool
from flows.runtime.sample import SAMPLE_PAGES, sample_overrides
from flows.source import source_runner

if TYPE_CHECKING:
    from core.registry import Registry
    from flows.runtime.llama_report import print_report, publish
    from flows.runtime.recorder import current_run_id
else:  # a run needs them (Prefect, DuckDB), --help does not
    print_report = LazyImport("flows.runtime.llama_report", "print_report")
    publish = LazyImport("flows.runtime.llama_report", "publish")
    current_run_id = LazyImport("flows.runtime.recorder", "current_run_id")

STAGES = ("sources", "pile_index", "dedup", "decontaminate", "labels", "tokenize")


def source_registry() -> Registry:
    """Every source a dataset can name, in run order (:data:`flows.registry.SOURCES`).

    Imported when a run needs it, not for ``--help`` (it imports every source's flow module).
    """
    from flows.registry import SOURCES

    return SOURCES


def after_flows() -> dict[str, StageFlow]:
    """The stages after the sources (their modules, Prefect included, imported when a run needs them)."""
    from flows import decontaminate, dedup, label, pile_index, tokenization

    return {
        "pile_index": StageFlow(pile_index.run, pile_index.PileIndexConfig, "dedup.yaml"),
        "dedup": StageFlow(dedup.run, dedup.DedupConfig, "dedup.yaml"),
        "decontaminate": StageFlow(decontaminate.run, decontaminate.DecontaminateConfig, "decontaminate.yaml"),
        "labels": StageFlow(label.run, label.LabelConfig, "labels.yaml"),
        "tokenize": StageFlow(tokenization.run, tokenization.TokenizeConfig, "tokenize.yaml"),
    }


#: Where and how a run executes is the parent's decision; a section cannot move one stage elsewhere.
PARENT_ONLY = ("out", "runner", "dask_address")
#: Runtime settings a section may override for its stage (e.g. fewer workers for a memory-hungry one).
INHERITED = ("workers", "cache_dir", "keep_staging", "progress")
#: How a user without the inputs still sees a whole run (said in every "cannot start" message).
DEMO_HINT = "for an offline demo set sample: true (the llama/sample deployment, or --sample)"


class DatasetNotReady(RuntimeError):
    """What the run needs and cannot get, found before any stage runs (one line: what, and how to fix it)."""


class DatasetInvalid(ValueError):
    """A dataset whose top level or a section does not type against its config class, found when it is
    loaded (one line: the file that set each key, the dotted key, pydantic's message), not when the stage starts."""


#: Where a layer of a dataset came from (a file's path, ``--set``, ``flow parameter``) and what it set.
Layer = tuple[str, dict[str, Any]]
#: A fault in a dataset: the key path (``("sources", "commoncrawl", "lid_min_scroe")``) and its message.
Fault = tuple[tuple[str | int, ...], str]


class LlamaConfig(PipelineConfig):
    """A dataset (G1, G2, G3): which sources and stages run, each section over the stage's YAML."""

    #: Sections say what each stage writes; their own config hashes track that, stage by stage.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {
        "extends", "only_sources", "stages", "skip_missing", "continue_on_error", "crawl_index_url",
        "sample", "sample_pages"}

    extends: Path | None = Field(None, description="dataset file loaded first; the fields given here go on top")
    dataset: str = Field("G1", description="the label tokenization selects (G1, G2, G3)")
    sources: dict[str, dict[str, Any] | None] = Field(
        default_factory=dict, description="source -> overrides on configs/<source>.yaml; null = not run")
    pile_index: dict[str, Any] | None = Field(None, description="overrides on configs/dedup.yaml; null = no index")
    dedup: dict[str, Any] | None = Field(default_factory=dict, description="overrides on configs/dedup.yaml")
    decontaminate: dict[str, Any] | None = Field(None, description="overrides on configs/decontaminate.yaml (evals: "
                                                                   "the evaluation sets); null = not run")
    labels: dict[str, Any] | None = Field(default_factory=dict, description="overrides on configs/labels.yaml")
    tokenize: dict[str, Any] | None = Field(None, description="overrides on configs/tokenize.yaml; needs a tokenizer")
    only_sources: list[str] = Field(default_factory=list, description="run only these of the configured sources")
    stages: list[str] = Field(default_factory=lambda: list(STAGES), description="stages to run, of " + ", ".join(STAGES))
    skip_missing: bool = Field(False, description="skip a source whose local inputs match no file")
    continue_on_error: bool = Field(False, description="run later stages even when a source failed")
    crawl_index_url: str = Field("https://index.commoncrawl.org/collinfo.json",
                                 description=f"list of crawls, read only when an input says {LATEST_CRAWL}")
    sample: bool = Field(False, description="generate offline sample inputs and a toy tokenizer under <out>/sample "
                                            "when the run starts, and run the dataset's sources that have one")
    sample_pages: int = Field(SAMPLE_PAGES, gt=0, description="pages per sample Wikipedia dump (with sample)")

    @classmethod
    def from_yaml(cls, path: Path | None = None, overrides: dict[str, Any] | None = None) -> Self:
        """The dataset file (its ``extends`` chain) with ``overrides`` (``--set``, flags) on top, validated whole:
        a section that does not type against its stage's config class is a :class:`DatasetInvalid` now."""
        data = deep_merge(load_layered(Path(path)) if path is not None else {}, overrides or {})
        return cls.validated(data, path, [("--set", overrides or {})])

    @classmethod
    def validated(cls, data: dict[str, Any], path: Path | None, given: list[Layer]) -> Self:
        """``data`` (``given`` layers over the file at ``path``) as a config whose every section is typed;
        a fault names the layer that set its key (read back only then)."""
        try:
            config = cls.model_validate(data)
            faults = config.section_faults()
        except ValidationError as exc:
            faults = [(tuple(err["loc"]), err["msg"]) for err in exc.errors()]
        if faults:
            raise DatasetInvalid(describe_faults(faults, [*given, *file_layers(path)]))
        return config

    def section_faults(self) -> list[Fault]:
        """Every configured section built into its stage's config (as the stage will build it): what fails.

        Sources first (an unknown name is a fault too), then the sections of the stages after them.
        """
        registry = source_registry()
        faults: list[Fault] = []
        for name, section in self.sources.items():
            if name not in registry:
                faults.append((("sources", name), f"unknown source; known: {', '.join(registry)}"))
            elif section is not None:
                faults += self._stage_faults(("sources", name), name, section)
        for stage in STAGES[1:]:
            section = getattr(self, stage)
            if section is not None:
                faults += self._stage_faults((stage,), stage, section)
        return faults

    def _stage_faults(self, key: tuple[str, ...], stage: str, section: dict[str, Any]) -> list[Fault]:
        try:
            self.stage_config(stage, section)
        except ValidationError as exc:
            return [((*key, *err["loc"]), err["msg"]) for err in exc.errors()]
        except (ValueError, OSError) as exc:  # a section setting what only the whole run may set; the stage's YAML
            return [(key, one_line(exc))]
        return []

    def output_fields(self) -> dict[str, Any]:
        """Without a decontaminate section the dataset is what it was before that stage existed, and so
        is its hash (``tests/flows/test_config_parts.py`` pins it)."""
        fields = super().output_fields()
        if fields.get("decontaminate") is None:
            fields.pop("decontaminate", None)
        return fields

    def resolved(self) -> LlamaConfig:
        """Apply ``extends`` when the config came as flow parameters (a deployment), not from a file;
        validated whole either way (:meth:`validated`), before any stage or sample is made."""
        given = self.model_dump(mode="json", exclude_unset=True, exclude={"extends"})
        if self.extends is None:
            faults = self.section_faults()
            if faults:
                raise DatasetInvalid(describe_faults(faults, [("flow parameter", given)]))
            return self
        path = resolve_config_path(self.extends)
        return LlamaConfig.validated(deep_merge(load_layered(path), given), path, [("flow parameter", given)])

    def with_sample(self) -> LlamaConfig:
        """``sample: true``: this dataset over generated inputs (sources without a sample set to null)."""
        configured = [name for name, section in self.sources.items() if section is not None]
        overrides = sample_overrides(Path(self.out), configured, source_registry(), self.sample_pages,
                                     dedup=self.dedup is not None)
        data = deep_merge(self.model_dump(mode="json", exclude={"extends"}), overrides)
        return LlamaConfig.model_validate(data | {"sample": False})

    def selected_sources(self) -> list[str]:
        """Configured sources to run, in table order; unknown names are an error, not a silent skip."""
        registry = source_registry()
        unknown = sorted(set(self.sources) - set(registry))
        if unknown:
            raise ValueError(f"unknown sources {unknown}; known: {sorted(registry)}")
        missing = sorted(set(self.only_sources) - {k for k, v in self.sources.items() if v is not None})
        if missing:
            raise ValueError(f"--sources {missing} not configured in this dataset")
        return [name for name in registry if self.sources.get(name) is not None
                and (not self.only_sources or name in self.only_sources)]

    def source_locations(self, name: str) -> list[str]:
        """The input locations source ``name``'s section names (over the source's input fields)."""
        return source_registry()[name].locations(dict(self.sources.get(name) or {}))

    def runs_stage(self, stage: str) -> bool:
        """Whether ``stage`` is selected and configured."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
        return stage in self.stages and (stage == "sources" or getattr(self, stage) is not None)

    def stage_flow(self, stage: str) -> StageFlow:
        """The flow that runs ``stage`` (a source name or one of the stages after the sources)."""
        registry = source_registry()
        if stage in registry:
            spec = registry[stage]
            return StageFlow(source_runner(spec), spec.config, spec.default_yaml)
        return after_flows()[stage]

    def stage_config(self, stage: str, section: dict[str, Any], forced: dict[str, Any] | None = None) -> PipelineConfig:
        """The stage's config: its YAML, this run's runtime settings, the section, then ``forced``."""
        spec = self.stage_flow(stage)
        clash = sorted(set(section) & set(PARENT_ONLY))
        if clash:
            raise ValueError(f"section {stage!r} sets {clash}; set them for the whole run instead")
        runtime = {name: getattr(self, name) for name in (*INHERITED, *PARENT_ONLY)}
        runtime = {k: (str(v) if isinstance(v, Path) else v) for k, v in runtime.items() if v is not None}
        merged = deep_merge(deep_merge(stage_yaml(spec.default_yaml), runtime), section)
        merged = deep_merge(merged, {"out": str(self.out), **(forced or {})})
        return spec.config.model_validate(merged)

    def tokenizer_problems(self) -> list[str]:
        """Why the tokenize stage could not load its tokenizer as configured (found after hours of sources otherwise)."""
        stage = self.stage_config("tokenize", dict(self.tokenize or {}))
        tokenizer = str(getattr(stage, "tokenizer", ""))
        if not tokenizer or (tokenizer.endswith(".json") and not Path(tokenizer).is_file()):
            return [f"tokenizer {tokenizer or '(none)'!r} not found in {Path.cwd()}: set tokenize.tokenizer "
                    "to a tokenizer.json (--tokenizer PATH) or leave tokenize out of stages"]
        try:
            stage.preflight()  # digit splitting this family cannot take, no end-of-document token
        except (ValueError, OSError) as exc:
            return [one_line(exc)]
        return []

    def not_ready(self) -> list[str]:
        """What this run needs and cannot get, each with its fix (empty: ready to start)."""
        problems = []
        sources = self.selected_sources() if self.runs_stage("sources") else []
        absent = [n for n in sources if missing_inputs(self.source_locations(n))]
        if self.runs_stage("tokenize"):
            problems += self.tokenizer_problems()
        if self.runs_stage("pile_index"):
            section = dict(self.pile_index or {})
            index = Path(str(section.get("index") or "indexes/pile-v1"))
            if missing_inputs(list(section.get("inputs") or [])) and not (index / "index.json").is_file():
                problems.append(f"no Pile shard matches {section.get('inputs')} and {index} holds no index: "
                                "put the Pile under raw/pile/train/ (docs/operations.md) or set pile_index: null")
        if absent and (problems or len(absent) == len(sources)):  # else: skipped, or that source fails alone
            problems.append(f"no local input for {', '.join(absent)}: put them under raw/<source>/ "
                            "(docs/operations.md), set sources.<name>.inputs, or set those sources to null"
                            + ("" if self.skip_missing else " (or skip_missing: true)"))
        return problems


def file_layers(path: Path | None) -> list[Layer]:
    """A dataset file and the files it extends, top first (as :func:`core.config.load_layered` reads them)."""
    layers: list[Layer] = []
    current = Path(path).resolve() if path is not None else None
    while current is not None and all(current != Path(name) for name, _ in layers):
        data = load_yaml_file(current)
        data = data if isinstance(data, dict) else {}
        layers.append((str(current), data))
        parent = data.get("extends")
        current = resolve_config_path(parent, current.parent).resolve() if parent else None
    return layers


def origin(key: tuple[str | int, ...], layers: list[Layer]) -> str | None:
    """The topmost layer that sets ``key`` (a dotted key of ``--set`` read as nested), or None (a default)."""
    for name, layer in layers:
        node: Any = deep_merge({}, layer)
        for part in key:
            listed = isinstance(node, list) and isinstance(part, int) and part < len(node)
            if not (listed or (isinstance(node, dict) and part in node)):
                break
            node = node[part]
        else:
            return name
    return None


def describe_faults(faults: list[Fault], layers: list[Layer]) -> str:
    """One line: each fault as ``<file>: <dotted key>: <message>`` (``<key> (--set): ...`` off the command line)."""
    parts = []
    for key, message in faults:
        dotted = ".".join(str(part) for part in key) or "config"
        message = " ".join(message.split())
        where = origin(key, layers)
        if where is None:
            parts.append(f"{dotted}: {message}")
        elif Path(where).is_absolute():  # a file
            parts.append(f"{where}: {dotted}: {message}")
        else:
            parts.append(f"{dotted} ({where}): {message}")
    return "invalid dataset: " + "; ".join(parts)


def tensors_dir(config: LlamaConfig) -> Path:
    """Default tensor root of a dataset: ``<out>/tensors/<dataset>``."""
    return Path(config.out).resolve() / "tensors" / config.dataset.lower().replace(".", "")


def ready(config: LlamaConfig) -> LlamaConfig:
    """The run's config, sample inputs generated when asked; :class:`DatasetNotReady` when it cannot start."""
    config = config.resolved()
    if config.sample:
        config = config.with_sample()
    problems = config.not_ready()
    if problems:
        raise DatasetNotReady(f"{config.dataset} cannot start: {'; '.join(problems)}; {DEMO_HINT}")
    return config


@flow(name="llama", log_prints=True)
def llama_flow(config: LlamaConfig) -> LlamaSummary:
    """Sources, then pile index, dedup, labels and tokenization, as sub-flows (see the module docstring)."""
    config = ready(config)
    planned = len(config.selected_sources()) + sum(config.runs_stage(s) for s in STAGES[1:])
    with (OutputLock(Path(config.out), "llama", current_run_id()), shared_dask_cluster(config) as address,
          worker_pool(config)):
        run = StageRun(config, address, planned)
        if config.runs_stage("sources"):
            run.run_sources()
        else:
            run.fingerprint = fingerprint("sources", final_shards(run.out))
        blocked = [s for s in run.summary.failed] if not config.continue_on_error else []
        if blocked:
            names = [s.stage for s in blocked]
            for stage in STAGES[1:]:
                if config.runs_stage(stage):
                    run.record(StageResult(stage, "skipped", detail=f"sources failed: {names}; re-run to resume"))
        else:
            _after_sources(run)
    publish(run.summary, config.dataset)
    if run.summary.failed:
        raise RuntimeError(f"stages failed: {[(s.stage, s.detail) for s in run.summary.failed]}")
    return run.summary


def _after_sources(run: StageRun[LlamaConfig]) -> None:
    config = run.config
    index: Path | None = None
    if config.runs_stage("pile_index"):
        built = run.run_stage("pile_index", {}, index_outputs)
        section = config.pile_index or {}
        index = Path(built.root) if built is not None else Path(section.get("index") or "indexes/pile-v1")
        index = index if index.exists() else None
    if config.runs_stage("dedup"):
        section = config.dedup or {}
        forced: dict[str, Any] = {}
        if "sources" not in section and config.sources:
            forced["sources"] = [doc for spec in source_registry().specs() if config.sources.get(spec.name) is not None
                                 for doc in spec.documents]
        if index is not None and section.get("against") is None:
            forced["against"] = str(index)
        against = forced.get("against") or section.get("against")
        index_print = sha256_file(Path(against) / "index.json") if against else None
        run.run_stage("dedup", forced, dedup_outputs, index_print)
    if config.runs_stage("decontaminate"):
        run.run_stage("decontaminate", {}, decontaminate_outputs)
    if config.runs_stage("labels"):
        run.run_stage("labels", label_lists(config.labels or {}), label_outputs)
    if config.runs_stage("tokenize"):
        section = config.tokenize or {}
        forced = {"out": str(section.get("out") or tensors_dir(config)), "data": str(run.out)}
        if "labels" not in section:
            forced["labels"] = [config.dataset]
        tokenizer = section.get("tokenizer")
        run.run_stage("tokenize", forced, tokenize_outputs, sha256_file(Path(tokenizer)) if tokenizer else None)


def label_lists(section: dict[str, Any]) -> dict[str, Any]:
    """Which document sources are LLaMA's and which are extensions, from the registry (unless the
    section names them): a registered source is labeled without editing ``configs/labels.yaml``."""
    registry = source_registry()
    lists = {"llama_sources": registry.documents("llama"), "extension_sources": registry.documents("extension")}
    return {key: value for key, value in lists.items() if key not in section}


def run(config: LlamaConfig) -> LlamaSummary:
    """Run the parent flow (sub-flows pick their task runners from the config)."""
    return llama_flow(config)


# -- command line ---------------------------------------------------------------------------
def sample_prepare(args: argparse.Namespace) -> dict[str, Any]:
    """``--sample``: generate the sample inputs first, so ``--set`` and flags can still change them."""
    if not args.flag_sample:
        return {}
    LlamaConfig.from_yaml(args.config, parse_set_option(args.set))  # a typo fails before any sample is written
    layered = load_layered(args.config)
    configured = [name for name, section in (layered.get("sources") or {}).items() if section is not None]
    out = Path(args.out or layered.get("out") or "data")
    say(f"writing the offline sample inputs and a toy tokenizer under {out / 'sample'} (seconds; "
        "unchanged files are kept, so a re-run resumes)...")
    started = time.perf_counter()
    overrides = sample_overrides(out, configured, source_registry(), args.flag_sample_pages or SAMPLE_PAGES,
                                 dedup=layered.get("dedup", {}) is not None)
    say(f"sample inputs ready in {time.perf_counter() - started:.1f} s")
    return overrides


cli = FlowCLI(llama_flow, LlamaConfig, "g1.yaml", __doc__, report=print_report, prepare=sample_prepare, runner=run,
              flags=[
    Flag("--sources", "only_sources", "comma-separated: run only these of the configured sources", split=True),
    Flag("--stages", "stages", f"comma-separated stages to run (default: all of {','.join(STAGES)})", split=True),
    Flag("--tokenizer", "tokenize.tokenizer", "tokenizer.json for the tokenize stage"),
    Flag("--skip-missing", "skip_missing", "skip a source whose local inputs match no file (default: fail it)",
         switch=True),
    Flag("--sample", "", "generate sample inputs (every source of the dataset that has a sample writer) and a toy "
                         "tokenizer under <out>/sample and use them", switch=True),
    Flag("--sample-pages", "", f"pages per sample Wikipedia dump (default: {SAMPLE_PAGES})", type=int),
])
parse_args, main = cli.parse_args, cli.main


if __name__ == "__main__":
    sys.exit(main())
