"""Config pieces several flows share: the code filters' fields, and bounds hashed only when set.

Both are :class:`core.config.PipelineConfig` subclasses a flow's config derives from, so the YAML
stays flat (``header_mode: copyright`` at the top level, as before) and the fields are declared
once: the two code sources (``flows.github``, ``flows.stack_code``) cannot drift apart in a name,
a bound or a default. The config hash sorts its keys, so moving fields into a base class leaves
every hash as it was (tests/flows/test_config_parts.py pins them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from core.config import PipelineConfig
from core.digest import pop_defaults

if TYPE_CHECKING:
    from core.filters.code_quality import CodeFilterSettings


class CodeFilterConfig(PipelineConfig):
    """The code-quality filters of the LLaMA GitHub recipe (RedPajama-v1's thresholds)."""

    header_mode: Literal["copyright", "redpajama", "off"] = "copyright"
    max_line_length: int = Field(1000, gt=0)
    max_avg_line_length: float = Field(100.0, gt=0)
    min_alphanumeric_fraction: float = Field(0.25, ge=0, le=1)
    min_alpha_per_token: float = Field(1.5, ge=0)
    tokenizer: str = Field("regex", description="'regex' or a path to a tokenizer.json")

    def code_filters(self) -> CodeFilterSettings:
        """As the pure filters' settings (the filters are imported by a run, not by ``--help``)."""
        from core.filters.code_quality import CodeFilterSettings

        return CodeFilterSettings(
            header_mode=self.header_mode, max_line_length=self.max_line_length,
            max_avg_line_length=self.max_avg_line_length, min_alphanumeric_fraction=self.min_alphanumeric_fraction,
            min_alpha_per_token=self.min_alpha_per_token, tokenizer=self.tokenizer,
        )


class LateBoundsConfig(PipelineConfig):
    """A config whose per-record bounds exposed after its first release enter the hash only when set.

    The config hash is written into every shard's metadata and keys resumable work, so a field that
    merely names a value the reader already used (a time bound that was a library default) must not
    change it: at its default the output is the output of earlier runs, byte for byte. Set to any
    other value, it is hashed like every other field, because then it can change what is kept.
    """

    #: Dotted field names (``epub.chapter_timeout_s``) left out of the hash while at their default.
    HASHED_WHEN_SET: ClassVar[frozenset[str]] = frozenset()

    def output_fields(self) -> dict[str, Any]:
        """:meth:`PipelineConfig.output_fields` less the ``HASHED_WHEN_SET`` fields at their default."""
        return pop_defaults(super().output_fields(), type(self)().model_dump(mode="json"), sorted(self.HASHED_WHEN_SET))
