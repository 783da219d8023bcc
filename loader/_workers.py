"""Tokenizer worker functions for on-the-fly mode; torch-free so spawned workers start fast."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

_WORKER_TOKENIZER: Any = None


def init_worker(source: str, split_digits: bool, split_mode: str, eos: str | None) -> None:
    """Load the tokenizer once per worker process; one Rust thread per process."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    global _WORKER_TOKENIZER
    from core.tokenizer import load_tokenizer

    _WORKER_TOKENIZER = load_tokenizer(source, split_digits, split_mode, eos)  # type: ignore[arg-type]


def encode(texts: list[str]) -> list[np.ndarray]:
    """Token ids of each text with EOS appended; an empty text gives an empty array."""
    from core.tokenizer import encode_texts

    loaded = _WORKER_TOKENIZER
    out = []
    for ids in encode_texts(loaded.tokenizer, texts):
        if ids:
            ids.append(loaded.eos_id)
            out.append(np.asarray(ids, dtype=np.int64))
        else:
            out.append(np.zeros(0, dtype=np.int64))
    return out
