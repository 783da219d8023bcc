"""torchdata's ``StatefulDataLoader`` over the loader's dataset: a saved state resumes exactly.

The setup docs/training.md shows: ``recipe.dataset(...)`` is already shuffled by its seeded
permutation, so the DataLoader runs with ``shuffle=False`` (its own sampler would reshuffle on
every epoch with an unsaved generator state), and epoch ``e`` reads ``ds.for_epoch(e)``. Read k
batches, save ``state_dict()``, read n more; a new loader given the state reads the same n, with
0 and 2 worker processes, and across an epoch boundary. A training-loop checkpoint (model,
optimizer, loader state) resumed in the middle gives bit-equal losses.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from loader import Recipe

torchdata = pytest.importorskip("torchdata.stateful_dataloader")  # the `torch` extra installs it
StatefulDataLoader = torchdata.StatefulDataLoader


def _recipe(tensors: Path) -> Recipe:
    components = [{"name": "wiki", "sources": ["wiki"], "weight": 2}, {"name": "c4", "sources": ["c4"]}]
    return Recipe.model_validate({"locations": [str(tensors)], "components": components, "seed": 3})


def _loader(ds: Any, workers: int, state: dict[str, Any] | None = None) -> Any:
    loader = StatefulDataLoader(ds, batch_size=4, shuffle=False, num_workers=workers,
                                multiprocessing_context="spawn" if workers else None)
    if state is not None:
        loader.load_state_dict(state)
    return loader


def _ids(batches: Iterator[dict[str, torch.Tensor]], n: int) -> list[torch.Tensor]:
    return [b["token_ids"] for b in itertools.islice(batches, n)]


@pytest.mark.parametrize("workers", [0, 2])
def test_state_dict_resumes_the_same_batches(corpus: tuple[Path, Path], workers: int) -> None:
    ds = _recipe(corpus[1]).dataset(context_length=16)
    loader = _loader(ds, workers)
    batches = iter(loader)
    _ids(batches, 3)
    state = loader.state_dict()
    expected = _ids(batches, 4)
    del batches
    resumed = _ids(iter(_loader(ds, workers, state)), 4)
    assert len(expected) == 4 and all(torch.equal(a, b) for a, b in zip(expected, resumed, strict=True))


def test_epochs_reshuffle_through_for_epoch_and_resume_inside_one(corpus: tuple[Path, Path]) -> None:
    ds = _recipe(corpus[1]).dataset(context_length=16)
    first, second = [torch.cat(_ids(iter(_loader(ds.for_epoch(e), 0)), 10**6)) for e in (0, 1)]
    assert first.shape == second.shape and not torch.equal(first, second)  # the epoch reshuffles
    loader = _loader(ds.for_epoch(1), 0)
    batches = iter(loader)
    _ids(batches, 2)
    state = {"epoch": 1, "loader": loader.state_dict()}  # what a checkpoint keeps
    rest = torch.cat(_ids(batches, 10**6))
    resumed = torch.cat(_ids(iter(_loader(ds.for_epoch(state["epoch"]), 0, state["loader"])), 10**6))
    assert torch.equal(rest, resumed) and torch.equal(resumed, second[8:])


def _train(ds: Any, steps: int, checkpoint: Path, stop_at: int | None = None) -> list[float]:
    """A tiny next-token model; saves model, optimizer and loader state at ``stop_at`` and stops there."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(512, 8), torch.nn.Linear(8, 512))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = _loader(ds, 0)
    step, losses = 0, []
    if checkpoint.exists():
        saved = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        loader.load_state_dict(saved["loader"])
        step = saved["step"]
    for batch in loader:
        if step == steps:
            break
        ids = batch["token_ids"] % 512
        loss = torch.nn.functional.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        step += 1
        if step == stop_at:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "loader": loader.state_dict(), "step": step}, checkpoint)
            break
    return losses


def test_training_checkpoint_resumes_bit_equal(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    ds = _recipe(corpus[1]).dataset(context_length=16)
    straight = _train(ds, 12, tmp_path / "none.pt")
    before = _train(ds, 12, tmp_path / "ckpt.pt", stop_at=5)
    after = _train(ds, 12, tmp_path / "ckpt.pt")
    assert len(straight) == 12 and before + after == straight
