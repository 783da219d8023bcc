"""Iterator edge cases: end of data on every rank, refused states, prefetch errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from loader import Recipe
from loader.iterators import Batch, IndexedSource, Prefetch, Stride


def test_ranks_stop_together_and_the_end_state_stays_at_the_end() -> None:
    data = list(range(23))
    steps = []
    for rank in range(3):
        it = Batch(Stride(IndexedSource(data), rank, 3), 2, list)
        batches = list(it)
        steps.append(len(batches))
        resumed = Batch(Stride(IndexedSource(data), rank, 3), 2, list)
        resumed.load_state_dict(it.state_dict())
        assert list(resumed) == []
        assert it.state_dict() == {"upstream": {"upstream": {"position": 18}}}
    assert steps == [3, 3, 3]
    stride = Stride(IndexedSource(data), 1, 3)
    assert list(stride) == [1, 4, 7, 10, 13, 16, 19]
    assert stride.state_dict() == {"upstream": {"position": 21}}  # the incomplete last group is not consumed  # 23 items: 3 full steps of 3 ranks x 2, the rest dropped by all


def test_prefetch_hands_on_errors_and_is_transparent() -> None:
    class Boom:
        def __init__(self) -> None:
            self.n = 0

        def __next__(self) -> int:
            self.n += 1
            if self.n == 3:
                raise RuntimeError("bad record")
            return self.n

        def state_dict(self) -> dict[str, int]:
            return {"n": self.n}

        def load_state_dict(self, state: dict[str, int]) -> None:
            self.n = state["n"]

    it = Prefetch(Boom(), depth=2)
    assert [next(it), next(it)] == [1, 2]
    assert it.state_dict() == {"n": 2}
    with pytest.raises(RuntimeError, match="bad record"):
        next(it)
    it.close()


def test_state_of_another_recipe_or_seed_is_refused(corpus: tuple[Path, Path]) -> None:
    _, tensors = corpus
    recipe = Recipe.model_validate({"locations": [str(tensors)], "components": [{"name": "all"}]})
    with recipe.iterator(context_length=16, batch_size=2) as it:
        next(it)
        state = it.state_dict()
    with pytest.raises(ValueError, match="seed"):
        recipe.iterator(context_length=16, batch_size=2, seed=5, state_dict=state)
    with pytest.raises(ValueError, match="context_length"):
        recipe.iterator(context_length=32, batch_size=2, state_dict=state)
    other = Recipe.model_validate({"locations": [str(tensors)], "components": [{"name": "all", "weight": 2}]})
    with pytest.raises(ValueError, match="recipe"):
        other.iterator(context_length=16, batch_size=2, state_dict=state)
