"""Recipes over the data a corpus really has (issue 16.6): one clear error per missing part, or skip it.

The README's loader snippet used to fail on the quick start's output with "component 'CommonCrawl'
has no 2048-token window". A component without data must be named with how to fix it; the
LLaMA recipe must be readable over just the sources a corpus has (``on_empty: skip``), and
``configs/sample_mixture.yaml`` must work on the offline sample's layout as written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from loader import Recipe
from loader.tensor_writer import TensorFormatError

from .conftest import build_tensors, write_corpus  # type: ignore[import-not-found]

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.fixture(scope="module")
def sample_layout(tmp_path_factory: pytest.TempPathFactory, toy_tokenizer: Path) -> Path:
    """What `python -m flows.llama --sample --out data/` leaves: Wikipedia only, tensors/g1, sample/tokenizer.json."""
    base = tmp_path_factory.mktemp("sample")
    data = base / "data"
    write_corpus(data, {"wikipedia": (60, ["G.1"])})
    (data / "sample").mkdir()
    shutil.copy(toy_tokenizer, data / "sample" / "tokenizer.json")
    build_tensors(data, data / "tensors" / "g1", toy_tokenizer)
    return base


def test_component_without_data_is_named_with_the_fix(corpus: tuple[Path, Path]) -> None:
    _, tensors = corpus
    recipe = Recipe.model_validate({"name": "mix", "locations": [str(tensors)], "components": [
        {"name": "Wiki", "sources": ["wiki"]}, {"name": "CommonCrawl", "sources": ["commoncrawl"]}]})
    with pytest.raises(ValueError) as info:
        recipe.dataset(context_length=16)
    message = str(info.value)
    assert "component 'CommonCrawl' has no data" in message and "sources=['commoncrawl']" in message
    assert "they hold sources ['c4', 'wiki']" in message and "on_empty: skip" in message
    assert "\n" not in message
    long = Recipe.model_validate({"locations": [str(tensors)], "components": [{"name": "Wiki", "sources": ["wiki"]}]})
    with pytest.raises(ValueError, match=r"component 'Wiki' has no data: its 3 file\(s\) hold \d+ tokens, less than"):
        long.dataset(context_length=1 << 20)


def test_on_empty_skip_reads_the_components_that_have_data(corpus: tuple[Path, Path]) -> None:
    _, tensors = corpus
    recipe = Recipe.model_validate({"locations": [str(tensors)], "on_empty": "skip", "components": [
        {"name": "CommonCrawl", "sources": ["commoncrawl"], "weight": 67},
        {"name": "Wiki", "sources": ["wiki"], "weight": 4.5}, {"name": "C4", "sources": ["c4"], "weight": 15}]})
    ds = recipe.dataset(context_length=16)
    assert ds.names == ["Wiki", "C4"] and len(ds) > 0
    assert {int(ds[i]["component"]) for i in range(len(ds))} == {0, 1}
    nothing = recipe.model_copy(update={"components": recipe.components[:1]})
    with pytest.raises(ValueError, match="no component has data"):
        nothing.dataset(context_length=16)


def test_missing_tensor_set_says_how_to_build_it(tmp_path: Path) -> None:
    recipe = Recipe.model_validate({"locations": [str(tmp_path / "tensors")], "components": [{"name": "a"}]})
    with pytest.raises(TensorFormatError, match=r"no tensor set here .*python -m flows\.tokenization"):
        recipe.dataset(context_length=16)


def test_documents_mode_names_a_component_without_shards(corpus: tuple[Path, Path], toy_tokenizer: Path) -> None:
    data, _ = corpus
    fields = {"documents": str(data), "tokenizer": str(toy_tokenizer), "components": [
        {"name": "Wiki", "sources": ["wiki"]}, {"name": "ArXiv", "sources": ["arxiv"]}]}
    with pytest.raises(ValueError, match="component 'ArXiv' has no data: no document shard"):
        Recipe.model_validate(fields).iterator(context_length=16, batch_size=2, mode="documents", workers=0)
    with Recipe.model_validate(fields | {"on_empty": "skip"}).iterator(
            context_length=16, batch_size=2, mode="documents", workers=0) as it:
        assert next(it)["token_ids"].shape == (2, 16)


def test_shipped_recipes_run_on_the_sample_layout(sample_layout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(sample_layout)  # the recipes' paths are relative to where Python runs
    recipe = Recipe.from_yaml(CONFIGS / "sample_mixture.yaml")
    with recipe.iterator(context_length=64, batch_size=2) as it:
        assert next(it)["token_ids"].shape == (2, 64)
    with recipe.iterator(context_length=64, batch_size=2, mode="documents", workers=0) as it:
        assert next(it)["token_ids"].shape == (2, 64)
    with pytest.raises(ValueError, match="component 'CommonCrawl' has no data"):
        Recipe.from_yaml(CONFIGS / "llama_mixture.yaml", {"locations": ["data/tensors/g1"]}).dataset(context_length=64)
    llama = Recipe.from_yaml(CONFIGS / "llama_mixture.yaml", {"locations": ["data/tensors/g1"], "on_empty": "skip"})
    ds = llama.dataset(context_length=64)
    assert ds.names == ["Wikipedia"] and len(ds) > 0
