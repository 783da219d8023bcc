"""The compiled Pile line reader yields exactly what the orjson/standard-library parse of each line yields.

:func:`core.pile_format._parse` (orjson, then ``json`` for what orjson refuses) is the
definition; the batch reader must give the same :class:`PileLine` (shard, line, UTF-8, set name)
or the same :class:`Drop` (reason, record, detail) for any line: valid Pile lines with any text
(lone surrogates, astral characters, every escape, raw UTF-8 or ``\\uXXXX``), and token soups
that are almost JSON.
"""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.pile_format import PileLine, _parse, _parse_batch

ANY_CHAR = st.characters(blacklist_categories=())  # surrogates included
TOKENS = ['{', '}', '"text"', '"meta"', '"pile_set_name"', ":", ",", " ", "\t", '"', "\\", '"a"', '"\\u00fc"',
          "\\ud800", "\\udc00", "\\ude00", "\\u00a0", "\\n", "\\/", "\\x", "\\u12", "x", "\x01", "\u00e9", "\x7f",
          "[1]", "NaN", "1e999", "null", "\xff", "\ufeff", '"\\u0074ext"', "{}", '"Pile-CC"']


def outcome(item: object) -> tuple[object, ...]:
    if isinstance(item, PileLine):
        return ("kept", item.shard, item.line, item.utf8, item.pile_set_name)
    return ("drop", *(getattr(item, name) for name in ("reason", "record", "detail")))


def same_as_definition(lines: list[bytes]) -> None:
    pending: list[tuple[int, object]] = [(number, raw) for number, raw in enumerate(lines, start=1)]
    batch = [outcome(item) for item in _parse_batch(pending, "00.jsonl.zst")]  # type: ignore[arg-type]
    assert batch == [outcome(_parse(raw, "00.jsonl.zst", number)) for number, raw in pending]  # type: ignore[arg-type]


def encoded_line(payload: object, ascii_only: bool, spaced: bool) -> bytes:
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps(payload, ensure_ascii=ascii_only, separators=separators).encode("utf-8", "surrogatepass")


@settings(max_examples=300)
@given(st.lists(st.tuples(st.text(ANY_CHAR, max_size=40), st.one_of(st.none(), st.text(max_size=5),
                                                                      st.dictionaries(st.text(max_size=4), st.integers())),
                          st.booleans(), st.booleans(), st.booleans()), max_size=8))
@example([("", None, True, True, True), (" \t\n\u00a0\u2003", "S", True, False, True), ("\ud800x", None, True, True, False),
          ("\U0001f600\ud83d", "S", False, True, True), ("a\x00\x1f\"\\/\b\f", {"k": 1}, True, True, True)])
def test_pile_lines_read_as_the_definition_reads_them(
        docs: list[tuple[str, object, bool, bool, bool]]) -> None:
    lines = []
    for text, set_name, ascii_only, spaced, with_meta in docs:
        payload: dict[str, object] = {"text": text}
        if with_meta:
            payload["meta"] = {"pile_set_name": set_name} if not isinstance(set_name, dict) else set_name
        lines.append(encoded_line(payload, ascii_only, spaced))
    same_as_definition(lines)


@settings(max_examples=300)
@given(st.lists(st.lists(st.sampled_from(TOKENS), max_size=14).map("".join), min_size=1, max_size=8),
       st.booleans())
@example([' {"text": "a",}', '{"text": "a", "text": "b"}', '{"text":"a"} x', '{"text": "a"\t} ', '{"text": "\\u0041"}',
          '{"text": "a", "meta": {"pile_set_name": "X"}}', '{"text": "\\x"}', '{"text": "\\u12"}', '\ufeff{"text": "a"}',
          '{"text": "\\ud83d\\ude00"}', '{"text": "\\ud83d\\u0041"}', '{"text": "a", "meta": [1]}', '{"text": "a" "meta": 1}',
          '{"text": "a", "meta": NaN}', '{"text": "a", "meta": {"pile_set_name": "\\ud800"}}', '{"text": "a"'], False)
def test_almost_json_lines_read_as_the_definition_reads_them(soups: list[str], after_text: bool) -> None:
    """Token soups, most not JSON; with ``after_text`` they start like a Pile line, to reach deeper cases."""
    prefix = '{"text": "' if after_text else ""
    same_as_definition([(prefix + soup).encode("utf-8", "surrogatepass") for soup in soups])
