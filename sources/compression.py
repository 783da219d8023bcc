"""Open compressed inputs as binary streams by their file name, in constant memory.

``bz2`` handles multistream files (Wikipedia's ``*-multistream.xml.bz2``) transparently.
Truncated inputs surface as :class:`TruncatedInputError`, whatever the codec, so readers can
turn them into one counted ``truncated_input`` drop instead of a crash.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from pathlib import Path
from typing import BinaryIO

import zstandard


class TruncatedInputError(Exception):
    """The compressed stream ended early or is corrupt."""


#: Exceptions the decompressors raise on truncated or corrupt data.
CODEC_ERRORS: tuple[type[BaseException], ...] = (
    EOFError,
    OSError,
    lzma.LZMAError,
    zlib.error,
    zstandard.ZstdError,
)


def open_binary(path: Path) -> BinaryIO:
    """Open ``path`` for binary reading, decompressing by suffix (.bz2 .gz .xz .zst or none)."""
    name = path.name.lower()
    if name.endswith(".bz2"):
        return bz2.open(path, "rb")
    if name.endswith(".gz"):
        return gzip.open(path, "rb")
    if name.endswith(".xz"):
        return lzma.open(path, "rb")
    if name.endswith(".zst"):
        raw = open(path, "rb")  # noqa: SIM115 - owned by the returned reader
        reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
        return io.BufferedReader(reader, buffer_size=1 << 20)  # type: ignore[arg-type]
    return open(path, "rb")
