"""The columns of the signals attribute (:mod:`core.filters.signals`), apart from the kernel that fills them.

Readers of the attribute (the manifest's ``signals`` view, the label stage's thresholds, ``kinda``)
import this module alone, so they do not load numba. docs/signals.md defines each column.
"""

from __future__ import annotations

import pyarrow as pa

TOP_NGRAMS = (2, 3, 4)
DUP_NGRAMS = (5, 6, 7, 8, 9, 10)

_FRACTIONS = (
    ["mean_word_length", "hash_word_ratio", "ellipsis_word_ratio", "bullet_lines_frac", "ellipsis_lines_frac",
     "alpha_words_frac", "dup_para_frac", "dup_para_char_frac", "dup_line_frac", "dup_line_char_frac"]
    + [f"top_{n}gram_char_frac" for n in TOP_NGRAMS] + [f"dup_{n}gram_char_frac" for n in DUP_NGRAMS]
    + ["line_punct_ratio", "short_line_ratio", "char_dup_ratio", "newline_word_ratio"]
)
_COUNTS = ["chars", "words", "symbol_free_words", "stop_words", "lines", "emails", "ips"]
SIGNAL_NAMES: tuple[str, ...] = tuple(_COUNTS + _FRACTIONS)
#: One row per document; counts as integers, ratios as float32 (enough for any threshold a user sets).
SIGNAL_SCHEMA = pa.schema(
    [pa.field("id", pa.string(), nullable=False)]
    + [pa.field(name, pa.int64(), nullable=False) for name in _COUNTS]
    + [pa.field(name, pa.float32(), nullable=False) for name in _FRACTIONS]
)
