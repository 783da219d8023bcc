"""Reading the Pile (v1) ``*.jsonl.zst`` shards, with a stable address for every document.

The Pile is the dedup *reference* (G.3 = LLaMA minus the Pile) and also a source (DM
Mathematics), so its reader sits here, below both ``dedupe/`` and ``sources/``. Every reference
document keeps a human-checkable address: the shard's file name and the 1-based line number
inside the decompressed shard (``zstdcat 00.jsonl.zst | sed -n 123p``).

Reading is streamed (zstd frame by frame, one line at a time) and never raises for one bad line:
non-UTF-8 bytes, invalid JSON, a missing or non-string ``text``, and empty text each become a
counted :class:`~core.document.Drop` naming shard and line; a truncated or corrupt ``.zst``
ends the shard with one ``truncated_input`` drop after everything readable was yielded.

A line longer than ``max_line_bytes`` (default :data:`MAX_LINE_BYTES`) is a ``record_too_large``
drop, and it is skipped *unread*: its pieces are counted and discarded as they are decompressed,
never joined, so one corrupt shard with a gigabyte without a newline cannot exhaust memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from core.compressed import CODEC_ERRORS, TruncatedInputError, open_binary, zstd_chunks
from core.document import Drop
from core.json_line import parse_json_line

UNKNOWN_SET = "unknown"
_READ_SIZE = 1 << 20
#: The longest Pile line read (bytes). The Pile's largest documents (whole books) are tens of MB.
MAX_LINE_BYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class _Oversized:
    """Stands for a line longer than the bound, which was skipped unread (``size`` bytes)."""

    size: int


@dataclass(frozen=True, slots=True)
class PileLine:
    """One readable Pile document with its address: ``shard`` (file name) and 1-based ``line``.

    ``utf8`` is ``text`` encoded, made anyway while checking for lone surrogates: the index
    builder hashes these bytes instead of encoding every text once more.
    """

    shard: str
    line: int
    text: str
    pile_set_name: str
    utf8: bytes = field(default=b"", repr=False, compare=False)

    @property
    def address(self) -> str:
        """``"00.jsonl.zst:123"``: where to find the document again."""
        return f"{self.shard}:{self.line}"


def _parse(raw: bytes, shard: str, number: int) -> PileLine | Drop:
    where = f"{shard}:{number}"
    try:
        payload = orjson.loads(raw)  # ~1.5x faster than decode + json.loads on Pile lines
    except orjson.JSONDecodeError:  # the standard library says why, as it always did
        payload = _standard_payload(raw, where)
        if isinstance(payload, Drop):
            return payload
    text = payload.get("text") if isinstance(payload, dict) else None
    if not isinstance(text, str):
        return Drop("missing_text", where, f"{where}: no string 'text' field")
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates from \ud800-style JSON escapes
        return Drop("invalid_unicode", where, f"{where}: {exc}")
    if not text or text.isspace():  # ``not text.strip()`` without copying the text
        return Drop("empty_text", where)
    meta = payload.get("meta")
    set_name = meta.get("pile_set_name") if isinstance(meta, dict) else None
    return PileLine(shard, number, text, set_name if isinstance(set_name, str) else UNKNOWN_SET, encoded)


def _standard_payload(raw: bytes, where: str) -> Any:
    """The line decoded by the standard library, or the drop that names what is wrong with it.

    orjson refuses some lines the standard library reads (``NaN``, integers beyond 64 bits, lone
    surrogate escapes, very deep nesting) and names errors its own way, so a line orjson refuses
    is read again here: the reasons and messages stay those of ``json``.
    """
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Drop("invalid_utf8", where, f"{where}: {exc}")
    try:
        return parse_json_line(decoded)
    except ValueError as exc:  # not JSON, or nested too deeply: one bad line, not a failed shard
        return Drop("bad_json", where, f"{where}: {exc}")


class _LineBuffer:
    """The pieces of the current line, dropped (only counted) once it grows past the bound."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pieces: list[bytes] = []
        self.size = 0

    def add(self, piece: bytes) -> None:
        self.size += len(piece)
        if self.size <= self.limit:
            self.pieces.append(piece)
        else:
            self.pieces.clear()

    def take(self) -> bytes | _Oversized:
        """The finished line (or its stand-in), and a fresh buffer for the next one."""
        line: bytes | _Oversized = b"".join(self.pieces) if self.size <= self.limit else _Oversized(self.size)
        self.pieces, self.size = [], 0
        return line


def _raw_lines(path: Path, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | _Oversized]:
    """Lines of a Pile shard without their newline; ``.zst`` checked for truncation, others via open_binary."""
    buffer = _LineBuffer(limit)
    if path.name.lower().endswith(".zst"):
        for block in zstd_chunks(path, read_size=_READ_SIZE):
            if b"\n" not in block:
                buffer.add(block)
                continue
            first, *lines, rest = block.split(b"\n")
            buffer.add(first)
            yield buffer.take()
            yield from (line if len(line) <= limit else _Oversized(len(line)) for line in lines)
            buffer.add(rest)
        if buffer.size:
            yield buffer.take()
        return
    with open_binary(path) as stream:
        while piece := stream.readline(_READ_SIZE):
            ended = piece.endswith(b"\n")
            buffer.add(piece[:-1] if ended else piece)
            if ended:
                yield buffer.take()
        if buffer.size:
            yield buffer.take()


def iter_pile(path: Path, shard: str | None = None, max_line_bytes: int = MAX_LINE_BYTES
              ) -> Iterator[PileLine | Drop]:
    """Yield every line of a Pile shard as a :class:`PileLine` or a :class:`Drop`; never raise for bad data."""
    shard = shard or path.name
    number = 0
    try:
        for number, raw in enumerate(_raw_lines(path, max_line_bytes), start=1):
            if isinstance(raw, _Oversized):
                yield Drop("record_too_large", f"{shard}:{number}",
                           f"{shard}:{number}: line of {raw.size:,} bytes > {max_line_bytes:,}; skipped unread")
                continue
            if not raw.strip():
                yield Drop("empty_line", f"{shard}:{number}")
                continue
            yield _parse(raw, shard, number)
    except (*CODEC_ERRORS, TruncatedInputError) as exc:  # type: ignore[misc]  # mypy: no star in except
        where = f"{shard}:{number + 1}"
        yield Drop("truncated_input", where, f"{shard}: unreadable after line {number}: {type(exc).__name__}: {exc}")
