"""Fault injection, tar packages read through :mod:`sources.formats.tar_stream` (issue 24 item 11).

docs/reliability.md promises that an archive member with a hostile path (``../``, absolute, a
link or a device) is refused as ``unsafe_archive``. The package is a real ``.tar.gz`` written by
:mod:`tarfile`, laid out as the released ``mathematics_dataset-v1.0.tar.gz``.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from core.document import Document, Drop
from sources.dmmath import DmMathSettings, iter_package
from tests.fixed import add_tar_member, gzip_bytes

MODULE = b"".join(f"Solve {n}*k = {2 * n} for k.\n2\n".encode() for n in range(1, 30))


def write_package(path: Path) -> Path:
    """The package: two readable modules, a ``../`` path, an absolute path and a link out of it
    (fixed member headers, gzip mtime 0, so the same bytes every run)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        add_tar_member(tar, "mathematics_dataset-v1.0/train-easy/algebra__linear_1d.txt", MODULE)
        add_tar_member(tar, "../train-easy/numbers__gcd.txt", MODULE)
        add_tar_member(tar, "/tmp/train-easy/numbers__lcm.txt", MODULE)
        add_tar_member(tar, "mathematics_dataset-v1.0/train-easy/numbers__is_prime.txt", b"",
                       type=tarfile.SYMTYPE, linkname="../../../../etc/passwd")
        add_tar_member(tar, "mathematics_dataset-v1.0/train-medium/algebra__linear_1d.txt", MODULE)
    path.write_bytes(gzip_bytes(buffer.getvalue()))
    return path


def test_hostile_members_are_refused_and_the_others_read(tmp_path: Path) -> None:
    path = write_package(tmp_path / "mathematics_dataset-v1.0.tar.gz")
    records = list(iter_package(path, DmMathSettings(splits=("train-easy", "train-medium"))))
    drops = [(r.reason, r.record) for r in records if isinstance(r, Drop)]
    name = path.name
    assert drops == [("unsafe_archive", f"{name}:../train-easy/numbers__gcd.txt"),
                     ("unsafe_archive", f"{name}:/tmp/train-easy/numbers__lcm.txt"),
                     ("unsafe_archive", f"{name}:mathematics_dataset-v1.0/train-easy/numbers__is_prime.txt")]
    files = sorted({str(r.meta["file"]) for r in records if isinstance(r, Document)})
    assert files == [f"{name}:mathematics_dataset-v1.0/train-easy/algebra__linear_1d.txt",
                     f"{name}:mathematics_dataset-v1.0/train-medium/algebra__linear_1d.txt"]
