"""Filters as thresholds over the signals attribute: declared in YAML, applied when labels are made.

The signals (:mod:`core.filters.signals`, one row per staged document in
``attributes/<source>/<input>.signals.parquet``) are computed once, in the source stage; a filter
is only a comparison over them, so trying a new threshold re-runs the label stage (and tokens),
never a source. A document failing any rule goes to the ``filtered`` class (stored, in no set).

A ``filters`` section (``configs/labels.yaml``, or a dataset file's ``labels:`` section) maps a
group name to its rules, in either of two forms::

    filters:
      gopher: {symbol_free_words_min: 50, alpha_words_frac_min: 0.8}         # <signal>_min / _max
      mine:   [{signal: chars, op: ">=", value: 200}]                          # explicit rules
      fineweb: defaults                                                          # a preset (below)

``<signal>_min: v`` keeps a document when ``signal >= v``; ``<signal>_max: v`` when ``signal <= v``
(datatrove's filters drop on the strict opposite: ``n_words < min_doc_words``, ``ratio > max``).
An explicit rule keeps a document when ``signal <op> value`` holds. A rule's name is
``<group>.<param>`` (``gopher.symbol_free_words_min``) or ``<group>.<signal><op><value>``; counts per rule use it.
NaN fails every rule (a ratio over no words/lines says nothing good about a document).

The presets are datatrove 0.10's default thresholds (GopherQualityFilter, GopherRepetitionFilter,
FineWebQualityFilter) written as signal bounds; a group may name a preset and override some of
its bounds: ``gopher: {preset: defaults, symbol_free_words_min: 80}``.

Pure: no Prefect, no numba (the schema module only), so ``kinda filters preview`` loads fast.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from core.config import parse_set_option
from core.filters.signal_schema import SIGNAL_NAMES, SIGNAL_SCHEMA

#: Comparison -> (numpy function, its SQL spelling). Each keeps a document when it holds.
OPS: dict[str, tuple[Callable[[Any, Any], Any], str]] = {
    ">=": (operator.ge, ">="), ">": (operator.gt, ">"), "<=": (operator.le, "<="), "<": (operator.lt, "<"),
    "==": (operator.eq, "="), "!=": (operator.ne, "<>"),
}
#: datatrove 0.10's defaults as signal bounds (``signal_min``: keep when >=, ``signal_max``: keep when <=).
PRESETS: dict[str, dict[str, float]] = {
    # Gopher's word count bounds count words that are not only punctuation (datatrove's
    # ``n_non_symbol_words``), not ``words``, which counts symbols too.
    "gopher": {"symbol_free_words_min": 50, "symbol_free_words_max": 100_000, "mean_word_length_min": 3, "mean_word_length_max": 10,
               "hash_word_ratio_max": 0.1, "ellipsis_word_ratio_max": 0.1, "bullet_lines_frac_max": 0.9,
               "ellipsis_lines_frac_max": 0.3, "alpha_words_frac_min": 0.8, "stop_words_min": 2},
    "gopher_repetition": {"dup_line_frac_max": 0.3, "dup_para_frac_max": 0.3, "dup_line_char_frac_max": 0.2,
                          "dup_para_char_frac_max": 0.2, "top_2gram_char_frac_max": 0.2,
                          "top_3gram_char_frac_max": 0.18, "top_4gram_char_frac_max": 0.16,
                          "dup_5gram_char_frac_max": 0.15, "dup_6gram_char_frac_max": 0.14,
                          "dup_7gram_char_frac_max": 0.13, "dup_8gram_char_frac_max": 0.12,
                          "dup_9gram_char_frac_max": 0.11, "dup_10gram_char_frac_max": 0.10},
    "fineweb": {"line_punct_ratio_min": 0.12, "short_line_ratio_max": 0.67, "char_dup_ratio_max": 0.01,
                "newline_word_ratio_max": 0.3},
}
PRESET_WORD = "defaults"
#: Signals stored as float32 (ratios): thresholds over them compare at that precision.
FLOAT_SIGNALS = frozenset(f.name for f in SIGNAL_SCHEMA if f.type == pa.float32())
FILTERED = "filtered"


@dataclass(frozen=True)
class Rule:
    """One threshold: a document is kept by it when ``signal <op> value`` holds."""

    name: str
    signal: str
    op: str
    value: float

    def keeps(self, values: np.ndarray) -> np.ndarray:
        """Which of ``values`` (this rule's signal, one per document) pass; NaN never passes.

        A float32 column is compared with the threshold as float32: a ratio stored as float32 is
        rounded, so 3 of 10 lines is float32(0.3), which is above the double 0.3 but equal to
        float32(0.3). Compared at the column's precision, a ratio exactly at the bound passes, as the
        ratio itself (datatrove's, in double) does.
        """
        value = values.dtype.type(self.value) if values.dtype == np.float32 else self.value
        with np.errstate(invalid="ignore"):
            return np.asarray(OPS[self.op][0](values, value), dtype=bool)

    def sql_fails(self) -> str:
        """A DuckDB condition over the ``signals`` view that holds when a document fails this rule
        (a ratio column against the threshold as FLOAT, the column's own precision, as :meth:`keeps`)."""
        value = f"{self.value!r}::FLOAT" if self.signal in FLOAT_SIGNALS else repr(self.value)
        return f"NOT coalesce(({self.signal} {OPS[self.op][1]} {value}) AND NOT isnan({self.signal}::DOUBLE), false)"


def _bound(group: str, param: str, value: Any) -> Rule:
    for suffix, op in (("_min", ">="), ("_max", "<=")):
        if param.endswith(suffix) and param[: -len(suffix)] in SIGNAL_NAMES:
            return Rule(f"{group}.{param}", param[: -len(suffix)], op, _number(f"{group}.{param}", value))
    raise ValueError(f"filters.{group}.{param}: not <signal>_min or <signal>_max of a known signal "
                     f"({', '.join(SIGNAL_NAMES)})")


def _number(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"filters.{where}: {value!r} is not a number")
    return float(value)


def _explicit(group: str, entry: Any) -> Rule:
    if not isinstance(entry, Mapping) or set(entry) - {"signal", "op", "value", "name"} or \
            not {"signal", "op", "value"} <= set(entry):
        raise ValueError(f"filters.{group}: a rule is {{signal, op, value}} (name optional), got {entry!r}")
    signal, op = str(entry["signal"]), str(entry["op"])
    if signal not in SIGNAL_NAMES:
        raise ValueError(f"filters.{group}: unknown signal {signal!r}; signals: {', '.join(SIGNAL_NAMES)}")
    if op not in OPS:
        raise ValueError(f"filters.{group}: unknown op {op!r}; ops: {', '.join(OPS)}")
    value = _number(f"{group}.{signal}", entry["value"])
    return Rule(f"{group}.{entry.get('name') or f'{signal}{op}{value:g}'}", signal, op, value)


def _group_params(group: str, body: Any) -> dict[str, Any]:
    """A group's ``<signal>_min/_max`` bounds, its preset (``defaults``) expanded under the given ones."""
    if body == PRESET_WORD or (isinstance(body, Mapping) and body.get("preset") is not None):
        preset = body if isinstance(body, str) else body["preset"]
        if preset != PRESET_WORD or group not in PRESETS:
            raise ValueError(f"filters.{group}: preset {preset!r}: only {sorted(PRESETS)} have one ('{PRESET_WORD}')")
        return {**PRESETS[group], **({k: v for k, v in body.items() if k != "preset"} if isinstance(body, Mapping) else {})}
    if not isinstance(body, Mapping):
        raise ValueError(f"filters.{group}: a mapping of <signal>_min/_max, a list of rules or '{PRESET_WORD}'")
    return dict(body)


def parse_filters(section: Mapping[str, Any] | None) -> tuple[Rule, ...]:
    """The rules of a ``filters`` section, in a fixed order (group, then parameter); raises ``ValueError``.

    A bound set to ``null`` is switched off (``gopher: {preset: defaults, stop_words_min: null}``).
    """
    rules: list[Rule] = []
    for group in sorted(section or {}):
        body = (section or {})[group]
        if body is None:
            continue
        if isinstance(body, list):
            rules.extend(_explicit(group, entry) for entry in body)
            continue
        params = _group_params(group, body)
        rules.extend(_bound(group, param, params[param]) for param in sorted(params) if params[param] is not None)
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise ValueError(f"filters: rule names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    return tuple(rules)


def failures(table: pa.Table, rules: Sequence[Rule]) -> dict[str, tuple[str, ...]]:
    """Document id -> the names of the rules it fails, for the documents of a signals table that fail any.

    Vectorized: one comparison per rule over the whole column (a shard's signals in milliseconds).
    """
    if not rules or table.num_rows == 0:
        return {}
    failed = np.zeros((len(rules), table.num_rows), dtype=bool)
    for i, rule in enumerate(rules):
        column = table.column(rule.signal).to_numpy(zero_copy_only=False)
        column = column if column.dtype == np.float32 else column.astype(np.float64)
        failed[i] = ~rule.keeps(column)
    rows = np.flatnonzero(failed.any(axis=0))
    ids = table.column("id").take(pa.array(rows, pa.int64())).to_pylist()
    names = [rule.name for rule in rules]
    return {doc_id: tuple(names[i] for i in np.flatnonzero(failed[:, row]).tolist())
            for doc_id, row in zip(ids, rows.tolist(), strict=True)}


def set_threshold(section: Mapping[str, Any] | None, assignment: str) -> dict[str, Any]:
    """``section`` with ``group.param=value`` applied (``gopher.words_min=80``; ``=null`` switches one off).

    The value is read as every ``--set`` reads one (YAML: ``80`` an int, ``0.5`` a float), so a
    threshold given here and the same one given to a flow (``--set filters.gopher.words_min=80``)
    are one config, with one config hash: the class shards they write are the same bytes.
    """
    key, sep, raw = assignment.partition("=")
    group, dot, param = key.strip().partition(".")
    if not sep or not dot or not group or not param:
        raise ValueError(f"{assignment!r}: expected group.param=value (gopher.words_min=80)")
    text = raw.strip()
    try:
        value = None if text.lower() in ("null", "none", "") else parse_set_option([f"value={text}"])["value"]
    except ValueError:
        value = text
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ValueError(f"{assignment!r}: the value must be a number or null")
    merged = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in (section or {}).items()}
    body = merged.get(group)
    if isinstance(body, list):
        raise ValueError(f"filters.{group} is a list of rules; --set needs a mapping group")
    merged[group] = {**({"preset": body} if isinstance(body, str) else dict(body or {})), param: value}
    return merged
