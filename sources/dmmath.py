"""DeepMind Mathematics (``mathematics_dataset`` v1.0) as documents, the way the Pile grouped them.

Inputs, each one pipeline input:

* released module files, ``<split>/<module>.txt``: question on odd lines, answer on even lines,
  no header (also ``.txt.gz`` etc.; the split is the parent directory: ``train-easy``,
  ``train-medium``, ``train-hard``, ``interpolate``, ``extrapolate``);
* the released package ``mathematics_dataset-v1.0.tar.gz`` (streamed; its
  ``mathematics_dataset-v1.0/<split>/<module>.txt`` members; a ``../`` or absolute member, a
  link or a device is refused as ``unsafe_archive``);
* the notes layout of ``samples_from_all_modules.txt`` (``<split>/<module>.txt:`` header lines,
  tab-indented answers, blank line between sections);
* Pile shards (``*.jsonl.zst``, read by :mod:`sources.formats.pile`): only lines whose
  ``pile_set_name`` is ``DM Mathematics`` are kept; the others are counted as
  ``pile_set_not_selected`` (they belong to other sources).

Grouping (as the Pile did): the pairs of one module file are concatenated in file order,
``question\\nanswer\\n``, and a document is cut after the first pair that takes its text to
``chunk_chars`` (8,192) characters or more, so no pair is ever split and every document holds
one module at one difficulty. A file's last, shorter chunk is a document too. The Pile's own
DM Mathematics documents are kept as they are (their module is not recorded in the Pile).

Only the training splits are read by default (``splits``): ``interpolate`` and ``extrapolate``
are the benchmark's test sets, and training on them would contaminate evaluations
(``split_not_selected``). ``meta`` holds ``module``, ``difficulty`` (easy/medium/hard for the
training splits, else the split), ``split``, ``pairs`` and the first pair's line number.

These are Pile documents (the Pile's ``DM Mathematics`` subset): they belong in G.2 and go
through the Pile reference dedup like every other source; G.3 (LLaMA minus the Pile) never has them.
"""

from __future__ import annotations

import json
import re
import tarfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from core.compressed import CODEC_ERRORS, TruncatedInputError, open_binary
from core.document import Document, Drop, InputSpec, make_doc_id
from core.steps import Record, Step
from sources.formats.pile import PileLine, iter_pile
from sources.formats.rows import bounded_lines
from sources.formats.tar_stream import open_tar_stream, unsafe_member

SOURCE = "dm_math"
LIST_SUFFIX = ".dmmath.json"
LIST_FORMAT = "kinda-dmmath-list/1"
PILE_SET = "DM Mathematics"
SPLITS = ("train-easy", "train-medium", "train-hard", "interpolate", "extrapolate")
TRAIN_SPLITS = ("train-easy", "train-medium", "train-hard")
_NOTES_HEADER = re.compile(r"^(train-easy|train-medium|train-hard|interpolate|extrapolate)/([A-Za-z0-9_]+)\.txt:\s*$")
#: What a cut or corrupt input raises while streamed.
READ_ERRORS: tuple[type[BaseException], ...] = (*CODEC_ERRORS, TruncatedInputError, tarfile.TarError)
_MODULE = re.compile(r"^[a-z0-9]+__[a-z0-9_]+$")


@dataclass(frozen=True)
class DmMathSettings:
    """What is read and how pairs are grouped."""

    splits: tuple[str, ...] = TRAIN_SPLITS
    chunk_chars: int = 8192
    max_line_chars: int = 10_000


@dataclass(frozen=True)
class Pair:
    """One question/answer pair and where its question line is."""

    question: str
    answer: str
    line: int


def module_of(name: str) -> str:
    """``algebra__linear_1d`` from ``algebra__linear_1d.txt`` / ``….DERIVED.txt`` / ``….txt.gz``."""
    return PurePosixPath(name).name.split(".", 1)[0]


def difficulty_of(split: str) -> str:
    """``easy`` for ``train-easy``; the test splits are their own difficulty."""
    return split.removeprefix("train-")


def split_of(path: PurePosixPath | Path) -> str | None:
    """The split a module file belongs to: the nearest parent directory that names one."""
    return next((p for p in reversed(path.parts[:-1]) if p in SPLITS), None)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def looks_like_question(line: str) -> bool:
    """True for a line only a question can be: a sentence (a word, ending in ``?`` or ``.``).

    No module's answer ends that way (answers are values: ``-3``, ``2*x**2 + 1``, ``True``,
    ``-3, 1, 5``); some questions are bare expressions (``-51512 + -2.76``), so the converse
    does not hold. String methods, linear in the line.
    """
    text = line.rstrip()
    return text.endswith(("?", ".")) and any(len(word) >= 2 and word.isalpha() for word in text.split())


def pairs_from_lines(lines: Iterable[tuple[int, str | None]], where: str, settings: DmMathSettings
                     ) -> Iterator[Pair | Drop]:
    """Pair (question, answer) lines; a broken pair, an odd last line or an over-long line is a counted drop.

    A lost line would shift every later question onto the wrong answer. A question where an
    answer is due (:func:`looks_like_question`) shows the shift: the pending line is dropped
    alone (``unpaired_question``, or ``unpaired_answer`` when it was an answer whose question is
    missing) naming its own line, and pairing restarts at the question. ``None`` is a line over
    the reader's byte bound (never read whole).
    """
    pending: tuple[int, str | None] | None = None
    for number, line in lines:
        if pending is not None and line is not None and looks_like_question(line):
            yield _unpaired(pending, where)
            pending = None
        if pending is None:
            pending = (number, line)
            continue
        q_line, question = pending
        pending = None
        yield _pair(q_line, question, line, where, settings)
    if pending is not None:
        yield _unpaired(pending, where)


def _unpaired(pending: tuple[int, str | None], where: str) -> Drop:
    number, line = pending
    if line is not None and not looks_like_question(line):
        return Drop("unpaired_answer", f"{where}:{number}", f"{where}:{number}: an answer without its question")
    return Drop("unpaired_question", f"{where}:{number}", f"{where}:{number}: question without answer")


def _pair(q_line: int, question: str | None, answer: str | None, where: str, settings: DmMathSettings) -> Pair | Drop:
    if question is None or answer is None or len(question) > settings.max_line_chars \
            or len(answer) > settings.max_line_chars:
        return Drop("line_too_long", f"{where}:{q_line}", f"{where}:{q_line}: line over {settings.max_line_chars} chars")
    if not question.strip() or not answer.strip():
        return Drop("empty_pair", f"{where}:{q_line}")
    if not _is_utf8(question) or not _is_utf8(answer):
        return Drop("invalid_utf8", f"{where}:{q_line}", f"{where}:{q_line}: the pair is not valid UTF-8")
    return Pair(question.strip(), answer.strip(), q_line)


def chunk_documents(items: Iterable[Pair | Drop], module: str, split: str, where: str, settings: DmMathSettings
                    ) -> Iterator[Record]:
    """Group pairs into documents of ``chunk_chars`` or more (see the module docstring)."""
    buffer: list[Pair] = []
    size = 0
    for item in items:
        if isinstance(item, Drop):
            yield item
            continue
        buffer.append(item)
        size += len(item.question) + len(item.answer) + 2
        if size >= settings.chunk_chars:
            yield _document(buffer, module, split, where)
            buffer, size = [], 0
    if buffer:
        yield _document(buffer, module, split, where)


def _document(pairs: list[Pair], module: str, split: str, where: str) -> Document:
    text = "".join(f"{p.question}\n{p.answer}\n" for p in pairs)
    return Document(
        id=make_doc_id(SOURCE, f"{where}:{pairs[0].line}"), text=text, source=SOURCE,
        meta={"module": module, "difficulty": difficulty_of(split), "split": split, "pairs": len(pairs),
              "first_line": pairs[0].line, "file": where, "origin": "mathematics_dataset", "language": "en"},
    )


def _lines(raw: IO[bytes], settings: DmMathSettings) -> Iterator[tuple[int, str | None]]:
    """Numbered lines, read with a byte bound (None past it); bad UTF-8 kept as surrogates so the
    pair is dropped later, not the alignment lost."""
    limit = 4 * settings.max_line_chars + 2  # a character is at most 4 bytes, plus CR LF
    for number, line in enumerate(bounded_lines(raw, limit), start=1):
        yield number, None if line is None else line.decode("utf-8", "surrogateescape").rstrip("\r\n")


def _module_records(raw: IO[bytes], module: str, split: str, where: str, settings: DmMathSettings
                    ) -> Iterator[Record]:
    """One module file's lines -> documents."""
    yield from chunk_documents(pairs_from_lines(_lines(raw, settings), where, settings), module, split, where, settings)


def iter_module_file(path: Path, settings: DmMathSettings, split: str | None = None) -> Iterator[Record]:
    """A released module file (``<split>/<module>.txt``)."""
    split = split or split_of(path) or "train-easy"
    where = f"{split}/{path.name}"
    if split not in settings.splits:
        yield Drop("split_not_selected", where)
        return
    try:
        with open_binary(path) as stream:
            yield from _module_records(stream, module_of(path.name), split, where, settings)
    except READ_ERRORS as exc:
        yield Drop("truncated_input", where, f"{where}: {type(exc).__name__}: {exc}")


def iter_package(path: Path, settings: DmMathSettings) -> Iterator[Record]:
    """The released ``.tar.gz``: module files streamed one at a time (never extracted to disk)."""
    name = path.name
    done = 0
    try:
        with open_tar_stream(path) as archive:
            for member in archive:
                where = f"{name}:{member.name}"
                if (problem := unsafe_member(member)) is not None:
                    yield Drop("unsafe_archive", where, f"{where}: {problem}; refused")
                    continue
                split = split_of(PurePosixPath(member.name))
                if not member.isfile() or split is None or not _MODULE.match(module_of(member.name)):
                    continue
                if split not in settings.splits:
                    yield Drop("split_not_selected", where)
                    continue
                handle = archive.extractfile(member)
                if handle is not None:
                    yield from _module_records(handle, module_of(member.name), split, where, settings)
                done += 1
    except READ_ERRORS as exc:
        yield Drop("truncated_input", f"{name}:member {done + 1}",
                   f"{name}: unreadable after {done} module files: {type(exc).__name__}: {exc}")


def iter_notes(path: Path, settings: DmMathSettings) -> Iterator[Record]:
    """The notes layout: ``split/module.txt:`` headers, answers tab-indented, blank lines between."""
    sections: list[tuple[str, str, list[tuple[int, str | None]]]] = []
    with open(path, "rb") as handle:
        for number, line in _lines(handle, settings):
            header = _NOTES_HEADER.match(line) if line is not None else None
            if header:
                sections.append((header.group(1), header.group(2), []))
            elif sections and (line is None or line.strip()):
                sections[-1][2].append((number, None if line is None else line.strip()))
    for split, module, lines in sections:
        where = f"{path.name}:{split}/{module}"
        if split not in settings.splits:
            yield Drop("split_not_selected", where)
            continue
        yield from chunk_documents(pairs_from_lines(lines, where, settings), module, split, where, settings)


def is_notes_layout(path: Path) -> bool:
    """True when the file starts with a ``split/module.txt:`` header line."""
    with open(path, "rb") as handle:
        first = handle.readline(512).decode("utf-8", "replace").rstrip("\n")
    return bool(_NOTES_HEADER.match(first))


def iter_pile_dm(path: Path) -> Iterator[Record]:
    """The ``DM Mathematics`` lines of a Pile shard, as they are; other subsets counted, not kept."""
    for item in iter_pile(path, path.name):
        if isinstance(item, Drop):
            yield item
        elif item.pile_set_name != PILE_SET:
            yield Drop("pile_set_not_selected", item.address)
        else:
            yield pile_dm_document(item)


def pile_dm_document(line: PileLine) -> Document:
    """A Pile DM Mathematics document (module unknown: the Pile did not record it)."""
    pairs = line.text.count("\n") // 2
    return Document(
        id=make_doc_id(SOURCE, f"pile:{line.address}"), text=line.text if line.text.endswith("\n") else line.text + "\n",
        source=SOURCE, meta={"module": None, "difficulty": None, "split": None, "pairs": pairs,
                             "origin": "pile", "pile_set_name": line.pile_set_name, "shard": line.shard,
                             "line": line.line, "file": line.shard, "language": "en"},
    )


def list_payload(files: Sequence[Path]) -> dict[str, object]:
    """An input list naming module files (``flows.dm_math`` writes one per released file, so the
    same module name under two splits still gives two distinct input keys)."""
    return {"format": LIST_FORMAT, "files": [str(Path(f).resolve()) for f in files]}


def iter_dmmath(path: Path, settings: DmMathSettings) -> Iterator[Record]:
    """Every record of one input, whatever its layout (see the module docstring)."""
    name = path.name.lower()
    if name.endswith(LIST_SUFFIX):
        try:
            files = [Path(f) for f in json.loads(path.read_text(encoding="utf-8"))["files"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            yield Drop("bad_input_list", path.name, f"{path.name}: {type(exc).__name__}: {exc}")
            return
        for file in files:
            yield from iter_dmmath(file, settings)
    elif ".jsonl" in name:
        yield from iter_pile_dm(path)
    elif name.endswith((".tar.gz", ".tgz", ".tar")):
        yield from iter_package(path, settings)
    elif name.endswith(".txt") and is_notes_layout(path):
        yield from iter_notes(path, settings)
    else:
        yield from iter_module_file(path, settings)


@dataclass
class DmMathRecipe:
    """DeepMind Mathematics as a :class:`core.pipeline.SourceRecipe`."""

    settings: DmMathSettings = DmMathSettings()
    name: str = SOURCE

    def input_language(self, spec: InputSpec) -> str | None:
        """English questions (and math)."""
        return "en"

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Documents of one input."""
        yield from iter_dmmath(spec.path, self.settings)

    def steps(self) -> Sequence[Step]:
        """None: generated data, nothing to filter."""
        return []

    def partition(self, doc: Document) -> str:
        """All English."""
        return "en"
