"""Every tokenizer family a user brings, each trained here with the tokenizers library on one fixed corpus.

Digit splitting (:mod:`core.tokenizer`) must give every family its own tokens with each digit
cut out, or refuse it; the tests need a real tokenizer of each kind without a download, so each is
built the way its public ``tokenizer.json`` is laid out (pre-tokenizer, normalizer, decoder,
model options) and trained on :data:`CORPUS` (no randomness: the same files every run).
Imported as ``tests.tokenizer_families``; :func:`family_path` trains a family once per process.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from collections.abc import Callable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

_WORDS = ["the", "bridge", "was", "built", "in", "metres", "long", "and", "opened", "by", "town", "council", "river", "boat", "year", "people", "counted", "about", "cars", "each", "day", "when", "new", "road", "map", "price", "rose", "to", "call", "on", "at", "page", "chapter", "café", "naïve", "straße"]
#: Sentences with numbers of every shape (years, decimals, prices, dates, phone numbers), repeated.
CORPUS = [
    f"In {1900 + i % 120} the {_WORDS[i % len(_WORDS)]} {_WORDS[(i * 3) % len(_WORDS)]} was {(i * 7919) % 100000} "
    f"and {i} {_WORDS[(i * 5) % len(_WORDS)]} {(i * 31) % 997}.{i % 10} on 20{i % 30:02d}-0{i % 9 + 1}-1{i % 10} "
    f"call (555) 01{i % 10}-{1000 + i} at ${i}.{i % 100:02d} or {i % 7}%."
    for i in range(300)
] + ["The Town Bridge Was Counted. It's long, isn't it? \"Yes\" - they'll say.",
     "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 .,;:!?'\"()[]{}-+*/=<>$%&@#_~^|\\`"] * 20

#: GPT-2's pre-tokenizer regex and Llama 3's, as their tokenizer.json files carry them.
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_SPECIALS = ["<|endoftext|>", "</s>", "<unk>", "<pad>"]
_BYTES = [f"<0x{b:02X}>" for b in range(256)]


def _byte_level(add_prefix_space: bool = False, normalizer: normalizers.Normalizer | None = None) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tok.decoder = decoders.ByteLevel()
    return tok


def _bpe_trainer(vocab: int = 600, alphabet: list[str] | None = None, specials: list[str] | None = None) -> trainers.BpeTrainer:
    return trainers.BpeTrainer(vocab_size=vocab, special_tokens=specials or _SPECIALS,
                               initial_alphabet=alphabet if alphabet is not None else pre_tokenizers.ByteLevel.alphabet())


def gpt2() -> tuple[Tokenizer, trainers.Trainer]:
    """GPT-2: ByteLevel(add_prefix_space=False) with its regex, ByteLevel decoder."""
    return _byte_level(), _bpe_trainer()


def neox() -> tuple[Tokenizer, trainers.Trainer]:
    """GPT-NeoX/20B (RWKV's 20B_tokenizer.json too): GPT-2's layout behind an NFC normalizer."""
    return _byte_level(normalizer=normalizers.NFC()), _bpe_trainer()


def bytelevel_prefix() -> tuple[Tokenizer, trainers.Trainer]:
    """ByteLevel with ``add_prefix_space=True`` (RoBERTa-style exports): a space before the text."""
    return _byte_level(add_prefix_space=True), _bpe_trainer()


def llama3() -> tuple[Tokenizer, trainers.Trainer]:
    """Llama 3: a regex ``Split`` (numbers in groups of up to three), then ByteLevel without its regex."""
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    return tok, _bpe_trainer()


def _metaspace(scheme: str) -> Tokenizer:
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme=scheme, split=True)  # type: ignore[arg-type]
    tok.decoder = decoders.Sequence([decoders.Metaspace(replacement="\u2581", prepend_scheme=scheme, split=True),  # type: ignore[arg-type]
                                     decoders.ByteFallback(), decoders.Fuse()])
    return tok


def _sentencepiece_trainer() -> trainers.BpeTrainer:
    return _bpe_trainer(alphabet=list("\u2581abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,'\"-$%()"),
                        specials=[*_SPECIALS, *_BYTES])


def metaspace_first() -> tuple[Tokenizer, trainers.Trainer]:
    """Llama/Mistral as converted today: Metaspace ``first``, BPE with byte fallback."""
    return _metaspace("first"), _sentencepiece_trainer()


def metaspace_always() -> tuple[Tokenizer, trainers.Trainer]:
    """Older SentencePiece conversions: Metaspace ``always`` (a ``▁`` before every piece)."""
    return _metaspace("always"), _sentencepiece_trainer()


def metaspace_never() -> tuple[Tokenizer, trainers.Trainer]:
    """Metaspace ``never`` (no ``▁`` added at the start)."""
    return _metaspace("never"), _sentencepiece_trainer()


def llama2_normalizer() -> tuple[Tokenizer, trainers.Trainer]:
    """Llama 2's file: no pre-tokenizer; a normalizer prepends ``▁`` and replaces spaces; Strip decoder.

    Trained with a Metaspace split (SentencePiece never merges across a ``▁``, which a BPE trainer
    without pre-tokenizer would), then saved without one, as Llama 2's tokenizer.json is.
    """
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="never")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    return tok, _sentencepiece_trainer()


def t5_unigram() -> tuple[Tokenizer, trainers.Trainer]:
    """T5: WhitespaceSplit then Metaspace ``always``, a Unigram model, Metaspace decoder."""
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                 pre_tokenizers.Metaspace(prepend_scheme="always")])
    tok.decoder = decoders.Metaspace(prepend_scheme="always")
    return tok, trainers.UnigramTrainer(vocab_size=500, special_tokens=_SPECIALS, unk_token="<unk>")


def unigram_first() -> tuple[Tokenizer, trainers.Trainer]:
    """A SentencePiece Unigram model with Metaspace ``first`` (XLNet/ALBERT-style conversions)."""
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
    tok.decoder = decoders.Metaspace(prepend_scheme="first")
    return tok, trainers.UnigramTrainer(vocab_size=500, special_tokens=_SPECIALS, unk_token="<unk>")


def bert_wordpiece() -> tuple[Tokenizer, trainers.Trainer]:
    """BERT: BertNormalizer (lower case), BertPreTokenizer, WordPiece with ``##`` continuations."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    return tok, trainers.WordPieceTrainer(vocab_size=600, special_tokens=["[UNK]", "</s>"])


def bpe_word_suffix() -> tuple[Tokenizer, trainers.Trainer]:
    """Original GPT / CLIP layout: whitespace split, BPE with an end-of-word suffix ``</w>``."""
    tok = Tokenizer(models.BPE(end_of_word_suffix="</w>", unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    return tok, trainers.BpeTrainer(vocab_size=600, special_tokens=_SPECIALS, end_of_word_suffix="</w>")


#: Every family: name -> builder. The first group splits digits; the second is refused.
SPLITTABLE: dict[str, Callable[[], tuple[Tokenizer, trainers.Trainer]]] = {
    "gpt2": gpt2, "neox": neox, "bytelevel-prefix": bytelevel_prefix, "llama3": llama3,
    "metaspace-first": metaspace_first, "metaspace-always": metaspace_always, "metaspace-never": metaspace_never,
    "llama2-normalizer": llama2_normalizer, "t5-unigram": t5_unigram, "unigram-first": unigram_first,
}
REFUSED: dict[str, Callable[[], tuple[Tokenizer, trainers.Trainer]]] = {
    "bert-wordpiece": bert_wordpiece, "bpe-word-suffix": bpe_word_suffix,
}


@functools.cache
def family_json(name: str) -> str:
    """Family ``name`` trained on :data:`CORPUS` (once per process), as tokenizer.json text."""
    tok, trainer = {**SPLITTABLE, **REFUSED}[name]()
    tok.train_from_iterator(CORPUS, trainer)
    config = json.loads(tok.to_str())
    if name == "llama2-normalizer":
        config["pre_tokenizer"] = None
    # byte-fallback pieces were given to the trainer as special tokens so that they get ids; in a
    # SentencePiece conversion they are plain vocabulary (decode() would skip them as special)
    config["added_tokens"] = [t for t in config["added_tokens"] if t["content"] not in _BYTES]
    return json.dumps(config, ensure_ascii=False)


def family_path(name: str, folder: Path) -> Path:
    """Write family ``name``'s tokenizer.json into ``folder`` (once) and return its path."""
    path = folder / f"{name}.json"
    if not path.exists():
        path.write_text(family_json(name), encoding="utf-8")
    return path


# -- the stated relation of digit splitting ------------------------------------------------------
def _byte_map() -> dict[int, str]:
    """GPT-2's byte -> printable character table (what ByteLevel pieces are written in)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in table:
            table[b], extra = chr(256 + extra), extra + 1
    return table


BYTE_MAP = _byte_map()
BYTE_UNMAP = {char: byte for byte, char in BYTE_MAP.items()}


def _cut(text: str) -> list[str]:
    """``text`` cut so that every digit (Unicode category N, as the Digits step decides) is a piece alone."""
    pieces: list[str] = []
    for char in text:
        if unicodedata.category(char).startswith("N"):
            pieces.append(char)
        elif pieces and not unicodedata.category(pieces[-1][-1]).startswith("N"):
            pieces[-1] += char
        else:
            pieces.append(char)
    return pieces


def expected_tokens(base: Tokenizer, byte_level: bool, text: str) -> list[tuple[str, int]]:
    """The stated relation: the base tokenizer's pre-tokens, each cut at every digit, encoded by its model.

    ByteLevel pieces are written in mapped bytes, so they are cut as text and mapped back.
    Returns ``(token, id)`` pairs (a Unigram model's unknown piece keeps its text, with the unk id).
    """
    normalized = base.normalizer.normalize_str(text) if base.normalizer is not None else text
    pieces = [p for p, _ in base.pre_tokenizer.pre_tokenize_str(normalized)] if base.pre_tokenizer else [normalized]
    tokens: list[tuple[str, int]] = []
    for piece in pieces:
        surface = bytes(BYTE_UNMAP[c] for c in piece).decode("utf-8") if byte_level else piece
        for part in _cut(surface):
            mapped = "".join(BYTE_MAP[b] for b in part.encode("utf-8")) if byte_level else part
            tokens += [(token.value, token.id) for token in base.model.tokenize(mapped)]
    return tokens
