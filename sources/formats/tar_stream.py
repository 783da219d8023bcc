"""Stream a (compressed) tar archive member by member, noticing when it was cut short.

``tarfile``'s own stream mode (``r|gz``) decompresses with a bare zlib object and takes a
truncated ``.tar.gz`` for a complete one: the members after the cut silently vanish. Reading the
archive through :func:`core.compressed.open_binary` (whose gzip, bz2, xz and zstd readers raise
at an early end) turns a cut into an exception the readers count as one ``truncated_input``
drop. Members are only ever read through ``extractfile``; nothing is written to disk.

Even so, a member whose path leaves the archive (``../``, absolute, a drive letter), a link or a
device is refused (:func:`unsafe_member`, the readers' ``unsafe_archive`` drop): a real package
never holds one, and its name must not reach a label or a path as if it were inside.
"""

from __future__ import annotations

import contextlib
import gzip
import re
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


def unsafe_member(member: tarfile.TarInfo) -> str | None:
    """Why a tar member must not be accepted (a link, a device, a path leaving the archive), or None."""
    if member.issym() or member.islnk():
        return f"link {member.name!r} -> {member.linkname!r}"
    if member.isdev():
        return f"device or fifo {member.name!r}"
    name = member.name.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or ".." in name.split("/"):
        return f"path {member.name!r} leaves the archive"
    return None
