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

Words are split as spaCy's English tokenizer cuts them, which datatrove's rules count with, by a
compiled loop (:mod:`core.filters.signal_kernel`, whose docstring states the rules), not spaCy:
``benchmarks/signals.py`` measures the agreement of each rule's decisions and lists the differences.
N-grams are compared by 64-bit hashes of word hashes, not by joined strings (a collision needs
about 2^32 distinct n-grams in one document); only the n-grams whose two (n-1)-grams both occur
twice are grouped, as only those can repeat. Lines and paragraphs are compared exactly (equal hashes
compared character by character). One compiled pass (numba,
:func:`core.filters.signal_kernel.word_kernel`) splits, hashes and counts a whole batch, words,
lines and paragraphs (Python's per-line loops had cost as much as the word pass); every
compiled function lives in that one module, so numba's on-disk cache, which is checked against the
module's own file only, never pairs a changed splitter with a kernel compiled against the old one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from core.arrow_columns import arrow_table
from core.filters.pii import count_emails, count_ips
from core.filters.signal_kernel import (
    KERNEL_COLUMNS,
    STOP_HASHES,
    STOP_WORDS,
    char_flags,
    split_words,
    word_kernel,
)
from core.filters.signal_schema import DUP_NGRAMS, SIGNAL_SCHEMA, TOP_NGRAMS

__all__ = ["STOP_WORDS", "document_signals", "signals_table", "split_words"]

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


def _word_columns(texts: Sequence[str]) -> np.ndarray:
    """The word kernel's columns for each text (one compiled pass over the batch)."""
    out = np.zeros((len(texts), len(KERNEL_COLUMNS)), np.int64)
    joined = "".join(texts)
    if not joined:
        return out
    raw = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32)
    ends = np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts)))
    word_kernel(raw, char_flags(raw, _SENTENCE_TERMINALS), ends, STOP_HASHES, out)
    return out


def _ratio(part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """``part / whole`` per document, 0.0 where the whole is 0 (an empty text has no repetition, no
    bullets). Counts are below 2**53, so each is exactly a double and the quotient is the one Python's
    ``int / int`` gives, bit for bit."""
    out = np.zeros(len(part))
    np.divide(part, whole, out=out, where=whole != 0)
    return out


def _text_counts(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """What each text's string holds besides its words: characters, newlines, ``#``, ellipses, PII."""
    def counted(count: Callable[[str], int]) -> np.ndarray:
        return np.fromiter(map(count, texts), np.int64, len(texts))

    return {"chars": counted(len), "newlines": counted(lambda t: t.count("\n")), "hashes": counted(lambda t: t.count("#")),
            "ellipses": counted(lambda t: t.count("...") + t.count("…")), "emails": counted(count_emails),
            "ips": counted(count_ips)}


def _line_signals(text: dict[str, np.ndarray], words: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The line and paragraph rules from the kernel's counts (:func:`core.filters.signal_kernel.line_columns`
    says which split of the text each counts over)."""
    lines, nonblank, gopher_lines, chars = words["lines"], words["nonblank_lines"], words["gopher_lines"], text["chars"]
    return {
        "lines": lines,
        "bullet_lines_frac": _ratio(words["bullet_lines"], lines),
        "ellipsis_lines_frac": _ratio(words["ellipsis_lines"], lines),
        "line_punct_ratio": _ratio(words["punct_lines"], nonblank),
        "short_line_ratio": _ratio(words["short_lines"], nonblank),
        "char_dup_ratio": _ratio(words["dup_nonblank_chars"], chars - text["newlines"]),
        "dup_para_frac": _ratio(words["dup_paragraphs"], words["paragraphs"]),
        "dup_para_char_frac": _ratio(words["dup_paragraph_chars"], chars),
        "dup_line_frac": _ratio(words["dup_gopher_lines"], gopher_lines),
        "dup_line_char_frac": _ratio(words["dup_gopher_chars"], chars),
    }


def _word_signals(text: dict[str, np.ndarray], words: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    total = words["words"]
    signals = {
        "words": total, "symbol_free_words": words["symbol_free_words"],
        "mean_word_length": _ratio(words["symbol_free_chars"], words["symbol_free_words"]),
        "hash_word_ratio": _ratio(text["hashes"], total),
        "ellipsis_word_ratio": _ratio(text["ellipses"], total),
        "alpha_words_frac": _ratio(words["alpha_words"], total),
        "stop_words": words["stop_words"],
        "newline_word_ratio": _ratio(text["newlines"], total),
    }
    for n in TOP_NGRAMS:
        signals[f"top_{n}gram_char_frac"] = _ratio(words[f"top_{n}"], text["chars"])
    for n in DUP_NGRAMS:
        signals[f"dup_{n}gram_char_frac"] = _ratio(words[f"dup_{n}"], text["chars"])
    return signals


def _signal_columns(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Every signal of each text, by name: a column per signal (whole-batch array arithmetic, no row
    built in Python); counts as int64, ratios as float64."""
    kernel = _word_columns(texts)
    words = {name: kernel[:, c] for c, name in enumerate(KERNEL_COLUMNS)}
    text = _text_counts(texts)
    return {"chars": text["chars"], "emails": text["emails"], "ips": text["ips"],
            **_line_signals(text, words), **_word_signals(text, words)}


def document_signals(text: str) -> dict[str, float]:
    """Every signal of one text, by name (:data:`SIGNAL_NAMES`)."""
    return {name: values.tolist()[0] for name, values in _signal_columns([text]).items()}


def signals_table(ids: Sequence[str], texts: Sequence[str]) -> pa.Table:
    """The signals of a batch of documents, one row each, in :data:`SIGNAL_SCHEMA` (one kernel call)."""
    columns: dict[str, object] = {"id": list(ids), **_signal_columns(texts)}
    return arrow_table(columns, SIGNAL_SCHEMA)
