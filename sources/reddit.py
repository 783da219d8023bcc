"""Reddit (Pushshift dumps) -> conversations: root-to-leaf reply paths in the dialogue turn format.

Inputs are the monthly Pushshift dumps: ``RC_YYYY-MM.zst`` (comments) and ``RS_YYYY-MM.zst``
(submissions), newline-delimited JSON in zstd frames compressed with a 2 GiB window
(``--long=31``) and no content size in the frame header, so the decoder must be allowed a
``2**31`` window (``max_window_log``). A frame that asks for more than the limit is refused with a
counted ``zstd_window_too_large`` drop; a cut-off last frame keeps every complete line before it
and ends with a ``truncated_input`` drop.

Design (stated in docs/extensions.md): a conversation is the path from a top-level comment (or,
when the month's ``RS_`` file sits beside the ``RC_`` file, from the submission's title and text)
down to a leaf of the kept reply tree. Paths rather than whole trees because a model learns the
next turn from the turns it answers, and a linearised tree puts sibling replies, which never saw
each other, into one context. Shared prefixes repeat across paths; ``max_paths_per_root`` bounds
that repetition, keeping the best-scored leaves.

Memory: a month of comments (tens of GB of JSON) is never held. Lines are parsed a block at a
time (pyarrow's JSON reader, falling back to ``json.loads`` line by line to isolate a bad
line), written as Parquet batches to a scratch directory, sorted by thread out of core by DuckDB
(``memory_limit``, spilling to disk), and rebuilt a chunk of whole threads (~50,000 rows) at a
time. The peak is the zstd window (up to 2 GiB, decided by the file, as for the ``zstd`` CLI) +
DuckDB's limit + one chunk, or the largest thread when it is larger (capped by
``max_thread_comments``).

Speed: a thread is not walked comment by comment in Python. A chunk's rows become columns
(numpy, pyarrow compute): parents are looked up by key, each chain is followed to its top in
pointer-doubling jumps (depth, cycles, filtered ancestors in log2(depth) rounds), paths are
ranked with ``lexsort``; Python touches only the rows that become records (a Drop, or a turn of
a kept conversation) and the few a column test cannot decide (see :func:`filter_codes`).

Records: every comment is either dropped on its own (a filter, a missing parent, a cycle, a
dropped ancestor, malformed JSON) or belongs to at least one candidate conversation; each
candidate conversation is kept as a Document or dropped (``too_few_turns``, ``path_limit``).
So ``records_in == kept + dropped`` counts comments that joined no conversation plus
conversations.
"""

from __future__ import annotations

import html
import io
import json
import logging
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
import pyarrow.parquet as pq
import zstandard

from core.arrow_columns import arrow_column, arrow_rows
from core.compressed import CODEC_ERRORS, TruncatedInputError, WindowTooLargeError, open_binary, zstd_chunks
from core.document import Document, Drop, InputSpec, make_doc_id
from core.json_line import NestedTooDeep, parse_json_line
from core.steps import Record, Step

log = logging.getLogger(__name__)

SOURCE = "dialogue"
CORPUS = "reddit"
READ_BYTES = 256 * 1024
BLOCK_BYTES = 4 * 1024 * 1024

#: Columns kept from a comment or submission line; everything else in the dump is ignored.
ROW_SCHEMA = pa.schema([
    pa.field("link", pa.string()),
    pa.field("kind", pa.int8()),  # 0 submission, 1 comment: a thread's submission sorts first
    pa.field("id", pa.string()),
    pa.field("parent", pa.string()),
    pa.field("author", pa.string()),
    pa.field("body", pa.string()),
    pa.field("score", pa.int64()),
    pa.field("created", pa.int64()),
    pa.field("subreddit", pa.string()),
    pa.field("line", pa.int64()),
])
COMMENT_JSON = pa.schema([
    pa.field("id", pa.string()), pa.field("link_id", pa.string()), pa.field("parent_id", pa.string()),
    pa.field("author", pa.string()), pa.field("body", pa.string()), pa.field("score", pa.int64()),
    pa.field("created_utc", pa.int64()), pa.field("subreddit", pa.string()),
])
SUBMISSION_JSON = pa.schema([
    pa.field("id", pa.string()), pa.field("author", pa.string()), pa.field("title", pa.string()),
    pa.field("selftext", pa.string()), pa.field("score", pa.int64()), pa.field("created_utc", pa.int64()),
    pa.field("subreddit", pa.string()),
])

DEFAULT_BOT_AUTHORS = ("AutoModerator", "autotldr", "RemindMeBot", "WikiTextBot", "TweetPoster", "RepostSleuthBot")
#: Account names that look like bots: ``...Bot``, ``..._bot``, ``bot-...``.
DEFAULT_BOT_PATTERN = r"(?:[-_][Bb]ot|Bot|BOT)$|^[Bb]ot[-_]"
#: Bodies that say they were written by a bot (the usual footer of helper bots).
BOT_BODY = re.compile(r"(?i)\bI(?:'m| am) a bot\b|\bthis action was performed automatically\b")


# -- reading the zstd stream -------------------------------------------------------------------
#: What a damaged (not merely truncated) input raises while it is read.
READ_ERRORS: tuple[type[BaseException], ...] = (zstandard.ZstdError, *CODEC_ERRORS)


#: What :func:`line_blocks` puts in place of a line longer than the bound (it is never parsed).
TOO_LONG = b"\x00line_too_long"
MAX_LINE_BYTES = 16 * 1024 * 1024  # a real comment line is a few KB; Reddit caps bodies at 10,000 chars


def line_blocks(chunks: Iterable[bytes], block_bytes: int = BLOCK_BYTES,
                max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """Regroup decompressed chunks into blocks of whole lines (about ``block_bytes`` each).

    The tail after the last newline waits for the next chunk; whatever is left at the end (a
    last line without newline) comes out as a final block. A line longer than
    ``max_line_bytes`` is not buffered: it is skipped to its newline and stands in the output as
    one :data:`TOO_LONG` line, so line numbers stay right and the reader counts it. When the
    stream fails (a truncated frame), the whole lines read so far still come out before the error
    goes on; the cut-off partial line is the truncated record.
    """
    pending: list[bytes] = []
    size = 0
    skipping = False
    try:
        for chunk in chunks:
            if skipping:
                newline = chunk.find(b"\n")
                if newline < 0:
                    continue
                skipping, chunk = False, chunk[newline + 1:]
            pending.append(chunk)
            size += len(chunk)
            if size < block_bytes and size <= max_line_bytes:
                continue
            data = b"".join(pending)
            cut = data.rfind(b"\n") + 1
            if cut:
                yield _mark_long_lines(data[:cut], max_line_bytes)
            pending, size = [data[cut:]], len(data) - cut
            if size > max_line_bytes:
                yield TOO_LONG + b"\n"
                pending, size, skipping = [], 0, True
    except Exception:
        data = b"".join(pending)
        if data.rfind(b"\n") >= 0 and not skipping:
            yield _mark_long_lines(data[: data.rfind(b"\n") + 1], max_line_bytes)
        raise
    data = b"".join(pending)
    if data and not skipping:
        yield _mark_long_lines(data if data.endswith(b"\n") else data + b"\n", max_line_bytes)


def _mark_long_lines(block: bytes, max_line_bytes: int) -> bytes:
    """Replace each complete line over the bound by :data:`TOO_LONG` (only a block that could hold one is split)."""
    if len(block) <= max_line_bytes:
        return block
    lines = block.split(b"\n")
    if max(len(line) for line in lines) <= max_line_bytes:
        return block
    return b"\n".join(TOO_LONG if len(line) > max_line_bytes else line for line in lines)


# -- parsing lines into rows -------------------------------------------------------------------
@dataclass
class LineProblem:
    """A line that is not a usable record: its number, why, and what was wrong."""

    line: int
    reason: str
    detail: str
    record: str = ""  # `` (t1_<id> in t3_<link>)`` when the line still says which comment it was


def _bare(value: str | None, prefix: str) -> str | None:
    return value[len(prefix):] if value is not None and value.startswith(prefix) else value


#: The int64 column's range: a value outside it is one malformed record, not a failed month.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _as_int(value: Any) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    try:
        number = int(float(value)) if isinstance(value, str) and "." in value else int(value)
    except OverflowError as exc:  # an infinite float
        raise ValueError(f"not a finite number: {value!r}") from exc
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise ValueError(f"out of the int64 range: {value!r}")
    return number


def comment_row(obj: Any, line: int) -> dict[str, Any]:
    """One comment object -> a row of ``ROW_SCHEMA``; raises ValueError/KeyError/TypeError if unusable."""
    if not isinstance(obj, dict):
        raise TypeError(f"a line holds {type(obj).__name__}, not an object")
    for key in ("id", "link_id", "parent_id", "body"):
        if not isinstance(obj.get(key), str):
            raise KeyError(f"{key} missing or not a string")
    return {"link": _bare(obj["link_id"], "t3_"), "kind": 1, "id": obj["id"], "parent": obj["parent_id"],
            "author": str(obj.get("author") or "[deleted]"), "body": obj["body"], "score": _as_int(obj.get("score")),
            "created": _as_int(obj.get("created_utc")), "subreddit": str(obj.get("subreddit") or ""), "line": line}


def submission_row(obj: Any, line: int) -> dict[str, Any]:
    """One submission object -> a row: its title and self text are the thread's first turn."""
    if not isinstance(obj, dict):
        raise TypeError(f"a line holds {type(obj).__name__}, not an object")
    if not isinstance(obj.get("id"), str):
        raise KeyError("id missing or not a string")
    return {"link": obj["id"], "kind": 0, "id": obj["id"], "parent": None,
            "author": str(obj.get("author") or "[deleted]"),
            "body": submission_text(str(obj.get("title") or ""), str(obj.get("selftext") or "")),
            "score": _as_int(obj.get("score")), "created": _as_int(obj.get("created_utc")),
            "subreddit": str(obj.get("subreddit") or ""), "line": line}


def submission_text(title: str, selftext: str) -> str:
    """Title, then the self text unless it was deleted or removed."""
    if selftext.strip() in ("[deleted]", "[removed]"):
        selftext = ""
    return f"{title}\n\n{selftext}".strip() if selftext.strip() else title


def _fast_table(block: bytes, first_line: int, submissions: bool) -> pa.Table | None:
    """The block's rows via pyarrow's C++ JSON reader, or None when a line needs a closer look."""
    schema = SUBMISSION_JSON if submissions else COMMENT_JSON
    try:
        table = pajson.read_json(
            io.BytesIO(block),
            read_options=pajson.ReadOptions(use_threads=False, block_size=max(len(block), 1 << 16)),
            parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
        table.validate(full=True)  # the JSON reader passes invalid UTF-8 through; DuckDB would fail the month on it
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != block.count(b"\n"):  # blank lines are skipped by pyarrow: numbering would slip
        return None
    lines = _numpy_column(np.arange(first_line, first_line + table.num_rows, dtype=np.int64), pa.int64())
    if submissions:
        if table.column("id").null_count:
            return None
        bodies = [submission_text(t or "", s or "") for t, s in zip(table.column("title").to_pylist(),
                                                                    table.column("selftext").to_pylist(), strict=True)]
        link, parent, body, kind = table.column("id"), pa.nulls(table.num_rows, pa.string()), _string_array(bodies), 0
    else:
        if any(table.column(c).null_count for c in ("id", "link_id", "parent_id", "body")):
            return None
        link = pc.utf8_replace_slice(table.column("link_id"), 0, 3, "") if _all_prefixed(table.column("link_id")) \
            else _string_array([_bare(v, "t3_") or "" for v in table.column("link_id").to_pylist()])
        parent, body, kind = table.column("parent_id"), table.column("body"), 1
    return pa.table({
        "link": link, "kind": _numpy_column(np.full(table.num_rows, kind, np.int8), pa.int8()), "id": table.column("id"),
        "parent": parent, "author": pc.fill_null(table.column("author"), _DELETED), "body": body,
        "score": pc.fill_null(table.column("score"), _ZERO), "created": pc.fill_null(table.column("created_utc"), _ZERO),
        "subreddit": pc.fill_null(table.column("subreddit"), _NO_NAME), "line": lines,
    }, schema=ROW_SCHEMA)


def _numpy_column(values: np.ndarray, kind: pa.DataType) -> pa.Array:
    """An Arrow array over a numpy buffer: ``pa.array`` would import pandas (~6% of a month) to vet its input."""
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def _text_scalar(text: str) -> pa.Scalar:
    """A string scalar built from buffers (``pa.scalar``, which ``fill_null`` calls on a plain value, imports pandas)."""
    return _string_array([text])[0]


def _string_array(texts: Sequence[str]) -> pa.Array:
    """A string array built from buffers (``pa.array`` imports pandas to vet its input)."""
    return arrow_column(texts, pa.string())


def _indices(rows: np.ndarray) -> pa.Array:
    """Row numbers for ``take``, as an Arrow array without ``pa.array``."""
    return _numpy_column(np.ascontiguousarray(rows, np.int64), pa.int64())


_DELETED, _NO_NAME = _text_scalar("[deleted]"), _text_scalar("")
_ZERO = _numpy_column(np.zeros(1, np.int64), pa.int64())[0]
_NOWHERE = _numpy_column(np.full(1, -1, np.int32), pa.int32())[0]


def _all_prefixed(column: pa.ChunkedArray) -> bool:
    return bool(pc.all(pc.starts_with(column, "t3_")).as_py())


def _slow_rows(block: bytes, first_line: int, submissions: bool, problems: list[LineProblem]
               ) -> pa.Table:
    """Line by line with ``json.loads``: every bad line becomes a problem, the good ones rows."""
    rows = []
    make = submission_row if submissions else comment_row
    for offset, raw in enumerate(block.split(b"\n")[:-1]):
        number = first_line + offset
        if not raw.strip():
            continue
        if raw == TOO_LONG:
            problems.append(LineProblem(number, "line_too_long", f"a line over {MAX_LINE_BYTES} bytes, skipped"))
            continue
        try:
            row = make(parse_json_line(raw), number)
            _check_encodable(row)
            rows.append(row)
        except (json.JSONDecodeError, NestedTooDeep) as exc:
            problems.append(LineProblem(number, "malformed_json", f"{type(exc).__name__}: {exc}"))
        except UnicodeError as exc:  # raw bytes that are not UTF-8, or an escaped lone surrogate
            problems.append(LineProblem(number, "invalid_utf8", f"{type(exc).__name__}: {exc}",
                                        _line_record(raw, submissions)))
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(LineProblem(number, "malformed_record", f"{type(exc).__name__}: {exc}"))
    return arrow_rows(rows, ROW_SCHEMA)  # not pa.Table.from_pylist: it imports pandas


def _check_encodable(row: dict[str, Any]) -> None:
    """Raise UnicodeEncodeError for a text field Parquet cannot hold (``"\\ud800"`` decodes to a lone surrogate)."""
    for value in row.values():
        if isinstance(value, str) and not value.isascii():
            value.encode("utf-8")


def _line_record(raw: bytes, submissions: bool) -> str:
    """`` (t1_<id> in t3_<link>)`` of a line that is not valid text, read with the bad bytes replaced."""
    try:
        obj = parse_json_line(raw.decode("utf-8", "replace"))
    except ValueError:
        return ""
    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
        return ""
    name = _printable(obj["id"])
    if submissions:
        return f" (t3_{name})"
    link = obj.get("link_id")
    return f" (t1_{name} in {_printable(link)})" if isinstance(link, str) else f" (t1_{name})"


def _printable(value: str) -> str:
    """``value`` with lone surrogates as ``?``, so the name itself can be stored."""
    return value.encode("utf-8", "replace").decode("utf-8")


def parse_block(block: bytes, first_line: int, submissions: bool = False
                ) -> tuple[pa.Table, list[LineProblem]]:
    """Rows and problems of one block of whole lines (line numbers start at ``first_line``)."""
    problems: list[LineProblem] = []
    table = _fast_table(block, first_line, submissions)
    if table is None:
        table = _slow_rows(block, first_line, submissions, problems)
    return table, problems


# -- configuration of the filters --------------------------------------------------------------
@dataclass(frozen=True)
class RedditFilters:
    """What a comment needs to take part in a conversation, and the shape of conversations."""

    min_score: int | None = 1
    min_turns: int = 2
    max_depth: int = 12
    max_paths_per_root: int = 16
    max_body_chars: int = 10_000
    max_thread_comments: int = 200_000
    subreddits_allow: tuple[str, ...] = ()
    subreddits_deny: tuple[str, ...] = ()
    bot_authors: tuple[str, ...] = DEFAULT_BOT_AUTHORS
    bot_author_pattern: str = DEFAULT_BOT_PATTERN
    _bot_re: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_bot_re", re.compile(self.bot_author_pattern) if self.bot_author_pattern else None)

    def subreddit_reason(self, subreddit: str) -> str | None:
        """Why a thread of ``subreddit`` is not read (allow list first, then deny list)."""
        name = subreddit.lower()
        if self.subreddits_allow and name not in {s.lower() for s in self.subreddits_allow}:
            return "subreddit_not_allowed"
        if name in {s.lower() for s in self.subreddits_deny}:
            return "subreddit_denied"
        return None

    def is_bot(self, author: str) -> bool:
        """An account on the bot list or named like a bot."""
        if author in self.bot_authors:
            return True
        return bool(self._bot_re is not None and self._bot_re.search(author))

    def comment_reason(self, author: str, body: str, score: int, kind: int) -> str | None:
        """Why one comment (or submission) cannot be a turn, or None when it can."""
        stripped = body.strip()
        if stripped == "[deleted]":
            return "deleted_body"
        if stripped == "[removed]":
            return "removed_body"
        if not stripped:
            return "empty_body"
        if self.is_bot(author) or (_may_say_bot(body) and BOT_BODY.search(body)):
            return "bot"
        if len(body) > self.max_body_chars:
            return "body_too_long"
        if kind == 1 and self.min_score is not None and score < self.min_score:
            return "low_score"
        return None


def _may_say_bot(body: str) -> bool:
    """Cheap substring pre-check (C speed) before the case-insensitive :data:`BOT_BODY` regex."""
    return "bot" in body or "Bot" in body or "BOT" in body or "automatically" in body


# -- body cleaning -----------------------------------------------------------------------------
_ZERO_WIDTH = re.compile("[\u200b\ufeff]")
_TRAILING = re.compile(r"[ \t]+\n")
_BLANKS = re.compile(r"\n{3,}")


def clean_body(body: str) -> str:
    """Readable markdown: entities unescaped, CRLF and spacing normalised, markup kept.

    Reddit stores bodies HTML-escaped once (``&gt;`` for a quote marker, ``&amp;`` in URLs);
    one ``html.unescape`` gives the markdown the author typed. Quotes (``>``), lists, links and
    emphasis stay as typed: they read naturally as text. Zero-width spaces (used to force empty
    lines) go, blank-line runs shrink to one. Linear in the body's length (bounded by
    ``max_body_chars``).
    """
    text = html.unescape(body.replace("\r\n", "\n").replace("\r", "\n"))
    if not text.isascii():  # the regexes only run where they can match (substring tests are C speed)
        text = _ZERO_WIDTH.sub("", text).replace("\u00a0", " ")
    text += "\n"
    if " \n" in text or "\t\n" in text:
        text = _TRAILING.sub("\n", text)
    return _BLANKS.sub("\n\n", text).strip() if "\n\n\n" in text else text.strip()


# -- the turn format ---------------------------------------------------------------------------
def speaker_label(index: int) -> str:
    """A, B, ..., Z, AA, AB, ...: the n-th distinct speaker of a conversation."""
    label = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        label = chr(ord("A") + rest) + label
    return label


def format_turns(turns: Sequence[tuple[str, str]]) -> str:
    """The dialogue turn format shared by every dialogue corpus (see docs/extensions.md).

    One turn per block, ``<speaker>: <text>``, blocks separated by a blank line; speakers are
    labelled A, B, C... in order of first appearance (``?`` when the corpus does not say).
    """
    return "\n\n".join(f"{speaker}: {text}" for speaker, text in turns)


def label_speakers(authors: Sequence[str], anonymous: str = "[deleted]") -> list[str]:
    """Per-turn labels: the same author gets the same letter; each deleted author a new one."""
    labels: dict[str, str] = {}
    out = []
    for author in authors:
        if author == anonymous:
            out.append(_label(len(labels)))
            labels[f"\x00{len(labels)}"] = out[-1]
            continue
        if author not in labels:
            labels[author] = _label(len(labels))
        out.append(labels[author])
    return out


_FIRST_LABELS = [speaker_label(i) for i in range(64)]


def _label(index: int) -> str:
    return _FIRST_LABELS[index] if index < len(_FIRST_LABELS) else speaker_label(index)


# -- threads and paths, columnar ---------------------------------------------------------------
#: Why a comment joins no conversation, as codes of the per-row arrays below (``KEPT`` = -1: it is a turn).
REASONS = ("duplicate_id", "bad_parent", "missing_parent", "reply_cycle", "ancestor_filtered", "too_deep",
           "deleted_body", "removed_body", "empty_body", "bot", "body_too_long", "low_score")
(DUPLICATE, BAD_PARENT, MISSING, CYCLE, ANCESTOR, TOO_DEEP,
 DELETED, REMOVED, EMPTY, BOT, BODY_TOO_LONG, LOW_SCORE) = range(len(REASONS))
KEPT = -1
#: Bodies :meth:`RedditFilters.comment_reason` must look at itself: a marker that may strip to a
#: reason of its own, or a word of :func:`_may_say_bot` (RE2 syntax, one pass over the column).
_ODD_BODY = r"\[deleted\]|\[removed\]|bot|Bot|BOT|automatically"
_ROOT_BASE = -3  # a pointer ``-(root + 3)``: the chain above a node ends at top-level comment ``root``
_OFF_THREAD = -2  # the chain leaves the thread (a parent that is not in it)


def _flags(values: pa.Array) -> np.ndarray:
    """A boolean Arrow result as numpy, null as False."""
    if values.null_count:
        values = pc.and_kleene(values, pc.is_valid(values))
    return _numbers(pc.cast(values, pa.uint8())).view(bool)


def _numbers(values: pa.Array) -> np.ndarray:
    """A fixed-width Arrow array without nulls as numpy, over its buffer (``to_numpy`` imports pandas)."""
    if values.null_count:
        raise ValueError("a column with nulls")
    dtype = np.dtype(values.type.to_pandas_dtype())
    if not len(values):
        return np.zeros(0, dtype)
    return np.frombuffer(values.buffers()[1], dtype, count=len(values), offset=values.offset * dtype.itemsize)


def filter_codes(author: pa.Array, body: pa.Array, score: np.ndarray, filters: RedditFilters) -> np.ndarray:
    """:meth:`RedditFilters.comment_reason` of every comment, as codes, with the same precedence.

    Each test runs over the whole column; Python looks only at the few rows a column test cannot
    decide alone: the distinct authors (:meth:`RedditFilters.is_bot`), and bodies that may strip
    to ``[deleted]``/``[removed]``/nothing (one of the markers, or no ASCII letter or digit) or
    may say they are a bot (:func:`_may_say_bot`'s words): those get the whole
    :meth:`~RedditFilters.comment_reason`. ``utf8_length`` counts code points, as ``len`` does.
    """
    codes = np.full(len(body), KEPT, np.int8)
    if filters.min_score is not None:
        codes[score < filters.min_score] = LOW_SCORE
    codes[_numbers(pc.utf8_length(body)) > filters.max_body_chars] = BODY_TOO_LONG
    codes[_bot_authors(author, filters)] = BOT
    odd = ~_flags(pc.match_substring_regex(body, "[A-Za-z0-9]")) | _flags(pc.match_substring_regex(body, _ODD_BODY))
    rows = np.flatnonzero(odd)
    if rows.size:
        take = _indices(rows)
        for row, name, text in zip(rows.tolist(), author.take(take).to_pylist(), body.take(take).to_pylist(), strict=True):
            reason = filters.comment_reason(name, text, int(score[row]), 1)
            codes[row] = KEPT if reason is None else REASONS.index(reason)
    return codes


def _bot_authors(author: pa.Array, filters: RedditFilters) -> np.ndarray:
    """Rows whose author is a bot, deciding each distinct name once."""
    names = pc.unique(author)
    bots = [name for name in names.to_pylist() if filters.is_bot(name)]
    if not bots:
        return np.zeros(len(author), bool)
    return _flags(pc.is_in(author, value_set=_string_array(bots)))


@dataclass
class Chunk:
    """Whole threads of the sorted rows (by link, kind, created, id, line) as arrays.

    Row order inside a thread is the order of ``(created, id)``, so comparing two comments of
    one thread by row number compares them as the old per-thread sort did.
    """

    table: pa.Table
    thread: np.ndarray = field(init=False)  # thread number of each row
    starts: np.ndarray = field(init=False)  # first row of each thread
    kind: np.ndarray = field(init=False)
    line: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.table = self.table.combine_chunks()
        link = self.array("link")
        first = np.ones(self.table.num_rows, bool)
        if self.table.num_rows > 1:
            first[1:] = ~_flags(pc.equal(link.slice(1), link.slice(0, self.table.num_rows - 1)))
        self.starts = np.flatnonzero(first)
        self.thread = np.cumsum(first) - 1
        self.kind = self.column("kind")
        self.line = self.column("line")

    def column(self, name: str) -> np.ndarray:
        return _numbers(self.array(name))

    def array(self, name: str) -> pa.Array:
        """One column as one Arrow array (a chunked column's ``to_numpy`` goes through pandas)."""
        column = self.table.column(name)
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()

    def values(self, name: str, rows: np.ndarray) -> list[Any]:
        """Python values of ``name`` at ``rows``."""
        return self.array(name).take(_indices(rows)).to_pylist()


@dataclass
class Forest:
    """The accepted comments (``nodes``: rows, first valid row of each id) of a chunk and their links."""

    rows: np.ndarray  # row of each node, ascending
    parent: np.ndarray  # node index of the parent; ``-(root + 3)`` for a top-level comment; _OFF_THREAD
    row_codes: np.ndarray  # per row: DUPLICATE/BAD_PARENT for comment rows that are not nodes, else KEPT


def build_forest(chunk: Chunk, comment: np.ndarray) -> Forest:
    """Nodes and parents: ``duplicate_id``/``bad_parent`` exactly as a row-by-row pass in thread order.

    A row whose id an earlier accepted row of its thread has is a duplicate; otherwise a row whose
    parent is of another thread or has no ``t1_``/``t3_`` prefix is a bad parent; the rest are nodes.
    """
    link, parent = chunk.array("link"), chunk.array("parent")
    bare = pc.utf8_slice_codeunits(parent, 3)
    top = _flags(pc.starts_with(parent, "t3_")) & _flags(pc.equal(bare, link))
    valid = comment & (top | _flags(pc.starts_with(parent, "t1_")))
    ids = pc.dictionary_encode(chunk.array("id"))
    width = max(len(ids.dictionary), 1)
    key = chunk.thread * width + _numbers(ids.indices)
    candidates = np.flatnonzero(valid)
    _, first = np.unique(key[candidates], return_index=True)
    nodes = np.sort(candidates[first])
    order = np.argsort(key[nodes])
    sorted_keys = key[nodes][order]
    codes = np.full(len(key), KEPT, np.int8)
    codes[candidates] = DUPLICATE
    codes[nodes] = KEPT
    bad = np.flatnonzero(comment & ~valid)
    found = _lookup(sorted_keys, key[bad])
    earlier = (found >= 0) & (nodes[order[np.maximum(found, 0)]] < bad) if nodes.size else np.zeros(bad.size, bool)
    codes[bad] = np.where(earlier, DUPLICATE, BAD_PARENT)
    target = _numbers(pc.fill_null(pc.index_in(bare, value_set=ids.dictionary), _NOWHERE))
    parents = np.full(nodes.size, _OFF_THREAD, np.int64)
    node_top = top[nodes]
    parents[node_top] = _ROOT_BASE - np.flatnonzero(node_top)
    reply = np.flatnonzero(~node_top)
    code = target[nodes[reply]]
    known = code >= 0
    hit = _lookup(sorted_keys, chunk.thread[nodes[reply[known]]] * width + code[known])
    parents[reply[known]] = np.where(hit >= 0, order[np.maximum(hit, 0)], _OFF_THREAD)
    return Forest(nodes, parents, codes)


def _lookup(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Position of each key in ``sorted_keys``, -1 where absent."""
    if not sorted_keys.size:
        return np.full(keys.size, -1, np.int64)
    at = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return np.where(sorted_keys[at] == keys, at, -1)


@dataclass
class Reach:
    """Where each node's parent chain ends, and what lies on it (pointer jumping: log2(depth) rounds)."""

    end: np.ndarray  # -(root + 3) when the chain reaches top-level comment ``root``; _OFF_THREAD; >= 0 on a cycle
    depth: np.ndarray  # comments on the chain, the node included (top level = 1)
    filtered_above: np.ndarray  # a strict ancestor has a filter reason of its own


def reach(parent: np.ndarray, own: np.ndarray) -> Reach:
    """Follow every chain to its end in doubling jumps; chains still going after ``log2(n)`` rounds loop."""
    end = parent.copy()
    depth = np.ones(parent.size, np.int64)
    above = np.zeros(parent.size, bool)
    active = np.flatnonzero(end >= 0)
    above[active] = own[end[active]]
    for _ in range(parent.size.bit_length() + 1):
        if not active.size:
            break
        jump = end[active]
        depth[active] += depth[jump]
        above[active] |= above[jump]
        end[active] = end[jump]
        active = active[end[active] >= 0]
    return Reach(end, depth, above)


@dataclass
class Paths:
    """Candidate conversations of a chunk: one per kept leaf, in the order each record kind is emitted."""

    ranked: np.ndarray  # leaves in per-root ranking order (drops are reported in it)
    outcome: np.ndarray  # per ranked leaf: KEPT, or the code of too_few_turns (0) / path_limit (1)
    turns: np.ndarray  # per ranked leaf
    kept: np.ndarray  # node lists (padded with -1) of kept paths, in depth-first order
    kept_leaves: np.ndarray


def choose_paths(parent: np.ndarray, reached: Reach, codes: np.ndarray, heads: np.ndarray,
                 node_thread: np.ndarray, score: np.ndarray, filters: RedditFilters) -> Paths:
    """Root-to-leaf paths of kept nodes, ranked per root (best leaf score, longest, oldest) and cut."""
    kept = codes == KEPT
    has_kept_child = np.zeros(parent.size, bool)
    has_kept_child[parent[kept & (parent >= 0)]] = True
    leaves = np.flatnonzero(kept & ~has_kept_child)
    turns = reached.depth[leaves] + heads[node_thread[leaves]]
    root = _ROOT_BASE - reached.end[leaves]
    order = np.lexsort((leaves, -turns, -score[leaves], root))
    ranked, turns, root = leaves[order], turns[order], root[order]
    long_enough = turns >= filters.min_turns
    before = np.cumsum(long_enough) - long_enough
    group_start = np.flatnonzero(np.r_[True, root[1:] != root[:-1]]) if root.size else np.zeros(0, np.int64)
    sizes = np.diff(np.r_[group_start, root.size])
    rank = before - np.repeat(before[group_start], sizes)
    over = long_enough & (filters.max_paths_per_root > 0) & (rank >= filters.max_paths_per_root)
    outcome = np.where(long_enough, np.where(over, 1, KEPT), 0)
    chosen = ranked[outcome == KEPT]
    matrix = _ancestor_rows(chosen, parent, reached.depth[chosen])
    dfs = np.lexsort(matrix.T[::-1]) if matrix.size else np.zeros(0, np.int64)
    return Paths(ranked, outcome, turns, matrix[dfs], chosen[dfs])


def _ancestor_rows(leaves: np.ndarray, parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """One row per leaf: its path from the top-level comment down, padded with -1 (sorting it gives DFS order)."""
    width = int(depth.max()) if depth.size else 0
    matrix = np.full((leaves.size, width), -1, np.int64)
    current = leaves.copy()
    for up in range(width):
        on = depth - 1 - up >= 0
        matrix[np.flatnonzero(on), (depth - 1 - up)[on]] = current[on]
        current = np.where(on & (parent[current] >= 0), parent[current], current)
    return matrix


def chunk_records(table: pa.Table, where: str, filters: RedditFilters) -> Iterator[Record]:
    """Every record of whole threads (sorted rows), in the order of a thread-by-thread walk.

    Per thread: comment drops by line, then path drops (per root, ranking order), then
    conversations depth-first. A thread over ``max_thread_comments`` gives a
    ``thread_too_large`` drop per comment, in row order, and nothing else. Records are made
    as they are yielded: a chunk's records held at once would be promoted through the garbage
    collector's generations and rescanned (~15% of the time).
    """
    chunk = Chunk(table)
    links = chunk.values("link", chunk.starts)
    comment = chunk.kind == 1
    per_thread = np.bincount(chunk.thread[comment], minlength=chunk.starts.size)
    large = per_thread > filters.max_thread_comments
    forest = build_forest(chunk, comment & ~large[chunk.thread])
    node_rows = forest.rows
    score = chunk.column("score")
    own = filter_codes(chunk.array("author"), chunk.array("body"), score, filters)[node_rows]
    reached = reach(forest.parent, own != KEPT)
    codes = _node_codes(reached, own, filters)
    heads = _heads(chunk, filters)
    node_thread = chunk.thread[node_rows]
    paths = choose_paths(forest.parent, reached, codes, heads >= 0, node_thread, score[node_rows], filters)
    row_codes = forest.row_codes
    row_codes[node_rows] = codes
    makers = [
        _comment_drops(chunk, row_codes, links, where),
        _large_drops(chunk, comment & large[chunk.thread], per_thread, links, where),
        _path_drops(chunk, paths, node_rows, node_thread, links, where),
        _documents(chunk, paths, node_rows, node_thread, heads, links),
    ]
    threads = np.concatenate([t for t, _ in makers])
    kinds = np.concatenate([np.full(t.size, n) for n, (t, _) in enumerate(makers)])
    within = np.concatenate([np.arange(t.size) for t, _ in makers])
    order = np.lexsort((within, kinds, threads))
    make = [m for _, m in makers]
    for kind, index in zip(kinds[order].tolist(), within[order].tolist(), strict=True):
        yield make[kind](index)


def _node_codes(reached: Reach, own: np.ndarray, filters: RedditFilters) -> np.ndarray:
    """Each node's reason as the depth-first walk gave it: ancestors first, then depth, then its own."""
    codes = own.copy()
    codes[reached.depth > filters.max_depth] = TOO_DEEP
    codes[reached.filtered_above | (reached.depth > filters.max_depth + 1)] = ANCESTOR
    codes[reached.end == _OFF_THREAD] = MISSING
    codes[reached.end >= 0] = CYCLE
    return codes


def _heads(chunk: Chunk, filters: RedditFilters) -> np.ndarray:
    """Per thread: the row of its submission when it opens the conversations (title passes the filters), else -1."""
    heads = np.full(chunk.starts.size, -1, np.int64)
    rows = chunk.starts[chunk.kind[chunk.starts] == 0]
    if rows.size:
        fields = zip(chunk.values("author", rows), chunk.values("body", rows), strict=True)
        ok = [filters.comment_reason(author, body, 0, 0) is None for author, body in fields]
        heads[chunk.thread[rows[ok]]] = rows[ok]
    return heads


#: Records of one kind in a chunk: the thread of each, and how to make the i-th.
Maker = tuple[np.ndarray, Callable[[int], Record]]


def _drops(reasons: list[str], texts: list[str]) -> Callable[[int], Record]:
    return lambda i: Drop(reasons[i], texts[i])


def _comment_drops(chunk: Chunk, codes: np.ndarray, links: list[str], where: str) -> Maker:
    rows = np.flatnonzero(codes >= 0)
    rows = rows[np.lexsort((chunk.line[rows], chunk.thread[rows]))]
    threads = chunk.thread[rows]
    texts = [f"{where}: line {line} (t1_{cid} in t3_{links[t]})"
             for line, cid, t in zip(chunk.line[rows].tolist(), chunk.values("id", rows), threads.tolist(), strict=True)]
    return threads, _drops([REASONS[code] for code in codes[rows].tolist()], texts)


def _large_drops(chunk: Chunk, mask: np.ndarray, per_thread: np.ndarray, links: list[str], where: str) -> Maker:
    rows = np.flatnonzero(mask)
    threads = chunk.thread[rows]
    texts = [f"{where}: line {line} (t3_{links[t]}, {per_thread[t]} comments)"
             for line, t in zip(chunk.line[rows].tolist(), threads.tolist(), strict=True)]
    return threads, _drops(["thread_too_large"] * rows.size, texts)


def _path_drops(chunk: Chunk, paths: Paths, node_rows: np.ndarray, node_thread: np.ndarray, links: list[str],
                where: str) -> Maker:
    dropped = np.flatnonzero(paths.outcome != KEPT)
    leaves = paths.ranked[dropped]
    threads = node_thread[leaves]
    texts = [f"{where}: t3_{links[t]} path to t1_{cid} ({turns} turns)"
             for t, cid, turns in zip(threads.tolist(), chunk.values("id", node_rows[leaves]),
                                      paths.turns[dropped].tolist(), strict=True)]
    reasons = ["path_limit" if outcome else "too_few_turns" for outcome in paths.outcome[dropped].tolist()]
    return threads, _drops(reasons, texts)


def _documents(chunk: Chunk, paths: Paths, node_rows: np.ndarray, node_thread: np.ndarray, heads: np.ndarray,
               links: list[str]) -> Maker:
    """A Document per kept path; each turn's row is read and its body cleaned once per chunk."""
    threads = node_thread[paths.kept_leaves]
    matrix = np.where(paths.kept >= 0, node_rows[np.maximum(paths.kept, 0)], -1)
    head_rows = heads[threads]
    rows = np.unique(np.concatenate([matrix[matrix >= 0], head_rows[head_rows >= 0]]))
    turns = _turns(chunk, rows)
    subreddits = chunk.values("subreddit", chunk.starts)
    path_rows, head_list, thread_list = matrix.tolist(), head_rows.tolist(), threads.tolist()

    def make(i: int) -> Record:
        path = [turns[r] for r in path_rows[i] if r >= 0]
        head, t = head_list[i], thread_list[i]
        return conversation_document(links[t], subreddits[t], [turns[head], *path] if head >= 0 else path)
    return threads, make


class Turn(NamedTuple):
    """What a conversation needs of one comment (or the submission): its body already cleaned."""

    id: str
    author: str
    text: str
    score: int
    created: int
    kind: int


def _turns(chunk: Chunk, rows: np.ndarray) -> dict[int, Turn]:
    """The rows of a chunk that are turns of kept paths, by row, each read and cleaned once."""
    values = [chunk.values(name, rows) for name in ("id", "author", "body", "score", "created", "kind")]
    return {row: Turn(cid, author, clean_body(body), score, created, kind)
            for row, cid, author, body, score, created, kind in zip(rows.tolist(), *values, strict=True)}


# -- reading one input -------------------------------------------------------------------------
GROUP_SQL = """
SELECT link, kind, id, parent, author, body, score, created, subreddit, line
FROM read_parquet(?)
WHERE link IN (SELECT link FROM read_parquet(?) WHERE kind = 1)
ORDER BY link, kind, created, id, line
"""
LINKS_SQL = """
SELECT link, kind, id, parent, author, body, score, created, subreddit, line
FROM read_parquet(?)
ORDER BY link, kind, created, id, line
"""


def companion_submissions(path: Path) -> Path | None:
    """``RS_2005-12.zst`` beside ``RC_2005-12.zst``, if present (any compression suffix kept)."""
    name = path.name
    if not name.startswith("RC_"):
        return None
    candidate = path.with_name("RS_" + name[3:])
    return candidate if candidate.is_file() else None


def is_submissions_file(path: Path) -> bool:
    """``RS_*`` files hold submissions (thread openers), not replies."""
    return path.name.startswith("RS_")


@dataclass
class RedditReader:
    """Reads one ``RC_`` dump into conversation Documents and Drops (see the module docstring)."""

    spec: InputSpec
    filters: RedditFilters = field(default_factory=RedditFilters)
    use_submissions: bool = True
    max_window_log: int = 31
    scratch_dir: Path | None = None
    memory_limit: str = "1GB"
    batch_rows: int = 50_000

    def __iter__(self) -> Iterator[Record]:
        if self.scratch_dir is not None:
            self.scratch_dir.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="reddit-", dir=self.scratch_dir))
        try:
            comments = work / "comments.parquet"
            yield from self._load(self.spec.path, comments, submissions=False)
            sources = [comments]
            companion = companion_submissions(self.spec.path) if self.use_submissions else None
            if companion is not None and comments.exists():
                subs = work / "submissions.parquet"
                for drop in self._load(companion, subs, submissions=True):
                    log.warning("%s: companion %s: %s %s", self.spec.location, companion.name, drop.reason, drop.detail)
                if subs.exists():
                    sources.append(subs)
            if comments.exists():
                yield from self._threads(sources, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _load(self, path: Path, target: Path, submissions: bool) -> Iterator[Drop]:
        """Stream ``path`` into ``target`` (Parquet); yield a Drop per unusable line or filtered subreddit."""
        where = f"{self.spec.location}" if path == self.spec.path else f"{self.spec.location} (+{path.name})"
        writer: pq.ParquetWriter | None = None
        line = 1
        try:
            chunks = zstd_chunks(path, 1 << self.max_window_log, READ_BYTES) if path.suffix == ".zst" else _plain_chunks(path)
            for block in line_blocks(chunks, max_line_bytes=MAX_LINE_BYTES):
                table, problems = parse_block(block, line, submissions)
                line += block.count(b"\n")
                for problem in problems:
                    yield Drop(problem.reason, f"{where}: line {problem.line}{problem.record}", problem.detail)
                table, denied = self._subreddit_filter(table)
                for reason, number in denied:
                    yield Drop(reason, f"{where}: line {number}")
                if table.num_rows:
                    if writer is None:
                        writer = pq.ParquetWriter(target, ROW_SCHEMA, compression="lz4", use_dictionary=False,
                                                  write_statistics=False)  # read once, whole: ~30% less to write
                    writer.write_table(table, row_group_size=self.batch_rows)
        except (TruncatedInputError, EOFError) as exc:  # bz2/xz/gz say EOFError
            yield Drop("truncated_input", f"{where}: after line {line - 1}", str(exc))
        except WindowTooLargeError as exc:
            yield Drop("zstd_window_too_large", f"{where}: after line {line - 1}", str(exc))
        except READ_ERRORS as exc:
            yield Drop("corrupt_input", f"{where}: after line {line - 1}", f"{type(exc).__name__}: {exc}")
        finally:
            if writer is not None:
                writer.close()

    def _subreddit_filter(self, table: pa.Table) -> tuple[pa.Table, list[tuple[str, int]]]:
        """Rows of allowed subreddits, and ``(reason, line)`` for the others (before any sorting)."""
        if not (self.filters.subreddits_allow or self.filters.subreddits_deny) or not table.num_rows:
            return table, []
        names = pc.utf8_lower(table.column("subreddit"))
        keep = arrow_column(np.ones(table.num_rows, bool), pa.bool_())
        if self.filters.subreddits_allow:
            keep = pc.is_in(names, _string_array([s.lower() for s in self.filters.subreddits_allow]))
        if self.filters.subreddits_deny:
            keep = pc.and_(keep, pc.invert(pc.is_in(names, _string_array([s.lower() for s in self.filters.subreddits_deny]))))
        dropped = table.filter(pc.invert(keep))
        denied = [(self.filters.subreddit_reason(s) or "subreddit_denied", n)
                  for s, n in zip(dropped.column("subreddit").to_pylist(), dropped.column("line").to_pylist(), strict=True)]
        return table.filter(keep), denied

    def _threads(self, sources: list[Path], work: Path) -> Iterator[Record]:
        for chunk in sorted_chunks(sources, work, self.memory_limit, self.batch_rows):
            yield from chunk_records(chunk, self.spec.location, self.filters)


def _plain_chunks(path: Path) -> Iterator[bytes]:
    """Older dumps (``RC_2005-12.bz2``, ``RC_2017-12.xz``) and plain ndjson, via ``open_binary``."""
    with open_binary(path) as handle:
        while chunk := handle.read(READ_BYTES):
            yield chunk


def sorted_chunks(sources: Sequence[Path], work: Path, memory_limit: str, chunk_rows: int = 50_000
                  ) -> Iterator[pa.Table]:
    """Tables of whole threads (about ``chunk_rows`` rows each) in link order, sorted out of core by DuckDB.

    Submissions join only threads that have comments in this input (a semi-join), so a
    month's submissions add context without adding records. A thread larger than a chunk
    grows its chunk (it is held whole, as a thread always was).
    """
    con = duckdb.connect(str(work / "group.duckdb"))
    try:
        con.execute(f"SET memory_limit='{memory_limit}'")
        con.execute(f"SET temp_directory='{(work / 'spill').as_posix()}'")
        con.execute("SET threads=1")
        con.execute("SET preserve_insertion_order=false")
        con.execute("SET enable_progress_bar=false")  # the reader is consumed slowly: no bar on stderr
        files = [str(p) for p in sources]
        if len(files) > 1:
            query = con.sql(GROUP_SQL, params=[files, files[0]])
        else:
            query = con.sql(LINKS_SQL, params=[files])
        pending: list[pa.RecordBatch] = []
        rows = 0
        for batch in query.to_arrow_reader(chunk_rows):
            pending.append(batch)
            rows += batch.num_rows
            if rows < chunk_rows:
                continue
            table = pa.Table.from_batches(pending)
            links = table.column("link")
            cut = pc.index(links, links[-1]).as_py()  # the last thread may go on in the next batch
            if cut > 0:
                yield table.slice(0, cut)
                pending, rows = table.slice(cut).to_batches(), table.num_rows - cut
        if rows:
            yield pa.Table.from_batches(pending)
    finally:
        con.close()


def conversation_document(link: str, subreddit: str, path: Sequence[Turn]) -> Document:
    """One root-to-leaf path as a dialogue Document."""
    speakers = label_speakers([n.author for n in path])
    comment_ids = [n.id for n in path if n.kind == 1]
    dialogue_id = f"t3_{link}/t1_{comment_ids[-1]}"
    return Document(
        id=make_doc_id(SOURCE, f"reddit/{dialogue_id}"),
        text=format_turns([(s, n.text) for s, n in zip(speakers, path, strict=True)]),
        source=SOURCE,
        meta={
            "corpus": CORPUS,
            "dialogue_id": dialogue_id,
            "thread_id": f"t3_{link}",
            "subreddit": subreddit,
            "turns": len(path),
            "speakers": speakers,
            "comment_ids": comment_ids,
            "with_submission": path[0].kind == 0,
            "scores": [n.score for n in path],
            "timestamp": path[-1].created,
            "url": f"https://www.reddit.com/comments/{link}/_/{comment_ids[-1]}/",
        },
    )


@dataclass
class RedditRecipe:
    """Reddit alone as a :class:`core.pipeline.SourceRecipe` (the dialogue recipe dispatches here)."""

    filters: RedditFilters = field(default_factory=RedditFilters)
    use_submissions: bool = True
    max_window_log: int = 31
    scratch_dir: Path | None = None
    memory_limit: str = "1GB"
    name: str = SOURCE

    def input_language(self, spec: InputSpec) -> str | None:
        """Reddit is mostly English but not only; the dump does not say."""
        return None

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """Conversations of one ``RC_`` file (with its ``RS_`` companion as thread openers)."""
        return iter(RedditReader(spec, self.filters, self.use_submissions, self.max_window_log,
                                 self.scratch_dir, self.memory_limit))

    def steps(self) -> list[Step]:
        """All filtering happens while threads are rebuilt (a filter needs the tree)."""
        return []

    def partition(self, doc: Document) -> str:
        """By language when known, else ``und``."""
        return doc.language or "und"

