"""Word n-gram shingles and their 64-bit hashes: the definition, and the batch entry point.

Why not a Python loop over words: splitting and hashing ~900 words per 5 KB document one by
one is what makes the common MinHash tools slow (datasketch hashes every shingle with SHA1,
datatrove spends 95% of its time in spaCy). Here a batch of documents is concatenated into one
byte array and hashed by the compiled kernel (:mod:`dedupe.minhash_kernel`), which computes:

1. **Normalize** (:func:`normalize_for_shingles`, the one definition every matching path uses:
   within a source, across sources, against the Pile, books): Unicode NFKC (full-width forms,
   ligatures, ``…``, superscripts and NBSP become their plain forms), then each character on its
   own: non-ASCII punctuation, symbols, separators and controls (Unicode categories ``P*``,
   ``S*``, ``Z*``, ``Cc``) become a space (ASCII ones separate words in step 2), format characters (``Cf``: soft hyphens, zero-width spaces)
   are removed, everything else is case folded (``str.casefold``); then UTF-8. Typography
   therefore never makes a new word: ``didn’t``, ``“It”`` and ``day—by—day`` give the words of
   ``didn't``, ``"it"`` and ``day-by-day`` (issue 31, case 10). Letters keep their accents and
   digits stay digits: ``resume``/``résumé`` and ``1998``/``1999`` are different words.
2. **Words**: maximal runs of *word bytes*: ASCII letters and digits and every byte >= 0x80
   (so non-Latin scripts form words; after step 1 no non-ASCII punctuation is left). ASCII
   punctuation and whitespace separate words, which makes ``"Hello, world!"`` and
   ``"hello world"`` the same two words.
3. **Word hash**: a polynomial hash of the word's bytes modulo 2**64 (``sum_j b_j P^(m - j)``
   for a word of ``m`` bytes, ``P`` = :data:`POLY_BASE`), then avalanched with the 64-bit
   MurmurHash3 finalizer.
4. **Shingle hash**: ``fmix64(sum_k word[i + k] * C_k)`` over ``n`` consecutive words (order
   matters through the distinct odd constants ``C_k``). A document with fewer than ``n`` words
   but at least one gets exactly one shingle made of all its words, so short documents still
   take part in near-dedup; a document without any word gets no shingle (callers count it).

:func:`shingle_items` and :func:`reference_shingle_hash` are the slow, obviously-correct
per-shingle versions: tests prove the kernel's hashes equal them, and they are the ``hashfunc``
handed to ``datasketch.MinHash`` when signatures are compared with datasketch's.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.exact import non_ascii_chars
from dedupe.word_hash import MASK64, POLY_BASE

U64 = np.uint64
#: Seeds of the per-position shingle constants (odd, so each product is a bijection).
_SHINGLE_CONSTANT_SEED = 0x5EED5EED
_WORD_RE = re.compile(rb"[0-9A-Za-z\x80-\xff]+")
#: The shingle normalization's name and version: part of every signature's identity (index
#: format, part markers, book signature files), so signatures made under another definition
#: are rebuilt or refused, never compared with these.
NORMALIZATION = "nfkc-casefold-punct/2"


@dataclass(frozen=True)
class ShingleConfig:
    """How documents are cut into shingles; part of every index's identity."""

    ngram: int = 5

    def __post_init__(self) -> None:
        if not 1 <= self.ngram <= 64:
            raise ValueError(f"ngram must be in 1..64, got {self.ngram}")


def fmix64(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer: a bijection that spreads every input bit (array in, array out)."""
    return fmix64_inplace(values.astype(U64, copy=True))


def fmix64_inplace(h: np.ndarray) -> np.ndarray:
    """:func:`fmix64` overwriting a uint64 array the caller owns (saves a copy on hot paths)."""
    h ^= h >> U64(33)
    h *= U64(0xFF51AFD7ED558CCD)
    h ^= h >> U64(33)
    h *= U64(0xC4CEB9FE1A85EC53)
    h ^= h >> U64(33)
    return h


def _fmix64_int(value: int) -> int:
    value ^= value >> 33
    value = (value * 0xFF51AFD7ED558CCD) & MASK64
    value ^= value >> 33
    value = (value * 0xC4CEB9FE1A85EC53) & MASK64
    return value ^ (value >> 33)


@functools.cache
def shingle_constants(ngram: int) -> np.ndarray:
    """The odd per-position multipliers ``C_k`` of the shingle hash (fixed, seed-independent; read-only)."""
    rng = np.random.Generator(np.random.PCG64(_SHINGLE_CONSTANT_SEED))
    constants = rng.integers(0, 1 << 63, size=ngram, dtype=U64) * U64(2) + U64(1)
    constants.setflags(write=False)
    return constants


@functools.lru_cache(maxsize=1 << 16)
def fold_char(char: str) -> str:
    """One character of NFKC text as normalization step 1 writes it (see the module docstring).

    Per character, so the batch path can replace each distinct character of a document in its
    bytes. Every character of a result is its own fold and none is an ASCII capital (tested for
    every code point), so the replacements never act on each other's output. ASCII characters
    are only lowered: ASCII punctuation separates words in step 2 already, and keeping it keeps
    the batch path's bytes equal to the definition's.
    """
    if char.isascii():
        return char.lower()
    category = unicodedata.category(char)
    if category[0] in "PSZ" or category == "Cc":
        return " "
    if category == "Cf":
        return ""
    return char.casefold()


def normalize_for_shingles(text: str) -> str:
    """The text whose words are shingled: NFKC, then :func:`fold_char` on every character.

    The definition (one document at a time); :func:`lowered_batch` gives the same bytes for a
    whole batch (a property test), doing the work only where a document has non-ASCII characters.
    """
    return "".join(map(fold_char, unicodedata.normalize("NFKC", text)))


def _encode(text: str) -> bytes:
    return normalize_for_shingles(text).encode("utf-8", errors="surrogatepass")


def encode_texts(texts: Sequence[str]) -> list[bytes]:
    """The texts as UTF-8 (lone surrogates kept), encoded once per batch for every consumer."""
    return [text.encode("utf-8", errors="surrogatepass") for text in texts]


#: Hangul vowel and final-consonant jamo: composed with the syllable before them by an algorithm,
#: so they have no decomposition entry to be found by :func:`_joins_previous`'s scan.
_HANGUL_JOINING = frozenset(chr(c) for c in [*range(0x1161, 0x1176), *range(0x11A8, 0x11C3)])


@functools.cache
def _joins_previous() -> frozenset[str]:
    """Starters that canonical composition may join to the character before them (NFC_QC=Maybe):
    the second character of every two-character canonical decomposition, and Hangul V/T jamo."""
    seconds = set(_HANGUL_JOINING)
    for point in range(0x30000):  # no canonical decomposition lies beyond (tested)
        parts = unicodedata.decomposition(chr(point)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(chr(int(parts[1], 16)))
    return frozenset(seconds)


def _inert(char: str) -> bool:
    """A starter that never joins the character before it (so NFKC never looks across it)."""
    return unicodedata.combining(char) == 0 and char not in _joins_previous()


@functools.lru_cache(maxsize=1 << 16)
def fold_alone(char: str) -> str | None:
    """``fold_char`` over ``NFKC(char)`` when NFKC maps this character on its own, else None.

    NFKC decomposes each character, reorders runs of combining marks and composes a starter
    with what may join it. When a character's NFKC form holds only inert starters and its
    decomposition begins with one, no reordering or composition crosses its edges, so NFKC of
    a text made of such characters is the concatenation of their own NFKC forms: the batch path
    maps each distinct character once instead of normalizing the text (web text holds NBSP and
    ``…`` in most documents; NFKC of each was half the cost of signing). A text with any other
    character (combining marks, Hangul jamo, some Indic vowel signs) takes the whole NFKC.
    """
    normal = unicodedata.normalize("NFKC", char)
    decomposed = unicodedata.normalize("NFKD", char)
    if not all(map(_inert, normal)) or not decomposed or not _inert(decomposed[0]):
        return None
    return "".join(map(fold_char, normal))


def _lowerable_bytes(text: str, raw: bytes, others: str | None = None) -> bytes:
    """Bytes whose ASCII lowering (``bytes.lower``) is ``_encode(text)``, given ``raw`` = ``text`` as UTF-8.

    ``others``: the text's non-ASCII characters (:func:`core.exact.non_ascii_chars`), computed
    here when not given. An ASCII text needs nothing: the kernel lowers ASCII letters as it reads
    them and treats ASCII punctuation as a separator, which is what :func:`fold_char` does to
    them. Otherwise each distinct non-ASCII character is replaced in the bytes by its
    :func:`fold_alone` form (``str`` operations over the whole text were the shingler's largest
    cost); a text holding a character NFKC cannot map alone is normalized whole first. UTF-8 is
    self-synchronizing, so a character's bytes never match across a character boundary, and no
    replacement holds a character that another one changes (tested for every code point).
    """
    if others is None:
        others = non_ascii_chars(text, raw)
    if not others:
        return raw
    distinct = set(others)
    folded = [(char, fold_alone(char)) for char in distinct]
    if any(form is None for _, form in folded):
        text = unicodedata.normalize("NFKC", text)
        raw = text.encode("utf-8", errors="surrogatepass")
        folded = [(char, fold_char(char)) for char in set(non_ascii_chars(text, raw))]
    for char, form in folded:
        if form != char:
            raw = raw.replace(char.encode("utf-8", errors="surrogatepass"),
                              (form or "").encode("utf-8", errors="surrogatepass"))
    return raw


def lowered_batch(texts: Sequence[str], encoded: Sequence[bytes] | None = None,
                  others: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(data, offsets)``: the batch's bytes whose ASCII lowering is each text's ``_encode``, joined.

    Document ``i`` owns ``data[offsets[i]:offsets[i+1]]``; the kernel lowers the ASCII letters as
    it reads them. ``encoded``: the texts as UTF-8; ``others``: their non-ASCII characters
    (:func:`core.exact.non_ascii_chars`), when the caller has them.
    """
    raws = encoded if encoded is not None else encode_texts(texts)
    if others is None:
        others = [non_ascii_chars(text, raw) for text, raw in zip(texts, raws, strict=True)]
    parts = [raw if not other else _lowerable_bytes(text, raw, other)
             for text, raw, other in zip(texts, raws, others, strict=True)]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, parts), np.int64, len(parts)), out=offsets[1:])
    return np.frombuffer(b"".join(parts), dtype=np.uint8), offsets


def shingle_hashes(texts: Sequence[str], config: ShingleConfig | None = None, encoded: Sequence[bytes] | None = None,
                   others: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Hash every shingle of every document of a batch.

    ``encoded``: the texts as UTF-8, and ``others``: their :func:`core.exact.non_ascii_chars`, if known.

    Returns ``(hashes, offsets)``: 64-bit shingle hashes of all documents, concatenated, and
    ``offsets`` (length ``len(texts) + 1``) so document ``i`` owns ``hashes[offsets[i]:offsets[i+1]]``.
    Duplicate shingles inside a document are kept (MinHash ignores them).
    """
    from dedupe import minhash_kernel as kernel  # numba: imported on first use only

    ngram = (config or ShingleConfig()).ngram
    data, bounds = lowered_batch(texts, encoded, others)
    hashes = np.empty(len(data) // 2 + len(texts), dtype=U64)  # a word is a byte and a separator
    counts = np.zeros(len(texts), dtype=np.int64)
    total = kernel.shingle_hashes_into(data, bounds, *kernel.tables(), shingle_constants(ngram), hashes, counts)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return hashes[:total].copy(), offsets


def shingle_items(text: str, config: ShingleConfig | None = None) -> list[bytes]:
    """The shingles of one document as bytes (words joined by a space); the slow reference path."""
    ngram = (config or ShingleConfig()).ngram
    words = _WORD_RE.findall(_encode(text))
    if not words:
        return []
    if len(words) < ngram:
        return [b" ".join(words)]
    return [b" ".join(words[i : i + ngram]) for i in range(len(words) - ngram + 1)]


def _word_hash_int(word: bytes) -> int:
    value = 0
    for byte in word:
        value = (value * POLY_BASE + byte) & MASK64
    return _fmix64_int((value * POLY_BASE) & MASK64)


def reference_shingle_hash(item: bytes, ngram: int = 5) -> int:
    """The 64-bit hash of one shingle from :func:`shingle_items`, computed one byte at a time."""
    constants = [int(c) for c in shingle_constants(ngram)]
    acc = 0
    for k, word in enumerate(item.split(b" ")):
        acc = (acc + _word_hash_int(word) * constants[k]) & MASK64
    return _fmix64_int(acc)
