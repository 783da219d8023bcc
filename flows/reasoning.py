"""Reasoning flow: GSM8K (main and Socratic) -> Galactica ``<work>`` documents.

    python -m flows.reasoning --inputs 'grade-school-math/data/*.jsonl' --out data/
    python -m flows.reasoning --inputs 'gsm8k/socratic/*.parquet' --annotations keep --out data/

Each row becomes ``Question: ...``, the reasoning steps between ``<work>`` and ``</work>``, then
``Answer: N`` (see :mod:`sources.reasoning`). GSM8K's ``<<a*b=c>>`` calculator annotations are
stripped by default or kept inside the work block (``--annotations keep``). One task per input
file; shards go to ``<out>/docs/reasoning/<variant>/``. How ``<work>`` becomes token ids is the
tokenize flow's ``work_tokens`` setting (docs/loader.md).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from core.config import PipelineConfig
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.source_flow import SourceRunSummary, print_summary, run_source

if TYPE_CHECKING:
    from sources.reasoning import ReasoningRecipe
    from sources.samples.reasoning import write_sample_inputs
else:  # the sample writer: for a sample run, not --help
    write_sample_inputs = LazyImport("sources.samples.reasoning", "write_sample_inputs")


class ReasoningConfig(PipelineConfig):
    """Settings of the reasoning recipe (defaults in ``configs/reasoning.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs",)

    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"inputs"}

    inputs: list[str] = Field(default_factory=list, description="GSM8K JSON lines or Parquet (paths, globs, URLs)")
    annotations: Literal["strip", "keep"] = "strip"
    dataset: str = "gsm8k"
    max_chars: int = Field(100_000, gt=0)

    def recipe(self) -> ReasoningRecipe:
        """The source object the pipeline runs."""
        from sources.reasoning import ReasoningRecipe, ReasoningSettings  # pyarrow: for a run, not --help

        return ReasoningRecipe(ReasoningSettings(self.annotations, self.dataset, self.max_chars))


@flow(name="reasoning", log_prints=True)
def reasoning_flow(config: ReasoningConfig) -> SourceRunSummary:
    """Format step-by-step solutions as ``<work>`` documents (see the module docstring)."""
    if not config.inputs:
        raise ValueError("no input: give --inputs (GSM8K .jsonl or .parquet)")
    return run_source("reasoning", config, config.recipe(), config.inputs)


cli = FlowCLI(reasoning_flow, ReasoningConfig, "reasoning.yaml", __doc__, report=print_summary, flags=[
    Flag("--inputs", "inputs", "GSM8K file: path, glob or URL (repeatable)", many=True),
    Flag("--annotations", "annotations", "calculator annotations: strip (default) or keep", choices=["strip", "keep"]),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("reasoning", ReasoningConfig, "extension", run=run, flow=reasoning_flow, sample=write_sample_inputs)

if __name__ == "__main__":
    sys.exit(main())
