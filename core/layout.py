"""Where things live under an output root; one place so every stage agrees.

```
<out>/docs/<source>/<partition>/<input>-00000.parquet   final document shards
<out>/_staging/<source>/<input>/part-00000.parquet       per-input shards before run-wide dedup
<out>/_staging/<source>/<input>/hashes.parquet           exact-dedup keys of the staged documents
<out>/_state/<source>/<input>.stage.json                 resume marker: input staged
<out>/_state/<source>/<input>.done.json                  resume marker: input finished
<out>/attributes/<source>/<input>.drops.parquet          why each left-out document was left out
<out>/attributes/<source>/<input>.signals.parquet        quality signals of each staged document (by id)
<out>/cache/                                             downloads
<out>/manifest.duckdb                                    the manifest
```
"""

from __future__ import annotations

import re
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(name: str) -> str:
    """A file-system-safe name for an input key (keeps it readable)."""
    cleaned = _UNSAFE.sub("_", name).strip("._")
    return cleaned or "input"


def docs_dir(out: Path, source: str, partition: str) -> Path:
    """Directory of a source's final shards for one partition (usually a language)."""
    return out / "docs" / source / slug(partition)


def staging_dir(out: Path, source: str, input_key: str) -> Path:
    """Directory of one input's staged shards."""
    return out / "_staging" / source / slug(input_key)


def state_path(out: Path, source: str, input_key: str, phase: str) -> Path:
    """Resume marker of one input and phase (``stage`` or ``done``)."""
    return out / "_state" / source / f"{slug(input_key)}.{phase}.json"


def duplicates_path(out: Path, source: str) -> Path:
    """The run's drop list of a source: (input key, ordinal, id, step, reason, matched id, detail) rows."""
    return out / "_staging" / source / "_duplicates.parquet"


def drops_attribute_path(out: Path, source: str, input_key: str) -> Path:
    """One input's documents left out after staging (duplicates), with the reason and match."""
    return out / "attributes" / source / f"{slug(input_key)}.drops.parquet"


def signals_attribute_path(out: Path, source: str, input_key: str) -> Path:
    """One input's quality signals: a row per staged document, keyed by its id (core.filters.signals)."""
    return out / "attributes" / source / f"{slug(input_key)}.signals.parquet"
