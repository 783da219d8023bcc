"""End to end through Prefect: the PubMed flow (PMC + MEDLINE) and the DeepMind Mathematics flow."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest

from core.manifest import Manifest
from core.shards import read_documents
from flows.dm_math import parse_args as dm_args
from flows.dm_math import run as run_dm
from flows.pubmed import parse_args as pubmed_args
from flows.pubmed import run as run_pubmed
from sources.samples import dmmath as dmmath_sample
from sources.samples import pubmed as pubmed_sample
from tests.serving import serve_folder

pytestmark = pytest.mark.prefect


def _docs(out: Path, source: str) -> list:
    return [d for p in sorted((out / "docs" / source).rglob("*.parquet")) for d in read_documents(p)]


def _hashes(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs").rglob("*.parquet"))}


def _drops(out: Path, source: str) -> dict[str, int]:
    _, rows = Manifest.for_output(out).query(
        "SELECT d.reason, sum(d.count) FROM drops d JOIN inputs i USING (input_key) "
        "WHERE i.source = ? GROUP BY 1", [source])
    return {reason: int(count) for reason, count in rows}


def test_pubmed_flow_both_sources_versions_and_resume(prefect_api_url: str, tmp_path: Path) -> None:
    paths = [Path(p) for p in pubmed_sample.write_sample_inputs(tmp_path / "in")]
    broken = tmp_path / "in" / "pmc" / "broken.tar.gz"
    broken.write_bytes(paths[2].read_bytes()[:900])  # a package cut off in its first member
    # a later update file re-adds PMID 26000000 (deleted by pubmed24n0002) with a revised title
    # and repeats 26000001 word for word
    update = tmp_path / "in" / "medline" / "pubmed24n0003.xml.gz"
    data = pubmed_sample.medline_2016(26000000).replace(b"Neural correlates of pitch", b"Revised: pitch")
    update.write_bytes(gzip.compress(data, mtime=0))
    out = tmp_path / "out"
    config = pubmed_args(["--central", str(tmp_path / "in" / "pmc" / "*"), "--abstracts",
                          str(tmp_path / "in" / "medline" / "*.xml.gz"), "--out", str(out),
                          "--runner", "thread", "--workers", "2"])
    config = config.model_copy(update={"progress": False})
    summary = run_pubmed(config)
    assert not summary.failed
    central = _docs(out, "pubmed_central")
    assert sorted(d.meta["pmcid"] for d in central) == ["9000001", "9000002", "9000003", "9000004"]
    first = next(d for d in central if d.meta["pmcid"] == "9000001")
    assert "$$k = \\frac{1}{\\tau}$$" in first.text and "documentclass" not in first.text
    assert "Referenceauthor" not in first.text and "Grant Agency" not in first.text
    assert _drops(out, "pubmed_central").get("truncated_input") == 1
    abstracts = {d.meta["pmid"]: d for d in _docs(out, "pubmed_abstracts")}
    # 26000000: deleted by the 2nd file, re-added revised by the 3rd; 26000003 deleted in-file twice;
    # 26000001 twice word for word: exact dedup keeps the first, the versions rule leaves it alone
    assert abstracts["26000000"].text.startswith("Revised: pitch")
    assert "26000003" not in abstracts and sorted(abstracts) == ["26000000", "26000001", "38000000", "38000001"]
    drops = _drops(out, "pubmed_abstracts")
    assert drops == {"no_abstract": 2, "superseded_version": 2, "deleted_citation": 3, "delete_instruction": 3,
                     "duplicate_exact": 1}
    _, rows = Manifest.for_output(out).query("SELECT sum(records_in), sum(docs_kept) FROM inputs")
    records_in, kept = rows[0]
    _, dropped = Manifest.for_output(out).query("SELECT sum(count) FROM drops")
    assert records_in == kept + dropped[0][0]
    before = _hashes(out)
    again = run_pubmed(config)  # resume: finished inputs are skipped, same bytes
    assert _hashes(out) == before and again.kept == summary.kept


def test_pubmed_abstracts_over_http_version_like_local_files(prefect_api_url: str, tmp_path: Path) -> None:
    """NLM serves MEDLINE over https: the versions phase reads each file's downloaded copy."""
    pubmed_sample.write_sample_inputs(tmp_path / "in")
    medline_dir = tmp_path / "in" / "medline"
    outs = {}
    with serve_folder(medline_dir) as base:
        urls = [f"{base}/{p.name}" for p in sorted(medline_dir.glob("*.xml.gz"))]
        for name, inputs in (("local", [str(medline_dir / "*.xml.gz")]), ("http", urls)):
            outs[name] = tmp_path / name
            args = [arg for location in inputs for arg in ("--abstracts", location)]
            config = pubmed_args([*args, "--out", str(outs[name]), "--runner", "thread"])
            assert not run_pubmed(config.model_copy(update={"progress": False})).failed
    assert _drops(outs["http"], "pubmed_abstracts") == _drops(outs["local"], "pubmed_abstracts")
    assert "deleted_citation" in _drops(outs["http"], "pubmed_abstracts")
    assert [d.text for d in _docs(outs["http"], "pubmed_abstracts")] == [
        d.text for d in _docs(outs["local"], "pubmed_abstracts")]


def test_dm_math_flow_groups_pairs_and_selects_pile_subset(prefect_api_url: str, tmp_path: Path) -> None:
    paths = dmmath_sample.write_sample_inputs(tmp_path / "in")
    out = tmp_path / "out"
    config = dm_args([*[a for p in paths for a in ("--inputs", p)], "--out", str(out), "--runner", "thread",
                      "--workers", "2"]).model_copy(update={"progress": False})
    summary = run_dm(config)
    assert not summary.failed
    docs = _docs(out, "dm_math")
    released = [d for d in docs if d.meta["origin"] == "mathematics_dataset"]
    assert {(d.meta["module"], d.meta["difficulty"]) for d in released} == {
        ("numbers__gcd", "easy"), ("algebra__linear_1d", "medium"), ("calculus__differentiate", "hard")}
    assert all(len(d.text) >= 8192 or d.meta["first_line"] > 1 for d in released)
    assert sum(d.meta["pairs"] for d in released) == 400 + 300 + 150
    assert len([d for d in docs if d.meta["origin"] == "pile"]) == 2
    drops = _drops(out, "dm_math")
    assert drops == {"split_not_selected": 1, "pile_set_not_selected": 1}
