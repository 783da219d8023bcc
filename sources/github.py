"""GitHub: source files from local clones or BigQuery-export rows, as Documents.

Two input formats, told apart by file name:

* ``*.jsonl.gz`` / ``*.jsonl`` / ``*.json.gz``: rows exported from BigQuery's ``github_repos``
  tables, one JSON object per line with ``content``, ``path``, ``repo_name`` and ``license``
  (plus, when exported, ``binary``, ``size`` and the blob ``id``). This is what RedPajama read.
* ``*.repos.json``: a *repository list* written by ``flows.github --repos`` naming local clones
  (and a digest of their file tree, so a changed clone is re-read on resume). Many small repos
  share one input, so the pipeline runs one task per batch of repos rather than per repo.

For every file the reader yields a Document or a Drop with a reason, in this order: licence of
the repository not allowed (``license_<id>``, see :mod:`sources.formats.licenses`), licence file or
certificate (``skipped_license_file``, ``skipped_certificate``), extension not in the whitelist
(``extension_not_allowed``), ``too_large``, ``binary`` (a NUL byte in the first 8,000 bytes,
git's own test, or a BigQuery row flagged binary), ``not_utf8``. Symlinks are never followed.
The cleaning and statistics filters live in :mod:`core.filters.code_quality`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.document import Document, Drop, InputSpec, make_doc_id
from core.exact import exact_hash
from core.filters.code_quality import CodeFilterSettings, code_steps
from core.steps import Record, Step
from sources.formats.licenses import (
    DEFAULT_ALLOWED,
    LICENSE_FILE,
    RepoLicense,
    detect_repo_license,
    row_license,
)
from sources.formats.rows import RowAt, RowReader

SOURCE = "github"
REPO_LIST_SUFFIX = ".repos.json"
REPO_LIST_FORMAT = "kinda-github-repos/1"

#: RedPajama-v1's 64-entry whitelist (``github_run_filter.py``), mapped to a language name.
#: Matching is by file-name suffix and case-sensitive, as RedPajama's ``str.endswith`` was
#: (``.C``/``.H`` are C++; ``Dockerfile``/``Makefile`` are whole-name suffixes).
EXTENSION_LANGUAGES: dict[str, str] = {
    ".asm": "assembly", ".bat": "batchfile", ".cmd": "batchfile",
    ".c": "c", ".h": "c", ".cs": "c#",
    ".cpp": "c++", ".hpp": "c++", ".c++": "c++", ".h++": "c++", ".cc": "c++", ".hh": "c++", ".C": "c++",
    ".H": "c++", ".cmake": "cmake", ".css": "css", ".dockerfile": "dockerfile",
    ".f90": "fortran", ".f": "fortran-fixed", ".f03": "fortran", ".f08": "fortran", ".f77": "fortran-fixed",
    ".f95": "fortran", ".for": "fortran-fixed", ".fpp": "fortran", ".go": "go", ".hs": "haskell",
    ".html": "html", ".java": "java", ".js": "javascript", ".jl": "julia", ".lua": "lua",
    ".md": "markdown", ".markdown": "markdown",
    ".php": "php", ".php3": "php", ".php4": "php", ".php5": "php", ".phps": "php", ".phpt": "php",
    ".pl": "perl", ".pm": "perl", ".pod": "perl", ".perl": "perl",
    ".ps1": "powershell", ".psd1": "powershell", ".psm1": "powershell",
    ".py": "python", ".rb": "ruby", ".rs": "rust", ".sql": "sql", ".scala": "scala",
    ".sh": "shell", ".bash": "shell", ".command": "shell", ".zsh": "shell",
    ".ts": "typescript", ".tsx": "typescript", ".tex": "tex", ".vb": "visual basic",
    "Dockerfile": "dockerfile", "Makefile": "makefile",
    ".xml": "xml", ".rst": "restructuredtext", ".m": "objective-c", ".smali": "smali",
}
#: The whitelisted suffixes without a dot (whole-name suffixes such as ``Makefile``). Every other
#: suffix is one dot and no other, so it can only be the name's part from its last dot: one lookup.
_UNDOTTED_SUFFIXES: tuple[tuple[str, str], ...] = tuple(
    (suffix, language) for suffix, language in EXTENSION_LANGUAGES.items() if "." not in suffix)
assert all(suffix.rfind(".") == 0 for suffix in EXTENSION_LANGUAGES if "." in suffix)

#: Directories of version-control metadata: never part of the code.
VCS_DIRS: frozenset[str] = frozenset({".git", ".hg", ".svn", ".bzr"})


def language_for(path: str) -> str | None:
    """The language of a whitelisted file path, or None when its extension is not allowed."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    language = EXTENSION_LANGUAGES.get(name[dot:]) if dot != -1 else None
    if language is not None:
        return language
    # An undotted suffix cannot end a name that a dotted one ends (it has no dot), so no order matters.
    return next((language for suffix, language in _UNDOTTED_SUFFIXES if name.endswith(suffix)), None)


def skip_reason(path: str) -> str | None:
    """Files the recipe skips by name: certificates and licence texts."""
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".crt"):
        return "skipped_certificate"
    if LICENSE_FILE.match(name):
        return "skipped_license_file"
    return None


def is_binary(data: bytes | memoryview, sniff_bytes: int = 8000) -> bool:
    """git's heuristic: a NUL byte in the first ``sniff_bytes`` bytes means binary."""
    if isinstance(data, memoryview):  # bytes in a reader's buffer: a memoryview cannot search
        data = data[:sniff_bytes].tobytes()
    return data.find(b"\x00", 0, sniff_bytes) != -1  # no copy of the sniffed bytes


def decode_source(data: bytes) -> str | None:
    """UTF-8 text without a BOM, or None when the bytes are not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def github_url(repo: str, path: str) -> str | None:
    """A browsable URL when ``repo`` looks like ``owner/name``."""
    return f"https://github.com/{repo}/blob/HEAD/{path}" if _REPO_NAME.fullmatch(repo) else None


_REPO_NAME = re.compile(r"[\w.-]+/[\w.-]+")


@dataclass(frozen=True)
class GithubSettings:
    """What the reader keeps (see the module docstring); thresholds of the filters too."""

    allowed_licenses: frozenset[str] = DEFAULT_ALLOWED
    max_file_bytes: int = 1_000_000
    binary_sniff_bytes: int = 8000
    filters: CodeFilterSettings = field(default_factory=CodeFilterSettings)


@dataclass(frozen=True)
class SourceFile:
    """One file of a repository, before the whitelist and content checks."""

    repo: str
    path: str
    license: RepoLicense
    data: bytes | None = None
    fmt: str = "clone"
    extra: Mapping[str, Any] = field(default_factory=dict)


def file_record(item: SourceFile, settings: GithubSettings, input_name: str | None = None) -> Record:
    """Turn one file into a Document or a Drop (the checks of the module docstring, in order).

    A document names where it came from by its own stable id, ``repo`` + ``path`` (the path
    inside the repository), and for an export row also ``input``, the export's file name (the
    input key the manifest uses): never the path the run was given, which would make the same
    files give other bytes from another folder and put the user's folders in released data.
    """
    label = f"{item.repo}/{item.path}"
    language = language_for(item.path)
    reason = item.license.drop_reason or skip_reason(item.path)
    if reason is None and language is None:
        reason = "extension_not_allowed"
    if reason is not None:
        return Drop(reason, label, language=language)
    data = item.data or b""
    if len(data) > settings.max_file_bytes:
        return Drop("too_large", label, language=language)
    if is_binary(data, settings.binary_sniff_bytes):
        return Drop("binary", label, language=language)
    text = decode_source(data)
    if text is None:
        return Drop("not_utf8", label, language=language)
    meta: dict[str, Any] = {
        "repo": item.repo, "path": item.path, "license": item.license.label, "language": language,
        "bytes": len(data), "content_sha256": hashlib.sha256(data).hexdigest(), "format": item.fmt,
        "url": github_url(item.repo, item.path), **({"input": input_name} if input_name else {}), **item.extra,
    }
    return Document(id=make_doc_id(SOURCE, label), text=text, source=SOURCE, meta=meta)


# -- local clones ---------------------------------------------------------------------------
def iter_repo_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(relative posix path, path) of every entry under ``root`` that is not a directory.

    Sorted walk, so output order and doc order never depend on the file system; VCS metadata
    directories are skipped, symlinked directories are listed (as entries) but not entered.
    """
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        current = Path(dirpath)
        links = sorted(d for d in dirnames if (current / d).is_symlink())
        dirnames[:] = sorted(d for d in dirnames if d not in VCS_DIRS and d not in links)
        for name in sorted([*filenames, *links]):
            path = current / name
            yield path.relative_to(root).as_posix(), path


def repo_name(root: Path) -> str:
    """``owner/name`` from the clone's ``origin`` remote when it is on GitHub, else the folder name."""
    config = root / ".git" / "config"
    try:
        text = config.read_text(encoding="utf-8", errors="replace") if config.is_file() else ""
    except OSError:
        text = ""
    match = re.search(r"github\.com[:/]([\w.-]+/[\w.-]+?)(?:\.git)?\s*$", text, re.MULTILINE)
    return match.group(1) if match else root.name


def tree_digest(root: Path) -> str:
    """A digest of the file tree (paths, sizes, mtimes): changes when any file changes."""
    digest = hashlib.sha256()
    for rel, path in iter_repo_files(root):
        try:
            stat = path.lstat()
        except OSError:
            continue
        digest.update(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def repo_entry(root: Path) -> dict[str, str]:
    """What a repository list records about one clone."""
    root = root.resolve()
    return {"name": repo_name(root), "root": str(root), "tree": tree_digest(root)}


def repo_list_payload(roots: Sequence[Path]) -> dict[str, Any]:
    """The JSON content of a repository list for ``roots`` (deterministic)."""
    return {"format": REPO_LIST_FORMAT, "repos": [repo_entry(root) for root in roots]}


def read_clone(name: str, root: Path, settings: GithubSettings, where: str) -> Iterator[Record]:
    """Every file of one local clone as a Document or Drop."""
    if not root.is_dir():
        yield Drop("missing_repo", f"{where}: {name}", f"repository folder not found: {root}")
        return
    license = detect_repo_license(root, settings.allowed_licenses)
    for rel, path in iter_repo_files(root):
        label = f"{name}/{rel}"
        if path.is_symlink():
            yield Drop("symlink", label, language=language_for(rel))
            continue
        item = SourceFile(repo=name, path=rel, license=license, extra={"license_files": list(license.files)})
        if item.license.allowed and skip_reason(rel) is None and language_for(rel) is not None:
            try:
                if path.stat().st_size > settings.max_file_bytes:
                    yield Drop("too_large", label, language=language_for(rel))
                    continue
                item = dataclasses.replace(item, data=path.read_bytes())
            except OSError as exc:
                yield Drop("unreadable", f"{where}: {label}", f"{type(exc).__name__}: {exc}", language_for(rel))
                continue
        yield file_record(item, settings)


def read_repo_list(spec: InputSpec, settings: GithubSettings) -> Iterator[Record]:
    """Every file of every clone named in a repository list."""
    try:
        payload = json.loads(spec.path.read_text(encoding="utf-8"))
        repos = payload["repos"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        yield Drop("truncated_input", f"{spec.location}: repository list", f"{type(exc).__name__}: {exc}")
        return
    for repo in repos:
        yield from read_clone(repo["name"], Path(repo["root"]), settings, spec.location)


# -- BigQuery export rows -------------------------------------------------------------------
def max_row_bytes(settings: GithubSettings) -> int:
    """The bound of one export line: a row whose content could still be kept (JSON escapes a byte as
    up to 6), plus its metadata. A longer line holds a file over ``max_file_bytes``: ``too_large``,
    the file-level reason, skipped unread by the row reader."""
    return 6 * settings.max_file_bytes + (1 << 20)


@dataclass
class BigQueryAdapter:
    """The row reader's adapter for BigQuery export rows (``repo_name``, ``path``, ``content``, ``license``).

    A row without ``repo_name`` or ``path`` is ``malformed_row``; each licence value is judged once
    per input (``licenses`` remembers it).
    """

    settings: GithubSettings
    licenses: dict[str | None, RepoLicense] = field(default_factory=dict)

    def __call__(self, row: dict[str, Any], at: RowAt) -> Record:
        try:
            repo, path = str(row["repo_name"]), str(row["path"])
        except KeyError as exc:
            return Drop("malformed_row", at.where, f"{type(exc).__name__}: {exc}")
        license_value = row.get("license")
        if license_value not in self.licenses:
            self.licenses[license_value] = row_license(license_value, self.settings.allowed_licenses)
        content = row.get("content")
        extra = {k: row[k] for k in ("id", "ref", "mode") if row.get(k) is not None}
        if "id" in extra:
            extra["blob_id"] = extra.pop("id")
        item = SourceFile(repo=repo, path=path, license=self.licenses[license_value], fmt="bigquery", extra=extra)
        if item.license.allowed and skip_reason(path) is None and language_for(path) is not None:
            if row.get("binary") or content is None:
                return Drop("binary", f"{repo}/{path}", language=language_for(path))
            if not isinstance(content, str):
                return Drop("malformed_row", at.where, f"content is {type(content).__name__}, not a string")
            item = dataclasses.replace(item, data=content.encode("utf-8", errors="surrogatepass"))
        return file_record(item, self.settings, at.spec.key)


def read_bigquery_rows(spec: InputSpec, settings: GithubSettings) -> Iterator[Record]:
    """Rows of a BigQuery export (JSON lines; plain, .gz, .zst, ...) as Documents and Drops.

    Read by the shared row reader (:class:`sources.formats.rows.RowReader`): a line that is not a
    JSON object is ``malformed_json``, one over :func:`max_row_bytes` is ``too_large`` (skipped
    unread), and a file that is not gzip at all, or that ends early, yields one
    ``truncated_input`` drop naming the file and the line where reading stopped; the rows before
    it are kept.
    """
    return RowReader(BigQueryAdapter(settings), max_bytes=max_row_bytes(settings), fmt="jsonl")(spec)


# -- the recipe -----------------------------------------------------------------------------
def is_repo_list(path: Path) -> bool:
    """True for the repository lists ``flows.github --repos`` writes."""
    return path.name.endswith(REPO_LIST_SUFFIX)


@dataclass
class GithubRecipe:
    """The GitHub source for :mod:`core.pipeline`."""

    settings: GithubSettings = field(default_factory=GithubSettings)
    name: str = SOURCE
    raw_dedup: bool = False

    def dedup_key(self, doc: Document) -> bytes:
        """Exact-dedup key: the normalized cleaned text, or (``raw_dedup``) the raw file content.

        RedPajama hashed raw content before cleaning; the reader keeps that file's SHA256 in
        ``meta["content_sha256"]``, so the key travels with the document itself.
        """
        if self.raw_dedup:
            return bytes.fromhex(doc.meta["content_sha256"])
        return exact_hash(doc.text)

    def input_language(self, spec: InputSpec) -> str | None:
        """Inputs mix languages: each document carries its own."""
        return None

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """A repository list or a BigQuery export, by file name."""
        if is_repo_list(spec.path):
            return read_repo_list(spec, self.settings)
        return read_bigquery_rows(spec, self.settings)

    def steps(self) -> list[Step]:
        """Copyright-header removal, then the line-length, alphanumeric and alpha-per-token filters."""
        return code_steps(self.settings.filters)

    def partition(self, doc: Document) -> str:
        """One directory per programming language."""
        return doc.language or "other"
