"""The source registry is the one list of sources: the YAML copies that cannot read it are checked here.

``prefect.yaml`` (a deployment per deployed source, pointing at the source's flow, tagged ``g2``
for an extension), ``configs/labels.yaml`` (the label flow's own defaults, for ``python -m
flows.label``) and the dataset files (G.1 runs exactly the LLaMA sources, G.2 adds exactly the
extensions) must say what the specs say. Plus: the registry refuses a second source of one name,
and reading the specs imports neither Prefect nor pandas.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from core.config import CONFIG_DIR, PipelineConfig
from core.registry import Registry, SourceConfig, SourceSpec
from flows import llama
from flows import source as generic
from flows.registry import SOURCES

REPO = Path(__file__).resolve().parents[2]


def deployments() -> dict[str, dict]:
    return {d["name"]: d for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]}


def test_every_deployed_source_has_its_deployment_and_only_those() -> None:
    declared = deployments()
    sources = {d["name"]: d for d in declared.values() if "source" in d["tags"]}
    assert sorted(sources) == sorted(s.deployment for s in SOURCES.specs() if s.deployment)
    for spec in SOURCES.specs():
        if spec.deployment is None:
            continue
        deployment = declared[spec.deployment]
        flow = spec.flow or generic.source_flow  # a source without a flow module runs in the generic one
        path, _, name = deployment["entrypoint"].partition(":")
        assert (flow.fn.__module__.replace(".", "/") + ".py", flow.fn.__name__) == (path, name), spec.name
        assert ("g2" in deployment["tags"]) == (spec.kind == "extension"), spec.name
    label = declared["label"]["parameters"]["config"]
    assert label["extension_sources"] == SOURCES.documents("extension")


def test_label_and_dataset_files_match_the_registry() -> None:
    labels = yaml.safe_load((CONFIG_DIR / "labels.yaml").read_text())
    assert labels["llama_sources"] == SOURCES.documents("llama")
    assert labels["extension_sources"] == SOURCES.documents("extension")
    g1 = llama.LlamaConfig.from_yaml(CONFIG_DIR / "g1.yaml")
    g2 = llama.LlamaConfig.from_yaml(CONFIG_DIR / "g2.yaml")
    assert list(g1.sources) == SOURCES.names("llama")
    assert list(g2.sources) == SOURCES.names()
    assert llama.label_lists({}) == {"llama_sources": labels["llama_sources"],
                                     "extension_sources": labels["extension_sources"]}
    assert llama.label_lists({"extension_sources": ["x"]}) == {"llama_sources": labels["llama_sources"]}


def test_specs_are_declared_with_their_sources() -> None:
    for spec in SOURCES.specs():  # in its flow module, or a SourceConfig the generic flow runs
        assert spec.config.__module__ == f"flows.{spec.name}" if spec.run else issubclass(spec.config, SourceConfig)
        assert (CONFIG_DIR / spec.default_yaml).is_file(), spec.name
        assert spec.input_fields, spec.name
    assert SOURCES["pubmed"].documents == ("pubmed_central", "pubmed_abstracts")
    assert SOURCES["pubmed"].sample_config(["a.tar.gz", "b.xml.gz"]) == {"central": ["a.tar.gz"],
                                                                         "abstracts": ["b.xml.gz"]}
    assert SOURCES["reasoning"].sample_config(["a.jsonl"]) == {"inputs": ["a.jsonl"]}
    # a Wikipedia date downloads the dumps: it is no local location
    assert SOURCES["wikipedia"].locations({"dumps": ["x.xml.bz2"], "date": "20220701"}) == ["x.xml.bz2"]


def test_a_name_is_registered_once_and_a_kind_is_checked() -> None:
    spec = SourceSpec("one", PipelineConfig, "extension")
    registry = Registry([spec])
    with pytest.raises(ValueError, match="already registered"):
        registry.register(spec)
    with pytest.raises(ValueError, match="kind must be"):
        SourceSpec("two", PipelineConfig, "other")  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="unknown source 'two'"):
        registry["two"]
    assert (spec.default_yaml, spec.documents, spec.deployment) == ("one.yaml", ("one",), "one")


def test_reading_the_registry_imports_neither_prefect_nor_pandas() -> None:
    """The heavy modules of tests/cli/test_help_imports.py (pyarrow's core is still imported by
    sources.formats.rows, which flows.dialogue reads at import time)."""
    code = ("import json, sys\nfrom flows.registry import SOURCES\nassert len(SOURCES) >= 13\n"
            "print(json.dumps([m for m in ('prefect', 'pandas', 'pyarrow.dataset') if m in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
