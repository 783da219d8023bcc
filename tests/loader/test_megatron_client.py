"""The Megatron export read by megatron-core itself (``IndexedDataset``), where it is installed.

megatron-core is not a dependency (its ``torch>=2.6`` requirement pulls a multi-GB CUDA build),
so this test skips without it; ``pip install --no-deps megatron-core`` beside the ``torch`` extra
runs it (0.16.1 on Python 3.11: passed). Every split with documents opens and equals the tensor
set's documents; an empty split has no pair to open (megatron-core cannot map a 0-byte file).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from loader.tensor_writer import (
    EMPTY_SPLIT_NOTE,
    TokenizeSettings,
    export_megatron_splits,
    find_input_shards,
    tokenize_shard,
    write_metadata,
)
from loader.tensors import open_tensor_set

indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset")


@pytest.mark.parametrize("holdout", [0.0, 0.3])
def test_every_exported_split_opens_in_megatron_core(corpus: tuple[Path, Path], toy_tokenizer: Path,
                                                     tmp_path: Path, holdout: float) -> None:
    data, _ = corpus
    settings = TokenizeSettings(tokenizer=str(toy_tokenizer), holdout_fraction=holdout, batch_docs=16)
    out = tmp_path / "tensors"
    write_metadata(out, [tokenize_shard(data, s, out, settings) for s in find_input_shards(data)], settings)
    exports = export_megatron_splits(out, out / "megatron")
    for split, note in exports.items():
        files = open_tensor_set(out, split=split).files
        documents = [tokens[a:b] for tokens, offsets in (f.open() for f in files)
                     for a, b in itertools.pairwise(offsets)]
        if not documents:
            assert note == {"skipped": EMPTY_SPLIT_NOTE}
            continue
        dataset = indexed.IndexedDataset(str(out / note["prefix"]))
        assert len(dataset) == len(documents) == note["sequences"]
        assert all(np.array_equal(dataset[i], doc) for i, doc in enumerate(documents))
