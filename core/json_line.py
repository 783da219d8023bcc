"""One line of a JSON-lines file, parsed under the one rule every reader keeps: a bad line is a ``ValueError``.

``json.loads`` raises ``ValueError`` for text that is not JSON (``JSONDecodeError``) or bytes
that are not UTF-8 (``UnicodeDecodeError``), but ``RecursionError`` for a line nested deeper
than the interpreter's stack (``[[[[...]]]]``, a few kilobytes). A reader that caught only the
first two lost its whole file to one such line. :func:`parse_json_line` turns the deep line into
:class:`NestedTooDeep`, a ``ValueError`` too, so each reader catches ``ValueError`` once and
makes any bad line one counted drop naming its file and line, in its own vocabulary, and reads on.
"""

from __future__ import annotations

import json
from typing import Any


class NestedTooDeep(ValueError):
    """A JSON text nested deeper than the interpreter's stack can parse: one bad line, not a failed file."""


def parse_json_line(line: bytes | str) -> Any:
    """``json.loads(line)``; any line it cannot read raises ``ValueError`` (too deep: :class:`NestedTooDeep`)."""
    try:
        return json.loads(line)
    except RecursionError:
        raise NestedTooDeep("nested too deeply to parse") from None
