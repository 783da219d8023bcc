"""Shared config pieces: the code filters declared once, and config hashes that stay as they were.

The config hash is written into every shard's metadata and keys resumable work, so a refactor of
the config classes (fields moved into a shared base) or a bound exposed in YAML at the value the
reader already used must leave it unchanged. The pinned values are the hashes of the default YAMLs
as computed before those changes (``flows.<name>.cli.config_cls.from_yaml(cli.config_file)``).
"""

from __future__ import annotations

import importlib

import pytest

from core.config import PipelineConfig
from flows.github import GithubConfig
from flows.runtime.config_parts import CodeFilterConfig
from flows.stack_code import StackCodeConfig

#: flow module -> config_hash() of its default YAML before the shared classes and the new bound lines.
PINNED = {
    "github": "ae43228746a4e5fc",
    "stack_code": "afaf785e9b437256",
    "books": "ae49f76cf8b4446c",
    "science_books": "5d5c55dea728145a",
    "pubmed": "32ab2d9e8f493a9c",
    "dedup": "044b5f283dea1c8e",
    "pile_index": "112fcfaeebeb23f2",
    "llama": "c41a4e6e5dae9bba",
}


@pytest.mark.parametrize("module", sorted(PINNED))
def test_default_yaml_hash_unchanged(module: str) -> None:
    cli = importlib.import_module(f"flows.{module}").cli
    assert cli.config_cls.from_yaml(cli.config_file).config_hash() == PINNED[module]


def test_code_filter_fields_declared_once() -> None:
    names = set(CodeFilterConfig.model_fields) - set(PipelineConfig.model_fields)
    assert names == {"header_mode", "max_line_length", "max_avg_line_length", "min_alphanumeric_fraction",
                     "min_alpha_per_token", "tokenizer"}
    for config_cls in (GithubConfig, StackCodeConfig):
        assert issubclass(config_cls, CodeFilterConfig)
        assert names.isdisjoint(config_cls.__annotations__), "a code-filter field declared again in the flow"
        assert names <= set(config_cls.model_fields)


@pytest.mark.parametrize("module", ["github", "stack_code"])
def test_code_filter_values_reach_the_recipe(module: str) -> None:
    cli = importlib.import_module(f"flows.{module}").cli
    overrides = {"header_mode": "redpajama", "max_line_length": 77, "max_avg_line_length": 33.0,
                 "min_alphanumeric_fraction": 0.5, "min_alpha_per_token": 2.5, "tokenizer": "tok.json"}
    filters = cli.config_cls.from_yaml(cli.config_file, overrides).recipe().settings.filters
    assert (filters.header_mode, filters.max_line_length, filters.max_avg_line_length,
            filters.min_alphanumeric_fraction, filters.min_alpha_per_token, filters.tokenizer) == tuple(overrides.values())
