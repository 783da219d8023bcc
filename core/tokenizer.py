"""Load any ``tokenizer.json`` and optionally split numbers into single digits, as LLaMA does.

LLaMA's tokenizer splits every number into individual digits (Touvron et al. 2023, section 2.1).
We get the same behaviour from any existing HF ``tokenizers`` file by changing only its
*pre-tokenizer*: the vocabulary and merges stay untouched, so a text without digits encodes to
exactly the ids the original tokenizer gives, and models trained on either share embeddings.

What "digit splitting" means, for every tokenizer family: the tokenizer's own pre-tokens, each
cut so that every digit is a piece of its own, then encoded by the unchanged model. A pre-token
without a digit encodes exactly as before; ``" 2024"`` becomes ``" "`` (``Ġ``/``▁``) and four
digits, as LLaMA's SentencePiece model gives it; decoding gives the text the original tokenizer's
round trip gives. :func:`split_digits_config` builds it (``Digits`` after the original steps, or
just before the byte mapping of a ``ByteLevel`` step), and :func:`digit_split_fault` tries the
result on probe texts when it is loaded: a family that cannot be split this way (WordPiece, whose
later pieces of a word need ``##``; a model that appends an end-of-word suffix) is refused with
one line instead of writing corrupt tensors.

Two equivalent ways are offered for ByteLevel (GPT-2, NeoX/20B, RWKV) pre-tokenizers:

- ``"sequence"`` (the reference): ``Split(digits and the whitespace before one), ByteLevel``;
- ``"regex"``: one ``Split`` regex that isolates digits replaces the two passes. It gives the
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
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tokenizers import Tokenizer

from core.digest import canonical_json, json_hash

SplitMode = Literal["sequence", "regex"]
WorkTokens = Literal["added", "text"]

#: Galactica's reasoning markers, in the order their ids are appended.
WORK_TOKENS: tuple[str, str] = ("<work>", "</work>")

#: GPT-2's regex whose number alternative is cut at every digit: where GPT-2 matches `` ?\p{N}+``
#: this matches the space alone (`` (?=\p{N})``), then each digit (``\p{N}``). Neither new
#: alternative can match where GPT-2's matched something else, so one pass gives GPT-2's
#: pre-tokens with their digit runs cut (a property test checks it on random text).
DIGIT_SPLIT_BYTELEVEL_REGEX = (
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| (?=\p{N})|\p{N}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
)
#: The regex of the first version, which ran before Digits had split the text and so let a
#: whitespace run before a digit stay whole; recognised only so an already wrapped file is not wrapped again.
_OLD_DIGIT_SPLIT_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+|\s+(?![^\s\p{N}])|\s+"

_DIGITS = {"type": "Digits", "individual_digits": True}
#: Cuts every digit, and the one whitespace character before a digit, out of the text before
#: ByteLevel's own regex runs: GPT-2's regex gives that whitespace to the number (`` ?\p{N}+``) or
#: leaves it alone, so cutting it keeps the pieces around it as GPT-2 makes them (a property test).
DIGIT_ISOLATE_REGEX = r"\s(?=\p{N})|\p{N}"

#: Special tokens tried, in order, when no EOS token is named.
EOS_CANDIDATES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "<|eos|>")

#: Texts the digit-split tokenizer is tried on before any tensor is written (:func:`digit_split_fault`):
#: numbers at the start, after one and two spaces, inside words, with decimals, signs and
#: separators, and non-ASCII digits (Arabic-Indic, full-width, superscript).
DIGIT_PROBES = (
    "2024 was the year.", "In 2024 the bridge was 350 metres long.", "x  3 and\t42\n7", "v1.2.3-rc10 (555) 010-0199",
    "3.14159, -12,500 and 1e-9%", "\u0663\u0664 \uff12\uff10 m\u00b2 \u00bd", "The year's 1990s: 'tis 80's.",
)
#: A digit-free text that must encode to exactly the ids it had before digit splitting.
NO_DIGIT_PROBE = "The bridge, it's \"long\" \u2014 caf\u00e9 \u57ce\u5e02  ends.\n\tNext line!"
_BYTE_FALLBACK = re.compile(r"<0x[0-9A-Fa-f]{2}>")


def _steps(pre: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A pre-tokenizer as its list of steps (nested ``Sequence`` flattened; none: no step)."""
    if pre is None:
        return []
    if pre.get("type") == "Sequence":
        return [step for inner in pre.get("pretokenizers", []) for step in _steps(inner)]
    return [pre]


def _is_digit_splitting(pre: dict[str, Any] | None) -> bool:
    """True when a pre-tokenizer config already isolates single digits (idempotent wrapping)."""
    for step in _steps(pre):
        if step.get("type") == "Digits" and step.get("individual_digits"):
            return True
        if step.get("type") == "Split" and step.get("pattern", {}).get("Regex") in (
                DIGIT_SPLIT_BYTELEVEL_REGEX, DIGIT_ISOLATE_REGEX, _OLD_DIGIT_SPLIT_REGEX):
            return True
    return False


def _split_step(regex: str) -> dict[str, Any]:
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}


def _around_byte_level(byte_level: dict[str, Any], mode: SplitMode) -> list[dict[str, Any]]:
    """The steps that replace a ``ByteLevel`` step so digits are cut before bytes are mapped.

    ByteLevel maps every byte to a printable character, after which a digit of another script is
    no longer a digit and a continuation byte can look like one (``²``), so digits must be cut
    before it; but ByteLevel's regex and prefix space depend on where a piece starts, so plain
    ``Digits`` first (the old wrapping) changed the whitespace pieces before numbers (and, with a
    prefix space, put a space before every digit). Here ``DIGIT_ISOLATE_REGEX`` cuts each digit
    and the whitespace character before it, then ByteLevel runs as before (``"sequence"``), or one
    regex does both (``"regex"``: GPT-2's with its number alternative cut, then only the byte
    mapping). ``Metaspace`` with a space as its replacement and ``always`` adds a space to each
    piece not starting with one: what ``add_prefix_space`` does, done once before the cutting.
    """
    steps: list[dict[str, Any]] = []
    if byte_level.get("add_prefix_space", True):
        steps.append({"type": "Metaspace", "replacement": " ", "prepend_scheme": "always", "split": False})
    if not byte_level.get("use_regex", True):
        return [*steps, dict(_DIGITS), {**byte_level, "add_prefix_space": False}]
    if mode == "regex":
        return [*steps, _split_step(DIGIT_SPLIT_BYTELEVEL_REGEX), {**byte_level, "add_prefix_space": False, "use_regex": False}]
    return [*steps, _split_step(DIGIT_ISOLATE_REGEX), {**byte_level, "add_prefix_space": False}]


def split_digits_config(config: dict[str, Any], mode: SplitMode = "sequence") -> dict[str, Any]:
    """Return a copy of a ``tokenizer.json`` dict whose pre-tokenizer isolates single digits.

    Only ``pre_tokenizer`` changes; ``model`` (vocabulary, merges), normalizer, decoder and
    added tokens are left as they are. Wrapping twice is a no-op.

    ``Digits`` runs *after* the original pre-tokenizer, so the pieces are the original pieces
    with each digit cut out of them: a step that adds something by position (Metaspace's ``▁``
    with ``prepend_scheme="always"``, T5) has run already and cannot add it before every digit,
    as it did when ``Digits`` ran first (issue 31, case 09). A ``ByteLevel`` step is the one
    exception (:func:`_around_byte_level`). Whether the result is safe is checked by
    :func:`digit_split_fault` when the tokenizer is loaded.
    """
    result = copy.deepcopy(config)
    pre = result.get("pre_tokenizer")
    if _is_digit_splitting(pre):
        return result
    steps = _steps(pre)
    at = next((i for i, step in enumerate(steps) if step.get("type") == "ByteLevel"), None)
    if at is None:
        steps = [*steps, dict(_DIGITS)]
    else:
        steps = [*steps[:at], *_around_byte_level(steps[at], mode), *steps[at + 1:]]
    result["pre_tokenizer"] = steps[0] if len(steps) == 1 else {"type": "Sequence", "pretokenizers": steps}
    return result


def _family(config: dict[str, Any]) -> str:
    """``"WordPiece model, BertPreTokenizer pre-tokenizer, WordPiece decoder"``: names for a refusal."""
    pre = "+".join(str(step.get("type")) for step in _steps(config.get("pre_tokenizer"))) or "no"
    decoder = (config.get("decoder") or {}).get("type", "no")
    return f"{config.get('model', {}).get('type')} model, {pre} pre-tokenizer, {decoder} decoder"


def _round_trip(tokenizer: Tokenizer, text: str) -> str:
    return str(tokenizer.decode(tokenizer.encode(text, add_special_tokens=False).ids))


def digit_split_fault(base: Tokenizer, split: Tokenizer) -> str | None:
    """Why ``split`` (``base`` with digit splitting) would corrupt text, or None when it is safe.

    Tried on :data:`DIGIT_PROBES`: the split tokenizer must decode its tokens to the text the base
    tokenizer's own round trip gives (a WordPiece model would decode ``2024`` as ``2 0 2 4``: its
    later pieces of a word need ``##``, which only the model chooses), every token holding an
    ASCII digit must be that digit alone (byte-fallback tokens aside), and a text without digits
    must keep its ids. Any family or combination of steps is judged by what it does, so a
    tokenizer nobody wrote a rule for is refused rather than corrupted.
    """
    for text in DIGIT_PROBES:
        want, got = _round_trip(base, text), _round_trip(split, text)
        if got != want:
            return f"{text!r} decodes as {got!r}, not {want!r} as without digit splitting"
        tokens = split.encode(text, add_special_tokens=False).tokens
        mixed = [t for t in tokens if re.search("[0-9]", t) and not _BYTE_FALLBACK.fullmatch(t) and len(t) != 1]
        if mixed:
            return f"{text!r} still has digits joined to other characters in tokens {mixed}"
    if split.encode(NO_DIGIT_PROBE, add_special_tokens=False).ids != base.encode(NO_DIGIT_PROBE,
                                                                                 add_special_tokens=False).ids:
        return "a text without digits no longer encodes to the same ids"
    return None


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
        original = config
        config = split_digits_config(config, split_mode)
        fault = digit_split_fault(Tokenizer.from_str(tokenizer_json(original)), Tokenizer.from_str(tokenizer_json(config)))
        if fault is not None:
            raise ValueError(f"{source}: cannot split digits safely for this tokenizer ({_family(original)}): {fault}; "
                             "tokenize without digit splitting (--no-split-digits)")
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
