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
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

import zstandard


class TruncatedInputError(EOFError):
    """The compressed stream ended early or is corrupt (an EOFError, like bz2's and gzip's)."""


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
        return cast(BinaryIO, bz2.open(path, "rb"))
    if name.endswith(".gz"):
        return cast(BinaryIO, gzip.open(path, "rb"))
    if name.endswith(".xz"):
        return cast(BinaryIO, lzma.open(path, "rb"))
    if name.endswith(".zst"):
        return io.BufferedReader(_ZstdFrames(path), buffer_size=1 << 20)
    return open(path, "rb")


def read_blocks(stream: BinaryIO, block_size: int = 1 << 20) -> Iterator[bytes]:
    """Yield ``stream`` in blocks of about ``block_size`` bytes, keeping the data before a cut.

    ``stream.read(n)`` on a gzip/bz2/xz stream that ends early raises ``EOFError`` and throws
    away everything it had decompressed for that call, up to a whole block of good data. Here a
    block is assembled from ``read1`` calls (one decompressor step each), so on a codec error the
    partial block is yielded first and then :class:`TruncatedInputError` is raised: the caller
    keeps every byte the codec could produce and still learns that the input was cut.
    """
    read = getattr(stream, "read1", stream.read)
    while True:
        parts: list[bytes] = []
        size = 0
        try:
            while size < block_size:
                part = read(block_size - size)
                if not part:
                    break
                parts.append(part)
                size += len(part)
        except CODEC_ERRORS as exc:
            if parts:
                yield b"".join(parts)
            raise TruncatedInputError(f"{type(exc).__name__}: {exc}") from exc
        if not parts:
            return
        yield b"".join(parts) if len(parts) > 1 else parts[0]
        if size < block_size:
            return


class WindowTooLargeError(ValueError):
    """A zstd frame needs a larger window than the configured limit."""


def zstd_chunks(path: Path, max_window_size: int = 0, read_size: int = 1 << 20) -> Generator[bytes, None, None]:
    """Decompressed bytes of every frame of a (multi-frame) zstd file, in order.

    ``zstandard``'s ``stream_reader`` ends silently inside an incomplete frame, which would
    hide a truncated download; decompressing frame by frame tells "ended between frames"
    (complete) from "ended inside one" (truncated) and raises :class:`TruncatedInputError`.
    With ``max_window_size`` set (Pushshift dumps need 2 GiB), a frame asking for more raises
    :class:`WindowTooLargeError` instead of allocating it; 0 keeps zstandard's default limit.
    """
    context = zstandard.ZstdDecompressor(max_window_size=max_window_size)
    frame = context.decompressobj()
    fed = False
    with open(path, "rb") as handle:
        while block := handle.read(read_size):
            while block:
                try:
                    out = frame.decompress(block)
                except zstandard.ZstdError as exc:
                    if max_window_size and ("too much memory" in str(exc) or "window" in str(exc).lower()):
                        raise WindowTooLargeError(f"{path.name}: {exc} (limit {max_window_size} bytes)") from exc
                    raise
                fed = True
                if out:
                    yield out
                if not frame.eof:
                    break
                block = frame.unused_data
                frame, fed = context.decompressobj(), False
    if fed and not frame.eof:
        raise TruncatedInputError(f"{path.name}: the last zstd frame is incomplete")


class _ZstdFrames(io.RawIOBase):
    """:func:`zstd_chunks` as a readable stream (for :func:`open_binary`)."""

    def __init__(self, path: Path, read_size: int = 1 << 20) -> None:
        super().__init__()
        self._chunks: Generator[bytes, None, None] = zstd_chunks(path, read_size=read_size)
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = memoryview(chunk)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]  # a view: no copy of the rest
        return size

    def close(self) -> None:
        self._chunks.close()
        super().close()
