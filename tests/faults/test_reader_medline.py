"""Fault injection, MEDLINE ``.xml.gz`` (issue 24 items 1 and 11): one citation costs one drop.

Files are gzip MEDLINE XML as NLM ships it (the 2016 ``MedlineCitationSet`` root with its
DOCTYPE, one citation per block); the real baseline file is used when ``../shared/realdata``
has it. The truth for every case is the intact file: each citation is kept or counted, never
lost in silence, and a file that cannot be read to its end says so (``truncated_input``).
"""

from __future__ import annotations

import gzip
import os
import random
import sys
from pathlib import Path

import pytest

from core.document import Document, Drop
from core.manifest import Manifest
from sources.formats.medline import deleted_pmids, iter_medline
from tests.faults.rss import MAX_RSS_BYTES, run_measured

REPO = Path(__file__).resolve().parents[2]
CITATIONS = 40
PROLOG = ('<?xml version="1.0" encoding="UTF-8"?>\n'
          '<!DOCTYPE MedlineCitationSet PUBLIC "-//NLM//DTD Medline Citation, 1st January, 2016//EN"\n'
          '  "https://www.nlm.nih.gov/databases/dtd/nlmmedlinecitationset_160101.dtd">\n')


def citation(pmid: int, abstract: str = "") -> str:
    abstract = abstract or f"We measured the effect of treatment {pmid} on outcome in a cohort of {pmid % 90 + 10} adults."
    return (f'<MedlineCitation Owner="NLM" Status="MEDLINE">\n<PMID Version="1">{pmid}</PMID>\n'
            '<Article PubModel="Print">\n<Journal>\n<Title>Restorative neurology and neuroscience</Title>\n'
            '<JournalIssue CitedMedium="Print"><PubDate><Year>2007</Year></PubDate></JournalIssue>\n</Journal>\n'
            f'<ArticleTitle>Study number {pmid} of pitch processing.</ArticleTitle>\n'
            f'<Abstract>\n<AbstractText Label="RESULTS" NlmCategory="RESULTS">{abstract}</AbstractText>\n</Abstract>\n'
            '<Language>eng</Language>\n</Article>\n</MedlineCitation>\n')


def medline(path: Path, blocks: list[str], prolog: str = PROLOG, end: bool = True) -> Path:
    xml = prolog + "<MedlineCitationSet>\n" + "".join(blocks) + ("</MedlineCitationSet>\n" if end else "")
    path.write_bytes(gzip.compress(xml.encode(), mtime=0))
    return path


def split(records: list[Document | Drop]) -> tuple[list[Document], list[Drop]]:
    return [r for r in records if isinstance(r, Document)], [r for r in records if isinstance(r, Drop)]


def pmids(docs: list[Document]) -> list[int]:
    return sorted(int(d.meta["pmid"]) for d in docs)


def test_an_11_mb_text_node_costs_its_citation_alone(tmp_path: Path) -> None:
    blocks = [citation(n) for n in range(1, CITATIONS + 1)]
    blocks[0] = citation(1, "word " * 2_200_000)  # 11 MB: past libxml2's 10 MB text node limit
    docs, drops = split(list(iter_medline(medline(tmp_path / "m.xml.gz", blocks))))
    assert [(d.reason, d.record) for d in drops] == [("too_large", "m.xml.gz:PMID 1")]
    assert pmids(docs) == list(range(2, CITATIONS + 1))


def test_a_citation_past_max_record_bytes_is_one_drop_naming_it(tmp_path: Path) -> None:
    blocks = [citation(n) for n in range(1, CITATIONS + 1)]
    blocks[2] = citation(3, "word " * 4_000_000)  # 20 MB: over the 16 MiB record bound
    path = medline(tmp_path / "m.xml.gz", blocks)
    docs, drops = split(list(iter_medline(path)))
    assert [(d.reason, d.record) for d in drops] == [("record_too_large", "m.xml.gz:record 3")]
    assert "PMID 3" in drops[0].detail
    assert pmids(docs) == [n for n in range(1, CITATIONS + 1) if n != 3]


def test_real_baseline_file_with_an_11_mb_abstract_keeps_the_other_604(realdata: Path, tmp_path: Path) -> None:
    xml = gzip.decompress((realdata / "pubmed" / "baseline" / "medline16n0902.xml.gz").read_bytes())
    at = xml.index(b">", xml.index(b"<AbstractText")) + 1
    path = tmp_path / "medline16n0902.xml.gz"
    path.write_bytes(gzip.compress(xml[:at] + b"word " * 2_200_000 + xml[at:], compresslevel=1, mtime=0))
    records = list(iter_medline(path, require_abstract=False))
    docs, drops = split(records)
    assert sorted((d.reason, d.record) for d in drops) == [("delete_instruction", "medline16n0902.xml.gz:delete PMID 26432306"),
                                                           ("too_large", "medline16n0902.xml.gz:PMID 17942999")]
    assert len(docs) == 603  # every other record of the file


def test_a_cut_mid_citation_inside_a_valid_gzip_is_truncated_input(tmp_path: Path) -> None:
    xml = PROLOG + "<MedlineCitationSet>\n" + "".join(citation(n) for n in range(1, CITATIONS + 1))
    cut = xml.index("<ArticleTitle>Study number 21 ")
    path = tmp_path / "m.xml.gz"
    path.write_bytes(gzip.compress(xml[:cut].encode(), mtime=0))  # a complete gzip member of a cut XML file
    docs, drops = split(list(iter_medline(path)))
    assert [(d.reason, d.record) for d in drops] == [("truncated_input", "m.xml.gz:record 21")]
    assert "after record 20" in drops[0].detail and "byte" in drops[0].detail
    assert pmids(docs) == list(range(1, 21))


def test_broken_xml_in_one_citation_costs_it_alone(tmp_path: Path) -> None:
    blocks = [citation(n) for n in range(1, CITATIONS + 1)]
    blocks[9] = blocks[9].replace("</ArticleTitle>", "</Title>")  # mismatched tag in record 10
    blocks[10] = blocks[10].replace("cohort", "co<hort")  # and a stray '<' in record 11
    docs, drops = split(list(iter_medline(medline(tmp_path / "m.xml.gz", blocks))))
    assert [(d.reason, d.record) for d in drops] == [("xml_error", "m.xml.gz:record 10"),
                                                     ("xml_error", "m.xml.gz:record 11")]
    assert "PMID 10" in drops[0].detail
    assert pmids(docs) == [n for n in range(1, CITATIONS + 1) if n not in (10, 11)]


@pytest.mark.parametrize("compact", [False, True], ids=["one-tag-per-line", "one-line-file"])
def test_a_bad_utf8_byte_costs_its_citation_alone(tmp_path: Path, compact: bool) -> None:
    blocks = [citation(n) for n in range(1, CITATIONS + 1)]
    if compact:
        blocks = [b.replace("\n", "") for b in blocks]
    xml = (PROLOG + "<MedlineCitationSet>" + "".join(blocks) + "</MedlineCitationSet>\n").encode()
    at = xml.index(b"treatment 25 ")
    path = tmp_path / "m.xml.gz"
    path.write_bytes(gzip.compress(xml[:at] + b"\xff\xfe" + xml[at:], mtime=0))
    docs, drops = split(list(iter_medline(path)))
    assert [(d.reason, d.record) for d in drops] == [("xml_error", "m.xml.gz:record 25")]
    assert pmids(docs) == [n for n in range(1, CITATIONS + 1) if n != 25]


@pytest.mark.parametrize("seed", [1, 2])
def test_no_corrupted_byte_loses_a_citation_in_silence(tmp_path: Path, seed: int) -> None:
    """One byte replaced anywhere: every citation is kept or counted, or the file says it stopped."""
    rng = random.Random(seed)
    blocks = [citation(n) for n in range(1, CITATIONS + 1)]
    if seed == 2:
        blocks = [b.replace("\n", "") for b in blocks]  # the compact layout: all on one line
    xml = (PROLOG + "<MedlineCitationSet>\n" + "".join(blocks) + "</MedlineCitationSet>\n").encode()
    path = tmp_path / "m.xml.gz"
    stopped = 0
    for _ in range(60):
        at = rng.randrange(len(PROLOG) + 30, len(xml) - 30)
        path.write_bytes(gzip.compress(xml[:at] + rng.choice([b"\xff", b"<", b"&", b'"', b">", b"/"]) + xml[at + 1:], mtime=0))
        docs, drops = split(list(iter_medline(path)))
        if any(d.reason == "truncated_input" for d in drops):
            stopped += 1
        else:
            assert len(docs) + len(drops) == CITATIONS, (at, [(d.reason, d.record) for d in drops])
    assert stopped <= 6  # a broken start tag of a citation can still stop the file (counted, partial)


def test_declared_entities_are_refused_as_the_docs_say(tmp_path: Path) -> None:
    prolog = PROLOG.replace('dtd">', 'dtd" [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>')
    blocks = [citation(1, "&xxe;"), citation(2)]
    path = medline(tmp_path / "m.xml.gz", blocks, prolog=prolog)
    assert [(r.reason, r.record) for r in iter_medline(path)] == [("xml_entity_declared", "m.xml.gz: prolog")]  # type: ignore[union-attr]
    assert deleted_pmids(path) == []


def test_deletions_after_an_oversized_citation_are_still_read(tmp_path: Path) -> None:
    blocks = [citation(1, "word " * 4_000_000), citation(2),
              "<DeleteCitation>\n<PMID Version=\"1\">77</PMID>\n<PMID Version=\"1\">78</PMID>\n</DeleteCitation>\n"]
    assert deleted_pmids(medline(tmp_path / "m.xml.gz", blocks)) == ["77", "78"]


@pytest.mark.prefect
def test_a_300_mb_text_node_through_the_flow_is_one_drop_in_bounded_memory(tmp_path: Path, prefect_api_url: str) -> None:
    blocks = [citation(n) for n in range(1, CITATIONS + 1)]
    blocks[4] = citation(5, "word " * 60_000_000)
    path = medline(tmp_path / "pubmed16n0001.xml.gz", blocks)
    assert path.stat().st_size < 2 << 20
    out = tmp_path / "out"
    run = run_measured([sys.executable, "-m", "flows.pubmed", "--abstracts", str(path), "--out", str(out),
                        "--runner", "sequential"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO), "PREFECT_API_URL": prefect_api_url},
                       timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.peak_rss_bytes <= MAX_RSS_BYTES, f"peak RSS {run.peak_rss_bytes / 2**30:.2f} GiB"
    manifest = Manifest.for_output(out)
    _, inputs = manifest.query("SELECT status, records_in, docs_kept FROM latest_inputs")
    assert inputs == [("done", CITATIONS, CITATIONS - 1)]
    _, drops = manifest.query("SELECT reason, sum(count) FROM latest_drops GROUP BY reason")
    assert dict(drops) == {"record_too_large": 1}
