"""Shared test set-up: the toy tokenizer (a real byte-level BPE) and the random texts it is trained on.

Eight test files used to train their own copy of the same tokenizer recipe; they now call
:func:`train_toy_tokenizer` (with their own texts where their assertions depend on the
vocabulary: digit merges, work-token markers), or take the session's ``toy_tokenizer`` fixture
(``tests/conftest.py``) where any real tokenizer will do. Imported as ``tests.toy`` (the test run's
working directory is the repository root).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

#: The words of the session's toy corpus: digits, years, and non-ASCII letters the byte level must carry.
TOY_WORDS = ["the", "of", "river", "stone", "light", "market", "1999", "2023", "42", "paper", "north",
             "window", "seven", "and", "a", "bridge", "城市", "café"]
EOS = "<|endoftext|>"


def toy_texts(n: int, seed: int, words: Sequence[str] = TOY_WORDS, min_words: int = 1, max_words: int = 80) -> list[str]:
    """``n`` texts of ``min_words``-``max_words`` random ``words``, the same for the same ``seed``."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(rng.randint(min_words, max_words))) for _ in range(n)]


def train_toy_tokenizer(path: Path, texts: Iterable[str], vocab_size: int = 300,
                        special_tokens: Sequence[str] = (EOS,)) -> Path:
    """Train a real GPT-2 style byte-level BPE on ``texts`` and save it as ``path`` (tokenizer.json).

    The whole byte alphabet is in its vocabulary, so it encodes any text, not only the words it was
    trained on; ``special_tokens`` get the first ids (the EOS first, as the tensor writer expects).
    """
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens),
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.save(str(path))
    return path
