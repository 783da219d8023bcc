"""GitHub flow: local clones or BigQuery-export rows -> cleaned, filtered, deduplicated code shards.

    python -m flows.github --repos 'clones/*' --out data/                       # licence from LICENSE files
    python -m flows.github --inputs 'bigquery-export/*.jsonl.gz' --out data/    # rows: content, path, repo_name, license
    python -m flows.github --repos 'clones/*' --set dedup_key=raw --set header_mode=redpajama --out data/

Clones are grouped ``repos_per_input`` to a task through repository lists written under
``<out>/_inputs/github/``. Shards go to ``<out>/docs/github/<language>/`` (programming language).
File-level exact dedup runs across the whole run: by default on the SHA256 of the normalized,
cleaned text (the pipeline's key, which also catches copies that differ only in their copyright
header or whitespace); ``dedup_key=raw`` hashes the raw file bytes before cleaning, as RedPajama.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from core.config import PipelineConfig
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.config_parts import CodeFilterConfig
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.source_flow import (
    SourceRunSummary,
    expand_locations,
    print_summary,
    run_source,
    write_input_lists,
)

if TYPE_CHECKING:
    from sources.github import GithubRecipe
    from sources.samples.github import write_sample_inputs
else:  # the sample writer: for a sample run, not --help
    write_sample_inputs = LazyImport("sources.samples.github", "write_sample_inputs")


class GithubConfig(CodeFilterConfig):
    """Settings of the GitHub recipe (defaults in ``configs/github.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("repos", "inputs")

    #: Which repositories are read does not change how each file is processed: not hashed.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"inputs", "repos", "repos_per_input"}

    inputs: list[str] = Field(default_factory=list, description="BigQuery-export JSON lines (.jsonl.gz)")
    repos: list[str] = Field(default_factory=list, description="local clone folders (globs)")
    repos_per_input: int = Field(20, gt=0)
    allowed_licenses: list[str] = Field(default_factory=lambda: ["mit", "bsd-2-clause", "bsd-3-clause", "apache-2.0"])
    max_file_bytes: int = Field(1_000_000, gt=0)
    dedup_key: Literal["text", "raw"] = "text"

    def recipe(self) -> GithubRecipe:
        """The source object the pipeline runs."""
        from sources.github import GithubRecipe, GithubSettings  # the recipe: for a run, not --help

        settings = GithubSettings(frozenset(self.allowed_licenses), self.max_file_bytes, filters=self.code_filters())
        return GithubRecipe(settings, raw_dedup=self.dedup_key == "raw")

    def input_patterns(self) -> list[str]:
        """Clone folders and exports the user named (checked before a run)."""
        return [*self.inputs, *self.repos]

    def file_patterns(self) -> list[str]:
        """The exports must be files; ``repos`` name clone folders."""
        return list(self.inputs)

    def locations(self) -> list[str]:
        """BigQuery exports as given, plus repository lists for the clones."""
        if not self.inputs and not self.repos:
            raise ValueError("no input: give --repos (clone folders) and/or --inputs (BigQuery exports)")
        locations = expand_locations(self.inputs) if self.inputs else []
        if self.repos:
            from sources.github import REPO_LIST_SUFFIX, repo_list_payload

            roots = [Path(p) for p in expand_locations(self.repos) if Path(p).is_dir()]
            lists_dir = Path(self.out).resolve() / "_inputs" / "github"
            locations += write_input_lists(lists_dir, "repos", REPO_LIST_SUFFIX, roots, self.repos_per_input,
                                           repo_list_payload)
        return locations


@flow(name="github", log_prints=True)
def github_flow(config: GithubConfig) -> SourceRunSummary:
    """Read, clean, filter and deduplicate source code (see the module docstring)."""
    return run_source("github", config, config.recipe(), config.locations())


cli = FlowCLI(github_flow, GithubConfig, "github.yaml", __doc__, report=print_summary, flags=[
    Flag("--repos", "repos", "clone folder path or glob (repeatable)", many=True),
    Flag("--inputs", "inputs", "BigQuery export .jsonl.gz path or glob (repeatable)", many=True),
    Flag("--tokenizer", "tokenizer", "'regex' or a tokenizer.json for the alpha-per-token filter"),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("github", GithubConfig, "llama", run=run, flow=github_flow, sample=write_sample_inputs)


if __name__ == "__main__":
    sys.exit(main())
