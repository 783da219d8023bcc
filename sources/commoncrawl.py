"""Common Crawl, cc_net style: WARC/WET -> text -> paragraph dedup per group -> LID -> quality.

Paragraph dedup needs every input of a group before any document can be finished, so this
source adds two phases in front of the foundation's stage -> exact dedup -> finalize
(:mod:`core.pipeline`):

A. :func:`extract_input` (per input): read WARC/WET records, extract text once, tidy lines; write
   the documents to ``<out>/_staging/<source>.extract/<input>/part-*.parquet`` and one uint64
   hash per normalized line to ``units.u64`` (:mod:`dedupe.lines`);
B. :func:`dedup_group` (per group of ``group_files`` inputs, in input-key order): mark every line
   seen earlier in the group, in bounded memory (``memory_mb``);
C. the foundation's ``stage_input`` with this recipe: :meth:`GroupedDedupRecipe.read` reads phase
   A's documents back, removes the marked lines, and the recipe's steps (min length, language ID,
   wiki-reference classifier, perplexity buckets) run on what is left;
then the usual run-wide exact dedup and finalize. :func:`core.pipeline.merge_records` adds phase
A's counts to phase C's record, so the manifest still accounts for every WARC record read
(``records_in == kept + dropped``). Phase A's documents are the expensive part (trafilatura): a
re-run, or a change of group or of a later threshold, never extracts twice.

The same machinery runs C4's three-sentence-span dedup (:mod:`sources.c4`): only the units differ.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from core.digest import json_hash
from core.document import Document, Drop, InputSpec
from core.driver import PhaseRun, SourcePhases
from core.filters.ccnet import CCNET_MIN_CHARS, MinLength, TidyLines, normalize_lines_for_dedup
from core.filters.langid import LanguageID, LanguagePrefilter
from core.filters.quality import KenLMScorer, PerplexityBuckets, WikiRefFilter
from core.layout import staging_dir, state_path
from core.manifest import InputRecord
from core.markers import Marker
from core.pipeline import InputPhase, RunContext, missing_input, run_input_phase
from core.shards import read_documents
from core.steps import Record, Step
from dedupe.lines import DuplicateMasks, UnitFiles, UnitHashWriter, hash_units, keep_unmarked, mark_duplicates
from sources.formats.html_text import ExtractOptions
from sources.formats.warc import WarcLimits, WarcReader

log = logging.getLogger(__name__)

SOURCE = "commoncrawl"
EXTRACT_SUFFIX = ".extract"


class Units(Protocol):
    """What a dedup unit is: how a text becomes hashed units, and how marked units leave it."""

    @property
    def name(self) -> str: ...

    def units(self, text: str) -> list[str]: ...

    def apply(self, text: str, duplicate: np.ndarray) -> str: ...


@dataclass(frozen=True)
class LineUnits:
    """cc_net's unit: a line, normalized by :func:`core.filters.ccnet.normalize_for_dedup`."""

    name: str = "lines"

    def units(self, text: str) -> list[str]:
        return normalize_lines_for_dedup(text)

    def apply(self, text: str, duplicate: np.ndarray) -> str:
        return "\n".join(keep_unmarked(text.split("\n"), duplicate))



def warc_records(recipe: Any, spec: InputSpec) -> Iterator[Record]:
    """Read a WARC/WET input with a recipe's extraction settings and language pre-filter.

    Shared by the CommonCrawl and C4-from-CC recipes (both carry ``languages``, ``prefilter``,
    ``prefilter_min_score``, ``lid_model``, ``limits``, ``extract`` and ``name``).
    """
    prefilter = (
        LanguagePrefilter(recipe.languages, recipe.prefilter_min_score, recipe.lid_model)
        if recipe.prefilter and recipe.languages else None
    )
    return iter(WarcReader(spec.path, spec.location, recipe.name, spec.key, limits=recipe.limits,
                           extract=recipe.extract, prefilter=prefilter))

class GroupedDedupRecipe:
    """Base of recipes run as extract -> group dedup -> stage (see the module docstring).

    Subclasses provide :meth:`read_raw`, :meth:`pre_steps` (before dedup), :meth:`steps` (after),
    and ``units``. ``out`` is set by the flow to the run's output root before phase C.
    """

    name: str = SOURCE
    units: Units = LineUnits()
    out: Path | None = None
    #: URL blocklists (core.filters.url_blocklist), run first: a listed page is not extracted further.
    url_filters: tuple[Step, ...] = ()

    def read_raw(self, spec: InputSpec) -> Iterator[Record]:
        raise NotImplementedError

    def pre_steps(self) -> Sequence[Step]:
        return [*self.url_filters, TidyLines()]

    def steps(self) -> Sequence[Step]:
        raise NotImplementedError

    def input_language(self, spec: InputSpec) -> str | None:
        """Web inputs mix languages: each document gets its own from language ID."""
        return None

    def partition(self, doc: Document) -> str:
        """One directory per detected language."""
        return doc.language or "und"

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Phase C's reader: phase A's documents minus the units marked duplicate in their group."""
        if self.out is None:
            raise RuntimeError(f"{self.name}: recipe.out must be set before staging")
        directory = extract_dir(self.out, self.name, spec.key)
        masks = DuplicateMasks(UnitFiles(directory / "units"))
        documents = (doc for part in sorted(directory.glob("part-*.parquet")) for doc in read_documents(part))
        removed_key = f"{self.units.name}_removed"
        for doc, duplicate in zip(documents, masks, strict=True):
            text = self.units.apply(doc.text, duplicate).strip()
            if not text:
                yield Drop(f"duplicate_{self.units.name}", doc.id, language=doc.language)
                continue
            yield replace(doc, text=text, meta={**doc.meta, removed_key: int(duplicate.sum())})


@dataclass
class PerplexityModels:
    """cc_net models per language (paths) and the (head_max, middle_max) cut-offs."""

    lm: dict[str, str] = field(default_factory=dict)
    sp: dict[str, str] = field(default_factory=dict)
    cutoffs: dict[str, tuple[float, float]] = field(default_factory=dict)
    keep: tuple[str, ...] = ("head", "middle")

    def configured(self) -> bool:
        """True when at least one language has a model pair and cut-offs."""
        return any(lang in self.sp and lang in self.cutoffs for lang in self.lm)

    def step(self) -> PerplexityBuckets:
        scorers = {lang: KenLMScorer(self.lm[lang], self.sp[lang]) for lang in self.lm if lang in self.sp}
        return PerplexityBuckets(scorers, self.cutoffs, self.keep)


@dataclass
class CommonCrawlRecipe(GroupedDedupRecipe):
    """cc_net-style Common Crawl (RECIPES.md): min length 300, line dedup, lid.176 >= 0.5, quality."""

    languages: tuple[str, ...] = ("en",)
    lid_min_score: float = 0.5
    lid_model: str | None = None
    min_chars: int = CCNET_MIN_CHARS
    prefilter: bool = True
    prefilter_min_score: float = 0.9
    extract: ExtractOptions = field(default_factory=ExtractOptions)
    limits: WarcLimits = field(default_factory=WarcLimits)
    wikiref_model: str | None = None
    wikiref_threshold: float = 0.25
    perplexity: PerplexityModels = field(default_factory=PerplexityModels)
    name: str = SOURCE
    units: Units = field(default_factory=LineUnits)
    out: Path | None = None
    url_filters: tuple[Step, ...] = ()

    def read_raw(self, spec: InputSpec) -> Iterator[Record]:
        """WARC responses (HTML, extracted) or WET conversions (text) as Documents and Drops."""
        return warc_records(self, spec)

    def steps(self) -> list[Step]:
        """After line dedup: length floor, language ID, then the optional quality steps."""
        steps: list[Step] = [
            MinLength(self.min_chars), LanguageID(self.languages, self.lid_min_score, self.lid_model),
        ]
        if self.wikiref_model:
            steps.append(WikiRefFilter(self.wikiref_model, self.wikiref_threshold))
        if self.perplexity.configured():
            steps.append(self.perplexity.step())
        return steps

    def quality_status(self) -> dict[str, str]:
        """Which optional quality steps run (for the run's summary)."""
        return {
            "wikiref_classifier": f"on (>= {self.wikiref_threshold})" if self.wikiref_model else "off: no model",
            "perplexity_buckets": "on" if self.perplexity.configured() else "off: no KenLM/SentencePiece model",
        }


# -- phase A: extract -----------------------------------------------------------------------
def extract_dir(out: Path, source: str, key: str) -> Path:
    """Where phase A keeps one input's documents and unit hashes."""
    return staging_dir(out, source + EXTRACT_SUFFIX, key)


def _extract_marker(spec: InputSpec, ctx: RunContext, units: Units) -> Marker:
    key = {**ctx.marker_key(), "fingerprint": spec.fingerprint(), "units": units.name}
    return Marker(state_path(ctx.out, ctx.source + EXTRACT_SUFFIX, spec.key, "extract"), key)


class UnitSink:
    """Phase A's sink: one uint64 hash per unit (line) of each extracted document."""

    def __init__(self, root: Path, files: UnitFiles, units: Units) -> None:
        self.root, self.files, self.units = root, files, units
        self.writer = UnitHashWriter(files)

    def add(self, ordinal: int, doc: Document) -> None:
        self.writer.add(hash_units(self.units.units(doc.text)))

    def close(self) -> list[dict[str, Any]]:
        self.writer.close()
        return [{"path": path.relative_to(self.root).as_posix(), "bytes": path.stat().st_size}
                for path in (self.files.hashes, self.files.counts)]

    def abort(self) -> None:
        self.writer.abort()


def extract_input(recipe: GroupedDedupRecipe, spec: InputSpec, ctx: RunContext) -> InputRecord:
    """Phase A for one input (see the module docstring); resumable, never raises for bad input."""
    if not spec.path.exists():
        return missing_input(spec, ctx)
    directory = extract_dir(ctx.out, ctx.source, spec.key)
    phase = InputPhase(
        directory=directory, marker=_extract_marker(spec, ctx, recipe.units),
        read=lambda: recipe.read_raw(spec), steps=recipe.pre_steps(),
        sinks=lambda: [UnitSink(ctx.out, UnitFiles(directory / "units"), recipe.units)],
    )
    return run_input_phase(phase, spec, ctx)


# -- phase B: group dedup -------------------------------------------------------------------
def make_groups(keys: Sequence[str], group_files: int) -> list[list[str]]:
    """Inputs in key order, cut into groups of ``group_files`` (the unit of paragraph dedup)."""
    ordered = sorted(keys)
    size = max(1, group_files)
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def _file_identity(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def dedup_group(ctx: RunContext, keys: Sequence[str], memory_bytes: int) -> dict[str, Any]:
    """Phase B for one group: write every input's duplicate mask; resumable.

    When the masks are (re)computed, the phase C markers of the group's inputs are removed, so
    their documents are staged again with the new masks.
    """
    present = [k for k in keys if UnitFiles(extract_dir(ctx.out, ctx.source, k) / "units").hashes.exists()]
    files = [UnitFiles(extract_dir(ctx.out, ctx.source, k) / "units") for k in present]
    group_id = json_hash(sorted(keys), compact=False)
    marker = Marker(state_path(ctx.out, ctx.source + EXTRACT_SUFFIX, f"group-{group_id}", "dedup"),
                    {**ctx.marker_key(), "keys": list(present),
                     "hash_files": [_file_identity(f.hashes) for f in files]})
    finished = marker.load(ctx.out)
    if finished is not None:
        return dict(finished["stats"])
    found = mark_duplicates(files, memory_bytes)
    for key in present:
        state_path(ctx.out, ctx.source, key, "stage").unlink(missing_ok=True)
    stats = {"inputs": len(present), "units": found.units, "duplicates": found.duplicates, "buckets": found.buckets}
    masks = [{"path": f.mask.relative_to(ctx.out).as_posix(), "bytes": f.mask.stat().st_size} for f in files]
    marker.write({"stats": stats}, outputs=masks)
    return stats


def clean_extracted(ctx: RunContext, keys: Sequence[str]) -> None:
    """Remove phase A and B files once a run finished (phase A is the costly part: keep on failure)."""
    for key in keys:
        shutil.rmtree(extract_dir(ctx.out, ctx.source, key), ignore_errors=True)
        state_path(ctx.out, ctx.source + EXTRACT_SUFFIX, key, "extract").unlink(missing_ok=True)
    for marker in (ctx.out / "_state" / (ctx.source + EXTRACT_SUFFIX)).glob("group-*.dedup.json"):
        marker.unlink(missing_ok=True)


# -- A and B as a phase of the source run -------------------------------------------------------
def grouped_dedup_phases(recipe: GroupedDedupRecipe, group_files: int, memory_bytes: int) -> SourcePhases:
    """Extraction per input (A), then unit dedup per group of ``group_files`` inputs (B), before staging.

    Each input and each group is one call through the driver's executor (the ``extract`` and
    ``line-dedup`` tasks under Prefect); the groups' counts are a table of the run.
    """
    group_stats: list[dict[str, Any]] = []

    def before_stage(ctx: RunContext, specs: list[InputSpec], run: PhaseRun) -> dict[str, InputRecord]:
        recipe.out = ctx.out
        futures = {run.executor.submit(extract_input, recipe, s, ctx): s.key for s in specs}
        extracted = {futures[f]: f.result() for f in run.executor.as_completed(list(futures))}
        ok = [s.key for s in specs if extracted[s.key].status != "failed"]
        groups = make_groups(ok, group_files)
        stats = [f.result() for f in [run.executor.submit(dedup_group, ctx, g, memory_bytes) for g in groups]]
        for group, stat in zip(groups, stats, strict=True):
            run.log.info("%s dedup over %d inputs (%s..): %d of %d units removed", recipe.units.name, len(group),
                         group[0], stat["duplicates"], stat["units"])
            group_stats.append({"first_input": group[0], **stat})
        for step, state in getattr(recipe, "quality_status", dict)().items():
            run.log.info("quality step %s: %s", step, state)
        return extracted

    return SourcePhases(
        before_stage=before_stage, cleanup=clean_extracted,
        tables=lambda: [(f"{recipe.name}-dedup-groups", group_stats, f"{recipe.units.name} dedup per group of inputs")],
    )
