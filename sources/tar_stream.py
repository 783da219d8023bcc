"""Stream a (compressed) tar archive member by member, noticing when it was cut short.

``tarfile``'s own stream mode (``r|gz``) decompresses with a bare zlib object and takes a
truncated ``.tar.gz`` for a complete one: the members after the cut silently vanish. Reading the
archive through :func:`core.compressed.open_binary` (whose gzip, bz2, xz and zstd readers raise
at an early end) turns a cut into an exception the readers count as one ``truncated_input``
drop. Members are only ever read through ``extractfile``; nothing is written to disk.
"""

from __future__ import annotations

import contextlib
import gzip
import tarfile
from collections.abc import Iterator
from pathlib import Path

from core.compressed import open_binary


@contextlib.contextmanager
def open_tar_stream(path: Path) -> Iterator[tarfile.TarFile]:
    """A forward-only TarFile over ``path`` (``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``, ``.tar.xz``, ``.tar.zst``)."""
    name = path.name.lower()
    with (gzip.open(path, "rb") if name.endswith(".tgz") else open_binary(path)) as raw, \
            tarfile.open(fileobj=raw, mode="r|") as archive:
        yield archive
