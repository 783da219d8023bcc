"""The source registry is the one list of sources: every other list is derived from it or checked here.

:func:`lists_against_the_registry` is the one check of the copies that cannot read the registry,
one line per missing or extra entry, naming the file: ``prefect.yaml`` (``kinda deployments
--check``: a deployment per deployed source, pointing at the flow that runs it, tagged ``g2`` for
an extension), ``configs/labels.yaml`` (names no list, or the registry's), the dataset files (G.1
runs exactly the LLaMA sources, G.2 every registered source) and the per-source cases of
``tests/flows/test_silent_inputs.py``. Every other list (the label stage's, the sample's, the
tests' expected sources and document names) is derived from :data:`flows.registry.SOURCES`.
Plus: where a spec is declared, the registry refuses a second source of one name, and reading
the specs imports neither Prefect nor pandas.
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
from flows.registry import SOURCES
from kinda.cli_deployments import deployment_problems

REPO = Path(__file__).resolve().parents[2]


def _differences(file: str, what: str, found: list[str], expected: list[str]) -> list[str]:
    """``<file>: <what> lacks 'x'`` / ``... names 'y', not a registered ...`` / order, one line each."""
    lines = [f"{file}: {what} lacks {name!r}" for name in expected if name not in found]
    lines += [f"{file}: {what} names {name!r}, which the registry does not" for name in found if name not in expected]
    if not lines and found != expected:
        lines.append(f"{file}: {what} in the order {found}, the registry's is {expected}")
    return lines


def lists_against_the_registry(registry: Registry, root: Path) -> list[str]:
    """Every hand-kept list of source names under ``root`` that differs from ``registry``, one line each."""
    from tests.flows.test_silent_inputs import EMPTY

    problems = deployment_problems((root / "prefect.yaml").read_text(encoding="utf-8"), registry)
    labels = yaml.safe_load((root / "configs" / "labels.yaml").read_text(encoding="utf-8")) or {}
    for key, kind in (("llama_sources", "llama"), ("extension_sources", "extension")):
        if key in labels:  # the label flow reads the registry; a list written here must be its list
            problems += _differences("configs/labels.yaml", key, labels[key], registry.documents(kind))
    for name, names in (("g1.yaml", registry.names("llama")), ("g2.yaml", registry.names())):
        sources = list(llama.LlamaConfig.from_yaml(root / "configs" / name).sources)
        problems += _differences(f"configs/{name}", "sources", sources, names)
    problems += _differences("tests/flows/test_silent_inputs.py", "EMPTY (an empty input per source)",
                             sorted(EMPTY), sorted(registry))
    return problems


def test_every_list_of_sources_matches_the_registry() -> None:
    assert lists_against_the_registry(SOURCES, REPO) == []
    assert llama.label_lists({}) == {"llama_sources": SOURCES.documents("llama"),
                                     "extension_sources": SOURCES.documents("extension")}
    assert llama.label_lists({"extension_sources": ["x"]}) == {"llama_sources": SOURCES.documents("llama")}


def test_the_check_names_the_file_and_the_missing_entry() -> None:
    """A source registered and nowhere else: each list that must name it says so, by file."""
    extra = SourceSpec("extra_source", SourceConfig, "extension")
    lines = lists_against_the_registry(Registry([*SOURCES.specs(), extra]), REPO)
    assert lines == [
        "prefect.yaml: no deployment 'extra_source' for source 'extra_source' (kinda deployments --write adds it)",
        "configs/g2.yaml: sources lacks 'extra_source'",
        "tests/flows/test_silent_inputs.py: EMPTY (an empty input per source) lacks 'extra_source'",
    ]


def spec_home(spec: SourceSpec) -> str:
    """Where ``spec`` and its config class must be declared (docs/adding-a-source.md, "Where a source lives").

    The module that runs the source: ``flows/<name>.py`` when the source has a flow of its own
    (phases, flags; the spec names that flow, and ``sources/`` may not import flows), else
    ``sources/<name>.py``, beside its recipe, run by the generic flow.
    """
    return f"flows.{spec.name}" if spec.run is not None else f"sources.{spec.name}"


def test_specs_are_declared_with_their_sources() -> None:
    for spec in SOURCES.specs():
        home = sys.modules[spec.config.__module__]
        assert (home.__name__, getattr(home, "SPEC", None)) == (spec_home(spec), spec), spec.name
        assert spec.run is not None or issubclass(spec.config, SourceConfig), spec.name
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


def test_kinda_deployments_write_adds_what_the_check_finds_missing() -> None:
    """``kinda deployments --write``: the missing source's deployment, built from its spec, ends the check's complaint."""
    from kinda.cli_deployments import with_missing

    extra = SourceSpec("extra_source", SourceConfig, "extension")
    registry = Registry([*SOURCES.specs(), extra])
    text = (REPO / "prefect.yaml").read_text(encoding="utf-8")
    written = with_missing(text, registry, CONFIG_DIR)
    assert deployment_problems(text, registry) != [] and deployment_problems(written, registry) == []
    assert written.startswith(text.partition("  # -- the stages after the sources")[0].rstrip("\n"))
    added = {d["name"]: d for d in yaml.safe_load(written)["deployments"]}["extra_source"]
    assert added["entrypoint"] == "flows/source.py:source_flow" and added["tags"] == ["kinda", "source", "g2"]
    assert added["parameters"] == {"name": "extra_source", "config": {"out": "data"}}
    assert with_missing(text, SOURCES, CONFIG_DIR) == text  # nothing missing: the file as it is
