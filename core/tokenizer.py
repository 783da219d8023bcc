"""Load any ``tokenizer.json`` and optionally split numbers into single digits, as LLaMA does.

LLaMA's tokenizer splits every number into individual digits (Touvron et al. 2023, section 2.1).
We get the same behaviour from any existing HF ``tokenizers`` file by changing only its
*pre-tokenizer*: the vocabulary and merges stay untouched, so a text without digits encodes to
exactly the ids the original tokenizer gives, and models trained on either share embeddings.

Two equivalent ways are offered:

- ``"sequence"`` (the reference): ``Sequence([Digits(individual_digits=True), original])``;
- ``"regex"``: for the common GPT-2 style ``ByteLevel(use_regex=True, add_prefix_space=False)``
  pre-tokenizer, one ``Split`` regex that isolates digits replaces the two passes. It gives the
  same pre-tokens as the sequence (a property test checks it on random text), in one regex pass.
  For any other pre-tokenizer ``"regex"`` falls back to ``"sequence"``.

Galactica's ``<work>`` / ``</work>`` markers (reasoning documents of the ``reasoning`` source) are
handled by ``work_tokens``: ``"text"`` (the tokenize flow's default, configs/tokenize.yaml: same
tokenizer; the markers are plain text that the vocabulary encodes, recorded in the metadata) or
``"added"`` (:func:`add_work_tokens` appends them as two added, non-special tokens after the last
id, so every existing id is unchanged and ``decode()`` keeps them in the text and models trained on the legacy ids keep their embeddings). ``None``
(this module's default, for callers that never tokenize reasoning documents) encodes as ``"text"``
does and records nothing, so their ``metadata.json`` keeps its legacy bytes. ``"text"`` is the
default because it adds no id: tensors stay mixable with every earlier set and loadable by the
existing checkpoints (docs/loader.md, "``<work>`` tokens").

The *tokenizer hash* is the SHA256 of the canonical JSON of the tokenizer actually used (after
digit splitting), so data tensors record exactly which tokenizer produced them and a loader can
refuse to mix tensors of different tokenizers.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tokenizers import Tokenizer

from core.digest import canonical_json, json_hash

SplitMode = Literal["sequence", "regex"]
WorkTokens = Literal["added", "text"]

#: Galactica's reasoning markers, in the order their ids are appended.
WORK_TOKENS: tuple[str, str] = ("<work>", "</work>")

#: The GPT-2 pre-tokenizer regex with two changes that isolate digits exactly like a preceding
#: ``Digits(individual_digits=True)`` pass: numbers match one character at a time and never take
#: the leading space, and a whitespace run before a digit is kept whole (in the two-pass version
#: that run ends its segment, so ``\s+(?!\S)`` sees the end of the segment there).
DIGIT_SPLIT_BYTELEVEL_REGEX = (
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+|\s+(?![^\s\p{N}])|\s+"
)

_DIGITS = {"type": "Digits", "individual_digits": True}

#: Special tokens tried, in order, when no EOS token is named.
EOS_CANDIDATES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "<|eos|>")


def _is_digit_splitting(pre: dict[str, Any] | None) -> bool:
    """True when a pre-tokenizer config already isolates single digits (idempotent wrapping)."""
    if pre is None:
        return False
    if pre.get("type") == "Digits":
        return bool(pre.get("individual_digits"))
    if pre.get("type") == "Sequence":
        return any(_is_digit_splitting(p) for p in pre.get("pretokenizers", []))
    if pre.get("type") == "Split":
        return pre.get("pattern", {}).get("Regex") == DIGIT_SPLIT_BYTELEVEL_REGEX
    return False


def _is_plain_bytelevel(pre: dict[str, Any] | None) -> bool:
    return (
        pre is not None
        and pre.get("type") == "ByteLevel"
        and pre.get("use_regex", True)
        and not pre.get("add_prefix_space", False)
    )


def split_digits_config(config: dict[str, Any], mode: SplitMode = "sequence") -> dict[str, Any]:
    """Return a copy of a ``tokenizer.json`` dict whose pre-tokenizer isolates single digits.

    Only ``pre_tokenizer`` changes; ``model`` (vocabulary, merges), normalizer, decoder and
    added tokens are left as they are. Wrapping twice is a no-op.
    """
    result = copy.deepcopy(config)
    pre = result.get("pre_tokenizer")
    if _is_digit_splitting(pre):
        return result
    if mode == "regex" and isinstance(pre, dict) and _is_plain_bytelevel(pre):
        split = {"type": "Split", "pattern": {"Regex": DIGIT_SPLIT_BYTELEVEL_REGEX},
                 "behavior": "Isolated", "invert": False}
        byte_level = {**pre, "use_regex": False}
        result["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split, byte_level]}
    elif pre is None:
        result["pre_tokenizer"] = dict(_DIGITS)
    else:
        result["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [dict(_DIGITS), pre]}
    return result


def _next_id(config: dict[str, Any]) -> int:
    """One past the largest id of the vocabulary and the added tokens."""
    vocab = config.get("model", {}).get("vocab") or {}
    ids = list(vocab.values()) if isinstance(vocab, dict) else list(range(len(vocab)))
    ids += [int(token["id"]) for token in config.get("added_tokens") or []]
    return max(ids, default=-1) + 1


def add_work_tokens(config: dict[str, Any], tokens: tuple[str, ...] = WORK_TOKENS) -> dict[str, Any]:
    """Return a copy of a ``tokenizer.json`` dict with ``tokens`` appended as added tokens.

    New ids start after the last id in use, so every existing token keeps its id (the RWKV
    checkpoints' ``20B_tokenizer.json`` compatibility); a token the tokenizer already has (a
    Galactica tokenizer) keeps its id and is not added again, so applying this twice is a no-op.
    They are *not* special: ``tokenizers`` matches an added token in the text either way (same
    ids), but ``decode()`` skips special tokens by default, which dropped the markers from
    decoded text; the work block is content, not control.
    """
    result = copy.deepcopy(config)
    added = result.setdefault("added_tokens", [])
    present = {token["content"] for token in added}
    vocab = result.get("model", {}).get("vocab") or {}
    next_id = _next_id(result)
    for content in tokens:
        if content in present or (isinstance(vocab, dict) and content in vocab):
            continue
        added.append({"id": next_id, "content": content, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": False})
        next_id += 1
    return result


def tokenizer_json(config: dict[str, Any]) -> str:
    """Canonical serialization (sorted keys, no spaces, non-ASCII kept) on which the tokenizer hash is taken."""
    return canonical_json(config, ascii_only=False)


@dataclass(frozen=True)
class LoadedTokenizer:
    """A tokenizer ready to encode, with what the data tensors must record about it."""

    tokenizer: Tokenizer
    config: dict[str, Any]
    source: str
    split_digits: bool
    split_mode: SplitMode
    eos_token: str
    eos_id: int
    #: SHA256 of the canonical JSON of the tokenizer in use (after digit splitting); computed once,
    #: since serializing a 50k vocabulary costs ~0.1 s.
    hash: str
    #: How ``<work>``/``</work>`` are tokenized (None: not asked for; encodes as ``"text"``, records nothing).
    work_tokens: WorkTokens | None = None

    @property
    def vocab_size(self) -> int:
        """Vocabulary size including added tokens: decides uint16 vs uint32 tensors."""
        return int(self.tokenizer.get_vocab_size(with_added_tokens=True))

    def describe(self) -> dict[str, Any]:
        """What ``metadata.json`` records about the tokenizer."""
        return {
            "source": self.source,
            "hash": self.hash,
            "split_digits": self.split_digits,
            "split_mode": self.split_mode if self.split_digits else None,
            "vocab_size": self.vocab_size,
            "eos_token": self.eos_token,
            "eos_id": self.eos_id,
            "model": self.config.get("model", {}).get("type"),
            **({"work_tokens": self.work_token_ids()} if self.work_tokens else {}),
        }

    def work_token_ids(self) -> dict[str, Any]:
        """How each work marker encodes: one new id (``added``) or the vocabulary's pieces (``text``)."""
        ids = {token: self.tokenizer.encode(token, add_special_tokens=False).ids for token in WORK_TOKENS}
        return {"mode": self.work_tokens, "ids": ids}


def tokenizer_hash(config: dict[str, Any]) -> str:
    """SHA256 of a tokenizer config's canonical JSON."""
    return json_hash(config, None, ascii_only=False)


def read_tokenizer_config(source: str | Path) -> dict[str, Any]:
    """Read a ``tokenizer.json`` (a file, or a directory holding one) as a dict.

    A name that is not a local path is tried on the Hugging Face hub (users with network);
    tests and offline runs always pass a path.
    """
    path = Path(source)
    if path.is_dir():
        path = path / "tokenizer.json"
    if path.is_file():
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: not a tokenizer.json ({exc})") from exc
        if not isinstance(config, dict) or "model" not in config:
            raise ValueError(f"{path}: not a tokenizer.json (no 'model' entry)")
        return config
    if Path(source).exists() or str(source).startswith((".", "/")):
        raise FileNotFoundError(f"no tokenizer.json at {source}")
    return json.loads(Tokenizer.from_pretrained(str(source)).to_str())


def find_eos(tokenizer: Tokenizer, eos_token: str | None = None) -> tuple[str, int]:
    """The end-of-document token and its id: ``eos_token`` if given, else a known candidate."""
    candidates = (eos_token,) if eos_token else EOS_CANDIDATES
    for token in candidates:
        token_id = tokenizer.token_to_id(token)
        if token_id is not None:
            return token, int(token_id)
    raise ValueError(f"tokenizer has no end-of-document token among {list(candidates)}; set eos_token")


def load_tokenizer(
    source: str | Path,
    split_digits: bool = False,
    split_mode: SplitMode = "sequence",
    eos_token: str | None = None,
    work_tokens: WorkTokens | None = None,
) -> LoadedTokenizer:
    """Load a tokenizer from a ``tokenizer.json`` path (or hub name), optionally digit-splitting.

    ``work_tokens="added"`` appends ``<work>``/``</work>`` (:func:`add_work_tokens`); ``"text"``
    leaves the tokenizer as it is and only records the choice.
    """
    config = read_tokenizer_config(source)
    if split_digits:
        config = split_digits_config(config, split_mode)
    if work_tokens == "added":
        config = add_work_tokens(config)
    elif work_tokens not in (None, "text"):
        raise ValueError(f"work_tokens must be 'added', 'text' or None, not {work_tokens!r}")
    canonical = tokenizer_json(config)
    tokenizer = Tokenizer.from_str(canonical)
    token, token_id = find_eos(tokenizer, eos_token)
    return LoadedTokenizer(
        tokenizer=tokenizer, config=config, source=str(source), split_digits=split_digits,
        split_mode=split_mode, eos_token=token, eos_id=token_id,
        hash=tokenizer_hash(config), work_tokens=work_tokens,
    )


def encode_texts(tokenizer: Tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids of each text, without special tokens; uses the offset-free fast path if present."""
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    return [encoding.ids for encoding in encode(texts, add_special_tokens=False)]
