"""Split a multistream Wikipedia dump into page-range tasks by its ``-multistream-index.txt.bz2``.

Why: the largest dump (enwiki, ~22 GB of bz2) is one input; read as one task it takes days on
one core whatever the cluster. A ``pages-articles-multistream.xml.bz2`` is a concatenation of
independent bz2 streams: the first holds ``<mediawiki>`` and ``<siteinfo>``, each following
one holds 100 whole ``<page>`` elements, and the last holds ``</mediawiki>``. Its index has one
line per page, ``offset:page_id:title``, where ``offset`` is the byte offset of the stream
holding the page. So any run of streams can be decompressed on its own, starting at an offset
from the index, and cut into pages exactly as the whole file would be.

Splittable inputs: multistream bz2 dumps with their index. Not splittable: the plain
``pages-articles.xml.bz2`` (one stream per file part; no offsets), xz/gz dumps, and
StackExchange's 7z archives (one solid LZMA block).

Pure functions: :func:`read_index` (the stream offsets), :func:`plan_ranges` (N byte ranges on
stream boundaries, balanced by compressed bytes), :func:`read_streams` (decompressed bytes of a
byte range of streams). :class:`sources.wikipedia.WikipediaReader` takes a ``byte_range`` and a
``header_end`` and reads the site info from the first stream and pages from its range only;
the records of the ranges, concatenated in order, are those of the one-task run.

For the flow: :func:`index_path` finds the index beside a dump, :func:`plan_split` cuts a dump
into ranges of about ``split_bytes`` compressed bytes (``None``: not splittable, read whole),
and :func:`range_key` / :func:`parse_range_key` name a range task's input
``<dump key>#<start>-<end>``, so each range has its own resume marker.
"""

from __future__ import annotations

import bz2
import itertools
import math
import re
from collections.abc import Iterator
from pathlib import Path

from core.compressed import TruncatedInputError

_READ_BYTES = 1 << 20
#: ``enwiki-20240601-pages-articles-multistream.xml.bz2`` and the part files
#: ``enwiki-20240601-pages-articles-multistream1.xml-p1p41242.bz2``; their indexes are
#: ``…-multistream-index.txt.bz2`` and ``…-multistream-index1.txt-p1p41242.bz2``.
_MULTISTREAM_NAME = re.compile(r"^(?P<stem>.*-multistream)(?P<part>\d*)\.xml(?P<pages>-p\d+p\d+)?\.bz2$")
_RANGE_KEY = re.compile(r"^(?P<key>.+)#(?P<start>\d+)-(?P<end>\d+)$")


def index_path(dump: Path) -> Path | None:
    """The ``-multistream-index`` file beside a multistream dump, or None (not multistream, or no index)."""
    match = _MULTISTREAM_NAME.match(dump.name)
    if match is None:
        return None
    index = dump.with_name(f"{match['stem']}-index{match['part']}.txt{match['pages'] or ''}.bz2")
    return index if index.is_file() else None


def first_stream_end(path: Path) -> int:
    """Byte offset where the dump's first bz2 stream (``<mediawiki>`` + ``<siteinfo>``) ends.

    Every range task reads this stream for the site info; finding its end by decoding it
    (a few KB) spares each task from reading the whole index again.
    """
    decompressor, consumed = bz2.BZ2Decompressor(), 0
    with open(path, "rb") as handle:
        while not decompressor.eof:
            data = handle.read(1 << 16)
            if not data:
                raise TruncatedInputError(f"{path}: the first bz2 stream is cut")
            decompressor.decompress(data)
            consumed += len(data)
    return consumed - len(decompressor.unused_data)


def plan_split(dump: Path, split_bytes: int) -> list[tuple[int, int]] | None:
    """Page ranges of about ``split_bytes`` compressed bytes each, or None when the dump is read whole.

    None when splitting is off (``split_bytes <= 0``), the dump has no index beside it, or it
    would make a single range. Index offsets at or past the end of the file (a cut download)
    are left out: the last range then ends at the cut, inside a stream, and its reader reports
    ``truncated_input`` while the ranges before it are read in full.
    """
    if split_bytes <= 0:
        return None
    index = index_path(dump)
    if index is None:
        return None
    size = dump.stat().st_size
    offsets = [offset for offset in read_index(index) if offset < size]
    if not offsets:
        return None
    ranges = plan_ranges(offsets, size, math.ceil((size - offsets[0]) / split_bytes))
    return ranges if len(ranges) > 1 else None


def range_key(key: str, start: int, end: int, file_size: int) -> str:
    """``<key>#<start>-<end>``, offsets zero-padded to the file size's digits.

    Padding makes a dump's range markers and staging folders list in file order. (Exact dedup
    never sees range keys: the ranges are joined into the dump's staging first, :mod:`core.splits`.)
    """
    width = len(str(file_size))
    return f"{key}#{start:0{width}d}-{end:0{width}d}"


def parse_range_key(key: str) -> tuple[str, tuple[int, int]] | None:
    """``(dump key, (start, end))`` of a range task's key; None for a whole-input key.

    Only a multistream dump's name counts as a dump key, so a file that merely has ``#1-2``
    in its name is still read whole.
    """
    match = _RANGE_KEY.match(key)
    if match is None or _MULTISTREAM_NAME.match(match["key"]) is None:
        return None
    return match["key"], (int(match["start"]), int(match["end"]))


def read_index(path: Path) -> list[int]:
    """Distinct stream offsets of a ``-multistream-index.txt.bz2`` (or plain) index, ascending.

    Lines are ``offset:page_id:title`` (titles may hold colons). A line that does not start
    with a number is an error: an index that cannot be trusted must not cut a dump.
    """
    opener = bz2.open if path.name.endswith(".bz2") else open
    offsets: set[int] = set()
    with opener(path, "rb") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            head = line.split(b":", 1)[0]
            if not head.isdigit():
                raise ValueError(f"{path}: line {number} is not 'offset:page_id:title': {line[:80]!r}")
            offsets.add(int(head))
    return sorted(offsets)


def plan_ranges(offsets: list[int], file_size: int, tasks: int) -> list[tuple[int, int]]:
    """Cut the page streams into at most ``tasks`` byte ranges ``[start, end)``, on stream boundaries.

    Ranges cover ``offsets[0]`` to the end of the file (the last one also holds the closing
    ``</mediawiki>`` stream, which has no page), have about equal compressed sizes, and are
    ordered, so concatenating their records gives the one-task order. The header stream
    ``[0, offsets[0])`` belongs to no range: every task reads it for the site info.
    """
    if not offsets:
        return []
    if tasks < 1:
        raise ValueError("tasks must be at least 1")
    first = offsets[0]
    target = (file_size - first) / tasks
    cuts = [first]
    for offset in offsets[1:]:
        if len(cuts) < tasks and offset - first >= target * len(cuts):
            cuts.append(offset)
    cuts.append(file_size)
    return [(start, end) for start, end in itertools.pairwise(cuts) if end > start]


def read_streams(path: Path, start: int, end: int) -> Iterator[bytes]:
    """Decompressed bytes of the bz2 streams stored in ``path[start:end]``.

    ``start`` must be a stream's first byte (an index offset, or 0). Each stream is decoded by
    a fresh decompressor; a range that ends inside a stream raises
    :class:`core.compressed.TruncatedInputError` after yielding what it decoded, like a cut file.
    """
    decompressor, fed = bz2.BZ2Decompressor(), False
    with open(path, "rb") as handle:
        handle.seek(start)
        remaining = end - start
        while remaining > 0:
            data = handle.read(min(_READ_BYTES, remaining))
            if not data:
                break
            remaining -= len(data)
            while data:
                out = decompressor.decompress(data)
                fed = True
                if out:
                    yield out
                if not decompressor.eof:
                    break
                data = decompressor.unused_data  # the next stream starts right after this one
                decompressor, fed = bz2.BZ2Decompressor(), False
    if fed and not decompressor.eof:
        raise TruncatedInputError(f"{path}: byte range {start}-{end} ends inside a bz2 stream")
