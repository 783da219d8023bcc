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
"""

from __future__ import annotations

import bz2
import itertools
from collections.abc import Iterator
from pathlib import Path

from core.compressed import TruncatedInputError

_READ_BYTES = 1 << 20


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
