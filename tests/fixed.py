"""Byte-deterministic writers for the files tests generate: the same call gives the same bytes on every run.

Why: a property test that cuts a generated file at a drawn fraction, and every ``@example`` that
pins one such case, means a byte position only if the file's bytes are fixed. The stock writers
stamp the moment or chance into them: warcio a random ``WARC-Record-ID`` (uuid4) and the current
``WARC-Date``; ``gzip.compress``/``GzipFile`` the current time (and ``gzip.open`` the file's name);
``ZipFile.writestr`` with a bare name the local time; py7zr the current time; ``tarfile.open``
in ``w:gz`` mode both the time and the name; PDFium the save time and a time-based file ID. A record id's hex and a date's digits then move every
later byte of a compressed member, so the same fraction lands on another byte each run (issue 34:
``tests/faults/test_warc.py`` failed 5 runs in 11 from that alone).

These helpers fix every such field. ``tests/test_fixtures_deterministic.py`` builds each fixture
writer twice (the second time in another folder, with the clock a year later) and compares bytes,
and checks statically that no test or sample writer calls a stamping writer directly.
Imported as ``tests.fixed`` (the test run's working directory is the repository root).
"""

from __future__ import annotations

import gzip
import io
import tarfile
import uuid
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from warcio.warcwriter import WARCWriter

from sources.samples.scibooks import reproducible_pdf
from sources.samples.stackexchange import write_7z as _write_7z

#: The one moment every fixture is dated: a WARC record gets it plus its number in seconds.
FIXED_EPOCH = 1_673_769_600  # 2023-01-15T08:00:00Z
WARC_DATE = "2023-01-15T08:{minute:02d}:{second:02d}Z"
#: A zip member's date (``ZipInfo``'s own default is 1980-01-01; a named one reads more plainly).
ZIP_DATE = (2023, 1, 15, 8, 0, 0)
#: The namespace of fixture record ids (``uuid5`` of the writer's key and the record's number).
NAMESPACE = uuid.UUID("6f1c58f2-3a0e-4bb0-9a77-5b0d1e2c3f40")


def gzip_bytes(data: bytes, level: int = 9) -> bytes:
    """``data`` as one gzip member with mtime 0 and no file name (``gzip.compress`` stamps the time)."""
    return gzip.compress(data, compresslevel=level, mtime=0)


@contextmanager
def gzip_writer(path: Path, level: int = 9) -> Iterator[IO[bytes]]:
    """A binary gzip stream into ``path`` with mtime 0 and no name (``gzip.open`` stores both)."""
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                 compresslevel=level) as packed:
        yield packed


@contextmanager
def gzip_text(path: Path, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text gzip stream into ``path``, as :func:`gzip_writer` (for ``gzip.open(path, "wt")``)."""
    with gzip_writer(path) as packed, io.TextIOWrapper(packed, encoding=encoding) as text:
        yield text


def tar_info(name: str, size: int = 0, **fields: Any) -> tarfile.TarInfo:
    """A regular member's header with every stamped field fixed (mtime, owner, mode); ``fields``
    override any (``type=tarfile.SYMTYPE, linkname=...`` for a link)."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, FIXED_EPOCH, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    for key, value in fields.items():
        setattr(info, key, value)
    return info


def add_tar_member(tar: tarfile.TarFile, name: str, data: bytes, **fields: Any) -> None:
    """Add ``data`` to ``tar`` under ``name`` with :func:`tar_info`'s fixed header."""
    tar.addfile(tar_info(name, len(data), **fields), io.BytesIO(data))


def tar_bytes(members: Iterable[tuple[str, bytes]], fmt: int = tarfile.GNU_FORMAT) -> bytes:
    """An uncompressed tar of ``members`` (name, data), every header fixed."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        for name, data in members:
            add_tar_member(tar, name, data)
    return buffer.getvalue()


def zip_info(name: str, compress_type: int = zipfile.ZIP_DEFLATED) -> zipfile.ZipInfo:
    """A zip member's header dated :data:`ZIP_DATE` (``writestr`` with a bare name dates it now)."""
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    info.compress_type = compress_type
    return info


def write_7z(path: Path, members: Mapping[str, bytes]) -> Path:
    """A 7z of ``members`` with fixed member times (py7zr stamps each member with now)."""
    _write_7z(path, dict(members))
    return path


def save_pdf(pdf: Any, path: Path) -> Path:
    """Save a pypdfium2 document as ``path`` with a fixed ``/CreationDate`` and a content-hashed ``/ID``
    (PDFium stamps the save time and a time-based ID; see ``sources.samples.scibooks.reproducible_pdf``)."""
    buffer = io.BytesIO()
    pdf.save(buffer)
    path.write_bytes(reproducible_pdf(buffer.getvalue()))
    return path


class FixedWARCWriter(WARCWriter):  # type: ignore[misc]
    """warcio's writer with each record's ``WARC-Record-ID`` and ``WARC-Date`` given explicitly.

    Record ``n`` of a writer keyed ``key`` gets ``uuid5(NAMESPACE, f"{key}#{n}")`` and
    :data:`WARC_DATE` plus ``n`` seconds, unless the caller passes its own; everything else is
    warcio's (digests, gzip members). ``key`` tells apart files that must not share record ids.
    """

    def __init__(self, filebuf: IO[bytes], *args: Any, key: str = "fixture", **kwargs: Any) -> None:
        super().__init__(filebuf, *args, **kwargs)
        self.key = key
        self.records = 0

    def fixed_headers(self) -> dict[str, str]:
        """The next record's id and date."""
        number, self.records = self.records, self.records + 1
        return {"WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(NAMESPACE, f'{self.key}#{number}')}>",
                "WARC-Date": WARC_DATE.format(minute=(number // 60) % 60, second=number % 60)}

    def create_warc_record(self, uri: str, record_type: str, payload: Any = None, length: int | None = None,
                           warc_content_type: str = "", warc_headers_dict: Mapping[str, str] | None = None,
                           warc_headers: Any = None, http_headers: Any = None) -> Any:
        headers = {**self.fixed_headers(), **(warc_headers_dict or {})}
        return super().create_warc_record(uri, record_type, payload=payload, length=length,
                                          warc_content_type=warc_content_type, warc_headers_dict=headers,
                                          warc_headers=warc_headers, http_headers=http_headers)

    def create_warcinfo_record(self, filename: str, info: Mapping[str, object]) -> Any:
        """warcio's warcinfo record (``name: value`` lines), with the fixed id and date."""
        payload = "".join(f"{name}: {value}\r\n" for name, value in info.items() if value).encode("utf-8")
        headers = {"WARC-Filename": filename} if filename else {}
        return self.create_warc_record("", "warcinfo", payload=io.BytesIO(payload), length=len(payload),
                                       warc_content_type="application/warc-fields", warc_headers_dict=headers)
