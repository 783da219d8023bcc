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
(``memory_limit``, spilling to disk), and walked one thread at a time. The peak is the zstd window
(up to 2 GiB, decided by the file, as for the ``zstd`` CLI) + DuckDB's limit + the largest thread
(capped by ``max_thread_comments``).

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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
import pyarrow.parquet as pq
import zstandard

from core.compressed import CODEC_ERRORS, TruncatedInputError, WindowTooLargeError, open_binary, zstd_chunks
from core.document import Document, Drop, InputSpec, make_doc_id
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


def _as_int(value: Any) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    return int(float(value)) if isinstance(value, str) and "." in value else int(value)


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
        link, parent, body, kind = table.column("id"), pa.nulls(table.num_rows, pa.string()), pa.array(bodies, pa.string()), 0
    else:
        if any(table.column(c).null_count for c in ("id", "link_id", "parent_id", "body")):
            return None
        link = pc.utf8_replace_slice(table.column("link_id"), 0, 3, "") if _all_prefixed(table.column("link_id")) \
            else pa.array([_bare(v, "t3_") for v in table.column("link_id").to_pylist()], pa.string())
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
    data = text.encode()
    offsets = pa.py_buffer(np.array([0, len(data)], np.int32))
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])[0]


_DELETED, _NO_NAME = _text_scalar("[deleted]"), _text_scalar("")
_ZERO = _numpy_column(np.zeros(1, np.int64), pa.int64())[0]


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
            row = make(json.loads(raw), number)
            _check_encodable(row)
            rows.append(row)
        except json.JSONDecodeError as exc:
            problems.append(LineProblem(number, "malformed_json", f"JSONDecodeError: {exc}"))
        except UnicodeError as exc:  # raw bytes that are not UTF-8, or an escaped lone surrogate
            problems.append(LineProblem(number, "invalid_utf8", f"{type(exc).__name__}: {exc}",
                                        _line_record(raw, submissions)))
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(LineProblem(number, "malformed_record", f"{type(exc).__name__}: {exc}"))
    return pa.Table.from_pylist(rows, schema=ROW_SCHEMA)


def _check_encodable(row: dict[str, Any]) -> None:
    """Raise UnicodeEncodeError for a text field Parquet cannot hold (``"\\ud800"`` decodes to a lone surrogate)."""
    for value in row.values():
        if isinstance(value, str) and not value.isascii():
            value.encode("utf-8")


def _line_record(raw: bytes, submissions: bool) -> str:
    """`` (t1_<id> in t3_<link>)`` of a line that is not valid text, read with the bad bytes replaced."""
    try:
        obj = json.loads(raw.decode("utf-8", "replace"))
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
    text = _ZERO_WIDTH.sub("", text).replace("\u00a0", " ")
    text = _TRAILING.sub("\n", text + "\n")
    return _BLANKS.sub("\n\n", text).strip()


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
            out.append(speaker_label(len(labels)))
            labels[f"\x00{len(labels)}"] = out[-1]
            continue
        if author not in labels:
            labels[author] = speaker_label(len(labels))
        out.append(labels[author])
    return out


# -- threads and paths -------------------------------------------------------------------------
@dataclass
class Node:
    """One comment (or the submission) of a thread."""

    id: str
    parent: str | None  # the parent comment's bare id; None for a top-level comment or submission
    author: str
    body: str
    score: int
    created: int
    kind: int
    line: int
    children: list[str] = field(default_factory=list)
    reason: str | None = None  # why the comment itself cannot be a turn (depth aside), computed once


@dataclass
class ThreadResult:
    """What one thread yields: comment drops ``(reason, node)`` and the kept paths (lists of nodes)."""

    drops: list[tuple[str, Node]] = field(default_factory=list)
    paths: list[list[Node]] = field(default_factory=list)
    path_drops: list[tuple[str, list[Node]]] = field(default_factory=list)


def parent_key(parent_id: str | None, link: str) -> tuple[str | None, str | None]:
    """``(parent bare id or None for top level, problem)`` from a ``t1_``/``t3_`` parent id."""
    if parent_id is None:
        return None, None
    if parent_id.startswith("t3_"):
        return (None, None) if parent_id[3:] == link else (None, f"parent {parent_id} is another thread")
    if parent_id.startswith("t1_"):
        return parent_id[3:], None
    return None, f"parent id {parent_id!r} has no t1_/t3_ prefix"


def build_thread(link: str, rows: Sequence[dict[str, Any]], filters: RedditFilters) -> ThreadResult:
    """Rebuild one thread's reply tree and cut it into root-to-leaf paths.

    Top-level comments are taken in (created, id) order, so the result does not depend on dump order.
    Comments whose parent is absent or which sit on a reply cycle are dropped with their
    subtree (``missing_parent``, ``reply_cycle``); a filtered comment takes its replies with it
    (``ancestor_filtered``); turns deeper than ``max_depth`` are ``too_deep``.
    """
    result = ThreadResult()
    nodes: dict[str, Node] = {}
    submission: Node | None = None
    for row in rows:
        if row["kind"] == 0:
            if submission is None:
                submission = Node(row["id"], None, row["author"], row["body"], row["score"], row["created"], 0, row["line"])
            continue  # a second copy of the submission adds nothing (it is context, not a record)
        node = Node(row["id"], None, row["author"], row["body"], row["score"], row["created"], 1, row["line"])
        parent, problem = parent_key(row["parent"], link)
        if row["id"] in nodes:
            result.drops.append(("duplicate_id", node))
            continue
        if problem is not None:
            result.drops.append(("bad_parent", node))
            continue
        node.parent = parent
        node.reason = filters.comment_reason(node.author, node.body, node.score, 1)
        nodes[node.id] = node
    roots: list[str] = []
    for node in sorted(nodes.values(), key=lambda n: (n.created, n.id)):  # dump order must not matter
        if node.parent is None:
            roots.append(node.id)
        elif node.parent in nodes:
            nodes[node.parent].children.append(node.id)
    reached = _walk(roots, nodes, submission, filters, result)
    for node_id, node in nodes.items():
        if node_id not in reached:
            result.drops.append((_orphan_reason(node_id, nodes), node))
    return result


def _orphan_reason(node_id: str, nodes: dict[str, Node]) -> str:
    """``reply_cycle`` when following parents loops, ``missing_parent`` when it leaves the thread."""
    seen = set()
    current: str | None = node_id
    while current is not None and current in nodes:
        if current in seen:
            return "reply_cycle"
        seen.add(current)
        current = nodes[current].parent
    return "missing_parent"


def _walk(roots: list[str], nodes: dict[str, Node], submission: Node | None, filters: RedditFilters,
          result: ThreadResult) -> set[str]:
    """Depth-first from each top-level comment: drops, and the paths to every kept leaf."""
    reached: set[str] = set()
    head: list[Node] = []
    if submission is not None and filters.comment_reason(submission.author, submission.body, 0, 0) is None:
        head = [submission]
    for root in roots:
        leaves: list[list[Node]] = []
        stack: list[tuple[str, list[Node], str | None]] = [(root, head, None)]
        while stack:
            node_id, above, inherited = stack.pop()
            reached.add(node_id)
            node = nodes[node_id]
            reason = inherited or _own_reason(node, len(above) - len(head) + 1, filters)
            if reason is not None:
                result.drops.append((reason, node))
                if node.children:  # most comments have no replies: skip the generator
                    child_reason = "ancestor_filtered" if inherited is None else inherited
                    stack.extend((c, above, child_reason) for c in reversed(node.children))
                continue
            path = [*above, node]
            if not node.children:
                leaves.append(path)
                continue
            if not _has_kept_child(node, nodes, len(path) - len(head), filters):
                leaves.append(path)
            stack.extend((c, path, None) for c in reversed(node.children))
        _choose_paths(leaves, filters, result)
    return reached


def _own_reason(node: Node, depth: int, filters: RedditFilters) -> str | None:
    return "too_deep" if depth > filters.max_depth else node.reason


def _has_kept_child(node: Node, nodes: dict[str, Node], depth: int, filters: RedditFilters) -> bool:
    return depth < filters.max_depth and any(nodes[c].reason is None for c in node.children)


def _choose_paths(leaves: list[list[Node]], filters: RedditFilters, result: ThreadResult) -> None:
    """Keep at most ``max_paths_per_root`` paths of one root: best leaf score, then longest, then id."""
    ranked = leaves if len(leaves) < 2 else sorted(leaves, key=lambda p: (-p[-1].score, -len(p), p[-1].created, p[-1].id))
    kept: list[list[Node]] = []
    for path in ranked:
        if len(path) < filters.min_turns:
            result.path_drops.append(("too_few_turns", path))
        elif filters.max_paths_per_root and len(kept) >= filters.max_paths_per_root:
            result.path_drops.append(("path_limit", path))
        else:
            kept.append(path)
    if len(kept) > 1:
        kept.sort(key=lambda p: [(n.created, n.id) for n in p])
    result.paths.extend(kept)


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
                        writer = pq.ParquetWriter(target, ROW_SCHEMA, compression="lz4")
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
        keep = pa.array([True] * table.num_rows)
        if self.filters.subreddits_allow:
            keep = pc.is_in(names, pa.array([s.lower() for s in self.filters.subreddits_allow]))
        if self.filters.subreddits_deny:
            keep = pc.and_(keep, pc.invert(pc.is_in(names, pa.array([s.lower() for s in self.filters.subreddits_deny]))))
        dropped = table.filter(pc.invert(keep))
        denied = [(self.filters.subreddit_reason(s) or "subreddit_denied", n)
                  for s, n in zip(dropped.column("subreddit").to_pylist(), dropped.column("line").to_pylist(), strict=True)]
        return table.filter(keep), denied

    def _threads(self, sources: list[Path], work: Path) -> Iterator[Record]:
        for link, rows in group_threads(sources, work, self.memory_limit):
            yield from self._thread_records(link, rows)

    def _thread_records(self, link: str, rows: list[dict[str, Any]]) -> Iterator[Record]:
        where = self.spec.location
        comments = sum(1 for r in rows if r["kind"] == 1)
        if comments > self.filters.max_thread_comments:
            for row in rows:
                if row["kind"] == 1:
                    yield Drop("thread_too_large", f"{where}: line {row['line']} (t3_{link}, {comments} comments)")
            return
        result = build_thread(link, rows, self.filters)
        for reason, node in sorted(result.drops, key=lambda d: d[1].line):
            yield Drop(reason, f"{where}: line {node.line} (t1_{node.id} in t3_{link})")
        for reason, path in result.path_drops:
            yield Drop(reason, f"{where}: t3_{link} path to t1_{path[-1].id} ({len(path)} turns)")
        subreddit = rows[0]["subreddit"]
        for path in result.paths:
            yield conversation_document(link, subreddit, path)


def _plain_chunks(path: Path) -> Iterator[bytes]:
    """Older dumps (``RC_2005-12.bz2``, ``RC_2017-12.xz``) and plain ndjson, via ``open_binary``."""
    with open_binary(path) as handle:
        while chunk := handle.read(READ_BYTES):
            yield chunk


def group_threads(sources: Sequence[Path], work: Path, memory_limit: str, batch_rows: int = 5_000
                  ) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(link, rows)`` per thread in link order, sorted out of core by DuckDB.

    Submissions join only threads that have comments in this input (a semi-join), so a
    month's submissions add context without adding records.
    """
    con = duckdb.connect(str(work / "group.duckdb"))
    try:
        con.execute(f"SET memory_limit='{memory_limit}'")
        con.execute(f"SET temp_directory='{(work / 'spill').as_posix()}'")
        con.execute("SET threads=1")
        con.execute("SET preserve_insertion_order=false")
        files = [str(p) for p in sources]
        if len(files) > 1:
            query = con.sql(GROUP_SQL, params=[files, files[0]])
        else:
            query = con.sql(LINKS_SQL, params=[files])
        reader = query.to_arrow_reader(batch_rows)
        link: str | None = None
        rows: list[dict[str, Any]] = []
        names = ROW_SCHEMA.names
        for batch in reader:
            columns = batch.to_pydict()
            for values in zip(*(columns[n] for n in names), strict=True):
                row = dict(zip(names, values, strict=True))
                if row["link"] != link:
                    if rows:
                        yield link, rows  # type: ignore[misc]
                    link, rows = row["link"], []
                rows.append(row)
        if rows:
            yield link, rows  # type: ignore[misc]
    finally:
        con.close()


def conversation_document(link: str, subreddit: str, path: Sequence[Node]) -> Document:
    """One root-to-leaf path as a dialogue Document."""
    speakers = label_speakers([n.author for n in path])
    turns = [(s, clean_body(n.body)) for s, n in zip(speakers, path, strict=True)]
    comment_ids = [n.id for n in path if n.kind == 1]
    dialogue_id = f"t3_{link}/t1_{comment_ids[-1]}"
    return Document(
        id=make_doc_id(SOURCE, f"reddit/{dialogue_id}"),
        text=format_turns(turns),
        source=SOURCE,
        meta={
            "corpus": CORPUS,
            "dialogue_id": dialogue_id,
            "thread_id": f"t3_{link}",
            "subreddit": subreddit,
            "turns": len(turns),
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

