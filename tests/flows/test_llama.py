"""The parent flow: dataset files, stage configs, resume markers, and one run of the whole recipe."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config import CONFIG_DIR, deep_merge, load_layered
from core.document import make_doc_id
from core.manifest import Manifest
from flows import llama
from flows.llama import LlamaConfig, parse_args
from flows.registry import SOURCES
from flows.runtime import llama_stages as stages
from flows.runtime.llama_crawl import LATEST_CRAWL, resolve_latest
from flows.runtime.llama_report import print_report
from flows.runtime.sample import PILE_SAMPLE_INDEX
from kinda.cli import main as kinda_main
from sources.samples import pile as pile_sample
from tests.flows.test_path_spelling import differing, leaks, released_files
from tests.serving import serve_folder
from tests.tokenizer_families import family_json

REPO = Path(__file__).resolve().parents[2]


# -- pure parts -------------------------------------------------------------------------------
def test_deep_merge_nests_replaces_lists_and_reads_dotted_keys() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert deep_merge(base, {"a": {"c": [3]}, "a.e": 5, "d": None}) == {"a": {"b": 1, "c": [3], "e": 5}, "d": None}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}  # inputs untouched


def test_dataset_files_extend_g1() -> None:
    g1, g2, g3 = (LlamaConfig.from_yaml(CONFIG_DIR / f"{n}.yaml") for n in ("g1", "g2", "g3"))
    assert list(g1.sources) == SOURCES.names("llama")  # the seven LLaMA sources, in table order
    assert list(g2.sources) == SOURCES.names()  # G.2 adds the six extension sources
    assert (g1.dataset, g2.dataset, g3.dataset) == ("G1", "G2", "G3")
    assert g1.sources == g3.sources and {k: g2.sources[k] for k in g1.sources} == g1.sources
    assert g1.pile_index is None and g3.pile_index is not None and g3.pile_index["inputs"]
    assert "science_books" in llama.label_lists(g2.labels or {})["extension_sources"]  # from the registry
    for config in (g1, g2, g3):  # every stage config builds from its YAML plus the section
        for name in config.selected_sources():
            assert config.stage_config(name, config.sources[name] or {}).out == config.out
        for stage in ("dedup", "labels"):
            config.stage_config(stage, getattr(config, stage))


def test_extends_loops_and_missing_files_are_errors(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("extends: b.yaml\ndataset: A\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ValueError, match="loops"):
        load_layered(tmp_path / "a.yaml")
    (tmp_path / "c.yaml").write_text("extends: nowhere.yaml\n")
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_layered(tmp_path / "c.yaml")


def test_stage_config_layers_yaml_runtime_and_section(tmp_path: Path) -> None:
    config = parse_args(["--config", str(CONFIG_DIR / "g1.yaml"), "--out", str(tmp_path), "--runner", "dask",
                         "--dask-address", "tcp://127.0.0.1:1", "--workers", "3",
                         "--set", "sources.arxiv.latex.cut_appendix=true", "--set", "sources.books.workers=1"])
    arxiv = config.stage_config("arxiv", config.sources["arxiv"])
    assert arxiv.latex.cut_appendix and arxiv.latex.max_macro_depth == 8  # YAML kept under the section
    assert arxiv.shards.row_group_docs == 500  # configs/arxiv.yaml, not the class default
    assert (arxiv.runner, arxiv.dask_address, arxiv.workers, arxiv.out) == ("dask", "tcp://127.0.0.1:1", 3, tmp_path)
    assert config.stage_config("books", config.sources["books"]).workers == 1  # a section may narrow workers
    with pytest.raises(ValueError, match="whole run"):
        config.stage_config("books", {"runner": "thread"})
    wiki = config.stage_config("wikipedia", config.sources["wikipedia"])
    assert wiki.config_hash() == parse_args(["--config", str(CONFIG_DIR / "g1.yaml")]).stage_config(
        "wikipedia", config.sources["wikipedia"]).config_hash()  # where it runs is not what it writes


def test_source_selection_and_stages(tmp_path: Path) -> None:
    config = parse_args(["--sources", "wikipedia,books", "--stages", "sources,dedup"])
    assert config.selected_sources() == ["wikipedia", "books"]
    assert config.runs_stage("dedup") and not config.runs_stage("labels") and not config.runs_stage("pile_index")
    with pytest.raises(ValueError, match="unknown sources"):
        LlamaConfig(sources={"myspace": {}}).selected_sources()
    with pytest.raises(ValueError, match="not configured"):
        LlamaConfig(sources={"books": {}}, only_sources=["arxiv"]).selected_sources()
    removed = LlamaConfig.from_yaml(CONFIG_DIR / "g1.yaml", {"sources": {"commoncrawl": None}})
    assert "commoncrawl" not in removed.selected_sources()


def test_deployment_style_parameters_resolve_extends(tmp_path: Path) -> None:
    given = LlamaConfig.model_validate({"extends": "configs/g3.yaml", "out": str(tmp_path),
                                        "sources": {"books": None}, "tokenize": {"tokenizer": "t.json"}})
    resolved = given.resolved()
    assert resolved.dataset == "G3" and resolved.out == tmp_path and "books" not in resolved.selected_sources()
    assert resolved.pile_index is not None and resolved.tokenize == {"tokenizer": "t.json"}


def test_default_deployment_parameters_fail_at_once_with_one_line(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the worker's directory: no raw/ inputs, no tokenizer.json
    for name in ("g1", "g2", "g3"):
        config = LlamaConfig.model_validate({"extends": f"{name}.yaml", "out": "data", "skip_missing": True})
        with pytest.raises(llama.DatasetNotReady) as caught:
            llama.ready(config)
        message = str(caught.value)
        assert message.startswith(f"{name.upper()} cannot start: tokenizer 'tokenizer.json' not found in {tmp_path}")
        assert "\n" not in message and "set tokenize.tokenizer" in message and "sample: true" in message
        assert ("no Pile shard matches" in message) == (name == "g3")
    assert not (tmp_path / "data").exists()  # refused before anything was written
    (tmp_path / "tokenizer.json").write_text(family_json("bert-wordpiece"), encoding="utf-8")
    with pytest.raises(llama.DatasetNotReady) as refused:  # before any source: digit splitting would corrupt it
        llama.ready(LlamaConfig.model_validate({"extends": "g1.yaml", "only_sources": ["commoncrawl"]}))
    assert "tokenizer.json: cannot split digits safely for this tokenizer (WordPiece" in str(refused.value)
    assert "\n" not in str(refused.value) and "--no-split-digits" in str(refused.value)
    (tmp_path / "tokenizer.json").write_text(family_json("gpt2"), encoding="utf-8")
    wiki_only = LlamaConfig.model_validate({"extends": "g1.yaml", "only_sources": ["wikipedia"]})
    with pytest.raises(llama.DatasetNotReady, match="no local input for wikipedia: put them under raw/"):
        llama.ready(wiki_only)
    crawl = LlamaConfig.model_validate({"extends": "g1.yaml", "only_sources": ["commoncrawl"]})
    assert llama.ready(crawl).selected_sources() == ["commoncrawl"]  # crawl ids are downloads, not missing files


def test_sample_option_generates_inputs_for_every_source_with_a_writer(tmp_path: Path) -> None:
    given = LlamaConfig.model_validate({"extends": "g2.yaml", "sample": True, "sample_pages": 5,
                                        "out": str(tmp_path / "data")})
    config = llama.ready(given)
    with_writer = {"wikipedia", *(s.name for s in SOURCES.specs() if s.sample is not None)}
    assert not config.sample and config.selected_sources() == [n for n in SOURCES if n in with_writer]
    assert config.dedup is not None and config.dedup.get("against") is None  # the index the pile stage builds
    pile = config.pile_index or {}
    assert pile["index"] == str(tmp_path / "data" / PILE_SAMPLE_INDEX)
    assert pile["inputs"] and all(Path(p).is_file() and p.endswith(".jsonl.zst") for p in pile["inputs"])
    pubmed = config.sources["pubmed"] or {}
    assert pubmed["central"] and all(not p.endswith(".xml.gz") for p in pubmed["central"])
    assert pubmed["abstracts"] and all(p.endswith(".xml.gz") for p in pubmed["abstracts"])
    for name in config.selected_sources():
        section = config.sources[name] or {}
        files = [Path(p) for key in ("dumps", "inputs", "central", "abstracts") for p in section.get(key, [])]
        assert files and all(f.is_file() and (tmp_path / "data" / "sample") in f.parents for f in files), name
        assert config.stage_config(name, section).out == config.out
    assert Path((config.tokenize or {})["tokenizer"]).is_file()
    mtimes = {p: p.stat().st_mtime_ns for p in (tmp_path / "data" / "sample").rglob("*") if p.is_file()}
    llama.ready(given)  # unchanged sample files keep their mtimes: a second sample run resumes its sources
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "data" / "sample").rglob("*") if p.is_file()} == mtimes


def test_markers_need_same_fingerprint_and_outputs(tmp_path: Path) -> None:
    output = tmp_path / "attr.parquet"
    output.write_bytes(b"x")
    stages.mark_done(tmp_path, "dedup", "abc", [output])
    assert stages.stage_is_done(tmp_path, "dedup", "abc")
    assert not stages.stage_is_done(tmp_path, "dedup", "abd")
    output.write_bytes(b"xy")  # an output rewritten with another size: not the output the stage wrote
    assert not stages.stage_is_done(tmp_path, "dedup", "abc")
    stages.mark_done(tmp_path, "dedup", "abc", [output])
    output.unlink()
    assert not stages.stage_is_done(tmp_path, "dedup", "abc")
    assert stages.fingerprint("a", [1, 2]) == stages.fingerprint("a", [1, 2]) != stages.fingerprint("a", [2, 1])


def test_markers_written_before_sizes_were_recorded_still_resume(tmp_path: Path) -> None:
    output = tmp_path / "attr.parquet"
    output.write_bytes(b"x")
    stages.marker_path(tmp_path, "dedup").parent.mkdir(parents=True)
    stages.marker_path(tmp_path, "dedup").write_text(json.dumps({"fingerprint": "abc", "outputs": [str(output)]}))
    assert stages.stage_is_done(tmp_path, "dedup", "abc") and not stages.stage_is_done(tmp_path, "dedup", "abd")
    output.unlink()
    assert not stages.stage_is_done(tmp_path, "dedup", "abc")


def test_latest_crawl_is_looked_up_only_when_asked(tmp_path: Path) -> None:
    (tmp_path / "collinfo.json").write_text(json.dumps([{"id": "CC-MAIN-2024-10"}, {"id": "CC-MAIN-2025-05"},
                                                        {"id": "CC-MAIN-2019-30"}, {"id": "other"}]))
    with serve_folder(tmp_path) as base:
        url = f"{base}/collinfo.json"
        section = {"inputs": [LATEST_CRAWL, "CC-MAIN-2023-06"], "limit_files": 2}
        assert resolve_latest(section, url) == {"inputs": ["CC-MAIN-2025-05", "CC-MAIN-2023-06"], "limit_files": 2}
        fixed = {"inputs": ["CC-MAIN-2023-06"]}
        assert resolve_latest(fixed, "http://192.0.2.1/unreachable") is fixed  # no lookup, no network


# -- the whole recipe through Prefect ---------------------------------------------------------
def _tree(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for top in ("docs", "labeled", "attributes", "tensors", "indexes") for p in sorted((out / top).rglob("*"))
            if p.is_file()}


@dataclass
class SampleRun:
    """One ``python -m flows.llama --sample`` (G.1) run, shared by the tests of this module."""

    out: Path
    args: list[str]
    summary: stages.LlamaSummary


@pytest.fixture(scope="module")
def g1_sample(prefect_api_url: str, tmp_path_factory: pytest.TempPathFactory) -> SampleRun:
    """The G.1 sample, run once: every LLaMA source, the Pile sample's index, dedup, labels, tokens."""
    out = tmp_path_factory.mktemp("g1-sample") / "data"
    args = ["--sample", "--sample-pages", "20", "--out", str(out), "--runner", "thread", "--workers", "2"]
    return SampleRun(out, args, llama.run(parse_args(args)))


def _count(out: Path, sql: str) -> dict[str, int]:
    _, rows = Manifest.for_output(out).query(sql)
    return {str(key): int(value) for key, value in rows}


@pytest.mark.prefect
def test_g1_sample_runs_every_llama_source_and_the_pile_stage(g1_sample: SampleRun) -> None:
    summary, out = g1_sample.summary, g1_sample.out
    llama_sources = SOURCES.names("llama")
    assert all(s.sample is not None for s in SOURCES.specs("llama") if s.name != "wikipedia")  # all have a sample
    assert [(s.stage, s.status) for s in summary.stages] == [
        *[(name, "completed") for name in llama_sources],
        ("pile_index", "completed"), ("dedup", "completed"), ("decontaminate", "completed"),
        ("labels", "completed"), ("tokenize", "completed")]
    shards = _count(out, "SELECT source, sum(docs) FROM shards WHERE starts_with(path, 'labeled/') GROUP BY 1")
    assert sorted(shards) == sorted(llama_sources) and all(shards.values()), shards
    # the sample eval set's planted items (sources/samples/evals.py) are in C4 and Common Crawl documents:
    # marked by the decontaminate stage, left out of every set by the label stage (class contaminated)
    marked = _count(out, "SELECT split_part(filename, '/attributes/decontamination/', 2).split('/')[1], count(DISTINCT id) "
                         f"FROM read_parquet('{out}/attributes/decontamination/**/*.parquet', filename=true) GROUP BY 1")
    assert marked.get("c4", 0) > 0 and marked.get("commoncrawl", 0) > 0, marked
    left_out = _count(out, "SELECT source, sum(docs) FROM shards WHERE starts_with(path, 'labeled/contaminated/') "
                           "AND len(labels) = 0 GROUP BY 1")
    assert left_out.get("c4", 0) > 0 and left_out.get("commoncrawl", 0) > 0, left_out
    drops = _count(out, "SELECT source, count(DISTINCT reason) FROM latest_drops GROUP BY 1")
    assert sorted(drops) == sorted(llama_sources), drops  # every source drops something, for a reason
    # the sample URL blocklist (sources/samples/blocklist.py) drops the pages planted on its hosts and URLs
    listed = _count(out, "SELECT source || ' ' || reason, sum(count) FROM latest_drops "
                         "WHERE starts_with(reason, 'url_blocklist:') GROUP BY 1")
    assert listed == {"commoncrawl url_blocklist:gambling": 2, "c4 url_blocklist:phishing": 1}, listed
    _, rows = Manifest.for_output(out).query("SELECT sum(tokens) FROM tensors WHERE tensor_root = ?",
                                             [str(out / "tensors" / "g1")])
    assert rows[0][0] > 0
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(summary.run_id)
        only_this_run = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id]))
        keys = {a.key for a in client.read_artifacts(flow_run_filter=only_this_run)}
    assert flow_run.state is not None and flow_run.state.is_completed()
    assert {"llama-stages", "llama-sources", "llama-totals", "llama-output"} <= keys


@pytest.mark.prefect
def test_g1_sample_matches_the_pile_sample_and_g3_is_smaller(g1_sample: SampleRun,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = g1_sample.out
    kinds = _count(out, "SELECT kind, count(*) FROM matches GROUP BY 1")
    assert {"duplicate_near", "reference_exact", "reference_near"} <= set(kinds), kinds
    _, rows = Manifest.for_output(out).query(
        "SELECT doc_id, kind, reference_set, reference_shard, reference_line FROM matches WHERE starts_with(kind, 'reference_')")
    found = {(doc, kind.removeprefix("reference_"), ref_set, shard, line) for doc, kind, ref_set, shard, line in rows}
    for copy in pile_sample.planted():  # every copy planted in the Pile sample is found where it was put
        assert (copy.doc_id, copy.kind, copy.pile_set_name, copy.shard, copy.line) in found, copy
    labels = _count(out, "SELECT label, sum(docs) FROM (SELECT unnest(labels) AS label, docs FROM shards "
                         "WHERE starts_with(path, 'labeled/')) GROUP BY 1")
    assert labels["G3"] < labels["G1"] == labels["G2"], labels

    capsys.readouterr()
    assert kinda_main(["--out", str(out), "report"]) == 0
    report = capsys.readouterr().out
    assert "reference_exact" in report and "duplicate_near" in report
    assert all(copy.doc_id in report for copy in pile_sample.planted())  # the documents G3 leaves out, named
    explained = {}
    for name, doc in [("exact", make_doc_id("arxiv", "2301.00004")), ("near", make_doc_id("arxiv", "2301.00005")),
                      ("reference", make_doc_id("arxiv", "2301.00002")), ("book", make_doc_id("books", "gutenberg/9198"))]:
        assert kinda_main(["--out", str(out), "dedup", "explain", doc]) == 0
        explained[name] = capsys.readouterr().out
    assert "dropped as exact duplicate of " + make_doc_id("arxiv", "2301.00002") in explained["exact"]
    assert "dropped as near duplicate of " + make_doc_id("arxiv", "2301.00001") in explained["near"]
    assert "stored nowhere" not in explained["near"]  # a duplicate, not a document the label stage left out
    assert f"dropped as near duplicate of {make_doc_id('books', 'gutenberg/683')} (by its source run" in explained["book"]
    assert "matched reference document 00.jsonl.zst:" in explained["reference"]
    assert "kept in class llama-in-ref, labels G1 G2 " in explained["reference"]


@pytest.mark.prefect
def test_g1_sample_resumes_byte_identical(g1_sample: SampleRun, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out, args = g1_sample.out, g1_sample.args
    first = _tree(out)
    again = llama.run(parse_args(args))  # a re-run resumes: sources skip their inputs, later stages skip whole
    assert [(s.stage, s.status) for s in again.stages] == [  # what happened, not "completed"
        *[(name, "nothing to do") for name in SOURCES.names("llama")], *[(s, "resumed") for s in llama.STAGES[1:]]]
    assert _tree(out) == first
    capsys.readouterr()
    assert print_report(again) == 0
    table = capsys.readouterr().out
    assert re.search(r"^wikipedia\s+nothing to do\s+[\d.]+\s+all 2 inputs finished before for this config", table, re.M)
    assert re.search(r"^dedup\s+resumed\s+[\d.]+\s+finished before with the same inputs and config", table, re.M)

    (out / "tensors" / "g1" / "metadata.json").unlink()  # an output gone: that stage runs again
    third = llama.run(parse_args(args))
    assert third.status("tokenize") == "completed" and third.status("labels") == "resumed"
    assert _tree(out) == first

    assert kinda_main(["--out", str(out), "report", "--html", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "<svg" in page and "duplicate_exact" in page and "G3" in page


@pytest.mark.prefect
@pytest.mark.timeout(900)
def test_g1_sample_bytes_do_not_depend_on_path_spelling_or_folder(g1_sample: SampleRun, prefect_api_url: str,
                                                                  tmp_path: Path) -> None:
    """The same sample from another working folder with a relative ``--out data`` (inputs then
    spelled ``data/sample/...``): every released byte equals the fixture's run (an absolute
    ``--out`` from the repository), and neither run's folder is named in any released file
    (tests/flows/test_path_spelling.py). One more run of the sample (~50 s CPU), not two."""
    work = tmp_path / "elsewhere" / "work"
    work.mkdir(parents=True)
    args = ["data" if a == str(g1_sample.out) else a for a in g1_sample.args]
    done = subprocess.run([sys.executable, "-m", "flows.llama", *args], cwd=work, capture_output=True, text=True,
                          timeout=840, env={**os.environ, "PYTHONPATH": str(REPO), "PREFECT_API_URL": prefect_api_url})
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    absolute, relative = released_files(g1_sample.out), released_files(work / "data")
    print(f"compared {len(absolute)} released files:", *absolute, sep="\n  ")
    assert {name.split("/")[0] for name in absolute} >= {"labeled", "attributes", "tensors"}, sorted(absolute)
    changed = differing(absolute, relative)
    assert not changed, "\n".join(changed)
    needles = [str(g1_sample.out.parent), str(work), "data/sample/"]
    assert leaks(g1_sample.out, needles) == [] and leaks(work / "data", needles) == []


@pytest.mark.prefect
def test_failed_source_blocks_later_stages_and_fails_the_run(prefect_api_url: str, tmp_path: Path) -> None:
    out = tmp_path / "data"
    args = ["--sample", "--sample-pages", "10", "--out", str(out), "--runner", "thread", "--stages", "sources,dedup",
            "--sources", "wikipedia,arxiv", "--set", "sources.arxiv.inputs=[" + str(tmp_path / "missing" / "*.tar") + "]"]
    with pytest.raises(RuntimeError, match="arxiv"):
        llama.run(parse_args(args))
    _, rows = Manifest.for_output(out).query("SELECT flow, status FROM runs ORDER BY started_at")
    assert ("wikipedia", "completed") in rows and not any(flow == "dedup" for flow, _ in rows)
    skipped = llama.run(parse_args([*args, "--skip-missing"]))  # the same dataset, missing inputs skipped
    assert skipped.status("arxiv") == "skipped" and skipped.status("dedup") == "completed"
