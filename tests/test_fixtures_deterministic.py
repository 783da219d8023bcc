"""Every generated fixture and sample input is byte-deterministic, enforced two ways (issue 34).

A property test that cuts a generated file at a drawn fraction, and each ``@example`` pinning one
such cut, means one byte position only if the file is the same bytes on every run. warcio's random
record ids and dates made ``tests/faults/test_warc.py``'s pinned case land on another byte each
run (it failed 5 runs in 11). So:

- each fixture writer (the test modules' builders and every ``sources.samples`` writer) is built
  twice, the second time in a folder of another name and depth with the clock a year and a month
  later (``time.time`` and warcio's clock), and the two trees must be the same bytes; a failure
  names the writer and the files that differ;
- a static rule (:mod:`tests.fixture_rules`) finds the stock calls that stamp the time, chance or a
  file's name (``gzip.compress`` with no ``mtime``, ``gzip.open`` for writing, ``tarfile.open``
  ``w:gz``, ``ZipFile.writestr`` with a bare name, py7zr, warcio's plain ``WARCWriter``) in every
  test module and sample writer, so a new fixture cannot bring them back unnoticed.

Both checks are shown to fail on a stamping writer.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import subprocess
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

import sources.samples.arxiv as arxiv_sample
import sources.samples.c4 as c4_sample
import sources.samples.commoncrawl as commoncrawl_sample
import sources.samples.dialogue as dialogue_sample
import sources.samples.dmmath as dmmath_sample
import sources.samples.github as github_sample
import sources.samples.gutenberg as gutenberg_sample
import sources.samples.pile as pile_sample
import sources.samples.pubmed as pubmed_sample
import sources.samples.reasoning as reasoning_sample
import sources.samples.scibooks as scibooks_sample
import sources.samples.stack_code as stack_code_sample
import sources.samples.stackexchange as stackexchange_sample
import sources.samples.wikipedia as wikipedia_sample
from tests import fixed
from tests.faults import test_arxiv as faults_arxiv
from tests.faults import test_jsonl as faults_jsonl
from tests.faults import test_memory_bombs as faults_bombs
from tests.faults import test_reader_dmmath as faults_dmmath
from tests.faults import test_reader_tar as faults_tar
from tests.faults import test_reddit_bad_bytes as faults_reddit
from tests.faults import test_stackexchange as faults_stackexchange
from tests.faults import test_warc as faults_warc
from tests.fixture_rules import stamping_calls
from tests.flows import test_silent_inputs as silent
from tests.sources import test_arxiv as sources_arxiv
from tests.sources import test_c4 as sources_c4
from tests.sources import test_commoncrawl as sources_commoncrawl
from tests.sources import test_dialogue_corpora as sources_dialogue
from tests.sources import test_github as sources_github
from tests.sources import test_pile as sources_pile
from tests.sources import test_scibooks as sources_scibooks
from tests.sources import test_scibooks_epub as sources_epub
from tests.sources import test_stackexchange as sources_stackexchange

REPO = Path(__file__).resolve().parent.parent
#: How far the second build's clock is moved: past any second, day, month or year boundary.
LATER = dt.timedelta(days=400, seconds=3_723)

Writer = Callable[[Path], object]


def _bytes_into(name: str, make: Callable[[], bytes]) -> Writer:
    """A writer for a builder that returns bytes: ``make()`` written as ``name``."""
    return lambda directory: (directory / name).write_bytes(make())


def _fixed_helpers(directory: Path) -> None:
    """Every helper of :mod:`tests.fixed` once."""
    with open(directory / "f.warc.gz", "wb") as handle:
        writer = fixed.FixedWARCWriter(handle, gzip=True, key="f")
        writer.write_record(writer.create_warcinfo_record("f.warc.gz", {"software": "test"}))
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record("https://example.org/", "response",
                                                      payload=io.BytesIO(b"<p>x</p>"), http_headers=http))
    (directory / "f.gz").write_bytes(fixed.gzip_bytes(b"text\n" * 100))
    with fixed.gzip_text(directory / "t.jsonl.gz") as handle:
        handle.write('{"text": "caf\u00e9"}\n')
    (directory / "f.tar").write_bytes(fixed.tar_bytes([("a/b.txt", b"b"), ("c.txt", b"c" * 600)]))
    with zipfile.ZipFile(directory / "f.zip", "w") as archive:
        archive.writestr(fixed.zip_info("a.txt"), b"a" * 300)
    fixed.write_7z(directory / "f.7z", {"Posts.xml": b"<posts/>", "Users.xml": b"<users/>"})


def _github_repos(directory: Path) -> None:
    """The sample clones: their files, and each ``HEAD`` commit id (git's own files hold stat times)."""
    heads = []
    for root in github_sample.write_sample_repos(directory / "repos"):
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        heads.append(f"{Path(root).relative_to(directory).as_posix()} {head.stdout.strip()}\n")
    (directory / "heads.txt").write_text("".join(heads))


def _sample_writers() -> dict[str, Writer]:
    """``write_sample_inputs`` of every source, and the other sample writers the tests use."""
    modules = [arxiv_sample, c4_sample, commoncrawl_sample, dialogue_sample, dmmath_sample, github_sample,
               gutenberg_sample, pile_sample, pubmed_sample, reasoning_sample, scibooks_sample, stack_code_sample,
               stackexchange_sample]
    writers: dict[str, Writer] = {f"{m.__name__}.write_sample_inputs": m.write_sample_inputs for m in modules}
    writers.update({
        "sources.samples.wikipedia.write_sample_dumps": wikipedia_sample.write_sample_dumps,
        "sources.samples.wikipedia.write_sample_multistream": wikipedia_sample.write_sample_multistream,
        "sources.samples.github.write_sample_repos": _github_repos,
        "sources.samples.dialogue.write_reddit_comments":
            lambda d: dialogue_sample.write_reddit_comments(d / "RC_2005-12.zst", 200),
        "sources.samples.scibooks.write_sample_pdf": lambda d: scibooks_sample.write_sample_pdf(d / "p.pdf"),
        "sources.samples.scibooks.write_sample_epub3": lambda d: scibooks_sample.write_sample_epub3(d / "3.epub"),
        "sources.samples.scibooks.write_sample_epub2": lambda d: scibooks_sample.write_sample_epub2(d / "2.epub"),
    })
    return writers


def _test_writers() -> dict[str, Writer]:
    """The fixture builders of the test modules (the property tests' first)."""
    page = sources_commoncrawl.page([sources_commoncrawl.BOILERPLATE[0], sources_commoncrawl.STORIES[0]])
    writers: dict[str, Writer] = {
        "tests.fixed": _fixed_helpers,
        "tests.faults.test_warc.build_warc": lambda d: faults_warc.build_warc(d / "whole.warc.gz"),
        "tests.faults.test_reader_tar.write_package":
            lambda d: faults_tar.write_package(d / "mathematics_dataset-v1.0.tar.gz"),
        "tests.faults.test_arxiv.bulk_tar": lambda d: faults_arxiv.bulk_tar(d / "bulk.tar", faults_arxiv.papers(4)),
        "tests.faults.test_jsonl.zst": _bytes_into("00.jsonl.zst", lambda: faults_jsonl.zst(faults_jsonl.jsonl())),
        "tests.faults.test_stackexchange._compress": _bytes_into(
            "Posts.xml.gz", lambda: faults_stackexchange._compress(faults_stackexchange.posts_xml(50), ".gz")),
        "tests.faults.test_reader_dmmath._write": lambda d: faults_dmmath._write(d / "m.txt.gz", faults_dmmath._lines()),
        "tests.faults.test_reddit_bad_bytes.write_month":
            lambda d: faults_reddit.write_month(d / "RC.zst", [b'{"body": "x"}'] * 20),
        "tests.sources.test_commoncrawl.write_warc":
            lambda d: sources_commoncrawl.write_warc(d / "pages.warc.gz", [("http://a/1", page)]),
        "tests.sources.test_arxiv.tar_bytes": _bytes_into(
            "paper.tar.gz", lambda: sources_arxiv.gz(sources_arxiv.tar_bytes([("main.tex", sources_arxiv.INTRO)]))),
        "tests.sources.test_scibooks_epub.write_epub3":
            lambda d: sources_epub.write_epub3(d / "book.epub", {"ch1.xhtml": "<p>one</p>"}),
        "tests.sources.test_scibooks._zip": _bytes_into("b.epub", lambda: sources_scibooks._zip({"a": b"1"})),
        "tests.sources.test_dialogue_corpora.zip_bytes": _bytes_into(
            "d.zip", lambda: sources_dialogue.zip_bytes({"a.json": b"[]"})),
        "tests.sources.test_stackexchange.make_7z": lambda d: sources_stackexchange.make_7z(d / "s.7z", {"Posts.xml": b"<posts/>"}),
        "tests.sources.test_c4.write_c4": lambda d: sources_c4.write_c4(d / "c4.json.gz", ['{"text": "a"}']),
        "tests.sources.test_github.write_rows": lambda d: sources_github.write_rows(d / "bq.jsonl.gz", [{"a": 1}]),
        "tests.faults.test_memory_bombs.huge_page_pdf": lambda d: faults_bombs.huge_page_pdf(d / "huge.pdf"),
        "tests.faults.test_memory_bombs.text_bomb_pdf": lambda d: faults_bombs.text_bomb_pdf(d / "bomb.pdf"),
        "tests.sources.test_pile.write_pile":
            lambda d: sources_pile.write_pile(d / "00.jsonl.zst", [sources_pile.pile_line("x")] * 9, frames=3),
    }
    writers.update({f"tests.flows.test_silent_inputs.{case.write.__name__}": case.write
                    for case in silent.EMPTY.values()})
    writers.update({f"tests.flows.test_silent_inputs.{write.__name__}": write for write, _ in silent.MIXED.values()})
    return writers


WRITERS: dict[str, Writer] = {**_test_writers(), **_sample_writers()}


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by its relative path (git's own folders left out)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def _build(write: Writer, directory: Path) -> dict[str, bytes]:
    directory.mkdir(parents=True)
    write(directory)
    return _tree(directory)


class _LaterDatetime(dt.datetime):
    """``datetime`` whose ``now`` is :data:`LATER` ahead (warcio dates records by ``datetime.now``)."""

    @classmethod
    def now(cls, tz: dt.tzinfo | None = None) -> _LaterDatetime:  # type: ignore[override]
        return super().now(tz) + LATER


def _build_later(write: Writer, directory: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """:func:`_build` with the clock :data:`LATER` ahead, for the writers that read it."""
    import time

    import warcio.recordbuilder

    real = time.time
    with monkeypatch.context() as patch:
        patch.setattr(time, "time", lambda: real() + LATER.total_seconds())
        patch.setattr(warcio.recordbuilder, "datetime", _LaterDatetime)
        return _build(write, directory)


def _differences(first: dict[str, bytes], second: dict[str, bytes]) -> list[str]:
    return sorted(name for name in first.keys() | second.keys() if first.get(name) != second.get(name))


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_writer_is_byte_deterministic(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _build(WRITERS[name], tmp_path / "first")
    second = _build_later(WRITERS[name], tmp_path / "the-second-build" / "elsewhere", monkeypatch)
    assert first, f"{name} wrote nothing"
    assert not _differences(first, second), f"{name} wrote other bytes the second time: {_differences(first, second)}"


def _stamping(directory: Path) -> None:
    """The stock writers as a test would call them: each stamps the clock or chance."""
    (directory / "a.gz").write_bytes(gzip.compress(b"text"))
    with open(directory / "a.warc.gz", "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        writer.write_record(writer.create_warcinfo_record("a.warc.gz", {"software": "test"}))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.addfile(tarfile.TarInfo("empty"))
    (directory / "a.tar.gz").write_bytes(buffer.getvalue())


def test_the_check_sees_a_stamping_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison is not vacuous: the stock gzip, warcio and tarfile writers fail it."""
    first = _build(_stamping, tmp_path / "first")
    second = _build_later(_stamping, tmp_path / "second", monkeypatch)
    assert _differences(first, second) == ["a.gz", "a.tar.gz", "a.warc.gz"]


#: Writers that fix the stamped fields themselves (checked by the build-twice test above).
ALLOWED = {
    "sources/samples/commoncrawl.py": frozenset({"write_warc", "write_wet"}),  # explicit record ids and dates
    "sources/samples/stackexchange.py": frozenset({"write_7z"}),  # member times set after py7zr stamps them
    "sources/samples/scibooks.py": frozenset({"write_sample_pdf"}),  # saved through reproducible_pdf
}


def _scanned() -> list[Path]:
    return sorted([*(REPO / "tests").rglob("*.py"), *(REPO / "sources" / "samples").glob("*.py")])


def test_no_fixture_writer_stamps_the_clock() -> None:
    found = [f"{path.relative_to(REPO).as_posix()}:{line}: {why}"
             for path in _scanned() if path.name != "test_fixtures_deterministic.py"
             for line, why in stamping_calls(path, ALLOWED.get(path.relative_to(REPO).as_posix(), frozenset()))]
    assert not found, "fixtures that differ from run to run:\n" + "\n".join(found)


def test_the_rule_sees_each_stamping_call(tmp_path: Path) -> None:
    """Each rule fires on its call (this module's own stamping writer among them), and not on the fixed forms."""
    source = tmp_path / "case.py"
    source.write_text(
        "import gzip, tarfile, zipfile, py7zr, pypdfium2\n"
        "gzip.compress(b'x')\n"
        "gzip.compress(b'x', mtime=0)\n"
        "codecs = {'.gz': gzip.compress}\n"
        "gzip.open(p, 'wt')\n"
        "gzip.open(p, 'rt')\n"
        "gzip.GzipFile(p, 'wb')\n"
        "gzip.GzipFile(filename='', mode='wb', fileobj=f, mtime=0)\n"
        "tarfile.open(p, 'w:gz')\n"
        "with tarfile.open(p, 'w') as tar:\n    tar.add(q)\n"
        "z.writestr('name', b'x')\n"
        "z.writestr(zipfile.ZipInfo('name'), b'x')\n"
        "for info in src.infolist():\n    z.writestr(info, b'x')\n"
        "py7zr.SevenZipFile(p, 'w')\n"
        "WARCWriter(handle, gzip=True)\n"
        "FixedWARCWriter(handle, gzip=True)\n"
        "pdf = pypdfium2.PdfDocument.new()\n"
        "pdf.save(p)\n")
    assert [line for line, _ in sorted(stamping_calls(source))] == [2, 4, 5, 7, 9, 11, 12, 16, 17, 20]
    assert len(list(stamping_calls(Path(__file__)))) == 3  # _stamping's three calls
