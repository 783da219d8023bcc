"""Typed configuration: pydantic models loaded from YAML, overridable from the command line.

One layering rule for every config (a flow's YAML, a dataset file, a loader recipe): a file is
read by :func:`load_layered` (its ``extends`` chain first), and each layer on top of it (a dataset
file's section, ``--set`` and the command-line flags, a deployment's parameters, a recipe's
overrides) goes on by :func:`deep_merge`: mappings merge key by key, anything else (a list too)
replaces, and a dotted key (``shards.max_docs``) addresses a nested field. So the same key means
the same thing in a file, on the command line and in the parent flow's sections.

Every flow has a config class derived from :class:`PipelineConfig`. The *config hash* covers
only the fields that change what is written (thresholds, languages, shard bounds), not where or
how fast it runs (output dir, workers, runner), so moving a run to a cluster keeps its finished
work valid.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from core.digest import json_hash
from core.download import is_url
from core.locations import local_matches, missing_locations

if TYPE_CHECKING:
    from core.shards import ShardLimits

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"

Runner = Literal["process", "thread", "sequential", "dask", "ray"]

#: A DuckDB memory size as its ``SET memory_limit`` reads it: a number and a unit, or a percentage.
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?(?:e\d+)?)\s*(%|[kmgt]i?b|[kmgt]|b|bytes?|(?:kilo|mega|giga|tera)bytes?)\s*",
                   re.IGNORECASE)


def duckdb_size(value: str) -> str:
    """``value`` if DuckDB accepts it as a memory size (``1GB``, ``512 MiB``, ``80%``), else ValueError.

    Checked when the config is read, so a typo ends the command with one line before any input
    is read, instead of failing every input in the run (DuckDB parses it only inside a task).
    """
    match = _SIZE.fullmatch(value)
    if match is None:
        raise ValueError(f"{value!r} is not a memory size: a number and a unit, e.g. 1GB, 512MiB or 80%")
    amount = float(match.group(1))
    if amount <= 0 or (match.group(2) == "%" and amount > 100):
        raise ValueError(f"{value!r} is out of range: above 0 (and at most 100%)")
    return value


#: A config field holding a DuckDB memory limit (``memory_limit: MemorySize = "1GB"``).
MemorySize = Annotated[str, AfterValidator(duckdb_size)]


class ConfigFileError(ValueError):
    """A config file that cannot be read as YAML; its message names the file, line and column."""


class ShardConfig(BaseModel):
    """Bounds on one shard (see :class:`core.shards.ShardLimits`)."""

    model_config = ConfigDict(extra="forbid")
    max_docs: int = Field(100_000, gt=0)
    max_bytes: int = Field(256 * 1024 * 1024, gt=0, description="uncompressed text bytes")
    row_group_docs: int = Field(2_000, gt=0)
    row_group_bytes: int = Field(16 * 1024 * 1024, gt=0, description="buffered text per row group")
    compression_level: int = Field(3, ge=1, le=22)

    def limits(self) -> ShardLimits:
        """As the writer's dataclass."""
        from core.shards import ShardLimits  # pyarrow: not on the path of --help and usage errors

        return ShardLimits(**self.model_dump())


class PipelineConfig(BaseModel):
    """Settings every flow shares."""

    model_config = ConfigDict(extra="forbid")

    #: Fields naming what a source run reads: with all of them empty it is refused before it starts.
    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ()
    #: Whether input patterns may name folders (a StackExchange site dump, a dataset folder).
    INPUT_FOLDERS: ClassVar[bool] = False
    #: Fields that do not change output bytes; left out of the config hash.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"out", "workers", "runner", "dask_address", "cache_dir", "keep_staging", "progress", "exact_dedup_memory",
         "spill_dir"}
    )

    out: Path = Field(Path("data"), description="output root: shards, state and manifest")
    cache_dir: Path | None = Field(None, description="download cache (default <out>/cache)")
    workers: int = Field(0, ge=0, description="parallel tasks; 0 = one per core")
    runner: Runner = Field("process", description="task runner: process, thread, sequential, dask, ray")
    dask_address: str | None = Field(None, description="existing Dask scheduler, e.g. tcp://host:8786")
    shards: ShardConfig = Field(default_factory=ShardConfig)
    seed: int = 0
    keep_staging: bool = Field(False, description="keep pre-dedup staging shards after a run")
    exact_dedup_memory: MemorySize = Field("2GB", description="DuckDB memory of the run-wide exact dedup; "
                                                              "beyond it, it spills to spill_dir (same result)")
    spill_dir: Path | None = Field(None, description="where DuckDB spills (default <out>/_staging/duckdb_tmp; "
                                                     "flows.dedup: <out>/_dedup/duckdb_tmp)")
    progress: bool = True
    pii_redact: bool = Field(False, description="source flows: replace e-mail and IP addresses by placeholders "
                                                "(core.filters.pii); off for LLaMA (G.1), on in G.2")

    @classmethod
    def from_yaml(cls, path: Path | None = None, overrides: dict[str, Any] | None = None) -> Self:
        """Load ``path`` (if any, with its ``extends`` chain) and merge ``overrides`` on top (see the module docstring)."""
        data = load_layered(Path(path)) if path is not None else {}
        return cls.model_validate(deep_merge(data, overrides or {}))

    def output_fields(self) -> dict[str, Any]:
        """The part of the config that determines the output (``pii_redact`` only when on: it came
        after the first release, and at its default it names what every earlier run did)."""
        fields = self.model_dump(mode="json", exclude=set(self.RUNTIME_FIELDS))
        if not fields.get("pii_redact"):
            fields.pop("pii_redact", None)
        return fields

    def config_hash(self) -> str:
        """A short stable hash of :meth:`output_fields`."""
        return json_hash(self.output_fields())

    def input_patterns(self) -> list[str]:
        """The input locations the user gave (paths, globs, URLs); flows override when named otherwise."""
        inputs = getattr(self, "inputs", None)
        return [str(item) for item in inputs] if isinstance(inputs, list) else []

    def missing_inputs(self) -> list[str]:
        """Local input patterns that match nothing (checked before a run starts)."""
        return missing_locations(self.input_patterns())

    def lacks_input(self) -> bool:
        """A source run given none of its :attr:`INPUT_FIELDS` (nothing to read; refused up front)."""
        return bool(self.INPUT_FIELDS) and not any(getattr(self, name) for name in self.INPUT_FIELDS)

    def file_patterns(self) -> list[str]:
        """The input patterns that must name files: all of them, unless the source reads folders."""
        return [] if self.INPUT_FOLDERS else self.input_patterns()

    def folder_inputs(self) -> list[str]:
        """Folders matched where files are expected (a reader would fail on each; refused up front)."""
        return [match for pattern in self.file_patterns() if not is_url(pattern)
                for match in local_matches(pattern) if Path(match).is_dir()]

    def preflight(self) -> None:
        """Raise (one line, naming what to do) for what would fail every input, e.g. a missing model.

        Called by the command line before Prefect starts and by the flows that override it at
        their start, so a run that cannot read anything fails, in Prefect too, instead of
        completing with every input failed.
        """

    @property
    def cache_root(self) -> Path:
        """Where downloads are cached."""
        return self.cache_dir or (self.out / "cache")


def load_yaml_file(path: Path) -> Any:
    """The YAML document in ``path``; a syntax error is a :class:`ConfigFileError` naming file and position."""
    text = path.read_text(encoding="utf-8")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigFileError(f"{path}{where}: not valid YAML: {problem}") from None


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: mappings merge key by key, anything else (lists too) replaces.

    A dotted key of ``top`` itself (``latex.cut_appendix``) addresses a nested field, as ``--set``
    does. Keys inside its values are taken as written: a mapping keyed by domain or file names
    (``en.wikipedia.org``, ``g1.yaml``) keeps its keys whole. Neither argument is changed.
    """
    merged = dict(base)
    for key, value in top.items():
        head, *path = key.split(".")
        for name in reversed(path):
            value = {name: value}
        merged = _merge_mappings(merged, {head: value})
    return merged


def _merge_mappings(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, key by key as written (no dotted addressing below the top level)."""
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_mappings(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_layered(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A config file as a mapping, its ``extends`` chain resolved (``g3.yaml`` extends ``g1.yaml``).

    The file names only what differs from the one it extends; the two are merged by :func:`deep_merge`.
    """
    path = Path(path).resolve()
    if path in seen:
        raise ValueError(f"{path}: 'extends' loops back to itself")
    data = load_yaml_file(path) or {}
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


def stage_yaml(name: str) -> dict[str, Any]:
    """A stage's own YAML (``configs/<name>``), the bottom layer of its config in a dataset run."""
    return load_layered(CONFIG_DIR / name)


def parse_set_option(items: list[str] | None) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings; values are read as YAML (numbers, lists, booleans)."""
    overrides: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        key, raw = item.split("=", 1)
        try:
            overrides[key.strip()] = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or "not valid YAML"
            raise ValueError(f"--set {item}: {problem}") from None
    return overrides
