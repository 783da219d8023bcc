"""Science books flow: folders of PDFs and EPUBs (books and papers) -> clean text shards + manifest.

    python -m flows.science_books --inputs 'library/**/*.pdf' --inputs 'library/**/*.epub' --out data/
    python -m flows.science_books --inputs 'papers/*.pdf' --set pdf.ocr=off --out data/
    python -m flows.science_books --inputs 'books/*' --set 'languages=[en,de]' --out data/

One task per file. PDFs: pdfium text layer in reading order (two-column papers), running
headers/footers and page numbers removed, hyphenation joined, ligatures spelt out; pages without
a text layer OCR'd with tesseract when it is installed (``apt-get install tesseract-ocr``), else
counted as ``ocr_unavailable`` drops. EPUBs: spine order, navigation and boilerplate left out,
MathML as text. Then a quality floor, language ID, run-wide exact dedup, and book-level near-dedup
within the run (the same MinHash machinery as the Books flow). Near-dedup against the Gutenberg
books and the Pile is the dedup stage's (``flows.dedup``: priority chain ``[books, science_books]``,
``--against`` the Pile index), since the books may come from another run. See docs/science.md.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.config import PipelineConfig
from core.registry import SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.config_parts import LateBoundsConfig
from flows.runtime.lazy import LazyImport, flow
from flows.runtime.near_dedup import NearDedupConfig, near_dedup_phases
from flows.runtime.source_flow import SourceRunSummary, expand_locations, print_summary, run_source

if TYPE_CHECKING:
    from sources.formats.epub import EpubSettings
    from sources.formats.pdf_text import PdfSettings
    from sources.samples.scibooks import write_sample_inputs
    from sources.scibooks import QualitySettings, SciBookSettings, SciBooksRecipe
else:  # the readers and the sample writer: for a run, not --help or the source registry
    EpubSettings = LazyImport("sources.formats.epub", "EpubSettings")
    PdfSettings = LazyImport("sources.formats.pdf_text", "PdfSettings")
    write_sample_inputs = LazyImport("sources.samples.scibooks", "write_sample_inputs")
    QualitySettings = LazyImport("sources.scibooks", "QualitySettings")
    SciBookSettings = LazyImport("sources.scibooks", "SciBookSettings")
    SciBooksRecipe = LazyImport("sources.scibooks", "SciBooksRecipe")


class PdfConfig(BaseModel):
    """PDF reading (see :class:`sources.formats.pdf_text.PdfSettings`)."""

    model_config = ConfigDict(extra="forbid")
    page_timeout_s: float = Field(20.0, gt=0)
    ocr: Literal["auto", "off"] = "auto"
    ocr_languages: str = "eng"
    ocr_dpi: int = Field(300, ge=72, le=600)
    ocr_timeout_s: float = Field(120.0, gt=0)
    min_page_chars: int = Field(16, ge=1)
    max_page_garbage: float = Field(0.3, ge=0, le=1)
    max_pages: int = Field(10_000, gt=0)
    max_ocr_pixels: int = Field(40_000_000, gt=0, description="a page to OCR larger than this at ocr_dpi: page_too_large")
    max_page_chars: int = Field(1_000_000, gt=0, description="a page with more text characters: page_too_large")
    max_document_chars: int = Field(40_000_000, gt=0, description="a PDF with more text: text_too_large")
    worker_memory_bytes: int = Field(1 << 30, ge=256 << 20, description="address-space bound of the PDF worker")

    def settings(self) -> PdfSettings:
        """As the pure module's settings."""
        return PdfSettings(**self.model_dump())


class EpubConfig(BaseModel):
    """EPUB reading and zip-bomb bounds (see :class:`sources.formats.epub.EpubSettings`)."""

    model_config = ConfigDict(extra="forbid")
    max_member_bytes: int = Field(32 * 1024 * 1024, gt=0)
    max_total_bytes: int = Field(512 * 1024 * 1024, gt=0)
    max_ratio: float = Field(200.0, gt=1)
    max_members: int = Field(20_000, gt=0)
    include_nonlinear: bool = False
    chapter_timeout_s: float = Field(30.0, gt=0, description="wall-time bound of one chapter's XHTML-to-text")
    chapter_memory_bytes: int = Field(1536 << 20, ge=128 << 20, description="address-space bound of the chapter helper")

    def settings(self) -> EpubSettings:
        """As the pure module's settings."""
        return EpubSettings(**self.model_dump())


class QualityConfig(BaseModel):
    """The quality floor (see :class:`sources.scibooks.QualityFloor`)."""

    model_config = ConfigDict(extra="forbid")
    min_chars: int = Field(500, ge=0)
    min_chars_per_page: int = Field(200, ge=0)
    max_bad_char_share: float = Field(0.01, ge=0, le=1)
    min_word_share: float = Field(0.5, ge=0, le=1)


class ScienceBooksConfig(LateBoundsConfig):
    """Settings of the science-books recipe (defaults in ``configs/science_books.yaml``)."""

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs",)

    #: Which files are read does not change how each is processed: not part of the config hash.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"inputs"}
    #: Exposed after the first release at the value the reader already used (see LateBoundsConfig).
    HASHED_WHEN_SET: ClassVar[frozenset[str]] = frozenset({
        "epub.chapter_timeout_s", "epub.chapter_memory_bytes", "pdf.max_ocr_pixels", "pdf.max_page_chars", "pdf.max_document_chars",
        "pdf.worker_memory_bytes"})

    inputs: list[str] = Field(default_factory=list, description="PDF/EPUB files: paths or globs")
    pdf: PdfConfig = Field(default_factory=PdfConfig)
    epub: EpubConfig = Field(default_factory=EpubConfig)
    quality: QualityConfig = Field(default_factory=QualityConfig)
    max_file_bytes: int = Field(1024**3, gt=0)
    language_id: bool = True
    languages: list[str] = Field(default_factory=list, description="languages to keep; empty = all")
    min_language_score: float = Field(0.5, ge=0, le=1)
    lid_model: str | None = None
    near_dedup: NearDedupConfig = Field(default_factory=NearDedupConfig)

    def recipe(self) -> SciBooksRecipe:
        """The source object the pipeline runs."""
        return SciBooksRecipe(SciBookSettings(
            pdf=self.pdf.settings(), epub=self.epub.settings(), quality=QualitySettings(**self.quality.model_dump()),
            max_file_bytes=self.max_file_bytes, language_id=self.language_id, languages=tuple(self.languages),
            min_language_score=self.min_language_score, lid_model=self.lid_model,
        ))

    def preflight(self) -> None:
        """With language ID on, a missing model would fail every book."""
        if self.language_id:
            from core.filters.langid import resolve_lid_model

            resolve_lid_model(self.lid_model)

    def locations(self) -> list[str]:
        """Every matching file (sorted, so runs are reproducible)."""
        if not self.inputs:
            raise ValueError("no input: give --inputs (paths or globs of PDF/EPUB files)")
        return expand_locations(self.inputs)


@flow(name="science_books", log_prints=True)
def science_books_flow(config: ScienceBooksConfig) -> SourceRunSummary:
    """Read, clean, filter and deduplicate science books and papers (see the module docstring)."""
    from sources.scibooks import SOURCE

    phases = near_dedup_phases(config.near_dedup.settings()) if config.near_dedup.enabled else None
    return run_source(SOURCE, config, config.recipe(), config.locations(), phases=phases)


cli = FlowCLI(science_books_flow, ScienceBooksConfig, "science_books.yaml", __doc__, report=print_summary, flags=[
    Flag("--inputs", "inputs", "PDF or EPUB path or glob (repeatable; ** allowed)", many=True),
    Flag("--languages", "languages", "comma-separated languages to keep (default: all)", split=True),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main
#: This source, as the parent flow, the sample corpus, the input checks and labels see it.
SPEC = SourceSpec("science_books", ScienceBooksConfig, "extension", run=run, flow=science_books_flow, sample=write_sample_inputs)


if __name__ == "__main__":
    sys.exit(main())
