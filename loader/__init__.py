"""Data tensors for training: a torch Dataset, mixtures by recipe, checkpointable iterators.

Imports are lazy so that worker processes (on-the-fly tokenization) start without torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Recipe": "loader.recipe",
    "Component": "loader.recipe",
    "LoaderIterator": "loader.recipe",
    "WindowDataset": "loader.dataset",
    "MixtureDataset": "loader.dataset",
    "ItemOptions": "loader.dataset",
    "TensorSet": "loader.tensors",
    "open_tensor_set": "loader.tensors",
    "Permutation": "loader.permutation",
    "RemoteError": "loader.remote",
    "UnsafePathError": "loader.safe_paths",
    "verify_tensor_set": "loader.verify",
    "VerifyReport": "loader.verify",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'loader' has no attribute {name!r}")
