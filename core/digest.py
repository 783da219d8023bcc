"""Short hashes of canonical JSON: the identity of a config, a dedup scope, a stage's inputs.

Every identity the pipeline keeps on disk (the config hash in shard metadata, resume markers,
work-folder names, a tokenizer's hash in its tensors, a recipe's saved iterator state) is the
SHA256 of some value written as JSON. They are made here, one way, so a new identity cannot
drift from the others in how it serializes.

The keyword arguments exist because hashes already on disk were taken over slightly different
JSON (spaces after separators, keys in insertion order, non-ASCII kept): each caller passes the
form its values were first written with, since another form would change the hash and with it
invalidate finished work and rename outputs. New callers should take the defaults.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any


def canonical_json(value: Any, *, compact: bool = True, sort_keys: bool = True, ascii_only: bool = True,
                   default: Callable[[Any], Any] | None = None) -> str:
    """``value`` as JSON: keys sorted, no spaces (``compact``), non-ASCII escaped (``ascii_only``).

    ``default`` converts what JSON cannot hold (``str`` for paths); without it such a value raises.
    """
    separators = (",", ":") if compact else None
    return json.dumps(value, sort_keys=sort_keys, ensure_ascii=ascii_only, separators=separators, default=default)


def json_hash(value: Any, length: int | None = 16, *, compact: bool = True, sort_keys: bool = True,
              ascii_only: bool = True, default: Callable[[Any], Any] | None = None) -> str:
    """The first ``length`` hex digits (None: all 64) of the SHA256 of :func:`canonical_json` of ``value``."""
    text = canonical_json(value, compact=compact, sort_keys=sort_keys, ascii_only=ascii_only, default=default)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return digest if length is None else digest[:length]


def pop_defaults(fields: dict[str, Any], defaults: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """``fields`` less each named field (dotted: ``epub.chapter_timeout_s``) that equals its default; in place.

    For fields added after hashes were first written: at their default they leave the hash as it
    was (the output is the output of earlier runs), set to anything else they are hashed like
    every other field.
    """
    for dotted in names:
        node: Any = fields
        default: Any = defaults
        *parents, last = dotted.split(".")
        for name in parents:
            node, default = node.get(name), default.get(name)
            if not isinstance(node, dict) or not isinstance(default, dict):
                break
        else:
            if last in node and node[last] == default.get(last):
                del node[last]
    return fields
