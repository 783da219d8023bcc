"""Completion markers: the one way every stage records "this piece of work is finished".

A marker is a JSON file written atomically after the work's outputs are complete. A later run
trusts it only when

1. its *key* matches (config hash, recipe version, input fingerprint, dedup scope: whatever
   would change the output), and
2. the outputs it names are intact: every file exists with the recorded size, and when the
   marker promises documents (``promised_docs``), the outputs hold exactly that many.

The second rule is what keeps a marker from lying: a marker written while another run deleted
the files, or one that claims 1,080 kept documents while naming no shard, is not trusted, and
the work is done again instead of being reported as finished with nothing on disk.
Checking sizes is cheap (a ``stat`` per file); ``kinda manifest verify`` re-hashes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.atomic import write_json_atomic
from core.released import shard_intact

OUTPUTS = "outputs"
PROMISED_DOCS = "promised_docs"


def outputs_intact(root: Path, outputs: Sequence[Mapping[str, Any]]) -> bool:
    """True when every output (``{"path": relative to root, "bytes": n}``) exists with its size,
    or was released with its documents intact elsewhere (:mod:`core.released`)."""
    return all(shard_intact(root, dict(output)) for output in outputs)


def promise_kept(payload: Mapping[str, Any]) -> bool:
    """True unless the marker promises documents its outputs do not hold."""
    promised = payload.get(PROMISED_DOCS)
    if promised is None:
        return True
    held = sum(int(output.get("docs", 0)) for output in payload.get(OUTPUTS, []))
    return held == int(promised)


@dataclass(frozen=True)
class Marker:
    """A completion marker at ``path`` valid for ``key`` (see the module docstring)."""

    path: Path
    key: Mapping[str, Any] = field(default_factory=dict)

    def read(self) -> dict[str, Any] | None:
        """The marker's content if it exists, parses and matches the key (outputs unchecked)."""
        try:
            payload = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(payload, dict) or any(payload.get(k) != v for k, v in self.key.items()):
            return None
        return payload

    def load(self, root: Path) -> dict[str, Any] | None:
        """The marker's content when it is valid: key matches, outputs intact, promise kept."""
        payload = self.read()
        if payload is None:
            return None
        if not outputs_intact(root, payload.get(OUTPUTS, [])) or not promise_kept(payload):
            return None
        return payload

    def write(self, payload: Mapping[str, Any], outputs: Sequence[Mapping[str, Any]] = (),
              promised_docs: int | None = None) -> None:
        """Record the work as finished, naming its outputs (and the documents they hold)."""
        content: dict[str, Any] = {**self.key, **payload, OUTPUTS: list(outputs)}
        if promised_docs is not None:
            content[PROMISED_DOCS] = promised_docs
        write_json_atomic(self.path, content)

    def remove(self) -> None:
        """Forget the work (e.g. when its inputs changed)."""
        self.path.unlink(missing_ok=True)
