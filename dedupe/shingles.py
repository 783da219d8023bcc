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

Step 1 for a batch (:func:`lowered_batch`) is compiled too: a table per code point, filled as
text reaches it, says what the normalization makes of each non-ASCII character met alone (kept,
replaced, or "NFKC must see its neighbours"), and the kernel rewrites each document where it
lies; only the short spans around combining marks, Hangul jamo and Indic signs go through
``unicodedata.normalize`` (``normalize_for_shingles`` stays the definition the tests hold it to).

:func:`shingle_items` and :func:`reference_shingle_hash` are the slow, obviously-correct
per-shingle versions: tests prove the kernel's hashes equal them, and they are the ``hashfunc``
handed to ``datasketch.MinHash`` when signatures are compared with datasketch's.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dedupe.word_hash import MASK64, POLY_BASE

U64 = np.uint64
#: Seeds of the per-position shingle constants (odd, so each product is a bijection).
_SHINGLE_CONSTANT_SEED = 0x5EED5EED
_WORD_RE = re.compile(rb"[0-9A-Za-z\x80-\xff]+")
_WORD_BYTES = re.compile(rb"[0-9A-Za-z\x80-\xff]")
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

    The definition (one document at a time); :func:`lowered_batch` gives the same words for a
    whole batch (property tests, every code point), doing the work only where a document has
    non-ASCII characters, by per-code-point tables in compiled code.
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
    the second character of every two-character canonical decomposition, and Hangul V/T jamo.

    A block of 256 code points that is NFD as a whole holds no character with a canonical
    decomposition (such a character never appears in NFD text), so only the few other blocks are
    read character by character (~10x faster than reading every code point)."""
    seconds = set(_HANGUL_JOINING)
    for block in range(0, 0x30000, 256):  # no canonical decomposition lies beyond (tested)
        chars = "".join(map(chr, range(block, block + 256)))
        if unicodedata.is_normalized("NFD", chars):
            continue
        for char in chars:
            parts = unicodedata.decomposition(char).split()
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
    maps each character by a table instead of normalizing the text (web text holds NBSP and
    ``…`` in most documents). A text with any other character (combining marks, Hangul jamo,
    some Indic vowel signs) is normalized whole.
    """
    normal = unicodedata.normalize("NFKC", char)
    decomposed = unicodedata.normalize("NFKD", char)
    if not all(map(_inert, normal)) or not decomposed or not _inert(decomposed[0]):
        return None
    return "".join(map(fold_char, normal))


@dataclass(frozen=True)
class FoldTable:
    """What the folding kernels (:mod:`dedupe.minhash_kernel`) read: each code point's entry, block by block.

    ``blocks[cp >> 8]`` is the row of ``entries`` holding the entries of ``cp``'s block of 256
    code points (-1: none yet; 0: the row of ``KEEP``); an entry is one of the kernel's codes
    (``KEEP``, ``JOINS``, ``STARTS``, ``NOT_BUILT``) or the number ``e`` of the replacement
    ``pool[starts[e]:starts[e + 1]]`` (UTF-8). Never changed once made: new characters make a new
    table, so a kernel running in another thread keeps reading a whole one.
    """

    blocks: np.ndarray
    entries: np.ndarray
    starts: np.ndarray
    pool: np.ndarray
    #: Per replacement: only ASCII separators (a space, ``...``), so shorter is fine where it is padded with spaces.
    separators: np.ndarray


#: dedupe.minhash_kernel's KEEP, JOINS, STARTS and NOT_BUILT (not imported: that module loads numba).
_KEEP, _JOINS, _STARTS, _NOT_BUILT = -1, -2, -3, -4
_BLOCK = 256


def _plain_block(chars: str) -> bool:
    """True only if every character of ``chars`` is kept as it is by both folds: letters and numbers
    (``isalnum``) without a decomposition (the block is NFKD), case or combining class, none joining
    the character before it. CJK, Hangul syllables and most letter blocks pass whole."""
    return (chars.isalnum() and unicodedata.is_normalized("NFKD", chars) and chars.casefold() == chars
            and not any(map(unicodedata.combining, chars)) and _joins_previous().isdisjoint(chars))


def _starts_segment(char: str) -> bool:
    """NFKC never joins ``char`` to the character before it: its decomposition begins with an inert starter.

    Text cut before each such character is normalized piece by piece: NFKC of the whole is the
    NFKC of its segments joined (Unicode's "boundary before", UAX #15)."""
    return _inert(unicodedata.normalize("NFKD", char)[0])


def _raw_entry(char: str) -> str | int:
    """:data:`_RAW_TABLE`'s entry: :func:`fold_alone`'s form, or where there is none, whether the
    character starts a segment (``_STARTS``) or continues the one before it (``_JOINS``)."""
    form = fold_alone(char)
    if form is not None:
        return form
    return _STARTS if _starts_segment(char) else _JOINS


class LazyFoldTable:
    """A :class:`FoldTable` built a character at a time, as texts reach them (a corpus uses a few thousand).

    ``entry`` gives a character's replacement, or one of the kernel's codes. Building the whole
    table up front calls it for all 1.1 M code points (~3 CPU-s); the 3,795 distinct non-ASCII
    characters of the dolma CC pages take ~40 ms. A block of letters that nothing changes
    (:func:`_plain_block`: CJK, Hangul syllables, most alphabets' small letters) is entered whole.
    """

    def __init__(self, entry: Callable[[str], str | int]) -> None:
        self._entry = entry
        self._lock = threading.Lock()
        self._forms: dict[bytes, int] = {}
        self.current = FoldTable(np.full(0x110000 // _BLOCK, -1, dtype=np.int32),
                                 np.full(_BLOCK, _KEEP, dtype=np.int32), np.zeros(1, dtype=np.int32),
                                 np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.bool_))

    def add(self, points: Iterable[int]) -> None:
        """Make a new current table that also holds these code points (thread-safe: the old one is left whole)."""
        with self._lock:
            table = self.current
            blocks = table.blocks.copy()
            wanted = sorted(set(points))
            rows = len(table.entries) // _BLOCK
            for block in sorted({point // _BLOCK for point in wanted}):
                if blocks[block] >= 0:
                    continue
                if _plain_block("".join(map(chr, range(block * _BLOCK, (block + 1) * _BLOCK)))):
                    blocks[block] = 0  # the row of KEEP
                else:
                    blocks[block] = rows
                    rows += 1
            entries = np.full(rows * _BLOCK, _NOT_BUILT, dtype=np.int32)
            entries[: len(table.entries)] = table.entries
            forms = list(table.starts)
            pool = [table.pool.tobytes()]
            for point in wanted:
                at = blocks[point // _BLOCK] * _BLOCK + point % _BLOCK
                if entries[at] == _NOT_BUILT:
                    entries[at] = self._value(chr(point), forms, pool)
            pooled = np.frombuffer(b"".join(pool), dtype=np.uint8)
            separators = np.array([hi > lo and not _WORD_BYTES.search(pooled[lo:hi].tobytes())
                                   for lo, hi in itertools.pairwise(forms)], dtype=np.bool_)
            self.current = FoldTable(blocks, entries, np.asarray(forms, dtype=np.int32), pooled, separators)

    def _value(self, char: str, forms: list[int], pool: list[bytes]) -> int:
        """``char``'s entry: a kernel code, ``KEEP``, or the number of its replacement (added to ``forms``/``pool``)."""
        form = self._entry(char)
        if isinstance(form, int):
            return form
        if form == char:
            return _KEEP
        encoded = form.encode("utf-8", errors="surrogatepass")
        if encoded not in self._forms:
            self._forms[encoded] = len(forms) - 1
            forms.append(forms[-1] + len(encoded))
            pool.append(encoded)
        return self._forms[encoded]


#: Raw text: each character's :func:`fold_alone` (or where NFKC must see its neighbours, a code saying so).
_RAW_TABLE = LazyFoldTable(_raw_entry)
#: NFKC text (the spans normalized whole): each character's :func:`fold_char`.
_NFKC_TABLE = LazyFoldTable(fold_char)


def _fold(table: LazyFoldTable, data: np.ndarray, offsets: np.ndarray,
          plain: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(out, out_offsets, spans)``: :func:`dedupe.minhash_kernel.fold_into` over the whole batch,
    adding the characters it lacks to the table and growing its arrays as it asks."""
    from dedupe import minhash_kernel as kernel  # numba: imported on first use only

    count = len(offsets) - 1
    out = np.empty(len(data) + len(data) // 8 + 64, dtype=np.uint8)
    out_offsets = np.zeros(count + 1, dtype=np.int64)
    spans = np.empty(2 * (len(data) // kernel.SPAN_GAP + count), dtype=np.int64)  # room for all (fold_into)
    missing = np.empty(4096, dtype=np.int64)
    state = np.zeros(3, dtype=np.int64)
    doc = 0
    while True:
        now = table.current
        doc = kernel.fold_into(data, offsets, plain, doc, now.blocks, now.entries, now.starts, now.pool, out,
                               out_offsets, spans, missing, state)
        if doc == count:
            return out[: out_offsets[count]], out_offsets, spans[: 2 * state[2]].reshape(-1, 2)
        if state[0] == kernel.MISSING:
            table.add(missing[: state[1]].tolist())
            state[1] = 0
        else:  # FULL: replacements longer than their characters (rare: "½" -> "1 2")
            grown = np.empty(2 * len(out), dtype=np.uint8)
            grown[: out_offsets[doc]] = out[: out_offsets[doc]]
            out = grown


def _nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``; asked first whether it is NFKC already, which is decided
    quickly for most text with combining marks (half the spans of dolma CC pages, 4x faster)."""
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


#: Spaces after each document of a batch being folded: room for a document that grew when folded
#: (``½`` -> ``1 2``) to go back in its place, where the whole batch was copied again otherwise.
SLACK = 16


def _joined(parts: Sequence[bytes], slack: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The parts joined in one writable buffer (the kernels get one array type), each followed by
    ``slack`` spaces that belong to it (separators: no word changes), and their offsets."""
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, parts), np.int64, len(parts)) + slack, out=offsets[1:])
    joined = bytearray(b" " * slack).join([*parts, b""]) if slack and parts else bytearray().join(parts)
    return np.frombuffer(joined, dtype=np.uint8), offsets


def _fold_copied(raws: Sequence[bytes], plain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(data, offsets)``: each document's bytes whose ASCII lowering is its ``_encode``, joined.

    One compiled pass maps every character by :data:`_RAW_TABLE`. The spans it leaves as they
    are (segments with a character NFKC joins or reorders with its neighbours: combining marks,
    Indic viramas and vowel signs, Hangul jamo; in 29 of 717 dolma CC pages, 30% of their text)
    are normalized whole (``unicodedata``), mapped by :data:`_NFKC_TABLE` and put in their place.
    """
    data, offsets = _joined(raws)
    out, out_offsets, spans = _fold(_RAW_TABLE, data, offsets, plain)
    if not len(spans):
        return out, out_offsets
    normal = [_nfkc(out[lo:hi].tobytes().decode("utf-8", errors="surrogatepass")) for lo, hi in spans.tolist()]
    again = _fold_exact(_NFKC_TABLE, normal)
    pieces: list[np.ndarray] = []
    done = 0
    for (lo, hi), piece in zip(spans.tolist(), again, strict=True):
        pieces += [out[done:lo], piece]
        done = hi
    pieces.append(out[done:])
    # a document's end moves by what the spans before it grew or shrank
    growth = np.concatenate([[0], np.cumsum(np.fromiter(map(len, again), np.int64, len(again)) - spans[:, 1] + spans[:, 0])])
    moved = out_offsets + growth[np.searchsorted(spans[:, 1], out_offsets, side="right")]
    return np.concatenate(pieces), moved


def _fold_exact(table: LazyFoldTable, texts: Sequence[str]) -> list[np.ndarray]:
    """Each text folded by ``table`` (no spans: :data:`_NFKC_TABLE`), exactly (no padding): in place
    where :func:`dedupe.minhash_kernel.fold_in_place` can, else by :func:`dedupe.minhash_kernel.fold_into`."""
    from dedupe import minhash_kernel as kernel  # numba: imported on first use only

    data, offsets = _joined(encode_texts(texts))
    plain = np.fromiter(map(str.isascii, texts), np.bool_, len(texts))
    now = table.current
    hard = np.zeros(len(texts), dtype=np.bool_)
    ends = offsets[1:].copy()
    kernel.fold_in_place(data, offsets, plain, now.blocks, now.entries, now.starts, now.pool, now.separators, hard,
                         ends)
    pieces = [data[lo:hi] for lo, hi in zip(offsets[:-1].tolist(), ends.tolist(), strict=True)]
    if hard.any():
        docs = np.flatnonzero(hard).tolist()
        redone, redone_offsets, _ = _fold(table, *_joined(encode_texts([texts[d] for d in docs])),
                                          np.zeros(len(docs), dtype=np.bool_))
        for k, doc in enumerate(docs):
            pieces[doc] = redone[redone_offsets[k] : redone_offsets[k + 1]]
    return pieces


def _fold_batch(raws: Sequence[bytes], plain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(data, offsets)`` of :func:`lowered_batch` for a batch holding non-ASCII documents.

    The batch is joined once into a buffer that :func:`dedupe.minhash_kernel.fold_in_place` folds
    where it lies (ASCII documents are not even read); the documents it cannot (a combining mark,
    a replacement longer than its character, a character seen for the first time: 34 of 717 dolma
    CC pages) are folded again from their own bytes (:func:`_fold_copied`) and written back over
    their place, which ends in :data:`SLACK` spaces, or, when one grew past it, the batch is joined again.
    """
    from dedupe import minhash_kernel as kernel  # numba: imported on first use only

    data, offsets = _joined(raws, SLACK)
    now = _RAW_TABLE.current
    hard = np.zeros(len(raws), dtype=np.bool_)
    if not kernel.fold_in_place(data, offsets, plain, now.blocks, now.entries, now.starts, now.pool, now.separators,
                                hard, np.empty(len(raws), dtype=np.int64)):
        return data, offsets
    docs = np.flatnonzero(hard)
    folded, folded_offsets = _fold_copied([raws[doc] for doc in docs.tolist()], np.zeros(len(docs), dtype=np.bool_))
    if kernel.place(data, offsets, docs, folded, folded_offsets):
        return data, offsets
    pieces: list[np.ndarray] = []
    lengths = np.diff(offsets)
    done = 0
    for k, doc in enumerate(docs.tolist()):
        pieces += [data[offsets[done] : offsets[doc]], folded[folded_offsets[k] : folded_offsets[k + 1]]]
        lengths[doc] = folded_offsets[k + 1] - folded_offsets[k]
        done = doc + 1
    pieces.append(data[offsets[done] :])
    offsets = np.zeros(len(raws) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.concatenate(pieces), offsets


def lowered_batch(texts: Sequence[str], encoded: Sequence[bytes] | None = None,
                  others: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(data, offsets)``: the batch's bytes, document ``i`` owning ``data[offsets[i]:offsets[i+1]]``,
    whose words (step 2, ASCII lowered) are those of the text's ``_encode``.

    The bytes may differ from ``_encode``'s by separators only (a curly quote becomes spaces where
    it stood; a document that got shorter ends in spaces), which changes no word, shingle or
    signature. The kernel lowers the ASCII letters as it reads them (and cuts words at ASCII
    punctuation), so an ASCII document is its own UTF-8.
    ``encoded``: the texts as UTF-8; ``others``: their non-ASCII characters
    (:func:`core.exact.non_ascii_chars`), when the caller has them (only whether each is empty is read).
    """
    raws = encoded if encoded is not None else encode_texts(texts)
    if others is None:
        plain = np.fromiter(map(str.isascii, texts), np.bool_, len(texts))
    else:
        plain = np.fromiter((not other for other in others), np.bool_, len(others))
    if plain.all():
        return _joined(raws)
    return _fold_batch(raws, plain)


def batch_words(texts: Sequence[str]) -> list[list[bytes]]:
    """Each text's words (step 2 of its normalized text, ASCII lowered), by the compiled path: the words
    ``_WORD_RE.findall(normalize_for_shingles(text).encode(...).lower())`` gives (tested), ~5x faster."""
    data, offsets = lowered_batch(texts)
    return [_WORD_RE.findall(data[lo:hi].tobytes().lower()) for lo, hi in itertools.pairwise(offsets.tolist())]


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
