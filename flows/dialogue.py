"""Dialogue flow: Reddit dumps, Ubuntu Dialogue Corpus and DailyDialog -> conversations -> shards.

    python -m flows.dialogue --inputs 'pushshift/RC_2015-0*.zst' --out data/
    python -m flows.dialogue --inputs 'dailydialog/*.zip' --inputs 'ubuntu/*.json' --out data/
    python -m flows.dialogue --inputs 'pushshift/RC_*.zst' --set subreddits_allow='[askscience]' --out data/

One flow for every dialogue corpus: one task per input file, the corpus chosen per input by its
content (``RC_``/``RS_`` Pushshift ndjson in zstd, an Ubuntu JSON array or v2 CSV, DailyDialog
``dialogues_*.txt``, or zips nesting these). Every document is a conversation in the one turn
format (``A: ...`` blocks; see docs/extensions.md) under the source name ``dialogue``.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from core.config import MemorySize, PipelineConfig
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.source_flow import SourceRunSummary, print_summary, run_scratch, run_source, scratch_phases

if TYPE_CHECKING:
    from core import pipeline
    from sources.dialogue import DialogueRecipe
    from sources.samples.dialogue import write_sample_inputs
else:  # only a run needs them (Prefect, pyarrow): not --help or a refused command
    pipeline = LazyImport("core.pipeline")
    write_sample_inputs = LazyImport("sources.samples.dialogue", "write_sample_inputs")


def _bot_authors() -> list[str]:
    """Reddit's default bot accounts, read when a config is built.

    :mod:`sources.reddit` imports pyarrow, DuckDB and numpy (~0.3 CPU-s): this module, which the
    source registry and ``python -m flows.dialogue --help`` import, must not at its top
    (tests/flows/test_help_imports.py).
    """
    from sources.reddit import DEFAULT_BOT_AUTHORS

    return list(DEFAULT_BOT_AUTHORS)


def _bot_pattern() -> str:
    """Reddit's default bot-name pattern (see :func:`_bot_authors`)."""
    from sources.reddit import DEFAULT_BOT_PATTERN

    return DEFAULT_BOT_PATTERN


class DialogueConfig(PipelineConfig):
    """Settings of the dialogue recipe (defaults in ``configs/dialogue.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs",)

    #: Where and with how much memory a month is grouped does not change its documents.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {
        "inputs", "scratch_dir", "memory_limit"}

    inputs: list[str] = Field(default_factory=list, description="dialogue files: paths, globs, URLs")
    min_score: int | None = 1
    min_turns: int = Field(2, ge=1)
    max_depth: int = Field(12, ge=1)
    max_paths_per_root: int = Field(16, ge=0)
    max_body_chars: int = Field(10_000, gt=0)
    max_thread_comments: int = Field(200_000, gt=0)
    subreddits_allow: list[str] = Field(default_factory=list)
    subreddits_deny: list[str] = Field(default_factory=list)
    bot_authors: list[str] = Field(default_factory=_bot_authors)
    bot_author_pattern: str = Field(default_factory=_bot_pattern)
    use_submissions: bool = True
    max_window_log: int = Field(31, ge=10, le=31)
    memory_limit: MemorySize = "1GB"
    scratch_dir: Path | None = None
    min_dialogue_turns: int = Field(2, ge=1)
    max_dialogue_chars: int = Field(200_000, gt=0)
    max_zip_member_bytes: int = Field(2 * 1024**3, gt=0)
    max_zip_depth: int = Field(3, ge=1)

    def recipe(self) -> DialogueRecipe:
        """The source object the pipeline runs."""
        # the recipe modules: for a run, not --help (see _bot_authors)
        from sources.dialogue import DialogueLimits, DialogueRecipe, ZipLimits
        from sources.reddit import RedditFilters

        filters = RedditFilters(
            min_score=self.min_score, min_turns=self.min_turns, max_depth=self.max_depth,
            max_paths_per_root=self.max_paths_per_root, max_body_chars=self.max_body_chars,
            max_thread_comments=self.max_thread_comments, subreddits_allow=tuple(self.subreddits_allow),
            subreddits_deny=tuple(self.subreddits_deny), bot_authors=tuple(self.bot_authors),
            bot_author_pattern=self.bot_author_pattern,
        )
        return DialogueRecipe(
            reddit=filters, use_submissions=self.use_submissions, max_window_log=self.max_window_log,
            limits=DialogueLimits(max_dialogue_chars=self.max_dialogue_chars, min_turns=self.min_dialogue_turns),
            zip_limits=ZipLimits(max_member_bytes=self.max_zip_member_bytes, max_depth=self.max_zip_depth),
            scratch_dir=self.scratch_dir, memory_limit=self.memory_limit,
        )


@flow(name="dialogue", log_prints=True)
def dialogue_flow(config: DialogueConfig) -> SourceRunSummary:
    """Read every dialogue input into conversations (see the module docstring)."""
    if not config.inputs:
        raise ValueError("no input: give --inputs (path, glob or URL)")
    if config.scratch_dir is not None:
        return run_source("dialogue", config, config.recipe(), config.inputs)
    scratch = run_scratch(config.out, "reddit")  # <out>/_staging/reddit_scratch
    recipe = dataclasses.replace(config.recipe(), scratch_dir=scratch)
    return run_source("dialogue", config, recipe, config.inputs, phases=scratch_phases(scratch))


cli = FlowCLI(dialogue_flow, DialogueConfig, "dialogue.yaml", __doc__, report=print_summary, flags=[
    Flag("--inputs", "inputs", "dialogue file: path, glob or URL (repeatable)", many=True),
    Flag("--min-score", "min_score", "Reddit score floor", type=int),
    Flag("--subreddits", "subreddits_allow", "comma-separated allow list of subreddits", split=True),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("dialogue", DialogueConfig, "extension", run=run, flow=dialogue_flow, sample=write_sample_inputs)

if __name__ == "__main__":
    sys.exit(main())
