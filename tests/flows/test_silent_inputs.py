"""No silent empty inputs (issue 16, point 4): every source flow, run from its command line.

For each source in :data:`flows.registry.SOURCES`, an input in the flow's real format, written by
the format's own library, that is valid but holds nothing to keep: a WARC with only its
``warcinfo`` record, an empty ``.json.gz`` export, a MediaWiki dump with a ``siteinfo`` and no
page, an empty tar, a StackExchange site folder whose ``Posts.xml`` has no row, an empty
``PubmedArticleSet``, a Parquet file with the right columns and no row... Where a file is one
record (a book, a PDF), the file with nothing in it (an empty book, a blank page) is read and
dropped, and the line gives the drop reasons. The run must name the input and why it gave
nothing in its final lines, and, keeping nothing at all, exit 1 with one line saying so. Beside
an input that has records, the empty one is still named and the run succeeds.

Runs in-process through each flow's ``main`` with the thread runner (~45 s for the module).
"""

from __future__ import annotations

import bz2
import gzip
import html
import importlib
import importlib.util
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pyarrow.parquet as pq
import pytest
import zstandard

from flows.registry import SOURCES
from sources.samples import dialogue as dialogue_sample
from sources.samples import pubmed as pubmed_sample
from sources.samples import reasoning as reasoning_sample
from sources.samples import stack_code as stack_code_sample
from sources.samples.wikipedia import dump_xml, write_sample_dumps
from tests.fixed import FixedWARCWriter, save_pdf


def _gzip(path: Path, data: bytes) -> Path:
    path.write_bytes(gzip.compress(data, mtime=0))
    return path


def warcinfo_only(directory: Path) -> Path:
    """A WARC file as a crawler starts it: the ``warcinfo`` record and no capture."""
    path = directory / "CC-MAIN-20230101000000-20230101010000-00000.warc.gz"
    with open(path, "wb") as handle:
        writer = FixedWARCWriter(handle, gzip=True, key=path.name)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "kinda-test", "format": "WARC/1.1"}))
    return path


def empty_c4(directory: Path) -> Path:
    return _gzip(directory / "c4-train.00000-of-01024.json.gz", b"")


def empty_github_export(directory: Path) -> Path:
    return _gzip(directory / "github-export-000.jsonl.gz", b"")


def pageless_dump(directory: Path) -> Path:
    """A MediaWiki export with its ``siteinfo`` and no ``page``."""
    path = directory / "enwiki-20220701-pages-articles-empty.xml.bz2"
    path.write_bytes(bz2.compress(dump_xml("en", []).encode("utf-8")))
    return path


def empty_book(directory: Path) -> Path:
    """A book file with nothing in it."""
    path = directory / "pg99999.txt"
    path.write_bytes(b"")
    return path


def empty_tar(directory: Path) -> Path:
    path = directory / "arXiv_src_0001_001.tar"
    with tarfile.open(path, "w"):
        pass
    return path


def rowless_site(directory: Path) -> Path:
    """An extracted site folder (as after ``7z x``) whose ``Posts.xml`` has no row."""
    site = directory / "empty.stackexchange.com"
    site.mkdir()
    (site / "Posts.xml").write_text('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n</posts>\n', encoding="utf-8")
    return site


def empty_article_set(directory: Path) -> Path:
    data = b'<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>\n</PubmedArticleSet>\n'
    return _gzip(directory / "pubmed24n0001.xml.gz", data)


def blank_pdf(directory: Path) -> Path:
    """A PDF of one blank page, saved by pdfium: a file that holds no text."""
    import pypdfium2

    path = directory / "blank.pdf"
    pdf = pypdfium2.PdfDocument.new()
    pdf.new_page(612, 792)
    save_pdf(pdf, path)
    pdf.close()
    return path


def empty_module(directory: Path) -> Path:
    """A released module file with no question."""
    path = directory / "mathematics_dataset-v1.0" / "train-easy" / "numbers__gcd.txt"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    return path


def rowless_parquet(directory: Path) -> Path:
    path = directory / "the-stack-empty.parquet"
    pq.write_table(stack_code_sample.stack_table().slice(0, 0), path)
    return path


def empty_reddit_month(directory: Path) -> Path:
    """A Pushshift comments month compressed as Pushshift does, with no comment."""
    path = directory / "RC_2006-02.zst"
    dialogue_sample.write_ndjson_zst(path, [])
    return path


def empty_jsonl_zst(directory: Path) -> Path:
    """A zstd-compressed JSON-lines file with no line (an OpenWebText2- or Pile-style export)."""
    path = directory / "empty.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b""))
    return path


def empty_gsm8k(directory: Path) -> Path:
    path = directory / "gsm8k-empty.jsonl"
    path.write_bytes(b"")
    return path


@dataclass(frozen=True)
class Case:
    """One flow's empty input and the command-line flag that takes it."""

    flag: str
    write: Callable[[Path], Path]
    expect: str = "yielded no records"


EMPTY: dict[str, Case] = {
    "commoncrawl": Case("--inputs", warcinfo_only),
    "c4": Case("--inputs", empty_c4),
    "github": Case("--inputs", empty_github_export),
    "wikipedia": Case("--dump", pageless_dump),
    "books": Case("--inputs", empty_book, expect="no_pg_header=1"),
    "arxiv": Case("--inputs", empty_tar),
    "stackexchange": Case("--inputs", rowless_site),
    "pubmed": Case("--abstracts", empty_article_set),
    "science_books": Case("--inputs", blank_pdf, expect="no_text=1"),
    "dm_math": Case("--inputs", empty_module),
    "stack_code": Case("--inputs", rowless_parquet),
    "dialogue": Case("--inputs", empty_reddit_month),
    "reasoning": Case("--inputs", empty_gsm8k),
}


def run_cli(name: str, args: list[str], out: Path) -> int:
    """The source's own command line: ``python -m flows.<name>``, or ``python -m flows.source <name>``."""
    flags = [*args, "--out", str(out), "--runner", "thread", "--workers", "2"]
    if SOURCES[name].run is None:  # no flow module of its own: the generic flow's command
        return int(importlib.import_module("flows.source").main([name, *flags]))
    return int(importlib.import_module(f"flows.{name}").main(flags))


#: A registered source without a case here is named by tests/flows/test_registry.py (the one check of
#: every list of sources), not by a KeyError in each test below.
CASES = sorted(set(EMPTY) & set(SOURCES))


@pytest.mark.parametrize("name", CASES)
def test_empty_input_is_named_and_the_run_fails(
    name: str, prefect_api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = EMPTY[name]
    (tmp_path / "in").mkdir()
    empty = case.write(tmp_path / "in")
    code = run_cli(name, [case.flag, str(empty)], tmp_path / "out")
    err = capsys.readouterr().err
    assert code == 1, err
    named = [line for line in err.splitlines() if str(empty.resolve()) in line and case.expect in line]
    assert named, err
    assert err.strip().splitlines()[-1].startswith("error: no document kept from 1 input(s)"), err


# -- an empty input beside one with records: the run succeeds and still names it ---------------
def _cc_helpers() -> ModuleType:
    """The WARC page writers of the Common Crawl source tests (one place for realistic pages)."""
    path = Path(__file__).parent.parent / "sources" / "test_commoncrawl.py"
    spec = importlib.util.spec_from_file_location("cc_silent_helpers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["cc_silent_helpers"] = module
    spec.loader.exec_module(module)
    return module


def good_warc(directory: Path) -> list[str]:
    helpers = _cc_helpers()
    path = directory / "pages.warc.gz"
    helpers.write_warc(path, [("http://a/1", helpers.page([helpers.BOILERPLATE[0], helpers.STORIES[0]]))])
    return [str(path)]


def good_dump(directory: Path) -> list[str]:
    return [str(write_sample_dumps(directory / "dumps", pages=5)[0])]


def good_parquet(directory: Path) -> list[str]:
    return [p for p in stack_code_sample.write_sample_inputs(directory / "code") if p.endswith("the-stack-sample.parquet")]


def good_pdf(directory: Path) -> list[str]:
    from sources.samples.scibooks import write_sample_pdf

    path = directory / "paper.pdf"
    write_sample_pdf(path, scanned_page=False)
    return [str(path)]


def good_medline(directory: Path) -> list[str]:
    return [p for p in pubmed_sample.write_sample_inputs(directory / "pm") if p.endswith("medline16n0001.xml.gz")]


def good_site(directory: Path) -> list[str]:
    """A site folder with two questions, each with answers (rows as the dumps write them)."""
    site = directory / "good.stackexchange.com"
    site.mkdir()
    rows = []
    for q in (1, 2):
        body = html.escape(f"<p>How does the cache behave when question {q} is asked twice in a row?</p>")
        rows.append(f'  <row Id="{q * 10}" PostTypeId="1" Score="5" Title="Question {q}" Body="{body}" '
                    'Tags="&lt;cache&gt;" />\n')
        for a in (1, 2):
            answer = html.escape(f"<p>Answer {a}: the second read is served from memory, not disk.</p>")
            rows.append(f'  <row Id="{q * 10 + a}" PostTypeId="2" ParentId="{q * 10}" Score="{3 + a}" Body="{answer}" />\n')
    (site / "Posts.xml").write_text('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "".join(rows) + "</posts>\n",
                                    encoding="utf-8")
    return [str(site)]


def good_gsm8k(directory: Path) -> list[str]:
    return reasoning_sample.write_sample_inputs(directory / "gsm")


#: One flow per family: web, encyclopedia, code, books and papers, abstracts, Q&A, curated sets.
MIXED: dict[str, tuple[Callable[[Path], list[str]], tuple[str, ...]]] = {
    "commoncrawl": (good_warc, ("--set", "min_chars=150", "--set", "prefilter=false")),
    "wikipedia": (good_dump, ()),
    "stack_code": (good_parquet, ()),
    "science_books": (good_pdf, ()),
    "pubmed": (good_medline, ()),
    "stackexchange": (good_site, ()),
    "reasoning": (good_gsm8k, ()),
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_empty_input_beside_records_is_named_and_the_run_succeeds(
    name: str, prefect_api_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case, (write_good, extra) = EMPTY[name], MIXED[name]
    (tmp_path / "in").mkdir()
    empty = case.write(tmp_path / "in")
    args = [case.flag, str(empty)]
    for good in write_good(tmp_path / "in"):
        args += [case.flag, good]
    code = run_cli(name, [*args, *extra], tmp_path / "out")
    err = capsys.readouterr().err
    assert code == 0, err
    assert [line for line in err.splitlines() if str(empty.resolve()) in line and case.expect in line], err
    assert "no document kept" not in err
