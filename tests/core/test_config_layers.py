"""One YAML layering rule: every config file reads as before, and every layer merges the same way."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from core.config import CONFIG_DIR, PipelineConfig, ShardConfig, deep_merge, load_layered
from flows.llama import LlamaConfig
from flows.registry import SOURCES
from loader.recipe import Recipe

FLOWS = Path(__file__).resolve().parents[2] / "flows"


def _readers() -> dict[str, type[BaseModel]]:
    """``configs/<file>`` -> the class that reads it: each source's default YAML (its spec), each other
    flow's, datasets, mixtures."""
    readers: dict[str, type[BaseModel]] = {spec.default_yaml: spec.config for spec in SOURCES.specs()}
    for path in sorted(FLOWS.glob("*.py")):
        cli = getattr(importlib.import_module(f"flows.{path.stem}"), "cli", None)
        if getattr(cli, "config_file", None) is not None:
            readers[cli.config_file.name] = cli.config_cls  # type: ignore[union-attr]
    for path in CONFIG_DIR.glob("*.yaml"):
        if path.stem.endswith("_mixture"):
            readers[path.name] = Recipe
        elif path.stem[:1] == "g" and path.stem[1:].isdigit():
            readers[path.name] = LlamaConfig
    return readers


def _raw(path: Path) -> dict[str, Any]:
    """The file as plain YAML, its ``extends`` parent (plain YAML too) under it: what the loaders read before."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    parent = data.pop("extends", None)
    return deep_merge(_raw(CONFIG_DIR / parent), data) if parent else data


def test_every_config_file_gives_the_settings_it_gave_before() -> None:
    readers = _readers()
    files = sorted(p.name for p in CONFIG_DIR.glob("*.yaml"))
    assert [name for name in files if name not in readers] == []  # no config file goes unchecked
    for name in files:
        reader = readers[name]
        loaded = reader.from_yaml(CONFIG_DIR / name)  # type: ignore[attr-defined]
        assert loaded == reader.model_validate(_raw(CONFIG_DIR / name)), name


def test_overrides_merge_by_the_one_rule(tmp_path: Path) -> None:
    """``--set shards.max_docs=5`` and a section ``shards: {max_docs: 5}`` mean the same: a nested key merges."""
    path = tmp_path / "flow.yaml"
    path.write_text("seed: 3\nshards:\n  max_docs: 10\n  max_bytes: 1000\n")
    dotted = PipelineConfig.from_yaml(path, {"shards.max_docs": 5})
    nested = PipelineConfig.from_yaml(path, {"shards": {"max_docs": 5}})
    assert dotted == nested and nested.shards == ShardConfig(max_docs=5, max_bytes=1000) and nested.seed == 3
    (tmp_path / "child.yaml").write_text("extends: flow.yaml\nshards: {max_docs: 7}\n")
    assert PipelineConfig.from_yaml(tmp_path / "child.yaml").shards == ShardConfig(max_docs=7, max_bytes=1000)
    assert load_layered(tmp_path / "child.yaml") == {"seed": 3, "shards": {"max_docs": 7, "max_bytes": 1000}}


def test_only_the_top_level_keys_are_dotted_paths(tmp_path: Path) -> None:
    """A mapping keyed by domain or file names keeps its keys whole in every layer; ``--set`` still nests."""
    (tmp_path / "base.yaml").write_text("hosts: {en.wikipedia.org: 1}\n")
    (tmp_path / "child.yaml").write_text("extends: base.yaml\nhosts: {de.wikipedia.org: 2, g1.yaml: 3}\n")
    whole = {"en.wikipedia.org": 1, "de.wikipedia.org": 2, "g1.yaml": 3}
    assert load_layered(tmp_path / "child.yaml") == {"hosts": whole}
    assert deep_merge({"a": {"b": 1}}, {"a.c.d": 2, "a": {"x.y": 3}}) == {"a": {"b": 1, "c": {"d": 2}, "x.y": 3}}


def test_a_recipe_layers_like_a_flow_config(tmp_path: Path) -> None:
    path = tmp_path / "mix.yaml"
    path.write_text("extends: base.yaml\nseed: 4\n")
    (tmp_path / "base.yaml").write_text("components: [{name: web, locations: [a/]}]\nseed: 1\nshuffle: false\n")
    recipe = Recipe.from_yaml(path, {"components": [{"name": "code", "locations": ["b/"]}], "seed": 9})
    assert (recipe.seed, recipe.shuffle, [c.name for c in recipe.components]) == (9, False, ["code"])  # lists replace
