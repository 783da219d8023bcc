"""The settings of ``flows.dedup``, which ``flows.pile_index`` shares (one YAML, configs/dedup.yaml).

An index and the documents matched against it must agree on the signature settings, so the index
flow's config is the dedup config plus its inputs. They live here, not in ``flows.dedup``, so
neither flow imports the other's module (``tests/test_layout_rules.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.config import MemorySize, PipelineConfig
from core.pile_format import MAX_LINE_BYTES

if TYPE_CHECKING:  # dedupe's modules import numpy, pyarrow and DuckDB: the methods import them for a run,
    # so ``--help`` of dedup, pile_index and the parent flow does not pay for them
    from dedupe.lsh import BandLayout, JoinSettings
    from dedupe.minhash import MinHashConfig


class MinHashSettings(BaseModel):
    """Signature parameters (an index and the documents matched against it must agree)."""

    model_config = ConfigDict(extra="forbid")
    num_perm: int = Field(128, gt=0)
    seed: int = 1
    ngram: int = Field(5, ge=1, le=64)

    def config(self) -> MinHashConfig:
        from dedupe.minhash import MinHashConfig
        from dedupe.shingles import ShingleConfig

        return MinHashConfig(self.num_perm, self.seed, ShingleConfig(self.ngram))


class DedupConfig(PipelineConfig):
    """Settings of the dedup flow (defaults in ``configs/dedup.yaml``)."""

    #: Read only by ``flows.pile_index`` (this file is its config too), whose part markers carry it.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"pile_max_line_bytes"}

    minhash: MinHashSettings = Field(default_factory=MinHashSettings)
    layout: str = "0.8"
    threshold: float | None = Field(None, gt=0, le=1)
    within_sources: bool = True
    across_sources: bool = False
    against: Path | None = None
    index_layouts: list[str] = Field(default_factory=lambda: ["0.7", "0.8", "0.9"])
    sources: list[str] = Field(default_factory=list)
    memory_limit: MemorySize = "1GB"
    max_bucket: int = Field(64, ge=2)
    pile_max_line_bytes: int = Field(MAX_LINE_BYTES, gt=0, description="longer Pile lines: record_too_large drops")
    priority: list[list[str]] = Field(
        default_factory=list,
        description="chains of sources deduplicated across, earlier source wins ([[github, stack_code]]); "
                    "a flat list is one chain; sources in no chain stay within themselves")

    @field_validator("priority", mode="before")
    @classmethod
    def _chains(cls, value: Any) -> Any:
        """One flat list is one chain; a source in two chains is refused (it would have two levels)."""
        from dedupe.priority import as_chains

        return as_chains(value) if isinstance(value, list | tuple) else value

    def priority_chains(self) -> list[list[str]]:
        """The chains in effect: none with ``across_sources``, which clusters every source together."""
        return [] if self.across_sources else self.priority

    def band_layout(self) -> BandLayout:
        from dedupe.lsh import BandLayout

        return BandLayout.named(self.layout, self.threshold)

    def join_settings(self, out: Path) -> JoinSettings:
        from dedupe.lsh import JoinSettings

        return JoinSettings(self.memory_limit, 1, self.spill_dir or (out / "_dedup" / "duckdb_tmp"), self.max_bucket)
