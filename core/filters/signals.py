"""Quality signals of a document, stored beside it so that a threshold never re-parses a source.

RedPajama-v2 and dolma keep signals as attributes; datatrove and NeMo compute them inside a
filter and throw them away, so trying a new threshold re-runs the crawl. Here every kept document
of every source gets one row of :data:`SIGNAL_SCHEMA` (keyed by its id) in
``attributes/<source>/<input>.signals.parquet``, written in the source stage from the text already
in memory (:class:`core.pipeline.SignalSink`); thresholds over them are applied when labels are
made (:mod:`dedupe.signal_filters`).

The definitions follow the rules' published forms (docs/signals.md has the table):

* Gopher quality (Rae et al. 2021, appendix A; datatrove's ``GopherQualityFilter``): word count
  and mean word length over words that are not pure punctuation, ``#`` and ellipsis to word
  ratios, the fractions of lines starting with a bullet or ending in an ellipsis, the fraction of
  words with an alphabetic character, the number of distinct stop words of eight.
* Gopher repetition (Rae et al. table A1; datatrove's ``GopherRepetitionFilter``): duplicate
  line/paragraph fractions by count and characters, the characters of the most frequent 2-4-gram,
  the characters in duplicated 5-10-grams, each over the text's characters.
* FineWeb (Penedo et al. 2024; datatrove's ``FineWebQualityFilter``): the fraction of lines ending
  in terminal punctuation, of lines of at most 30 characters, the characters of duplicated lines
  over the characters that are not newlines, newlines per word.
* PII counts: e-mail addresses and public IPv4/IPv6 addresses (:mod:`core.filters.pii`).

Words are split as spaCy's English tokenizer cuts prose (:func:`split_words`: whitespace chunks,
leading and trailing marks apart, inner marks kept), which datatrove's rules count with, but by a
compiled loop, not spaCy: ``benchmarks/signals.py`` measures the agreement of each rule's
decisions and lists the differences. N-grams are compared by 64-bit hashes of word hashes, not
by joined strings (a collision needs about 2^32 distinct n-grams in one document). One compiled pass
(numba, :func:`_word_kernel`) splits, hashes and counts a whole batch; lines and paragraphs are
split by Python's own string methods, which run at C speed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from core.arrow_columns import arrow_table
from core.compiled import jit
from core.filters.pii import count_emails, count_ips
from core.filters.signal_schema import DUP_NGRAMS, SIGNAL_NAMES, SIGNAL_SCHEMA, TOP_NGRAMS

#: datatrove's PUNCTUATION_SET, near enough: a "word" of only these is a symbol, not a word.
_PUNCTUATION = set("!/—”:％１〈&(、━\\【#%「」，】；+^]~“《„';’{|∶´[=-`*．（–？！：$～«〉,><》)?）。…@_.\"}►»")
#: Unicode's Sentence_Terminal characters (UCD 16, via the ``regex`` module once; a constant here, so the
#: signals need no extra dependency): FineWeb's terminal punctuation, in every script, and nothing else
#: (a line ending in a quote, a colon or an ellipsis does not end a sentence by this rule).
_SENTENCE_TERMINALS = (
    "!.?\u0589\u061D\u061E\u061F\u06D4\u0700\u0701\u0702\u07F9\u0837\u0839\u083D\u083E\u0964\u0965\u104A\u104B"
    "\u1362\u1367\u1368\u166E\u1735\u1736\u17D4\u17D5\u1803\u1809\u1944\u1945\u1AA8\u1AA9\u1AAA\u1AAB\u1B4E"
    "\u1B4F\u1B5A\u1B5B\u1B5E\u1B5F\u1B7D\u1B7E\u1B7F\u1C3B\u1C3C\u1C7E\u1C7F\u2024\u203C\u203D\u2047\u2048"
    "\u2049\u2CF9\u2CFA\u2CFB\u2E2E\u2E3C\u2E53\u2E54\u2E60\u2E61\u3002\uA4FF\uA60E\uA60F\uA6F3\uA6F7\uA876"
    "\uA877\uA8CE\uA8CF\uA92F\uA9C8\uA9C9\uAA5D\uAA5E\uAA5F\uAAF0\uAAF1\uABEB\uFE12\uFE15\uFE16\uFE52\uFE56"
    "\uFE57\uFF01\uFF0E\uFF1F\uFF61\U00010A56\U00010A57\U00010F55\U00010F56\U00010F57\U00010F58\U00010F59"
    "\U00010F86\U00010F87\U00010F88\U00010F89\U00011047\U00011048\U000110BE\U000110BF\U000110C0\U000110C1"
    "\U00011141\U00011142\U00011143\U000111C5\U000111C6\U000111CD\U000111DE\U000111DF\U00011238\U00011239"
    "\U0001123B\U0001123C\U000112A9\U000113D4\U000113D5\U0001144B\U0001144C\U000115C2\U000115C3\U000115C9"
    "\U000115CA\U000115CB\U000115CC\U000115CD\U000115CE\U000115CF\U000115D0\U000115D1\U000115D2\U000115D3"
    "\U000115D4\U000115D5\U000115D6\U000115D7\U00011641\U00011642\U0001173C\U0001173D\U0001173E\U00011944"
    "\U00011946\U00011A42\U00011A43\U00011A9B\U00011A9C\U00011C41\U00011C42\U00011EF7\U00011EF8\U00011F43"
    "\U00011F44\U00016A6E\U00016A6F\U00016AF5\U00016B37\U00016B38\U00016B44\U00016D6E\U00016D6F\U00016E98"
    "\U0001BC9F\U0001DA88"
)
TERMINAL_PUNCTUATION = tuple(_SENTENCE_TERMINALS)
STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
BULLETS = ("•", "-")
ELLIPSES = ("...", "…")
SHORT_LINE = 30
_PARAGRAPH_BREAK = re.compile(r"\n{2,}")
#: Character flags for the word kernel: a word character (``\w``), alphabetic, whitespace, and in
#: datatrove's punctuation set (a word made only of those is a symbol, not a word).
_WORDCHAR, _ALPHA, _SPACE, _PUNCT, _APOSTROPHE = 1, 2, 4, 8, 16
_FNV_OFFSET, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
#: Word-kernel output columns, in order.
_KERNEL_COLUMNS = (["words", "symbol_free_words", "symbol_free_chars", "alpha_words", "stop_words"]
                   + [f"top_{n}" for n in TOP_NGRAMS] + [f"dup_{n}" for n in DUP_NGRAMS])


def _flags_of(ch: str) -> int:
    flags = 0
    if re.match(r"\w", ch):
        flags |= _WORDCHAR
    if ch.isalpha():
        flags |= _ALPHA
    if ch.isspace():
        flags |= _SPACE
    if ch in _PUNCTUATION:
        flags |= _PUNCT
    if ch in "'’":
        flags |= _APOSTROPHE
    return flags


_ASCII_FLAGS = np.array([_flags_of(chr(c)) for c in range(128)], np.uint8)


def _char_flags(raw: np.ndarray) -> np.ndarray:
    """Flags of each code point: a table for ASCII, the few distinct others classified once each."""
    flags = _ASCII_FLAGS[np.minimum(raw, 127)]
    high = raw >= 128
    if high.any():
        distinct, where = np.unique(raw[high], return_inverse=True)
        flags[high] = np.array([_flags_of(chr(c)) for c in distinct.tolist()], np.uint8)[where]
    return flags


def split_words(text: str) -> list[str]:
    """The words of ``text``, the way spaCy's English tokenizer cuts prose (what datatrove's rules count).

    Each whitespace-separated chunk: a chunk without a word character is one word (``--``, ``...``);
    otherwise each leading mark is a word, a dash between two letters splits the middle
    (``e-mail`` is three words), and each trailing mark is a word, a run of full stops one
    (``end...``). Marks inside stay: ``9/11``, ``15:00``, ``U.S``, ``don't``, ``example.com/a``.
    The compiled pass (:func:`_token_bounds`) splits the same way; this is its definition.
    """
    words: list[str] = []
    for chunk in text.split():
        flags = [_flags_of(ch) for ch in chunk]
        left = next((i for i, f in enumerate(flags) if f & _WORDCHAR), None)
        if left is None:
            words.append(chunk)
            continue
        right = max(i for i, f in enumerate(flags) if f & _WORDCHAR) + 1
        words.extend(chunk[:left])
        piece = left
        for k in range(left + 1, right - 1):
            if ord(chunk[k]) in _HYPHENS and flags[k - 1] & _ALPHA and flags[k + 1] & _ALPHA:
                words += [chunk[piece:k], chunk[k]]
                piece = k + 1
        words.append(chunk[piece:right])
        words.extend(re.findall(r"\.+|.", chunk[right:], re.S))
    return words


def fnv1a(word: str) -> int:
    """The word kernel's hash of one word (FNV-1a over its code points), for the stop-word table."""
    value = _FNV_OFFSET
    for ch in word:
        value = ((value ^ ord(ch)) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return value


_STOP_HASHES = np.array(sorted(fnv1a(w) for w in STOP_WORDS), np.uint64)


@jit
def _extend_grams(grams: np.ndarray, hashes: np.ndarray, n: int) -> np.ndarray:  # pragma: no cover - compiled
    """The n-gram hashes from the (n-1)-gram hashes: each mixed with the word that follows it."""
    out = np.empty(len(grams) - 1, np.uint64)
    for i in range(len(out)):
        out[i] = (grams[i] ^ hashes[i + n - 1]) * np.uint64(0x100000001B3) + np.uint64(0x9E3779B97F4A7C15)
    return out


@jit
def _groups(grams: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """(group of each position, each group's count, each group's first position), groups numbered in
    order of first appearance; equal hashes, one group (an open-addressing table: no sort)."""
    size = 16
    while size < 2 * len(grams):
        size <<= 1
    mask = np.uint64(size - 1)
    slot_keys = np.empty(size, np.uint64)
    slot_groups = np.full(size, -1, np.int64)
    group = np.empty(len(grams), np.int64)
    counts = np.zeros(len(grams), np.int64)
    first = np.zeros(len(grams), np.int64)
    groups = 0
    for position in range(len(grams)):
        key = grams[position]
        slot = (key ^ (key >> np.uint64(31))) & mask
        while True:
            g = slot_groups[slot]
            if g < 0:
                slot_groups[slot] = groups
                slot_keys[slot] = key
                first[groups] = position
                counts[groups] = 1
                group[position] = groups
                groups += 1
                break
            if slot_keys[slot] == key:
                counts[g] += 1
                group[position] = g
                break
            slot = (slot + np.uint64(1)) & mask
    return group, counts[:groups], first[:groups]


_HYPHENS = (45, 0x2010, 0x2013, 0x2014)  # "-", hyphen, en dash, em dash


@jit
def _token_bounds(raw: np.ndarray, flags: np.ndarray, first: int, end: int, starts: np.ndarray,
                  stops: np.ndarray) -> int:  # pragma: no cover - compiled by numba, tested through it
    """Split characters ``first`` to ``end`` into words (:func:`split_words`); their bounds; how many."""
    count = 0
    j = first
    while j < end:
        if flags[j] & 4:
            j += 1
            continue
        chunk_start = j
        while j < end and not flags[j] & 4:
            j += 1
        left = chunk_start
        while left < j and not flags[left] & 1:
            left += 1
        if left == j:  # no word character: the chunk is one symbol word ("--", "...", "&")
            starts[count], stops[count] = chunk_start, j
            count += 1
            continue
        for k in range(chunk_start, left):  # each leading mark its own word
            starts[count], stops[count] = k, k + 1
            count += 1
        right = j
        while not flags[right - 1] & 1:
            right -= 1
        piece = left
        for k in range(left + 1, right - 1):  # a dash between two letters splits a word
            c = raw[k]
            if (c == 45 or c == 0x2010 or c == 0x2013 or c == 0x2014) and flags[k - 1] & 2 and flags[k + 1] & 2:
                starts[count], stops[count] = piece, k
                starts[count + 1], stops[count + 1] = k, k + 1
                count += 2
                piece = k + 1
        starts[count], stops[count] = piece, right
        count += 1
        k = right
        while k < j:  # each trailing mark its own word, a run of full stops one word ("...")
            after = k + 1
            if raw[k] == 46:
                while after < j and raw[after] == 46:
                    after += 1
            starts[count], stops[count] = k, after
            count += 1
            k = after
    return count


@jit
def _word_kernel(raw: np.ndarray, flags: np.ndarray, ends: np.ndarray, stop_hashes: np.ndarray,
                 out: np.ndarray) -> None:  # pragma: no cover - compiled by numba, tested through it
    """Fill ``out[i]`` with the word columns (:data:`_KERNEL_COLUMNS`) of text ``i``.

    Words as :func:`split_words` says. Each word is hashed (FNV-1a over its code points); an
    n-gram's hash is its (n-1)-gram's mixed with its last word's, grouped by a hash table.
    """
    first = 0
    for text in range(len(ends)):
        end = ends[text]
        size = end - first
        starts = np.empty(size, np.int64)
        stops = np.empty(size, np.int64)
        count = _token_bounds(raw, flags, first, end, starts, stops)
        hashes = np.empty(count, np.uint64)
        lengths = np.empty(count, np.int64)
        symbol_free = symbol_free_chars = alpha_words = 0
        stop_found = np.zeros(len(stop_hashes), np.bool_)
        for w in range(count):
            h = np.uint64(0xCBF29CE484222325)
            alpha = False
            all_punct = True
            for j in range(starts[w], stops[w]):
                f = flags[j]
                h = (h ^ np.uint64(raw[j])) * np.uint64(0x100000001B3)
                alpha = alpha or (f & 2) != 0
                all_punct = all_punct and (f & 8) != 0
            hashes[w] = h
            lengths[w] = stops[w] - starts[w]
            alpha_words += alpha
            if not all_punct:
                symbol_free += 1
                symbol_free_chars += stops[w] - starts[w]
            for s in range(len(stop_hashes)):
                if stop_hashes[s] == h:
                    stop_found[s] = True
        out[text, 0] = count
        out[text, 1] = symbol_free
        out[text, 2] = symbol_free_chars
        out[text, 3] = alpha_words
        out[text, 4] = stop_found.sum()
        cumulative = np.zeros(count + 1, np.int64)
        for w in range(count):
            cumulative[w + 1] = cumulative[w] + lengths[w]
        column = 5
        grams = (hashes[:count] ^ np.uint64(0x2545F4914F6CDD1D)) * np.uint64(0x100000001B3)  # mixed once more,
        # so an n-gram's hash is not symmetric in its words (a XOR of two plain word hashes would be)
        for n in range(2, 5):  # the most frequent n-gram's characters (words and spaces) times its count
            best = 0
            if count >= n:
                grams = _extend_grams(grams, hashes, n)
                _, counts, firsts = _groups(grams)
                top = 0
                start = 0
                for g in range(len(counts)):  # groups in order of first appearance: the first seen wins a tie
                    if counts[g] > top:
                        top, start = counts[g], firsts[g]
                best = (cumulative[start + n] - cumulative[start] + n - 1) * top
            out[text, column] = best
            column += 1
        for n in range(5, 11):  # characters of n-grams seen before, jumping over each repeat
            repeated = 0
            if count >= n:
                grams = _extend_grams(grams, hashes, n)
                group, counts, _ = _groups(grams)
                seen = np.zeros(len(counts), np.bool_)
                i = 0
                while i < count - n + 1:
                    g = group[i]
                    if seen[g]:
                        repeated += cumulative[i + n] - cumulative[i]
                        i += n
                    else:
                        seen[g] = True
                        i += 1
            out[text, column] = repeated
            column += 1
        first = end


def _word_columns(texts: Sequence[str]) -> np.ndarray:
    """The word kernel's columns for each text (one compiled pass over the batch)."""
    out = np.zeros((len(texts), len(_KERNEL_COLUMNS)), np.int64)
    joined = "".join(texts)
    if not joined:
        return out
    raw = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32)
    ends = np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts)))
    _word_kernel(raw, _char_flags(raw), ends, _STOP_HASHES, out)
    return out


def _ratio(part: float, whole: float) -> float:
    """``part / whole``, 0 for an empty whole (an empty text has no repetition, no bullets)."""
    return part / whole if whole else 0.0


def _duplicates(parts: Sequence[str]) -> tuple[int, int]:
    """(parts seen before, their characters): the second and later copies of each part count."""
    seen: set[str] = set()
    count = chars = 0
    for part in parts:
        if part in seen:
            count += 1
            chars += len(part)
        else:
            seen.add(part)
    return count, chars


def _line_signals(text: str) -> dict[str, float]:
    lines = text.splitlines()
    nonblank = [line for line in text.split("\n") if line.strip()]
    line_count = len(lines)
    return {
        "lines": line_count,
        "bullet_lines_frac": _ratio(sum(line.lstrip().startswith(BULLETS) for line in lines), line_count),
        "ellipsis_lines_frac": _ratio(sum(line.rstrip().endswith(ELLIPSES) for line in lines), line_count),
        "line_punct_ratio": _ratio(sum(line.endswith(TERMINAL_PUNCTUATION) for line in nonblank), len(nonblank)),
        "short_line_ratio": _ratio(sum(len(line) <= SHORT_LINE for line in nonblank), len(nonblank)),
        "char_dup_ratio": _ratio(_duplicates(nonblank)[1], len(text) - text.count("\n")),
    }


def _gopher_lines(text: str) -> list[str]:
    """``re.split(r"\n+", text)`` without the regular expression: the empty pieces between breaks
    dropped, the empty first and last kept (what the pattern gives at the text's ends)."""
    pieces = text.split("\n")
    inner = [piece for piece in pieces[1:-1] if piece]
    return [pieces[0], *inner, pieces[-1]] if len(pieces) > 1 else pieces


def _repetition_signals(text: str) -> dict[str, float]:
    stripped = text.strip()
    paragraphs = _PARAGRAPH_BREAK.split(stripped) if "\n\n" in stripped else [stripped]
    para_dups, para_chars = _duplicates(paragraphs)
    lines = _gopher_lines(text)
    line_dups, line_chars = _duplicates(lines)
    return {
        "dup_para_frac": _ratio(para_dups, len(paragraphs)), "dup_para_char_frac": _ratio(para_chars, len(text)),
        "dup_line_frac": _ratio(line_dups, len(lines)), "dup_line_char_frac": _ratio(line_chars, len(text)),
    }


def _word_signals(text: str, row: Sequence[int]) -> dict[str, float]:
    words = dict(zip(_KERNEL_COLUMNS, row, strict=True))
    total = words["words"]
    signals: dict[str, float] = {
        "words": total, "symbol_free_words": words["symbol_free_words"],
        "mean_word_length": _ratio(words["symbol_free_chars"], words["symbol_free_words"]),
        "hash_word_ratio": _ratio(text.count("#"), total),
        "ellipsis_word_ratio": _ratio(text.count("...") + text.count("…"), total),
        "alpha_words_frac": _ratio(words["alpha_words"], total),
        "stop_words": words["stop_words"],
        "newline_word_ratio": _ratio(text.count("\n"), total),
    }
    for n in TOP_NGRAMS:
        signals[f"top_{n}gram_char_frac"] = _ratio(words[f"top_{n}"], len(text))
    for n in DUP_NGRAMS:
        signals[f"dup_{n}gram_char_frac"] = _ratio(words[f"dup_{n}"], len(text))
    return signals


def _signals(text: str, row: Sequence[int]) -> dict[str, float]:
    return {"chars": len(text), "emails": count_emails(text), "ips": count_ips(text),
            **_line_signals(text), **_repetition_signals(text), **_word_signals(text, row)}


def document_signals(text: str) -> dict[str, float]:
    """Every signal of one text, by name (:data:`SIGNAL_NAMES`)."""
    return _signals(text, _word_columns([text])[0].tolist())


def signals_table(ids: Sequence[str], texts: Sequence[str]) -> pa.Table:
    """The signals of a batch of documents, one row each, in :data:`SIGNAL_SCHEMA` (one kernel call)."""
    rows = [_signals(text, row) for text, row in zip(texts, _word_columns(texts).tolist(), strict=True)]
    columns: dict[str, list[object]] = {"id": list(ids)}
    for name in SIGNAL_NAMES:
        columns[name] = [row[name] for row in rows]
    return arrow_table(columns, SIGNAL_SCHEMA)
