"""Dialogue corpora -> documents in one turn format: Reddit, Ubuntu Dialogue Corpus, DailyDialog.

One recipe (source name ``dialogue``) reads every dialogue input; the corpus is chosen per input
from its content, not from configuration, so one run can mix them:

* Reddit Pushshift ``RC_*.zst`` comments (``RS_*`` submissions are read as thread openers by
  the ``RC_`` file of the same month): :mod:`sources.reddit`;
* the Ubuntu Dialogue Corpus as a JSON array of ``{dialogue_id, timestamp, text}`` (turns one per
  line, speaker names absent) or the v2 CSV files (``Context,Utterance,Label`` for train,
  ``Context,Ground Truth Utterance,Distractor_0..`` for valid/test; ``__eou__`` ends an
  utterance, ``__eot__`` a speaker's turn);
* DailyDialog ``dialogues_<split>.txt`` (one dialogue per line, turns ended by ``__eou__``).

The Hugging Face archives nest zips in zips. Members are read in memory or through an anonymous
spooled temporary file, never extracted by member name; every member is bounded in size (declared
and actual), in nesting depth and in count, so a zip bomb costs a counted drop, not the disk.

One bad record costs itself: an Ubuntu JSON item with a bad byte (``invalid_utf8``), broken
JSON (``malformed_json``, reading resumes at the next item boundary) or over
``max_json_item_bytes`` (``record_too_large``, skipped in bounded memory) is one drop naming
the item; the items before and after it are kept (:class:`_JsonArray`).

The turn format (shared with :mod:`sources.reddit`): ``<speaker>: <text>`` per turn, turns
separated by a blank line, speakers labelled A, B, ... by first appearance, ``?`` when the corpus
does not name speakers (the sampled Ubuntu JSON). ``meta``: ``corpus``, ``dialogue_id``,
``turns``, ``speakers`` (one label per turn), plus corpus fields (``subreddit``, ``split``).
"""

from __future__ import annotations

import codecs
import io
import json
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from core.compressed import CODEC_ERRORS, open_binary
from core.document import Document, Drop, InputSpec, make_doc_id
from core.steps import Record, Step
from sources.formats.rows import RowError, bounded_lines, csv_rows
from sources.reddit import (
    SOURCE,
    RedditFilters,
    RedditReader,
    format_turns,
    is_submissions_file,
    zstd_chunks,
)

SNIFF_BYTES = 64 * 1024
READ_BYTES = 1 << 20
UNKNOWN_SPEAKER = "?"
CSV_FIELD_LIMIT = 16 * 1024 * 1024
#: A byte that was not UTF-8, as ``surrogateescape`` decoding keeps it.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class ZipLimits:
    """Bounds on archives: per member (declared and read), nesting depth, members per archive."""

    max_member_bytes: int = 2 * 1024**3
    max_depth: int = 3
    max_members: int = 10_000
    spool_bytes: int = 64 * 1024**2  # a nested zip up to this size stays in memory


@dataclass(frozen=True)
class DialogueLimits:
    """Bounds on one dialogue: a longer one is dropped (``dialogue_too_long``) before any cleaning."""

    max_dialogue_chars: int = 200_000
    max_json_item_bytes: int = 16 * 1024**2
    min_turns: int = 2


# -- shared -------------------------------------------------------------------------------------
_SPACE_BEFORE = re.compile(r" +([,.!?;:%)])")
_SPACE_AFTER = re.compile(r"([($]) +")
_SPLIT_APOSTROPHE = re.compile(r"(\w) ' ?(s|t|re|ve|ll|d|m)\b")
_CONTRACTION = re.compile(r"(\w) (n't|'s|'re|'ve|'ll|'d|'m)\b")


def detokenize(text: str) -> str:
    """Undo the corpora's space-before-punctuation tokenisation (``Say , Jim ?`` -> ``Say, Jim?``).

    Only the unambiguous cases: a space before closing punctuation, after an opening bracket,
    and split contractions (``Let ' s``, ``do n't``). Linear in the text.
    """
    text = " ".join(text.split())
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = _SPACE_AFTER.sub(r"\1", text)
    text = _SPLIT_APOSTROPHE.sub(r"\1'\2", text)
    return _CONTRACTION.sub(r"\1\2", text)


def alternating(count: int) -> list[str]:
    """Speaker labels of a two-party dialogue: A, B, A, B, ..."""
    return ["A" if i % 2 == 0 else "B" for i in range(count)]


def dialogue_document(corpus: str, dialogue_id: str, turns: list[tuple[str, str]], **extra: Any) -> Document:
    """A dialogue Document in the shared turn format."""
    return Document(
        id=make_doc_id(SOURCE, f"{corpus}/{dialogue_id}"),
        text=format_turns(turns),
        source=SOURCE,
        meta={"corpus": corpus, "dialogue_id": dialogue_id, "turns": len(turns),
              "speakers": [s for s, _ in turns], "language": "en", **extra},
    )


def _checked(corpus: str, dialogue_id: str, turns: list[tuple[str, str]], where: str, limits: DialogueLimits,
             **extra: Any) -> Record:
    turns = [(s, t) for s, t in turns if t]
    if len(turns) < limits.min_turns:
        return Drop("too_few_turns", where, language="en")
    return dialogue_document(corpus, dialogue_id, turns, **extra)


# -- DailyDialog --------------------------------------------------------------------------------
def dailydialog_turns(line: str) -> list[str]:
    """``t1 __eou__ t2 __eou__`` -> ``[t1, t2]`` (detokenised, empty turns removed)."""
    return [detokenize(t) for t in line.split("__eou__") if t.strip()]


def read_dailydialog(stream: IO[bytes], name: str, where: str, limits: DialogueLimits) -> Iterator[Record]:
    """One record per line of a ``dialogues_<split>.txt``; the split comes from the name."""
    split = _dailydialog_split(name)
    for number, raw in enumerate(bounded_lines(stream, limits.max_dialogue_chars), start=1):
        record = f"{where}: line {number}"
        if raw is None:
            yield Drop("dialogue_too_long", record, f"line over {limits.max_dialogue_chars} bytes", "en")
            continue
        try:
            line = raw.rstrip(b"\r\n").decode("utf-8")
        except UnicodeDecodeError as exc:
            yield Drop("invalid_utf8", record, str(exc), "en")
            continue
        if not line.strip():
            continue
        turns = dailydialog_turns(line)
        yield _checked("dailydialog", f"{split}/{number}", list(zip(alternating(len(turns)), turns, strict=True)),
                       record, limits, split=split)


def _dailydialog_split(name: str) -> str:
    stem = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return stem[len("dialogues_"):] if stem.startswith("dialogues_") else stem


# -- Ubuntu v2 CSV ------------------------------------------------------------------------------
def ubuntu_v2_turns(context: str, response: str | None) -> list[tuple[str, str]]:
    """Context turns (split at ``__eot__``, utterances at ``__eou__``) plus the true response.

    Two parties alternate, so turns are labelled A, B, A, ...; the response is the next turn.
    """
    raw_turns = [t for t in context.split("__eot__") if t.strip()]
    if response and response.strip():
        raw_turns.append(response)
    texts = ["\n".join(detokenize(u) for u in turn.split("__eou__") if u.strip()) for turn in raw_turns]
    return list(zip(alternating(len(texts)), texts, strict=True))


def read_ubuntu_csv(stream: IO[bytes], name: str, where: str, limits: DialogueLimits) -> Iterator[Record]:
    """One record per CSV row: the context and its true response (a distractor is never a turn).

    Train rows with ``Label`` 0 pair the context with a random utterance: the context alone is
    kept. Valid/test rows carry the ``Ground Truth Utterance`` and distractors. Rows come from
    the shared CSV reader (:func:`sources.formats.rows.csv_rows`): a row with bytes that are not
    UTF-8 (``invalid_utf8``), a field over ``CSV_FIELD_LIMIT`` (``too_large``) or a row it cannot
    parse (``malformed_csv``) costs that row alone.
    """
    split = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    for number, row in enumerate(csv_rows(stream, CSV_FIELD_LIMIT), start=1):
        record = f"{where}: row {number}"
        if isinstance(row, RowError):
            yield Drop(row.reason, record, f"{record}: {row.detail}", "en")
        else:
            yield _ubuntu_row(row, split, number, record, limits)


def _ubuntu_row(row: dict[str, str | None], split: str, number: int, record: str, limits: DialogueLimits) -> Record:
    context = row.get("Context")
    if context is None:
        return Drop("malformed_record", record, f"no Context column: {sorted(k for k in row if k)}", "en")
    if len(context) > limits.max_dialogue_chars:
        return Drop("dialogue_too_long", record, language="en")
    if "Ground Truth Utterance" in row:
        response = row.get("Ground Truth Utterance")
    else:
        response = row.get("Utterance") if (row.get("Label") or "").strip() in ("1", "1.0") else None
    return _checked("ubuntu", f"v2/{split}/{number}", ubuntu_v2_turns(context, response), record, limits,
                    split=split, stemmed=True)


# -- Ubuntu JSON array ---------------------------------------------------------------------------
class JsonArrayError(ValueError):
    """The input is not a JSON array at all."""


@dataclass(frozen=True)
class JsonItemError:
    """An array item that is not kept: ``reason`` (``malformed_json``, ``invalid_utf8``,
    ``record_too_large``, ``truncated_input``) and a detail for the manifest's errors."""

    reason: str
    detail: str


_SEPARATOR = re.compile(r"\s*,?\s*")
#: Where one item ends and the next begins (``},`` then ``{``). Outside a string this is always
#: a boundary; inside one only in the rare text that holds it, and then the item after the cut
#: fails to decode and the search goes on: a broken item costs itself, not the file.
_BOUNDARY = re.compile(r"\}\s*,\s*(?=\{)")
#: What a resynchronising search keeps of the text it has already searched (a boundary cut
#: between two reads).
_BOUNDARY_TAIL = 4096
#: Longer than any JSON token a read can end inside (a number, ``false``, a ``\uXXXX`` pair).
_TOKEN_CHARS = 64


class _JsonArray:
    """Items of a top-level JSON array, one at a time, each bounded and decoded on its own.

    The bytes are decoded per read with ``surrogateescape`` (never through ``TextIOWrapper``,
    whose first bad byte raised for the whole file), so a bad byte marks its item alone
    (``invalid_utf8``). Each item is parsed with ``raw_decode`` at a position in the buffer; an
    item that fails with all of its text present (``malformed_json``), or passes
    ``max_item_bytes`` (``record_too_large``), is skipped to the next item boundary
    (:data:`_BOUNDARY`), searched in bounded pieces, and reading goes on there. A file that ends
    inside an item is ``truncated_input``.
    """

    def __init__(self, stream: IO[bytes], max_item_bytes: int) -> None:
        self.stream = stream
        self.max_item_bytes = max_item_bytes
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
        self.json = json.JSONDecoder()
        self.buffer = ""
        self.ended = False

    def more(self) -> bool:
        """Append one read to the buffer; False at the end of the stream."""
        if self.ended:
            return False
        data = self.stream.read(READ_BYTES)
        self.ended = not data
        self.buffer += self.decoder.decode(data, final=self.ended)
        return bool(data)

    def items(self) -> Iterator[Any]:
        self.more()
        self.buffer = self.buffer.lstrip()
        if not self.buffer.startswith("["):
            raise JsonArrayError("not a JSON array")
        pos = 1
        while True:
            match = _SEPARATOR.match(self.buffer, pos)
            pos = match.end() if match is not None else pos
            if self.buffer.startswith("]", pos):
                return
            if pos >= len(self.buffer):
                if self.more():
                    continue
                yield JsonItemError("truncated_input", "the file ends before the array is closed")
                return
            try:
                item, end = self.json.raw_decode(self.buffer, pos)
            except json.JSONDecodeError as exc:
                if not self._complete(exc, pos):
                    self.buffer, pos = self.buffer[pos:], 0
                    self.more()
                    continue
                found = self._skip(pos, exc)
                yield found[0]
                if found[1] is None:
                    return
                pos = found[1]
                continue
            if end - pos > self.max_item_bytes:
                yield JsonItemError("record_too_large", f"{end - pos:,} characters > {self.max_item_bytes:,}")
            elif _ESCAPED_BYTE.search(self.buffer, pos, end):
                yield JsonItemError("invalid_utf8", "the item holds bytes that are not UTF-8")
            else:
                yield item
            pos = end

    def _complete(self, exc: json.JSONDecodeError, pos: int) -> bool:
        """True when the failure is the item's own fault or its bound, not a read that ended inside it."""
        if self.ended or len(self.buffer) - pos > self.max_item_bytes:
            return True
        # a read can end inside a token (``tr``, ``\u00``, ``12``): only an error well before the
        # end of what was read, and not an open string, is the item's own
        return exc.pos < len(self.buffer.rstrip()) - _TOKEN_CHARS and not exc.msg.startswith("Unterminated string")

    def _skip(self, pos: int, exc: json.JSONDecodeError) -> tuple[JsonItemError, int | None]:
        """The broken item's error and where the next item starts (None: no next item)."""
        too_large = len(self.buffer) - pos > self.max_item_bytes
        error = (JsonItemError("record_too_large", f"more than {self.max_item_bytes:,} characters; skipped")
                 if too_large else JsonItemError("malformed_json", f"{type(exc).__name__}: {exc}"))
        start = pos + 1
        while True:
            match = _BOUNDARY.search(self.buffer, start)
            if match is not None:
                return error, match.end()
            if self.ended:
                if not self.buffer.rstrip().endswith("]"):
                    return JsonItemError("truncated_input", f"{error.detail}; the file ends in it"), None
                return error, None
            keep = max(start, len(self.buffer) - _BOUNDARY_TAIL)
            self.buffer, start = self.buffer[keep:], 0
            self.more()


def iter_json_array(stream: IO[bytes], max_item_bytes: int) -> Iterator[Any]:
    """Items of a top-level JSON array, decoded one at a time in bounded memory (see :class:`_JsonArray`).

    An item that is not kept comes as a :class:`JsonItemError` in its place; a stream that is
    not a JSON array raises :class:`JsonArrayError`.
    """
    return _JsonArray(stream, max_item_bytes).items()


def read_ubuntu_json(stream: IO[bytes], name: str, where: str, limits: DialogueLimits) -> Iterator[Record]:
    """One record per array item; turns are the text's lines, speakers unknown (``?``)."""
    index = 0
    try:
        for index, item in enumerate(iter_json_array(stream, limits.max_json_item_bytes), start=1):
            if not isinstance(item, JsonItemError):
                yield _ubuntu_json_item(item, f"{where}: item {index}", limits)
            elif item.reason == "truncated_input":
                yield Drop(item.reason, f"{where}: after item {index - 1}", f"item {index}: {item.detail}", "en")
            else:
                yield Drop(item.reason, f"{where}: item {index}", f"{where}: item {index}: {item.detail}", "en")
    except JsonArrayError as exc:
        yield Drop("malformed_json", f"{where}: after item {index}", f"{type(exc).__name__}: {exc}", "en")


def _ubuntu_json_item(item: Any, record: str, limits: DialogueLimits) -> Record:
    if not isinstance(item, dict) or not isinstance(item.get("text"), str):
        return Drop("malformed_record", record, "not an object with a text string", "en")
    text = item["text"]
    if len(text) > limits.max_dialogue_chars:
        return Drop("dialogue_too_long", record, language="en")
    lines = [" ".join(line.split()) for line in text.replace("\r\n", "\n").split("\n")]
    turns = [(UNKNOWN_SPEAKER, line) for line in lines if line]
    dialogue_id = str(item.get("dialogue_id") or record)
    return _checked("ubuntu", dialogue_id, turns, record, limits, timestamp=item.get("timestamp"),
                    speakers_known=False)


# -- format detection ---------------------------------------------------------------------------
def sniff(head: bytes, name: str) -> str | None:
    """The format of a file or member from its name and first bytes.

    ``reddit_comments`` / ``reddit_submissions`` / ``ubuntu_json`` / ``ubuntu_csv`` /
    ``dailydialog`` / ``zip`` / ``dialogue_annotation`` (DailyDialog's act and emotion labels),
    or None when it is none of them.
    """
    base = name.rsplit("/", 1)[-1]
    text = head.lstrip()
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if base.startswith(("dialogues_act_", "dialogues_emotion_")):
        return "dialogue_annotation"
    if text.startswith(b"["):
        return "ubuntu_json"
    if text.startswith(b"{"):
        first = text.split(b"\n", 1)[0]
        if b'"parent_id"' in first or b'"link_id"' in first:
            return "reddit_comments"
        if b'"selftext"' in first or b'"title"' in first or base.startswith("RS_"):
            return "reddit_submissions"
        return None
    if text.startswith(b"Context,") or text.startswith(b'"Context"'):
        return "ubuntu_csv"
    if b"__eou__" in head:
        return "dailydialog"
    return None


def file_head(path: Path, max_window_size: int) -> bytes:
    """The first decompressed bytes of ``path`` (zstd read with the Pushshift window)."""
    if path.name.lower().endswith(".zst"):
        data = b""
        for chunk in zstd_chunks(path, max_window_size):
            data += chunk
            if len(data) >= SNIFF_BYTES:
                break
        return data[:SNIFF_BYTES]
    with open_binary(path) as stream:
        return stream.read(SNIFF_BYTES)


# -- archives -----------------------------------------------------------------------------------
class _LimitedReader(io.RawIOBase):
    """A member stream that stops with an error once ``limit`` bytes have been read."""

    def __init__(self, raw: IO[bytes], limit: int, name: str) -> None:
        super().__init__()
        self.raw, self.limit, self.name, self.read_bytes = raw, limit, name, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        self.read_bytes += len(data)
        if self.read_bytes > self.limit:
            raise MemberTooLargeError(f"{self.name}: more than {self.limit} bytes when decompressed")
        buffer[: len(data)] = data
        return len(data)


class MemberTooLargeError(ValueError):
    """A zip member decompresses to more than the limit (declared sizes can lie)."""


#: Errors of damaged archives and members.
ZIP_ERRORS: tuple[type[BaseException], ...] = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError,
                                               *CODEC_ERRORS)


@dataclass
class DialogueReader:
    """Reads one non-Reddit dialogue input (a file or a zip of them) into Documents and Drops."""

    spec: InputSpec
    limits: DialogueLimits = field(default_factory=DialogueLimits)
    zip_limits: ZipLimits = field(default_factory=ZipLimits)

    def __iter__(self) -> Iterator[Record]:
        path = self.spec.path
        try:
            with open_binary(path) as stream:
                head = stream.read(SNIFF_BYTES)
        except CODEC_ERRORS as exc:
            yield Drop("unreadable_input", self.spec.location, f"{type(exc).__name__}: {exc}")
            return
        kind = sniff(head, path.name)
        if kind == "zip":
            try:
                with zipfile.ZipFile(path) as archive:
                    yield from self._archive(archive, self.spec.location, 1)
            except ZIP_ERRORS as exc:
                yield Drop("corrupt_archive", self.spec.location, f"{type(exc).__name__}: {exc}")
            return
        with open_binary(path) as stream:
            yield from self._member(kind, stream, path.name, self.spec.location)

    def _member(self, kind: str | None, stream: IO[bytes], name: str, where: str) -> Iterator[Record]:
        try:
            if kind == "dailydialog":
                yield from read_dailydialog(stream, name, where, self.limits)
            elif kind == "ubuntu_csv":
                yield from read_ubuntu_csv(stream, name, where, self.limits)
            elif kind == "ubuntu_json":
                yield from read_ubuntu_json(stream, name, where, self.limits)
            elif kind == "dialogue_annotation":
                yield Drop("annotation_member", where)  # per-turn act/emotion labels: no text
            else:
                yield Drop("unknown_format", where, f"not a dialogue format this source reads ({kind})")
        except MemberTooLargeError as exc:
            yield Drop("zip_member_too_large", where, str(exc))
        except CODEC_ERRORS as exc:
            yield Drop("truncated_input", where, f"{type(exc).__name__}: {exc}")

    def _archive(self, archive: zipfile.ZipFile, where: str, depth: int) -> Iterator[Record]:
        members = [info for info in archive.infolist() if not info.is_dir()]
        if len(members) > self.zip_limits.max_members:
            yield Drop("zip_too_many_members", where, f"{len(members)} > {self.zip_limits.max_members}")
            return
        for info in sorted(members, key=lambda i: i.filename):
            yield from self._archive_member(archive, info, f"{where}!{info.filename}", depth)

    def _archive_member(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, depth: int
                        ) -> Iterator[Record]:
        limit = self.zip_limits.max_member_bytes
        if info.file_size > limit:
            yield Drop("zip_member_too_large", where, f"declares {info.file_size} bytes > {limit}")
            return
        try:
            with archive.open(info) as raw:
                stream = io.BufferedReader(_LimitedReader(raw, limit, info.filename), buffer_size=READ_BYTES)
                head = stream.peek(SNIFF_BYTES)[:SNIFF_BYTES]
                kind = sniff(head, info.filename)
                if kind == "zip":
                    yield from self._nested(stream, where, depth)
                else:
                    yield from self._member(kind, stream, info.filename, where)
        except MemberTooLargeError as exc:
            yield Drop("zip_member_too_large", where, str(exc))
        except ZIP_ERRORS as exc:
            yield Drop("corrupt_archive", where, f"{type(exc).__name__}: {exc}")

    def _nested(self, stream: IO[bytes], where: str, depth: int) -> Iterator[Record]:
        """A zip inside a zip: spooled (memory, then an anonymous temp file), then walked."""
        if depth >= self.zip_limits.max_depth:
            yield Drop("zip_too_deep", where, f"nested deeper than {self.zip_limits.max_depth}")
            return
        with tempfile.SpooledTemporaryFile(max_size=self.zip_limits.spool_bytes) as spool:
            shutil.copyfileobj(stream, spool, READ_BYTES)
            spool.seek(0)
            with zipfile.ZipFile(spool) as inner:
                yield from self._archive(inner, where, depth + 1)


#: A head that cannot be decoded (truncated, window over the limit) still names a Pushshift file.
SNIFF_ERRORS: tuple[type[BaseException], ...] = (*CODEC_ERRORS, ValueError)


# -- the recipe ---------------------------------------------------------------------------------
def input_kind(path: Path, max_window_size: int = 1 << 31) -> str | None:
    """The format of one input file (see :func:`sniff`); Reddit files also by their dump name."""
    if is_submissions_file(path):
        return "reddit_submissions"
    try:
        head = file_head(path, max_window_size)
    except SNIFF_ERRORS:
        return "reddit_comments" if path.name.startswith("RC_") else None
    if path.name.startswith("RC_") and not head:
        return "reddit_comments"
    return sniff(head, path.name)


@dataclass
class DialogueRecipe:
    """Every dialogue corpus as one :class:`core.pipeline.SourceRecipe`, chosen per input by format."""

    reddit: RedditFilters = field(default_factory=RedditFilters)
    use_submissions: bool = True
    max_window_log: int = 31
    limits: DialogueLimits = field(default_factory=DialogueLimits)
    zip_limits: ZipLimits = field(default_factory=ZipLimits)
    scratch_dir: Path | None = None
    memory_limit: str = "1GB"
    name: str = SOURCE

    def input_language(self, spec: InputSpec) -> str | None:
        """Ubuntu and DailyDialog are English; a Reddit dump does not say."""
        kind = input_kind(spec.path, 1 << self.max_window_log)
        return None if kind is None or kind.startswith("reddit") else "en"

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Dispatch on the input's format (module docstring)."""
        kind = input_kind(spec.path, 1 << self.max_window_log)
        if kind == "reddit_comments":
            return iter(RedditReader(spec, self.reddit, self.use_submissions, self.max_window_log,
                                     self.scratch_dir, self.memory_limit))
        if kind == "reddit_submissions":
            return iter([Drop("submissions_file", spec.location)])  # read as openers by its RC_ file
        return iter(DialogueReader(spec, self.limits, self.zip_limits))

    def steps(self) -> list[Step]:
        """Filters run inside the readers (Reddit's need the reply tree)."""
        return []

    def partition(self, doc: Document) -> str:
        """By language (``en`` for Ubuntu and DailyDialog, ``und`` for Reddit)."""
        return doc.language or "und"

