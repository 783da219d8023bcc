"""More-code flow: the-stack / codeparrot github-code exports -> licence-filtered, cleaned code shards.

    python -m flows.stack_code --inputs 'the-stack/data/python/*.parquet' --out data/
    python -m flows.stack_code --inputs 'github-code/data/train-*.parquet' --inputs 'rows/*.jsonl.gz' --out data/
    python -m flows.stack_code --inputs 'the-stack/**/*.parquet' --set extra_languages='[yaml, toml]' --out data/

One task per export file (Parquet streamed by row group, or JSON lines). The licence allow-list,
the extension whitelist and the quality filters are the LLaMA GitHub recipe's (``configs/github.yaml``),
so the two code sources agree on what they keep. Shards go to ``<out>/docs/stack_code/<language>/``.
File-level exact dedup runs across the run (document ids hash ``repo/path@blob``, the same for a
file in both exports); near dedup within the source, across to the ``github`` source (a file G.1
already holds is not added twice) and against the Pile's GitHub subset is ``flows.dedup``'s job
(see docs/extensions.md).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from core.config import PipelineConfig
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.config_parts import CodeFilterConfig
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.source_flow import SourceRunSummary, print_summary, run_source

if TYPE_CHECKING:
    from sources.samples.stack_code import write_sample_inputs
    from sources.stack_code import StackCodeRecipe
else:  # the sample writer: for a sample run, not --help
    write_sample_inputs = LazyImport("sources.samples.stack_code", "write_sample_inputs")


class StackCodeConfig(CodeFilterConfig):
    """Settings of the more-code recipe (defaults in ``configs/stack_code.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs",)

    #: Which export files are read does not change how each row is processed: not hashed.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"inputs", "batch_rows"}

    inputs: list[str] = Field(default_factory=list, description="Parquet or JSON-lines exports (paths, globs, URLs)")
    allowed_licenses: list[str] = Field(default_factory=lambda: ["mit", "bsd-2-clause", "bsd-3-clause", "apache-2.0"])
    extra_languages: list[str] = Field(default_factory=list, description="dataset languages kept beyond the whitelist")
    max_file_bytes: int = Field(1_000_000, gt=0)
    batch_rows: int = Field(1024, gt=0, description="rows per Arrow batch inside a row group (memory only)")

    def recipe(self) -> StackCodeRecipe:
        """The source object the pipeline runs."""
        from sources.stack_code import StackCodeRecipe, StackCodeSettings  # pyarrow: for a run, not --help

        return StackCodeRecipe(StackCodeSettings(
            allowed_licenses=frozenset(x.lower() for x in self.allowed_licenses),
            extra_languages=frozenset(x.lower() for x in self.extra_languages),
            max_file_bytes=self.max_file_bytes, batch_rows=self.batch_rows, filters=self.code_filters(),
        ))


@flow(name="stack_code", log_prints=True)
def stack_code_flow(config: StackCodeConfig) -> SourceRunSummary:
    """Read, licence-filter, clean and deduplicate code exports (see the module docstring)."""
    if not config.inputs:
        raise ValueError("no input: give --inputs (Parquet or JSON-lines exports)")
    return run_source("stack_code", config, config.recipe(), config.inputs)


cli = FlowCLI(stack_code_flow, StackCodeConfig, "stack_code.yaml", __doc__, report=print_summary, flags=[
    Flag("--inputs", "inputs", "export file: path, glob or URL (repeatable)", many=True),
    Flag("--languages", "extra_languages", "comma-separated dataset languages kept beyond the whitelist", split=True),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("stack_code", StackCodeConfig, "extension", run=run, flow=stack_code_flow, sample=write_sample_inputs)

if __name__ == "__main__":
    sys.exit(main())
