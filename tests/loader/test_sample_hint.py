"""A missing tensor set's error names the offline sample command that writes that dataset's tensors."""

from __future__ import annotations

from pathlib import Path

import pytest

from loader import Recipe
from loader.tensor_writer import TensorFormatError
from loader.tensors import sample_hint


def test_hint_names_the_dataset_sample_that_writes_the_location() -> None:
    assert sample_hint(Path("data-g2/tensors/g2")) == (
        "the offline sample: python -m flows.llama --config configs/g2.yaml --sample --out data-g2/ "
        "writes data-g2/tensors/g2")
    assert "--config" not in sample_hint(Path("data/tensors/g1"))
    assert sample_hint(Path("somewhere/else")).endswith("writes data/tensors/g1")  # not a dataset's tensor root


def test_g2_mixture_without_its_tensors_says_how_to_build_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    recipe = Recipe.from_yaml(Path(__file__).resolve().parents[2] / "configs" / "g2_mixture.yaml")
    with pytest.raises(TensorFormatError, match=r"--config configs/g2\.yaml --sample --out data-g2/"):
        recipe.dataset(context_length=64)
