"""More code (G.2, seed A.4): the Hugging Face exports of the-stack and codeparrot/github-code.

Both datasets are published as Parquet (and JSON lines when converted); the layout is told apart
by its columns, per file for Parquet and per row for JSON lines:

* **the-stack** (bigcode/the-stack v1): ``content``, ``max_stars_repo_path``,
  ``max_stars_repo_name``, ``max_stars_repo_licenses`` (``list<string>`` of SPDX ids), ``lang``,
  ``ext`` (no dot; an extension-less ``Makefile`` has ``ext=Makefile``; not read: the path's
  name decides the language), ``hexsha`` (the git *blob* id). The ``max_issues_*`` /
  ``max_forks_*`` columns are used when ``max_stars_*`` is null.
* **github-code** (codeparrot/github-code): ``code``, ``repo_name``, ``path``, ``language``,
  ``license`` (one lower-case key such as ``mit`` or ``lgpl-3.0``), ``size``.

Parquet is streamed one row group at a time (only the needed columns, in bounded batches), so
memory does not grow with the file. Every row becomes a Document or a Drop, in this order of
checks, the same as the LLaMA GitHub recipe (:mod:`sources.github`) so the two sources agree:

1. licence (``license_<id>``; ``license_none`` for a row without licence), with the GitHub
   recipe's allow-list and :func:`sources.formats.licenses.judge`: a the-stack row listing several
   licences is kept only when *all* are allowed (ambiguity is a reason to drop);
2. licence files and certificates by name (``skipped_license_file``, ``skipped_certificate``);
3. language (``extension_not_allowed``): the GitHub recipe's extension whitelist decides first
   (``language_for(path)``, so ``.h`` is C in both sources); a file the whitelist does not know
   is kept only when the dataset's own language label, mapped by :data:`DATASET_LANGUAGES`, is in
   ``extra_languages`` (empty by default: same languages as the GitHub recipe);
4. ``too_large`` (before any text work: the size bound of every per-record cleaner), ``binary``
   (NUL byte), then the GitHub recipe's steps (:func:`core.filters.code_quality.code_steps`).

Rows are bounded before they are built (:mod:`sources.formats.rows`): a Parquet batch is sized from the
footer, a row's content size is read from the Arrow offsets so an oversized row is a ``too_large``
drop without becoming a Python string, and a JSON line over ``max_line_bytes`` is a ``too_large``
drop skipped in bounded pieces. A row whose strings are not valid UTF-8 is one ``invalid_utf8``
drop; the rows around it are kept.

Bad input never ends the run: a file that is not Parquet, a Parquet file lacking a needed column
(one ``missing_column`` drop per row, counted from the footer), a row group that cannot be
decoded (one ``corrupt_row_group`` drop per row of it), a malformed JSON line (``malformed_json``)
or a row without content (``malformed_row``) is counted with the file and record named.

Document ids hash ``repo/path@blob``, where ``blob`` is the git blob sha1 (the-stack's ``hexsha``,
computed from the content for github-code), so the same file version gets the same id whichever
export it comes from, and the run-wide exact dedup keeps one.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.document import Document, Drop, InputSpec, make_doc_id
from core.filters.code_quality import CodeFilterSettings, code_steps
from core.steps import Record, Step
from sources.formats.licenses import (
    DEFAULT_ALLOWED,
    NO_LICENSE,
    RepoLicense,
    judge,
    normalize_license,
    row_license,
)
from sources.formats.rows import Oversized, ParquetColumns, RowAt, RowFormat, RowReader, utf8_key
from sources.github import github_url, is_binary, language_for, skip_reason

SOURCE = "stack_code"
STACK = "the-stack"
GITHUB_CODE = "github-code"

#: Columns each Parquet layout needs (the-stack's fallbacks are read when present).
STACK_COLUMNS = ("content", "max_stars_repo_path", "max_stars_repo_name", "max_stars_repo_licenses")
STACK_OPTIONAL = ("hexsha", "lang", *(f"max_{kind}_repo_{what}" for kind in ("issues", "forks")
                                              for what in ("path", "name", "licenses")))
GITHUB_CODE_COLUMNS = ("code", "repo_name", "path", "license")
GITHUB_CODE_OPTIONAL = ("language",)
#: Where a Parquet row holds its content's UTF-8 bytes (:func:`sources.formats.rows.utf8_key`).
_CONTENT_UTF8, _CODE_UTF8 = utf8_key("content"), utf8_key("code")

#: The datasets' language labels (the-stack ``lang``, github-code ``language``), lower-cased,
#: mapped to the language names :mod:`sources.github` uses; labels not listed map to themselves
#: lower-cased (``yaml``, ``toml``, ``json``).
DATASET_LANGUAGES: dict[str, str] = {
    "c": "c", "c++": "c++", "c#": "c#", "java": "java", "javascript": "javascript", "typescript": "typescript",
    "python": "python", "go": "go", "rust": "rust", "ruby": "ruby", "php": "php", "perl": "perl",
    "scala": "scala", "lua": "lua", "julia": "julia", "haskell": "haskell", "sql": "sql", "shell": "shell",
    "batchfile": "batchfile", "powershell": "powershell", "css": "css", "html": "html", "markdown": "markdown",
    "tex": "tex", "makefile": "makefile", "dockerfile": "dockerfile", "cmake": "cmake",
    "fortran": "fortran", "visual basic": "visual basic", "assembly": "assembly",
    "objective-c": "objective-c", "smali": "smali", "xml": "xml", "restructuredtext": "restructuredtext",
    "jupyter notebook": "jupyter", "f#": "f#", "yaml": "yaml", "toml": "toml", "json": "json",
}


def dataset_language(label: str | None) -> str | None:
    """The GitHub recipe's name for a dataset language label (``Python`` -> ``python``)."""
    if not label or not str(label).strip():
        return None
    key = str(label).strip().lower()
    return DATASET_LANGUAGES.get(key, key)


def git_blob_sha1(data: bytes | memoryview) -> str:
    """The git blob id of ``data`` (``git hash-object``), as the-stack's ``hexsha`` column holds."""
    blob = hashlib.sha1(b"blob %d\x00" % len(data), usedforsecurity=False)
    blob.update(data)  # not a copy of the data with the header in front
    return blob.hexdigest()


def list_license(values: Iterable[Any] | None, allowed: frozenset[str]) -> RepoLicense:
    """Judge the-stack's ``list<string>`` of a repository's licences: kept only if all are allowed."""
    found = [normalize_license(str(v)) for v in (values or []) if v is not None and str(v).strip()]
    return judge(found, (), allowed)


@functools.lru_cache(maxsize=4096)
def _listed_license(values: tuple[Any, ...], allowed: frozenset[str]) -> RepoLicense:
    """:func:`list_license` of one licence list, remembered: a dataset repeats a few lists over millions of rows."""
    return list_license(values, allowed)


@dataclass(frozen=True)
class StackCodeSettings:
    """What the reader keeps; the filters' thresholds are the GitHub recipe's by default."""

    allowed_licenses: frozenset[str] = DEFAULT_ALLOWED
    #: Dataset languages kept beyond the GitHub whitelist (e.g. ``{"yaml", "toml"}``).
    extra_languages: frozenset[str] = frozenset()
    max_file_bytes: int = 1_000_000
    binary_sniff_bytes: int = 8000
    batch_rows: int = 1024
    #: A JSON line longer than this is one ``too_large`` drop, skipped without being held whole
    #: (a row is at most ``max_file_bytes`` of content, JSON-escaped up to 6x, plus metadata).
    max_line_bytes: int = 8_000_000
    filters: CodeFilterSettings = field(default_factory=CodeFilterSettings)


@dataclass(slots=True)
class CodeRow:
    """One row of either layout, normalized (before any check); not frozen: one is made per row, and
    a frozen dataclass pays an ``object.__setattr__`` per field."""

    fmt: str
    repo: str
    path: str
    content: Any
    license: RepoLicense
    label: str | None = None
    blob: str | None = None
    #: ``content``'s UTF-8 bytes where the reader has them already (a Parquet string column), else None.
    utf8: memoryview | None = None


#: the-stack's (path, name, licences) columns of the ``max_stars``, ``max_issues`` and ``max_forks`` repositories.
_REPO_COLUMNS = tuple((f"max_{kind}_repo_path", f"max_{kind}_repo_name", f"max_{kind}_repo_licenses")
                      for kind in ("stars", "issues", "forks"))


def stack_row(row: Mapping[str, Any], allowed: frozenset[str]) -> CodeRow:
    """A the-stack row: the ``max_stars`` repository, else the ``max_issues`` / ``max_forks`` one."""
    for path_column, name_column, licenses_column in _REPO_COLUMNS:
        path, name = row.get(path_column), row.get(name_column)
        if path and name:
            licenses = row.get(licenses_column)
            break
    else:
        path, name, licenses = row.get("max_stars_repo_path"), row.get("max_stars_repo_name"), None
    if isinstance(licenses, str):  # a JSON export may hold a plain string
        licenses = [licenses]
    if isinstance(licenses, list | tuple):
        try:
            judged = _listed_license(tuple(licenses), allowed)
        except TypeError:  # unhashable items (a JSON export's [{"key": "mit"}]) cannot be remembered
            judged = list_license(licenses, allowed)
    else:
        judged = list_license(licenses, allowed)
    return CodeRow(STACK, str(name or ""), str(path or ""), row.get("content"), judged,
                   row.get("lang"), row.get("hexsha"), row.get(_CONTENT_UTF8))


def github_code_row(row: Mapping[str, Any], allowed: frozenset[str]) -> CodeRow:
    """A codeparrot/github-code row (one licence key per row)."""
    value = row.get("license")
    return CodeRow(GITHUB_CODE, str(row.get("repo_name") or ""), str(row.get("path") or ""), row.get("code"),
                   row_license(str(value) if value is not None else None, allowed), row.get("language"),
                   utf8=row.get(_CODE_UTF8))


def row_layout(keys: Iterable[str]) -> str | None:
    """``the-stack`` or ``github-code`` from the column names, or None when neither."""
    names = set(keys)
    if "content" in names:
        return STACK
    if "code" in names:
        return GITHUB_CODE
    return None


def _language(item: CodeRow, settings: StackCodeSettings) -> str | None:
    language = language_for(item.path)
    if language is not None:
        return language
    mapped = dataset_language(item.label)
    return mapped if mapped in settings.extra_languages else None


def _sniffs_binary(content: str, data: bytes | memoryview, sniff_bytes: int) -> bool:
    """:func:`sources.github.is_binary` of ``data``, the UTF-8 bytes of ``content``.

    An ASCII string has one byte per character, so its first ``sniff_bytes`` bytes are its first
    characters, searched where they are (a reader's ``memoryview`` would be copied to be searched).
    """
    if content.isascii():  # a flag of the string: no scan
        return content.find("\x00", 0, sniff_bytes) != -1
    return is_binary(data, sniff_bytes)


def code_record(item: CodeRow, settings: StackCodeSettings, where: str, row: int,
                input_name: str | None = None) -> Record:
    """One normalized row -> a Document or a Drop (the checks of the module docstring, in order).

    ``where`` (the input as the run was given it) names drops for the user; a document records
    ``input_name``, the input's file name, and its ``row`` instead: released bytes never depend on
    how the path was spelled or which folder holds it.
    """
    label = f"{item.repo}/{item.path}" if item.repo or item.path else f"{where}: row {row}"
    if not item.path:
        return Drop("malformed_row", f"{where}: row {row}", "no file path")
    language = _language(item, settings)
    reason = item.license.drop_reason or skip_reason(item.path)
    if reason is None and language is None:
        reason = "extension_not_allowed"
    if reason is not None:
        return Drop(reason, label, language=language)
    if isinstance(item.content, Oversized):
        return Drop("too_large", label, f"{label}: {item.content.nbytes:,} bytes > {settings.max_file_bytes:,}",
                    language=language)
    if not isinstance(item.content, str):
        kind = "null" if item.content is None else type(item.content).__name__
        return Drop("malformed_row", f"{where}: row {row}", f"content is {kind}, not a string", language)
    # the bytes the string was decoded from where the reader has them (the same bytes: a decoded
    # string encodes back to them), else encoded here
    data = item.utf8 if item.utf8 is not None else item.content.encode("utf-8", errors="surrogatepass")
    if len(data) > settings.max_file_bytes:
        return Drop("too_large", label, f"{label}: {len(data):,} bytes > {settings.max_file_bytes:,}",
                    language=language)
    if _sniffs_binary(item.content, data, settings.binary_sniff_bytes):
        return Drop("binary", label, language=language)
    text = item.content.removeprefix("\ufeff")
    blob = item.blob or git_blob_sha1(data)
    meta: dict[str, Any] = {
        "repo": item.repo, "path": item.path, "license": item.license.label, "language": language,
        "dataset_language": item.label, "bytes": len(data), "blob_sha1": blob,
        "content_sha256": hashlib.sha256(data).hexdigest(), "format": item.fmt,
        "url": github_url(item.repo, item.path), **({"input": input_name} if input_name else {}), "row": row,
    }
    return Document(id=make_doc_id(SOURCE, f"{label}@{blob}"), text=text, source=SOURCE, meta=meta)


# -- Parquet ----------------------------------------------------------------------------------
def parquet_columns(names: Sequence[str], settings: StackCodeSettings) -> ParquetColumns | str:
    """A Parquet file's columns by its layout (required, then the optional ones it has), or why it has none."""
    layout = row_layout(names)
    needed = STACK_COLUMNS if layout == STACK else GITHUB_CODE_COLUMNS
    missing = [c for c in needed if c not in names] if layout else ["content or code"]
    if missing:
        return f"missing column(s) {', '.join(missing)} (has {', '.join(sorted(names))})"
    optional = STACK_OPTIONAL if layout == STACK else GITHUB_CODE_OPTIONAL
    content = "content" if layout == STACK else "code"
    return ParquetColumns((*needed, *(c for c in optional if c in names)), {content: settings.max_file_bytes},
                          (content,))


@dataclass(frozen=True)
class CodeAdapter:
    """The row reader's adapter for either layout, told apart per row (a JSON export may mix them).

    A JSON line's drops name ``<input>: line N``; a Parquet row's name the input and ``row N``
    (:func:`code_record`), as before the shared reader.
    """

    settings: StackCodeSettings

    def __call__(self, row: dict[str, Any], at: RowAt) -> Record:
        layout = row_layout(row)
        if layout is None:
            return Drop("missing_column", at.where, "neither 'content' nor 'code' in the row")
        normalize = stack_row if layout == STACK else github_code_row
        where = at.where if at.unit == "line" else at.spec.location
        return code_record(normalize(row, self.settings.allowed_licenses), self.settings, where, at.number,
                           at.spec.key)


def row_reader(settings: StackCodeSettings, fmt: RowFormat) -> RowReader:
    """The shared row reader for this source: both layouts (:class:`CodeAdapter`, :func:`parquet_columns`)."""
    return RowReader(CodeAdapter(settings), columns=("content", "code"), max_bytes=settings.max_line_bytes,
                     batch_rows=settings.batch_rows, choose=functools.partial(parquet_columns, settings=settings), fmt=fmt)


def read_parquet(spec: InputSpec, settings: StackCodeSettings) -> Iterator[Record]:
    """Stream a Parquet export one row group at a time (see the module docstring for drops)."""
    return row_reader(settings, "parquet")(spec)


def read_jsonl(spec: InputSpec, settings: StackCodeSettings) -> Iterator[Record]:
    """JSON lines of either layout (plain, .gz, .zst, .bz2, .xz), told apart per row."""
    return row_reader(settings, "jsonl")(spec)


def is_parquet(path: Path) -> bool:
    """Parquet by name (``.parquet``/``.pq``); everything else is read as JSON lines."""
    return path.name.lower().endswith((".parquet", ".pq"))


@dataclass
class StackCodeRecipe:
    """The ``stack_code`` source for :mod:`core.pipeline`."""

    settings: StackCodeSettings = field(default_factory=StackCodeSettings)
    name: str = SOURCE

    def input_language(self, spec: InputSpec) -> str | None:
        """Inputs mix programming languages: each document carries its own."""
        return None

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Parquet or JSON lines, by file name."""
        if is_parquet(spec.path):
            return read_parquet(spec, self.settings)
        return read_jsonl(spec, self.settings)

    def steps(self) -> list[Step]:
        """The GitHub recipe's steps: header removal, line length, alphanumeric, alpha per token."""
        return code_steps(self.settings.filters)

    def partition(self, doc: Document) -> str:
        """One directory per programming language, as the GitHub source."""
        return doc.language or "other"


__all__ = ["NO_LICENSE", "SOURCE", "StackCodeRecipe", "StackCodeSettings", "code_record", "dataset_language",
           "git_blob_sha1", "list_license", "read_jsonl", "read_parquet"]
