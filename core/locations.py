"""Does this input exist: the one rule for input locations (local paths, globs, URLs).

A location is a URL (read or downloaded when the run gets to it, so it counts as present), a
glob (``**`` recursive; present when it matches something), or a plain path (present when it
exists, also when its name holds glob characters such as ``[1]`` that make it no pattern of itself).
The command line refuses a run whose inputs are missing, the parent flow skips a source whose
inputs are all missing, and a source run expands its locations: all three ask here, so they
cannot disagree about the same input.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Sequence
from pathlib import Path

from core.download import is_url

#: Which locations are not local (not checked here): by default http(s) URLs, which runs download.
Remote = Callable[[str], bool]


def has_scheme(location: str) -> bool:
    """Any URL (``hf://``, ``s3://``, ``https://``): read through fsspec, checked when read."""
    return "://" in location


def local_matches(pattern: str) -> list[str]:
    """What a local pattern names, sorted (so runs are reproducible); [] when nothing."""
    matches = sorted(glob.glob(pattern, recursive=True))
    if matches:
        return matches
    return [pattern] if Path(pattern).exists() else []


def missing_locations(locations: Sequence[str], remote: Remote = is_url) -> list[str]:
    """The local locations that name nothing (``remote`` ones are taken as present)."""
    return [location for location in locations if not remote(location) and not local_matches(location)]


def expand_locations(locations: Sequence[str]) -> list[str]:
    """Expand local globs (sorted); URLs pass through; a location naming nothing is a FileNotFoundError."""
    expanded: list[str] = []
    for location in locations:
        if is_url(location):
            expanded.append(location)
            continue
        matches = local_matches(location)
        if not matches:
            raise FileNotFoundError(f"input not found: {location}")
        expanded.extend(matches)
    return expanded
