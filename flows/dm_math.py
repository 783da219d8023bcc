"""DeepMind Mathematics flow (G.2 extension A.3): released files or Pile shards -> shards + manifest.

    python -m flows.dm_math --inputs 'mathematics_dataset-v1.0/train-*/*.txt' --out data/
    python -m flows.dm_math --inputs mathematics_dataset-v1.0.tar.gz --out data/
    python -m flows.dm_math --inputs 'pile/train/*.jsonl.zst' --out data/     # the Pile's "DM Mathematics"

One task per input file. Released module files share names across splits
(``train-easy/numbers__gcd.txt``, ``train-hard/numbers__gcd.txt``), so each is given to the
runner through a one-file input list named ``<split>--<module>.dmmath.json`` (unique keys).
Pairs are grouped into ~8 KiB documents per module and difficulty as the Pile did (see
:mod:`sources.dmmath`); only the training splits are read unless ``splits`` says otherwise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from core.atomic import write_json_atomic
from core.config import PipelineConfig
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.source_flow import SourceRunSummary, expand_locations, print_summary, run_source

if TYPE_CHECKING:
    from sources.dmmath import DmMathRecipe
    from sources.samples.dmmath import write_sample_inputs
else:  # the sample writer: for a sample run, not --help
    write_sample_inputs = LazyImport("sources.samples.dmmath", "write_sample_inputs")


def _train_splits() -> tuple[str, ...]:
    """The default splits, read when a config is built (the recipe module is not imported by ``--help``)."""
    from sources.dmmath import TRAIN_SPLITS

    return TRAIN_SPLITS


class DmMathConfig(PipelineConfig):
    """Settings of the DeepMind Mathematics recipe (defaults in ``configs/dm_math.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs",)

    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"inputs"}

    inputs: list[str] = Field(default_factory=list, description="module files, the release .tar.gz, or Pile shards")
    splits: list[str] = Field(default_factory=lambda: list(_train_splits()),
                              description="splits to read; interpolate/extrapolate are test sets")
    chunk_chars: int = Field(8192, gt=0, description="a document ends after the pair that reaches this size")
    max_line_chars: int = Field(10_000, gt=0)

    def recipe(self) -> DmMathRecipe:
        """The source object the pipeline runs."""
        from sources.dmmath import SPLITS, DmMathRecipe, DmMathSettings  # the recipe: for a run, not --help

        unknown = sorted(set(self.splits) - set(SPLITS))
        if unknown:
            raise ValueError(f"unknown splits {unknown}; known: {list(SPLITS)}")
        return DmMathRecipe(DmMathSettings(tuple(self.splits), self.chunk_chars, self.max_line_chars))

    def locations(self) -> list[str]:
        """Pile shards and packages as they are; each released module file behind a one-file list."""
        from sources.dmmath import LIST_SUFFIX, list_payload, split_of

        if not self.inputs:
            raise ValueError("no input: give --inputs (module files, the release .tar.gz or Pile shards)")
        lists = Path(self.out).resolve() / "_inputs" / "dm_math"
        locations = []
        for location in expand_locations(self.inputs):
            path = Path(location)
            split = split_of(path)
            if split is None or not path.is_file():
                locations.append(location)
                continue
            target = lists / f"{split}--{path.name}{LIST_SUFFIX}"
            payload = list_payload([path])
            if not target.exists() or target.read_text(encoding="utf-8") != _json(payload):
                write_json_atomic(target, payload)
            locations.append(str(target))
        return locations


def _json(payload: dict[str, object]) -> str:
    """The bytes write_json_atomic writes (a list is rewritten only when it changes: resume)."""
    return json.dumps(payload, sort_keys=True, indent=1, ensure_ascii=False)


@flow(name="dm_math", log_prints=True)
def dm_math_flow(config: DmMathConfig) -> SourceRunSummary:
    """Read and group DeepMind Mathematics pairs (see the module docstring)."""
    return run_source("dm_math", config, config.recipe(), config.locations())


cli = FlowCLI(dm_math_flow, DmMathConfig, "dm_math.yaml", __doc__, report=print_summary, flags=[
    Flag("--inputs", "inputs", "module file, release .tar.gz or Pile shard; path or glob (repeatable)", many=True),
    Flag("--splits", "splits", "comma-separated splits (default: train-easy,train-medium,train-hard)", split=True),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("dm_math", DmMathConfig, "extension", run=run, flow=dm_math_flow, sample=write_sample_inputs)

if __name__ == "__main__":
    sys.exit(main())
