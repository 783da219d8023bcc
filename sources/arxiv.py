"""arXiv: read bulk source tars (or single e-prints) and clean each paper's LaTeX.

Inputs, by file name:
- ``arXiv_src_2301_001.tar``: a bulk tar of per-paper members, ``2301/2301.00001.gz`` (a gzipped
  tar of the paper's files, or a single gzipped ``.tex``) and ``2301/2301.00002.pdf`` (no source);
- ``2301.00001.gz`` / ``*.tar.gz`` / ``*.tgz``: one paper's e-print, as downloaded from arXiv;
- ``*.tex``: one paper as a single file.

Every archive is read as a stream and nothing is ever written to disk, so member paths cannot
escape anywhere; even so a paper whose archive holds a ``../`` or absolute path, a link or a
device is refused as ``unsafe_archive`` (an arXiv tarball never needs one; a crafted one should
be seen). Only LaTeX sources are read: ``.tex`` files and what TeX may load from the e-print
itself (``.sty``, ``.cls``, ``.def``, ``.cfg``, ``.clo``, ``.bbl``: an author's ``notation.sty`` holds
macros the paper uses), each bounded in size and read only when it looks like text; macOS ``._*`` / ``__MACOSX`` junk and binaries are skipped. The decompressed bytes of one paper
are bounded too, so a gzip bomb costs a counted ``too_large`` drop, not the worker.

Each member of a bulk tar is one record: a kept paper, or a drop with a reason (``pdf_only``,
``not_gzip``, ``corrupt_archive``, ``unsafe_archive``, ``too_large``, ``no_section``...).
A bulk tar cut short yields the papers before the cut and exactly one ``truncated_input`` drop
(the cut paper, or the end of the readable data), never a second one for the same member.
Each paper's LaTeX is cleaned under a time and size bound (:mod:`core.bounded`): a paper past it
is one ``cleaner_timeout`` / ``record_too_large`` drop and the tar goes on.
"""

from __future__ import annotations

import gzip
import io
import logging
import posixpath
import re
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from core.bounded import BoundedCleaner
from core.document import Document, Drop, InputSpec, make_doc_id
from core.filters.basic import MinLength
from core.steps import Record, Step
from sources.formats.latex import (
    SOURCE_SUFFIXES,
    CleanResult,
    LatexOptions,
    clean_paper,
    decode_tex,
    is_main_candidate,
)
from sources.formats.tar_stream import unsafe_member

log = logging.getLogger(__name__)

SOURCE = "arxiv"
TEX_SUFFIXES = (".tex",)
#: Members read from a paper's archive: LaTeX sources and the files they load.
READ_SUFFIXES = SOURCE_SUFFIXES
SINGLE_PAPER_SUFFIXES = (".tar.gz", ".tgz", ".gz")
MAX_META_WARNINGS = 10

_NEW_ID = re.compile(r"(?<![0-9])(\d{4}\.\d{4,5})(?:v\d+)?(?![0-9])")
_OLD_ID = re.compile(r"([a-z][a-z-]*(?:\.[A-Z]{2})?)/?(\d{7})(?:v\d+)?")
_NOT_TEXT = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")


@dataclass(frozen=True)
class ArchiveLimits:
    """Bounds on what one paper may cost to read."""

    max_paper_bytes: int = 64 * 1024 * 1024
    max_unpacked_bytes: int = 512 * 1024 * 1024
    max_tex_bytes: int = 8 * 1024 * 1024
    max_members: int = 20_000
    #: Wall time for cleaning one paper's LaTeX (a normal paper takes well under a second); past
    #: it the paper is a ``cleaner_timeout`` drop and the input goes on (see :mod:`core.bounded`).
    clean_timeout_s: float = 60.0
    #: Characters of ``.tex`` source one paper may hand to the cleaner (``record_too_large`` past it).
    max_clean_chars: int = 64 * 1024 * 1024


class PaperError(Exception):
    """A paper's archive cannot be used; ``reason`` is the drop reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class PaperSource:
    """The source files of one paper (``.tex`` and what they load), decoded, and what was skipped."""

    files: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


# -- names -----------------------------------------------------------------------------------
def arxiv_id_from_name(name: str) -> str | None:
    """``2301/2301.00001.gz`` -> ``2301.00001``; ``math0601001.gz`` -> ``math/0601001``."""
    base = posixpath.basename(name)
    if (match := _NEW_ID.search(base)) is not None:
        return match.group(1)
    if (match := _OLD_ID.search(base)) is not None:
        return f"{match.group(1)}/{match.group(2)}"
    return None


def yymm_of(arxiv_id: str) -> str | None:
    """The year and month an id was issued: ``2301.00001`` and ``math/0601001`` -> ``2301``, ``0601``."""
    digits = arxiv_id.rsplit("/", 1)[-1]
    return digits[:4] if digits[:4].isdigit() else None


def is_junk(path: str) -> bool:
    """macOS resource forks and folder metadata that travel inside many arXiv tarballs."""
    base = posixpath.basename(path.rstrip("/"))
    return base.startswith("._") or base == ".DS_Store" or "__MACOSX/" in f"{path}/"


def member_path(name: str) -> str:
    """A member name as a normalized relative path (``./a/../b.tex`` -> ``b.tex``)."""
    path = posixpath.normpath(name.replace("\\", "/"))
    return path.lstrip("/") if path != "." else name


# -- bounded streams -------------------------------------------------------------------------
class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _BoundedReader(io.RawIOBase):
    """Reads from ``stream`` (a decompressor) and fails once more than ``limit`` bytes came out."""

    def __init__(self, stream: _Readable, limit: int, prefix: bytes = b"") -> None:
        self._stream = stream
        self._limit = limit
        self._prefix = prefix
        self.total = len(prefix)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        if self._prefix:
            size = min(len(view), len(self._prefix))
            view[:size] = self._prefix[:size]
            self._prefix = self._prefix[size:]
            return size
        data = self._stream.read(len(view))
        self.total += len(data)
        if self.total > self._limit:
            raise PaperError("too_large", f"more than {self._limit} bytes when decompressed")
        view[:len(data)] = data
        return len(data)


def _read_bounded(stream: IO[bytes], limit: int) -> bytes | None:
    """Up to ``limit`` bytes of ``stream``, or None when it holds more."""
    data = stream.read(limit + 1)
    return None if len(data) > limit else data


def _looks_like_tar(header: bytes) -> bool:
    if len(header) < tarfile.BLOCKSIZE:
        return False
    try:
        tarfile.TarInfo.frombuf(header[: tarfile.BLOCKSIZE], "utf-8", "surrogateescape")
    except tarfile.HeaderError:
        return False
    return True


def _is_text(data: bytes) -> bool:
    return not data.startswith((b"%PDF", b"%!PS")) and _NOT_TEXT.search(data[:65536]) is None


# -- one paper ---------------------------------------------------------------------------------
def _tex_members(tar: tarfile.TarFile, limits: ArchiveLimits, source: PaperSource) -> None:
    for count, member in enumerate(tar, start=1):
        if count > limits.max_members:
            raise PaperError("too_large", f"more than {limits.max_members} archive members")
        if (problem := unsafe_member(member)) is not None:
            raise PaperError("unsafe_archive", problem)
        if not member.isfile():
            continue
        path = member_path(member.name)
        if is_junk(path) or not path.lower().endswith(READ_SUFFIXES):
            continue
        if member.size > limits.max_tex_bytes:
            source.skipped.append(f"{path}: {member.size} bytes, over max_tex_bytes")
            continue
        handle = tar.extractfile(member)
        data = handle.read() if handle is not None else b""
        if not _is_text(data):
            source.skipped.append(f"{path}: binary content")
            continue
        source.files[path] = decode_tex(data)


def read_paper(compressed: IO[bytes], name: str, limits: ArchiveLimits) -> PaperSource:
    """The ``.tex`` files of one paper from its gzipped e-print (a tar, or one ``.tex``).

    Raises :class:`PaperError` with the drop reason for anything that makes the paper unusable.
    """
    try:
        gz = gzip.GzipFile(fileobj=compressed, mode="rb")
        header = gz.read(tarfile.BLOCKSIZE)
        stream = _BoundedReader(gz, limits.max_unpacked_bytes, prefix=header)
        source = PaperSource()
        if _looks_like_tar(header):
            with tarfile.open(fileobj=io.BufferedReader(stream, 1 << 16), mode="r|") as tar:
                _tex_members(tar, limits, source)
            if not any(map(is_main_candidate, source.files)):
                raise PaperError("no_tex_files", "the archive holds no .tex file")
            return source
        data = _read_bounded(io.BufferedReader(stream, 1 << 16), limits.max_tex_bytes)
        if data is None:
            raise PaperError("too_large", f"single source file over {limits.max_tex_bytes} bytes")
        if not _is_text(data):
            raise PaperError("not_latex_source", "the single file is not text (PDF, PostScript or binary)")
        arxiv_id = arxiv_id_from_name(name) or posixpath.basename(name).split(".")[0]
        source.files[f"{arxiv_id.replace('/', '_')}.tex"] = decode_tex(data)
        return source
    except gzip.BadGzipFile as exc:
        raise PaperError("not_gzip", f"not a gzip file: {exc}") from exc
    except (EOFError, zlib.error, tarfile.TarError) as exc:
        raise PaperError("corrupt_archive", f"{type(exc).__name__}: {exc}") from exc


def _ends_properly(path: Path, offset: int) -> bool:
    """True when a zero block (tar's end-of-archive marker) is at ``offset``.

    tarfile stops quietly at the end of the data and at a cut header alike; only the marker
    tells a whole tar from one cut between (or inside the header of) two members.
    """
    with open(path, "rb") as handle:
        handle.seek(offset)
        block = handle.read(tarfile.BLOCKSIZE)
    return len(block) == tarfile.BLOCKSIZE and not block.strip(b"\0")


def _cut_inside(outer: tarfile.TarFile, member: tarfile.TarInfo, handle: IO[bytes] | None) -> str | None:
    """Read what is left of ``member``'s data (tarfile would, to skip it); why, if the tar ends in it.

    ``handle`` is the member's reader if the paper was read (a streamed tar cannot seek back to
    open a new one); else one is opened at the member's start.
    """
    if not member.isfile():
        return None
    try:
        handle = handle or outer.extractfile(member)
        while handle is not None and handle.read(1 << 20):
            pass
    except (tarfile.ReadError, EOFError, OSError, zlib.error) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


# -- the reader ------------------------------------------------------------------------------
@dataclass
class ArxivReader:
    """Reads one input (bulk tar, single e-print or ``.tex``) into Documents and Drops."""

    spec: InputSpec
    latex: LatexOptions = field(default_factory=LatexOptions)
    limits: ArchiveLimits = field(default_factory=ArchiveLimits)

    def __iter__(self) -> Iterator[Record]:
        # the LaTeX cleaner is regular expressions and a scanner over text of any shape: each
        # paper is cleaned in core.bounded's killable helper, under a time and a size bound
        with BoundedCleaner(clean_paper, timeout_s=self.limits.clean_timeout_s,
                            max_input=self.limits.max_clean_chars, shared=True) as self._cleaner:
            yield from self._records()

    def _records(self) -> Iterator[Record]:
        name = self.spec.path.name.lower()
        if name.endswith(".tar"):
            yield from self._bulk()
        elif name.endswith(SINGLE_PAPER_SUFFIXES):
            with open(self.spec.path, "rb") as handle:
                yield self._paper(lambda: read_paper(handle, self.spec.path.name, self.limits),
                                  self.spec.path.name)
        elif name.endswith(TEX_SUFFIXES):
            yield self._paper(lambda: self._single_tex(self.spec.path), self.spec.path.name)
        else:
            yield Drop("not_latex_source", f"{self.spec.location}", "not a .tar, .gz or .tex input")

    def _single_tex(self, path: Path) -> PaperSource:
        if path.stat().st_size > self.limits.max_tex_bytes:
            raise PaperError("too_large", f"{path.stat().st_size} bytes, over max_tex_bytes")
        return PaperSource(files={path.name: decode_tex(path.read_bytes())})

    def _bulk(self) -> Iterator[Record]:
        """One record per member; a cut tar is exactly one ``truncated_input`` drop.

        The drop is the cut member itself when the cut falls inside its data (its outcome is
        then ``truncated_input``, not also ``corrupt_archive``), else "end of readable data"
        (the cut fell in a header or between members).
        """
        where = self.spec.location
        try:
            with tarfile.open(self.spec.path, mode="r|") as outer:
                for member in outer:
                    self._handle: IO[bytes] | None = None
                    record = self._bulk_member(outer, member)
                    cut = _cut_inside(outer, member, self._handle)
                    if cut is not None:
                        yield Drop("truncated_input", f"{where}: {member.name}", f"the input ends inside this member: {cut}")
                        return
                    if record is not None:
                        yield record
                if not _ends_properly(self.spec.path, outer.offset):
                    yield Drop("truncated_input", f"{where}: end of readable data",
                               f"no end-of-archive block at byte {outer.offset}: the tar was cut there")
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            yield Drop("truncated_input", f"{where}: end of readable data", f"{type(exc).__name__}: {exc}")

    def _bulk_member(self, outer: tarfile.TarFile, member: tarfile.TarInfo) -> Record | None:
        label = f"{self.spec.location}: {member.name}"
        if member.isdir():
            return None
        if (problem := unsafe_member(member)) is not None:
            return Drop("unsafe_archive", label, problem)
        path = member_path(member.name)
        if is_junk(path):
            return Drop("junk_member", label)
        lower = path.lower()
        if lower.endswith(".pdf"):
            return Drop("pdf_only", label)
        if not lower.endswith(".gz"):
            return Drop("not_latex_source", label, f"unexpected member type {posixpath.splitext(lower)[1]!r}")
        if member.size > self.limits.max_paper_bytes:
            return Drop("too_large", label, f"{member.size} bytes, over max_paper_bytes")
        handle = self._handle = outer.extractfile(member)
        if handle is None:
            return Drop("corrupt_archive", label, "member has no data")
        return self._paper(lambda: read_paper(handle, path, self.limits), path)

    def _paper(self, load: Callable[[], PaperSource], name: str) -> Record:
        """Load (``load()`` -> PaperSource, may raise PaperError) and clean one paper."""
        label = f"{self.spec.location}: {name}" if name != self.spec.path.name else self.spec.location
        arxiv_id = arxiv_id_from_name(name) or posixpath.basename(name).split(".")[0]
        try:
            source = load()
        except PaperError as exc:
            return Drop(exc.reason, label, str(exc))
        size = sum(len(text) for text in source.files.values())
        try:
            result = self._cleaner.run(label, source.files, self.latex, size=size)
        except RecursionError as exc:  # deeply nested input beyond what the scanner bounds
            return Drop("latex_error", label, f"RecursionError: {exc}")
        if isinstance(result, Drop):
            return result
        if result.text is None:
            return Drop(result.drop_reason or "empty_after_cleaning", label, result.detail)
        return Document(
            id=make_doc_id(SOURCE, arxiv_id),
            text=result.text,
            source=SOURCE,
            meta=self._meta(arxiv_id, name, source, result),
        )

    def _meta(self, arxiv_id: str, name: str, source: PaperSource, result: CleanResult) -> dict[str, object]:
        warnings = source.skipped + result.warnings
        return {
            "arxiv_id": arxiv_id,
            "yymm": yymm_of(arxiv_id),
            "url": f"https://arxiv.org/abs/{arxiv_id}",
            "title": result.title,
            "main_file": result.main_file,
            "tex_files": sum(map(is_main_candidate, source.files)),
            "support_files": sum(not is_main_candidate(path) for path in source.files),
            "inlined_files": len(result.included),
            "local_packages": len(result.packages),
            "conditionals": result.conditionals,
            "unclosed_conditionals": result.unclosed_conditionals,
            "macros_defined": result.macros_defined,
            "macros_expanded": result.macros_expanded,
            "warnings": warnings[:MAX_META_WARNINGS],
            "warning_count": len(warnings),
            "archive": self.spec.key,
            "member": name,
        }


@dataclass
class ArxivRecipe:
    """The arXiv source for :mod:`core.pipeline`."""

    latex: LatexOptions = field(default_factory=LatexOptions)
    limits: ArchiveLimits = field(default_factory=ArchiveLimits)
    min_chars: int = 1
    name: str = SOURCE

    def input_language(self, spec: InputSpec) -> str | None:
        """arXiv inputs carry no language (most papers are English, not all)."""
        return None

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Yield one record per paper of the input."""
        return iter(ArxivReader(spec, self.latex, self.limits))

    def steps(self) -> list[Step]:
        """Only a length floor: the reader already cleaned the LaTeX."""
        return [MinLength(self.min_chars)]

    def partition(self, doc: Document) -> str:
        """One directory: arXiv documents carry no language."""
        return doc.language or "und"
