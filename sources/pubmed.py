"""PubMed Central Open Access full text and PubMed/MEDLINE abstracts as pipeline recipes.

PubMed Central inputs, each one pipeline input (one Prefect task):

* a single article: ``.nxml`` / ``.xml`` (optionally ``.gz``);
* a PMC bulk package: ``.tar.gz`` / ``.tgz`` / ``.tar`` (``oa_comm_xml.PMC00xxxxxxx.baseline.*.tar.gz``
  with ``PMC…/PMC123.xml`` members, the older ``comm_use.A-B.xml.tar.gz`` with ``Journal/x.nxml``,
  or a per-article package holding the ``.nxml`` beside PDFs and images);
* an article list ``*.pmc.json`` (``{"files": [...]}``, written by ``flows.pubmed`` to batch
  many single files into one task).

Packages are *streamed* (``tarfile`` mode ``r|*``): one member is in memory at a time, and only
if its declared size is within ``max_article_bytes``; members that are not articles (images,
PDFs) are not records. Member names are only used as labels: nothing is ever written or opened
by a member's path. A package cut short keeps every article read before the cut and adds one
``truncated_input`` drop.

Per article, in a killable helper process (:mod:`core.bounded`; ``cleaner_timeout`` past
``max_article_seconds``): the size bound (``too_large``), a parse (``xml_error``), entity declarations
(``unsafe_xml``, never resolved), a time bound on rendering (``timeout``), a memory bound on the
helper (``max_article_memory``: ``record_too_large``), a gzipped article inflated only up to
``max_article_bytes`` (``too_large``: a gzip bomb never expands), no text
(``empty_text``), and the licence filter (``license_noncommercial`` / ``license_unknown`` when
``commercial_only``). See :mod:`sources.formats.pubmed_jats` for the text and :mod:`sources.formats.medline`
for the abstracts.
"""

from __future__ import annotations

import json
import tarfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lxml import etree

from core.bounded import BoundedCleaner
from core.compressed import CODEC_ERRORS, TruncatedInputError
from core.document import Document, Drop, InputSpec, make_doc_id
from core.filters.basic import MinLength
from core.steps import Record, Step
from sources.formats import medline
from sources.formats.pubmed_jats import (
    DeadlineError,
    TableMode,
    UnsafeXmlError,
    article_meta,
    parse_article,
    render,
)
from sources.formats.tar_stream import open_tar_stream, unsafe_member

if TYPE_CHECKING:  # the article cleaner's module loads in a memory-bounded helper: no pyarrow there
    from core.driver import PhaseRun, SourcePhases
    from core.manifest import InputRecord
    from core.pipeline import RunContext

CENTRAL = "pubmed_central"
ABSTRACTS = medline.SOURCE
LIST_SUFFIX = ".pmc.json"
LIST_FORMAT = "kinda-pmc-list/1"
ARTICLE_SUFFIXES = (".nxml", ".xml", ".nxml.gz", ".xml.gz")
TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tar.xz")
#: What a cut or corrupt package raises while streamed.
PACKAGE_ERRORS: tuple[type[BaseException], ...] = (*CODEC_ERRORS, TruncatedInputError, tarfile.TarError)


@dataclass(frozen=True)
class CentralSettings:
    """How PMC articles are read and which are kept."""

    table_mode: TableMode = "linearize"
    commercial_only: bool = False
    max_article_bytes: int = 32 * 1024 * 1024
    max_article_seconds: float = 10.0
    min_chars: int = 200
    #: Address-space bound of the helper that parses and renders articles (``core.bounded``): an
    #: article that needs more is one ``record_too_large`` drop (a 30 MB article of 4 M tiny
    #: paragraphs takes ~1.1 GB; real ones, tens of MB).
    max_article_memory: int = 1536 << 20


def is_package(name: str) -> bool:
    """True for a PMC bulk or per-article package (a tar archive)."""
    return name.lower().endswith(TAR_SUFFIXES)


def is_article_name(name: str) -> bool:
    """True for a member or file name that holds one article."""
    return name.lower().endswith(ARTICLE_SUFFIXES)


def list_payload(files: Sequence[Path]) -> dict[str, Any]:
    """The content of an article list (see :func:`flows.runtime.source_flow.write_input_lists`)."""
    return {"format": LIST_FORMAT, "files": [str(Path(f).resolve()) for f in files]}


def gunzip_bounded(data: bytes, limit: int) -> bytes:
    """A gzipped article, decompressed to at most ``limit`` bytes (ValueError past it: a gzip bomb).

    ``gzip.decompress`` would inflate 10 MB of zeros to 10 GB before any size check could run.
    Concatenated gzip members are read as ``gzip.decompress`` reads them.
    """
    out = bytearray()
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        out += inflater.decompress(rest, limit + 1 - len(out))
        if len(out) > limit:
            raise ValueError(f"more than {limit:,} bytes when decompressed (from {len(data):,})")
        if not inflater.eof:
            raise EOFError("compressed article ended before the end-of-stream marker")
        rest = inflater.unused_data.lstrip(b"\x00")  # gzip allows zero padding between members
    return bytes(out)


def article_record(data: bytes, where: str, settings: CentralSettings) -> Record:
    """One article's bytes -> a Document, or a Drop naming ``where`` (file or ``package:member``)."""
    if len(data) > settings.max_article_bytes:
        return Drop("too_large", where, f"{where}: {len(data)} bytes > {settings.max_article_bytes}")
    if data[:2] == b"\x1f\x8b":
        try:
            data = gunzip_bounded(data, settings.max_article_bytes)
        except ValueError as exc:
            return Drop("too_large", where, f"{where}: {exc}")
        except (OSError, EOFError, zlib.error) as exc:
            return Drop("truncated_input", where, f"{where}: {type(exc).__name__}: {exc}")
    try:
        root = parse_article(data)
    except UnsafeXmlError as exc:
        return Drop("unsafe_xml", where, f"{where}: {exc}")
    except etree.XMLSyntaxError as exc:
        if getattr(exc, "code", None) == etree.ErrorTypes.ERR_NO_MEMORY:  # libxml2 under the helper's memory bound
            return Drop("record_too_large", where, f"{where}: the parser ran out of memory "
                                                   f"(helper bound {settings.max_article_memory:,} bytes)")
        return Drop("xml_error", where, f"{where}: {type(exc).__name__}: {exc}")
    except ValueError as exc:
        return Drop("xml_error", where, f"{where}: {type(exc).__name__}: {exc}")
    try:
        article = render(root, settings.table_mode, settings.max_article_seconds)
    except DeadlineError as exc:
        return Drop("timeout", where, f"{where}: {exc}")
    except ValueError as exc:
        return Drop("not_an_article", where, f"{where}: {exc}")
    if not article.text.strip():
        return Drop("empty_text", where)
    if settings.commercial_only and not article.licence["commercial"]:
        key = article.licence["key"]
        return Drop("license_unknown" if key == "unknown" else "license_noncommercial", where)
    local_id = article.ids.get("pmc") or article.ids.get("pmid") or article.ids.get("doi") or where
    return Document(id=make_doc_id(CENTRAL, f"PMC{local_id}" if local_id.isdigit() else local_id),
                    text=article.text, source=CENTRAL, meta=article_meta(article, where))


def bounded_cleaner(settings: CentralSettings) -> BoundedCleaner[Record]:
    """:func:`article_record` in a killable helper process: parsing is C code (libxml2) that no
    in-process deadline can interrupt, so the per-article time bound is enforced from outside
    (``cleaner_timeout``); the helper is reused for every article of an input."""
    return BoundedCleaner(article_record, timeout_s=settings.max_article_seconds,
                          max_input=settings.max_article_bytes, memory_limit=settings.max_article_memory,
                          preload=("sources.pubmed",))


def _clean(cleaner: BoundedCleaner[Record] | None, data: bytes, where: str, settings: CentralSettings) -> Record:
    if cleaner is None:
        return article_record(data, where, settings)
    return cleaner.run(where, data, where, settings, size=len(data))


def iter_package(path: Path, settings: CentralSettings, cleaner: BoundedCleaner[Record] | None = None
                 ) -> Iterator[Record]:
    """Stream a PMC tar package: one record per article member; never write a member anywhere."""
    number = 0
    name = path.name
    try:
        with open_tar_stream(path) as archive:
            for member in archive:
                if not is_article_name(member.name):
                    continue
                number += 1
                where = f"{name}:{member.name}"
                problem = unsafe_member(member)
                if problem is not None:  # a ../ or absolute path, a link, a device: never read (docs/reliability.md)
                    yield Drop("unsafe_archive", where, f"{where}: {problem}; refused")
                    continue
                if not member.isfile():
                    yield Drop("not_a_file", where, f"{where}: a tar entry where an article was expected")
                    continue
                if member.size > settings.max_article_bytes:
                    yield Drop("too_large", where, f"{where}: {member.size} bytes > {settings.max_article_bytes}")
                    continue
                handle = archive.extractfile(member)
                data = handle.read() if handle is not None else b""
                yield _clean(cleaner, data, where, settings)
    except PACKAGE_ERRORS as exc:
        yield Drop("truncated_input", f"{name}:article {number + 1}",
                   f"{name}: unreadable after {number} articles: {type(exc).__name__}: {exc}")


def _read_file(path: Path, where: str, settings: CentralSettings, cleaner: BoundedCleaner[Record] | None
               ) -> Record:
    try:
        size = path.stat().st_size
        if size > settings.max_article_bytes:  # compressed, it is bigger still when inflated
            return Drop("too_large", where, f"{where}: {size} bytes > {settings.max_article_bytes}")
        data = path.read_bytes()
    except OSError as exc:
        return Drop("unreadable", where, f"{where}: {exc}")
    return _clean(cleaner, data, where, settings)


def iter_central(path: Path, settings: CentralSettings, bounded: bool = True) -> Iterator[Record]:
    """Every article of one PMC input (single file, package or article list).

    ``bounded`` runs each article through :func:`bounded_cleaner`; ``False`` parses in this
    process (tests of the parser itself, and the benchmark's in-process comparison).
    """
    if not bounded:
        yield from _iter_central(path, settings, None)
        return
    with bounded_cleaner(settings) as cleaner:
        yield from _iter_central(path, settings, cleaner)


def _iter_central(path: Path, settings: CentralSettings, cleaner: BoundedCleaner[Record] | None
                  ) -> Iterator[Record]:
    name = path.name
    if name.endswith(LIST_SUFFIX):
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
            files = [Path(f) for f in payload["files"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            yield Drop("bad_input_list", name, f"{name}: {type(exc).__name__}: {exc}")
            return
        for file in files:
            if is_package(file.name):
                yield from iter_package(file, settings, cleaner)
            else:
                yield _read_file(file, file.name, settings, cleaner)
        return
    if is_package(name):
        yield from iter_package(path, settings, cleaner)
        return
    yield _read_file(path, name, settings, cleaner)


@dataclass
class PubmedCentralRecipe:
    """PubMed Central OA full text as a :class:`core.pipeline.SourceRecipe`."""

    settings: CentralSettings = CentralSettings()
    name: str = CENTRAL

    def input_language(self, spec: InputSpec) -> str | None:
        """PMC OA is overwhelmingly English; each article says (``xml:lang``), default ``en``."""
        return None

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Articles of one input."""
        yield from iter_central(spec.path, self.settings)

    def steps(self) -> Sequence[Step]:
        """A length floor: what is left of an abstract-only stub is not a paper."""
        return [MinLength(self.settings.min_chars)]

    def partition(self, doc: Document) -> str:
        """By the article's language."""
        return doc.language or "und"


@dataclass
class PubmedAbstractsRecipe:
    """PubMed/MEDLINE titles and abstracts as a :class:`core.pipeline.SourceRecipe`."""

    require_abstract: bool = True
    max_record_chars: int = 1_000_000
    name: str = ABSTRACTS
    #: Size and time bounds of one citation (``configs/pubmed.yaml``'s ``citation``).
    bounds: medline.CitationBounds = field(default_factory=medline.CitationBounds)

    def input_language(self, spec: InputSpec) -> str | None:
        """MEDLINE titles and abstracts are English (other languages sit in OtherAbstract, not read)."""
        return "en"

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Citations of one baseline or update file."""
        yield from medline.iter_medline(spec.path, self.require_abstract, self.max_record_chars, self.bounds)

    def steps(self) -> Sequence[Step]:
        """None: NLM's records are already curated."""
        return []

    def partition(self, doc: Document) -> str:
        """All English."""
        return doc.language or "en"


# -- cross-file versions as a phase of the abstracts run ---------------------------------------
def drop_superseded(ctx: RunContext, keys: list[str]) -> int:
    """Put the run's superseded and deleted citations on its drop list; how many rows were added."""
    from core.pipeline import add_drops  # pyarrow: not for the bounded article cleaner's helper

    return add_drops(ctx, medline.cross_file_drops(ctx.out, ctx.source, keys))


def version_phases() -> SourcePhases:
    """The cross-file versioning phase of the abstracts run, between exact dedup and finalize.

    One PMID index per staged input, then one run-wide pass, each through the driver's executor
    (the ``pmid-index`` and ``pmid-versions`` tasks under Prefect). The index reads each input's
    local file as the run resolved it (a URL's downloaded copy), noted before staging.
    """
    from core.driver import SourcePhases  # pyarrow, as drop_superseded

    paths: dict[str, Path] = {}

    def before_stage(ctx: RunContext, specs: list[InputSpec], run: PhaseRun) -> dict[str, InputRecord]:
        paths.update((spec.key, spec.path) for spec in specs)
        return {}

    def after_dedup(ctx: RunContext, keys: list[str], run: PhaseRun) -> None:
        futures = [run.executor.submit(medline.write_pmid_index, ctx.out, ctx.source, key, paths[key])
                   for key in keys if key in paths]
        indexed = sum(f.result() for f in futures)
        added = run.executor.submit(drop_superseded, ctx, keys).result()
        run.log.info("PMID versions across %d files (%d citations): %d superseded or deleted",
                     len(keys), indexed, added)

    return SourcePhases(before_stage=before_stage, after_dedup=after_dedup)
