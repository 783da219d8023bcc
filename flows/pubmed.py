"""PubMed flow (G.2 extension A.1): PMC OA full text and PubMed/MEDLINE abstracts -> shards + manifest.

    python -m flows.pubmed --central 'oa_bulk/oa_comm_xml.*.tar.gz' --out data/
    python -m flows.pubmed --central 'articles/**/*.nxml' --abstracts 'baseline/pubmed24n*.xml.gz' --out data/
    python -m flows.pubmed --abstracts 'baseline/*.xml.gz' --abstracts 'updatefiles/*.xml.gz' --out data/

Two sources, each its own sub-flow and manifest run: ``pubmed_central`` (one task per bulk
package; single ``.nxml`` files are batched ``articles_per_input`` to a task through article
lists) and ``pubmed_abstracts`` (one task per baseline/update file). For the abstracts, a phase
between the run-wide exact dedup and finalize applies MEDLINE's versioning across files: the
newest record of a PMID wins (``superseded_version``) and a ``DeleteCitation`` removes that
PMID's records in earlier files (``deleted_citation``); see :mod:`sources.formats.medline`.

Both are Pile (v1) subsets (``PubMed Central``, ``PubMed Abstracts``): they belong in G.2 and go
through the Pile reference dedup with every other source.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.config import PipelineConfig
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.config_parts import LateBoundsConfig
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.runner import make_task_runner
from flows.runtime.source_flow import (
    SourceRunSummary,
    expand_locations,
    print_summary,
    run_source,
    write_input_lists,
)

if TYPE_CHECKING:
    from flows.runtime.recorder import current_run_id
    from sources.formats import medline
    from sources.pubmed import CentralSettings, PubmedAbstractsRecipe, PubmedCentralRecipe, version_phases
    from sources.samples.pubmed import write_sample_inputs
else:  # only a run needs them (Prefect, pyarrow, lxml): not --help, a refused command or the source registry
    current_run_id = LazyImport("flows.runtime.recorder", "current_run_id")
    medline = LazyImport("sources.formats.medline")
    CentralSettings = LazyImport("sources.pubmed", "CentralSettings")
    PubmedAbstractsRecipe = LazyImport("sources.pubmed", "PubmedAbstractsRecipe")
    PubmedCentralRecipe = LazyImport("sources.pubmed", "PubmedCentralRecipe")
    version_phases = LazyImport("sources.pubmed", "version_phases")
    write_sample_inputs = LazyImport("sources.samples.pubmed", "write_sample_inputs")


class CitationConfig(BaseModel):
    """Bounds of one MEDLINE citation (see :class:`sources.formats.medline.CitationBounds`)."""

    model_config = ConfigDict(extra="forbid")
    inline_bytes: int = Field(64 << 10, ge=0, description="bigger citations are parsed in the bounded helper")
    max_record_bytes: int = Field(16 << 20, gt=0, description="bigger citations are record_too_large drops")
    timeout_s: float = Field(30.0, gt=0, description="wall-time bound of one citation in the helper")

    def bounds(self) -> medline.CitationBounds:
        """As the pure reader's bounds."""
        return medline.CitationBounds(self.inline_bytes, self.max_record_bytes, self.timeout_s)


class PubmedConfig(LateBoundsConfig):
    """Settings of both PubMed recipes (defaults in ``configs/pubmed.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("central", "abstracts")

    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {
        "central", "abstracts", "articles_per_input"}
    #: Exposed after the first release at the values the reader already used (see LateBoundsConfig).
    HASHED_WHEN_SET: ClassVar[frozenset[str]] = frozenset({"citation", "max_article_memory"})

    central: list[str] = Field(default_factory=list, description="PMC .nxml/.xml files or .tar.gz packages")
    abstracts: list[str] = Field(default_factory=list, description="MEDLINE/PubMed baseline and update .xml.gz")
    articles_per_input: int = Field(500, gt=0, description="single PMC article files per task")
    table_mode: Literal["linearize", "drop"] = "linearize"
    commercial_only: bool = Field(False, description="keep only articles under CC0, public domain, CC BY, CC BY-SA")
    max_article_bytes: int = Field(32 * 1024 * 1024, gt=0)
    max_article_seconds: float = Field(10.0, gt=0)
    max_article_memory: int = Field(1536 << 20, ge=128 << 20,
                                    description="address-space bound of the article helper; past it: record_too_large")
    min_chars: int = Field(200, ge=0)
    require_abstract: bool = True
    max_record_chars: int = Field(1_000_000, gt=0)
    citation: CitationConfig = Field(default_factory=CitationConfig)
    cross_file_versions: bool = Field(True, description="newest PMID record wins across the run's files")

    def input_patterns(self) -> list[str]:
        """Both input lists are checked before a run."""
        return [*self.central, *self.abstracts]

    def central_recipe(self) -> PubmedCentralRecipe:
        """The PMC recipe."""
        return PubmedCentralRecipe(CentralSettings(self.table_mode, self.commercial_only, self.max_article_bytes,
                                                   self.max_article_seconds, self.min_chars, self.max_article_memory))

    def abstracts_recipe(self) -> PubmedAbstractsRecipe:
        """The MEDLINE recipe."""
        return PubmedAbstractsRecipe(self.require_abstract, self.max_record_chars, bounds=self.citation.bounds())

    def central_locations(self) -> list[str]:
        """Packages one per task; single article files batched into article lists."""
        from sources.pubmed import LIST_SUFFIX, is_package, list_payload

        files = expand_locations(self.central) if self.central else []
        packages = [f for f in files if is_package(Path(f).name)]
        singles = [Path(f) for f in files if not is_package(Path(f).name)]
        lists = write_input_lists(Path(self.out).resolve() / "_inputs" / "pubmed_central", "pmc", LIST_SUFFIX,
                                  singles, self.articles_per_input, list_payload) if singles else []
        return packages + lists


@flow(name="pubmed_central", log_prints=True)
def pubmed_central_flow(config: PubmedConfig) -> SourceRunSummary:
    """PubMed Central OA full text."""
    return run_source("pubmed_central", config, config.central_recipe(), config.central_locations())


@flow(name="pubmed_abstracts", log_prints=True)
def pubmed_abstracts_flow(config: PubmedConfig) -> SourceRunSummary:
    """PubMed/MEDLINE titles and abstracts."""
    locations = expand_locations(config.abstracts)
    phases = version_phases() if config.cross_file_versions else None
    return run_source("pubmed_abstracts", config, config.abstracts_recipe(), locations, phases=phases)


@flow(name="pubmed", log_prints=True)
def pubmed_flow(config: PubmedConfig) -> SourceRunSummary:
    """Both PubMed sources as sub-flows (see the module docstring); records of both are returned."""
    if not config.central and not config.abstracts:
        raise ValueError("no input: give --central (PMC articles or packages) and/or --abstracts (MEDLINE files)")
    out = Path(config.out).resolve()
    parts = []
    runner = make_task_runner(config)
    if config.central:
        parts.append(pubmed_central_flow.with_options(task_runner=runner)(config))
    if config.abstracts:
        parts.append(pubmed_abstracts_flow.with_options(task_runner=make_task_runner(config))(config))
    return SourceRunSummary(current_run_id(), out, [r for part in parts for r in part.records],
                            all(part.nothing_to_do for part in parts))


cli = FlowCLI(pubmed_flow, PubmedConfig, "pubmed.yaml", __doc__, report=print_summary, flags=[
    Flag("--central", "central", "PMC .nxml/.xml article or .tar.gz package; path or glob (repeatable)", many=True),
    Flag("--abstracts", "abstracts", "MEDLINE/PubMed .xml.gz file; path or glob (repeatable)", many=True),
    Flag("--commercial-only", "commercial_only", "keep only commercial-use licences", switch=True),
    Flag("--table-mode", "table_mode", "table bodies: linearize or drop", choices=["linearize", "drop"]),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main


def sample_section(paths: list[str]) -> dict[str, Any]:
    """The sample's PMC files go to ``central``, its MEDLINE files (``.xml.gz``) to ``abstracts``."""
    abstracts = [p for p in paths if p.endswith(".xml.gz")]
    return {"central": [p for p in paths if p not in abstracts], "abstracts": abstracts}


#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("pubmed", PubmedConfig, "extension", run=run, flow=pubmed_flow, sample=write_sample_inputs,
                  documents=("pubmed_central", "pubmed_abstracts"), sample_section=sample_section)

if __name__ == "__main__":
    sys.exit(main())
