"""Typed configuration: pydantic models loaded from YAML, overridable from the command line.

Every flow has a config class derived from :class:`PipelineConfig`. The *config hash* covers
only the fields that change what is written (thresholds, languages, shard bounds), not where or
how fast it runs (output dir, workers, runner), so moving a run to a cluster keeps its finished
work valid.
"""

from __future__ import annotations

import glob
import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field

from core.download import is_url
from core.shards import ShardLimits

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"

Runner = Literal["process", "thread", "sequential", "dask", "ray"]


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
        return ShardLimits(**self.model_dump())


class PipelineConfig(BaseModel):
    """Settings every flow shares."""

    model_config = ConfigDict(extra="forbid")

    #: Fields that do not change output bytes; left out of the config hash.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"out", "workers", "runner", "dask_address", "cache_dir", "keep_staging", "progress"}
    )

    out: Path = Field(Path("data"), description="output root: shards, state and manifest")
    cache_dir: Path | None = Field(None, description="download cache (default <out>/cache)")
    workers: int = Field(0, ge=0, description="parallel tasks; 0 = one per core")
    runner: Runner = Field("process", description="task runner: process, thread, sequential, dask, ray")
    dask_address: str | None = Field(None, description="existing Dask scheduler, e.g. tcp://host:8786")
    shards: ShardConfig = Field(default_factory=ShardConfig)
    seed: int = 0
    keep_staging: bool = Field(False, description="keep pre-dedup staging shards after a run")
    progress: bool = True

    @classmethod
    def from_yaml(cls, path: Path | None = None, overrides: dict[str, Any] | None = None) -> Self:
        """Load defaults from ``path`` (if any) and apply ``overrides`` on top."""
        data: dict[str, Any] = {}
        if path is not None:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
            if not isinstance(loaded, dict):
                raise ValueError(f"{path}: expected a mapping at the top level")
            data.update(loaded)
        for key, value in (overrides or {}).items():
            _set_dotted(data, key, value)
        return cls.model_validate(data)

    def output_fields(self) -> dict[str, Any]:
        """The part of the config that determines the output."""
        return self.model_dump(mode="json", exclude=set(self.RUNTIME_FIELDS))

    def config_hash(self) -> str:
        """A short stable hash of :meth:`output_fields`."""
        canonical = json.dumps(self.output_fields(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def input_patterns(self) -> list[str]:
        """The input locations the user gave (paths, globs, URLs); flows override when named otherwise."""
        inputs = getattr(self, "inputs", None)
        return [str(item) for item in inputs] if isinstance(inputs, list) else []

    def missing_inputs(self) -> list[str]:
        """Local input patterns that match nothing (checked before a run starts)."""
        return [p for p in self.input_patterns() if not is_url(p) and not glob.glob(p, recursive=True)
                and not Path(p).exists()]

    @property
    def cache_root(self) -> Path:
        """Where downloads are cached."""
        return self.cache_dir or (self.out / "cache")


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b.c`` in nested dicts (``--set shards.max_docs=1000``)."""
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def parse_set_option(items: list[str] | None) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings; values are read as YAML (numbers, lists, booleans)."""
    overrides: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        key, raw = item.split("=", 1)
        overrides[key.strip()] = yaml.safe_load(raw)
    return overrides
