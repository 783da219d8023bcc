"""Compressed inputs: every codec reads back, and a cut-off file raises a truncation error."""

from __future__ import annotations

import bz2
import lzma
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from core.compressed import CODEC_ERRORS, TruncatedInputError, open_binary
from tests.fixed import gzip_bytes

CODECS = {
    ".bz2": bz2.compress,
    ".gz": gzip_bytes,
    ".xz": lzma.compress,
    ".zst": lambda data: zstandard.ZstdCompressor().compress(data[: len(data) // 2])
    + zstandard.ZstdCompressor().compress(data[len(data) // 2:]),  # two frames
    "": lambda data: data,
}


@pytest.mark.parametrize("suffix", list(CODECS))
@given(data=st.binary(max_size=5000))
@settings(max_examples=20, deadline=None)
def test_round_trip(tmp_path_factory: pytest.TempPathFactory, suffix: str, data: bytes) -> None:
    path = tmp_path_factory.mktemp("c") / f"file.xml{suffix}"
    path.write_bytes(CODECS[suffix](data))
    with open_binary(path) as stream:
        assert stream.read() == data


@pytest.mark.parametrize("suffix", [".bz2", ".gz", ".xz", ".zst"])
def test_truncated_file_raises(tmp_path: Path, suffix: str) -> None:
    data = ("line of text %d\n" * 1).encode() * 0 + b"".join(b"line %d\n" % i for i in range(20000))
    path = tmp_path / f"file{suffix}"
    compressed = CODECS[suffix](data)
    path.write_bytes(compressed[: len(compressed) - 50])
    with pytest.raises(CODEC_ERRORS), open_binary(path) as stream:
        while stream.read(65536):
            pass
    assert issubclass(TruncatedInputError, EOFError)
