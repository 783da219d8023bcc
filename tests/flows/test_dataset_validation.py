"""A dataset file is typed whole when it is loaded (issue 35 item 6).

Every source section is built into its source's config class (the registry's ``SourceSpec.config``)
and every later stage's section into that stage's class, as the stage itself will build it, when
the dataset is read: a typo in ``sources.commoncrawl`` ends ``python -m flows.llama`` with exit 2
and one line naming the file that set the key (the layer of an ``extends`` chain, or ``--set``),
the dotted key and pydantic's message, before Prefect starts and before any sample is written,
instead of failing when that source's turn comes after the earlier sources ran. The deployment
path (flow parameters with ``extends``) is refused the same way by :func:`flows.llama.ready`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config import CONFIG_DIR
from core.registry import SourceConfig, SourceSpec
from flows import llama
from flows.llama import DatasetInvalid, LlamaConfig
from flows.registry import SOURCES
from flows.runtime import cli


@pytest.fixture()
def no_prefect(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting Prefect fails the test: every refusal here comes before it."""
    def refuse() -> None:
        raise AssertionError("Prefect started for a dataset that does not validate")

    monkeypatch.setattr(cli, "prefect_api", refuse)


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one error line of ``python -m flows.llama ARGV`` (exit 2, nothing else on stderr)."""
    with pytest.raises(SystemExit) as exited:
        llama.main(list(argv))
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("python -m flows.llama: error: invalid dataset: "), err
    return err


def dataset(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_typo_in_a_source_section_names_file_and_key_before_prefect(
        tmp_path: Path, no_prefect: None, capsys: pytest.CaptureFixture[str]) -> None:
    path = dataset(tmp_path, "mine.yaml", f"extends: {CONFIG_DIR / 'g1.yaml'}\n"
                                          "sources:\n  commoncrawl:\n    lid_min_scroe: 0.7\n")
    line = refused(capsys, "--config", str(path), "--out", str(tmp_path / "out"))
    assert line.endswith(f"{path.resolve()}: sources.commoncrawl.lid_min_scroe: Extra inputs are not permitted")
    assert not (tmp_path / "out").exists()  # refused before the output root was touched


def test_typo_in_an_extended_file_names_that_file(
        tmp_path: Path, no_prefect: None, capsys: pytest.CaptureFixture[str]) -> None:
    base = dataset(tmp_path, "base.yaml", "sources:\n  books:\n    inputs: [a.txt]\n    min_charz: 3\n")
    top = dataset(tmp_path, "top.yaml", "extends: base.yaml\ndataset: G9\nsources:\n  books:\n    inputs: [b.txt]\n")
    line = refused(capsys, "--config", str(top), "--out", str(tmp_path / "out"))
    assert line.endswith(f"{base.resolve()}: sources.books.min_charz: Extra inputs are not permitted")


def test_nested_field_and_wrong_type_are_each_named(
        tmp_path: Path, no_prefect: None, capsys: pytest.CaptureFixture[str]) -> None:
    path = dataset(tmp_path, "mine.yaml", "sources:\n"
                                          "  arxiv:\n    inputs: [a.tar]\n    latex: {cut_apendix: true}\n"
                                          "  commoncrawl:\n    limit_files: many\n")
    line = refused(capsys, "--config", str(path))
    where = str(path.resolve())
    assert f"{where}: sources.commoncrawl.limit_files: Input should be a valid integer" in line
    assert f"{where}: sources.arxiv.latex.cut_apendix: Extra inputs are not permitted" in line
    assert line.index("sources.arxiv") < line.index("sources.commoncrawl")  # all at once, in the file's order


def test_unknown_source_and_later_stage_sections_are_refused_at_load(
        tmp_path: Path, no_prefect: None, capsys: pytest.CaptureFixture[str]) -> None:
    path = dataset(tmp_path, "mine.yaml", "sources:\n  myspace: {inputs: [a]}\n"
                                          "dedup: {within_source: true}\nlabels: {runner: thread}\n")
    line = refused(capsys, "--config", str(path))
    where = str(path.resolve())
    assert f"{where}: sources.myspace: unknown source; known: commoncrawl, c4," in line
    assert f"{where}: dedup.within_source: Extra inputs are not permitted" in line
    assert f"{where}: labels: section 'labels' sets ['runner']; set them for the whole run instead" in line


def test_set_override_is_named_as_set_not_the_file(
        tmp_path: Path, no_prefect: None, capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(capsys, "--config", str(CONFIG_DIR / "g1.yaml"), "--set", "sources.c4.min_charz=3")
    assert line.endswith("invalid dataset: sources.c4.min_charz (--set): Extra inputs are not permitted")
    line = refused(capsys, "--config", str(CONFIG_DIR / "g1.yaml"), "--set", "sources.c4.inputs=7")
    assert line.endswith("sources.c4.inputs (--set): Input should be a valid list")


def test_sample_run_is_refused_before_any_sample_is_written(
        tmp_path: Path, no_prefect: None, capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(capsys, "--config", str(CONFIG_DIR / "g2.yaml"), "--sample", "--out", str(tmp_path / "out"),
                   "--set", "sources.reasoning.min_charz=1")
    assert "sources.reasoning.min_charz (--set): Extra inputs are not permitted" in line
    assert not (tmp_path / "out").exists()


def test_deployment_parameters_are_validated_with_their_extends(tmp_path: Path) -> None:
    path = dataset(tmp_path, "mine.yaml", "extends: g2.yaml\nsources:\n  pubmed: {centrall: [a.tar.gz]}\n")
    given = LlamaConfig.model_validate({"extends": str(path), "out": str(tmp_path / "data"),
                                        "sources": {"books": {"inputs": 3}}})
    with pytest.raises(DatasetInvalid) as caught:
        llama.ready(given)
    message = str(caught.value)
    assert f"{path.resolve()}: sources.pubmed.centrall: Extra inputs are not permitted" in message
    assert "sources.books.inputs (flow parameter): Input should be a valid list" in message and "\n" not in message
    bare = LlamaConfig.model_validate({"sources": {"c4": {"inputz": ["x"]}}, "sample": True,
                                       "out": str(tmp_path / "data")})
    with pytest.raises(DatasetInvalid, match=r"sources\.c4\.inputz \(flow parameter\): Extra inputs"):
        llama.ready(bare)
    assert not (tmp_path / "data").exists()  # before the sample inputs


@pytest.mark.parametrize("name", ["g1", "g2", "g3"])
def test_shipped_datasets_validate_from_file_and_as_parameters(name: str) -> None:
    config = LlamaConfig.from_yaml(CONFIG_DIR / f"{name}.yaml")
    assert config.section_faults() == [] and config.dataset == name.upper()
    resolved = LlamaConfig.model_validate({"extends": f"{name}.yaml"}).resolved()
    assert resolved.sources == config.sources and resolved.dedup == config.dedup


def test_a_source_whose_own_yaml_is_broken_is_named_under_its_section(tmp_path: Path) -> None:
    broken = dataset(tmp_path, "toy_broken.yaml", "min_chars: [1\n")
    SOURCES.register(SourceSpec("toy_broken", SourceConfig, "extension", deployment=None, default_yaml=str(broken)))
    try:
        with pytest.raises(DatasetInvalid) as caught:
            LlamaConfig.from_yaml(None, {"sources": {"toy_broken": {"inputs": ["a.txt"]}}})
    finally:
        SOURCES.unregister("toy_broken")
    assert str(caught.value).startswith(f"invalid dataset: sources.toy_broken (--set): {broken.resolve()}:2:1: not valid YAML")
