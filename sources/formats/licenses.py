"""Licence detection for code repositories: from LICENSE files or a row's licence field.

The LLaMA recipe keeps only repositories under the Apache, BSD and MIT licences. Two inputs:

* a licence *name* as the BigQuery ``github_repos.licenses`` table gives it (``mit``,
  ``apache-2.0``, ``bsd-3-clause``), an SPDX id (``MIT``, ``BSD-2-Clause``) or an SPDX
  expression (``MIT OR Apache-2.0``): :func:`normalize_license` maps aliases onto lower-case
  SPDX ids and :func:`expression_verdict` evaluates ``OR``/``AND``;
* the *text* of a licence file: :func:`detect_license_text` recognises the licences by phrases
  their texts must contain (the grant sentence of MIT, BSD's redistribution clause, the Apache
  title and version, and so on), after normalising case, quotes and whitespace. Phrase rules are
  exact for the standard texts, need no data files and explain themselves in a test; a
  similarity matcher (askalono, scancode) would also catch re-worded licences, at the cost of a
  dependency.

A repository with several licence files (``LICENSE-MIT`` + ``LICENSE-APACHE``, Rust's habit) is
kept only when every licence found is allowed: a GPL file beside an MIT one is ambiguous, and
ambiguity is a reason to drop, not to keep.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: The LLaMA paper's licences, as lower-case SPDX ids.
DEFAULT_ALLOWED: frozenset[str] = frozenset({"mit", "bsd-2-clause", "bsd-3-clause", "apache-2.0"})

NO_LICENSE = "none"
UNKNOWN_LICENSE = "unknown"

#: Licence file names at a repository's root (case-insensitive), e.g. LICENSE, LICENSE.md,
#: LICENSE-MIT, LICENCE.txt, COPYING, UNLICENSE.
#: A suffix must be a text extension or start upper-case (``-MIT``, ``.APACHE2``), so code such as
#: ``license_check.py`` is not mistaken for a licence.
LICENSE_FILE = re.compile(
    r"^(?i:(?:un)?licen[cs]e[sd]?|copying)(?:[-._](?:[A-Z0-9][A-Za-z0-9.-]*|(?i:md|txt|rst|markdown)))?$"
)

_ALIASES: dict[str, str] = {
    "mit": "mit", "mit license": "mit", "expat": "mit", "the mit license": "mit", "mit-0": "mit-0",
    "apache": "apache-2.0", "apache 2": "apache-2.0", "apache 2.0": "apache-2.0", "apache-2": "apache-2.0",
    "apache2": "apache-2.0", "apache license 2.0": "apache-2.0", "apache license, version 2.0": "apache-2.0",
    "apache software license": "apache-2.0", "asl 2.0": "apache-2.0",
    "bsd": "bsd-3-clause", "new bsd": "bsd-3-clause", "bsd-new": "bsd-3-clause", "bsd 3-clause": "bsd-3-clause",
    "modified bsd": "bsd-3-clause", "revised bsd": "bsd-3-clause", "3-clause bsd": "bsd-3-clause",
    "simplified bsd": "bsd-2-clause", "freebsd": "bsd-2-clause", "bsd 2-clause": "bsd-2-clause",
    "2-clause bsd": "bsd-2-clause", "bsd-simplified": "bsd-2-clause",
    "gpl": "gpl-2.0", "gplv2": "gpl-2.0", "gpl-2": "gpl-2.0", "gplv3": "gpl-3.0", "gpl-3": "gpl-3.0",
    "lgpl": "lgpl-2.1", "agpl": "agpl-3.0", "mpl": "mpl-2.0", "isc license": "isc",
    "public domain": "unlicense", "the unlicense": "unlicense", "cc0": "cc0-1.0",
}
_SPDX_SUFFIXES = re.compile(r"-(only|or-later)$|\+$")


def normalize_license(name: str | None) -> str:
    """Map a licence name or SPDX id to a lower-case SPDX id (``GPL-3.0-only`` -> ``gpl-3.0``)."""
    if name is None or not str(name).strip():
        return NO_LICENSE
    key = re.sub(r"\s+", " ", str(name).strip().lower())
    if key in _ALIASES:
        return _ALIASES[key]
    key = _SPDX_SUFFIXES.sub("", key.replace(" ", "-"))
    return _ALIASES.get(key, key)


def expression_verdict(expression: str | None, allowed: Iterable[str] = DEFAULT_ALLOWED) -> tuple[bool, str]:
    """Decide an SPDX-like licence expression; return (allowed?, the licence to report).

    ``A OR B`` is allowed if one side is (the user may pick it); ``A AND B`` only if both are.
    Parentheses are ignored (expressions in repository metadata are flat in practice). The
    reported licence is the chosen allowed one, or the first one that is not allowed.
    """
    allowed = frozenset(allowed)
    text = (expression or "").strip().strip("()")
    alternatives = [alt for alt in re.split(r"\s+or\s+|\s*/\s*", text, flags=re.IGNORECASE) if alt.strip()]
    if not alternatives:
        return False, NO_LICENSE
    rejected: str | None = None
    for alternative in alternatives:
        parts = [normalize_license(p.strip("() ")) for p in re.split(r"\s+and\s+", alternative, flags=re.IGNORECASE)]
        bad = [p for p in parts if p not in allowed]
        if not bad:
            return True, " AND ".join(parts)
        rejected = rejected or bad[0]
    return False, rejected or UNKNOWN_LICENSE


# -- licence texts ------------------------------------------------------------------------------
def _normalize_text(text: str) -> str:
    text = text.lower().replace("\u201c", '"').replace("\u201d", '"').replace("\u2019", "'")
    text = re.sub(r"[*#>=_`]+", " ", text)  # markdown decoration of LICENSE.md files
    return re.sub(r"\s+", " ", text)


@dataclass(frozen=True)
class _Rule:
    """A licence recognised by phrases.

    ``anchor``: any of these phrases locates the licence (its title or grant sentence);
    ``near``: if given, one of these must follow within :data:`_NEAR` characters of the anchor
    (a version number after the title); ``also``/``none_of``: phrases required/forbidden anywhere.
    """

    license: str
    anchor: tuple[str, ...]
    near: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    none_of: tuple[str, ...] = ()

    def position(self, text: str) -> int | None:
        """Where this licence is stated in ``text`` (normalized), or None if it is not."""
        hits = [i for i in (text.find(a) for a in self.anchor) if i != -1]
        if not hits:
            return None
        start = min(hits)
        if self.near and not any(n in text[start:start + _NEAR] for n in self.near):
            return None
        if not all(p in text for p in self.also) or any(p in text for p in self.none_of):
            return None
        return start


_NEAR = 300
_MIT_GRANT = "permission is hereby granted, free of charge, to any person obtaining a copy"
_BSD_GRANT = "redistribution and use in source and binary forms"

#: Licence texts quote each other (GPL-3 names the AGPL, MPL-2.0 names the GPLs), so the licence
#: whose anchor comes *first* in the file wins; among rules with the same anchor position the
#: first in this order wins, so specific rules (a version, a clause) precede general ones.
_RULES: tuple[_Rule, ...] = (
    _Rule("agpl-3.0", ("gnu affero general public license",)),
    _Rule("lgpl-3.0", ("gnu lesser general public license",), near=("version 3", "v3")),
    _Rule("lgpl-2.1", ("gnu lesser general public license",)),
    _Rule("lgpl-2.0", ("gnu library general public license",)),
    _Rule("gfdl", ("gnu free documentation license",)),
    _Rule("gpl-3.0", ("gnu general public license",), near=("version 3", "v3")),
    _Rule("gpl-1.0", ("gnu general public license",), near=("version 1,",)),
    _Rule("gpl-2.0", ("gnu general public license",)),
    _Rule("mpl-2.0", ("mozilla public license",), near=("2.0",)),
    _Rule("mpl-1.1", ("mozilla public license",)),
    _Rule("epl-2.0", ("eclipse public license",), near=("2.0",)),
    _Rule("epl-1.0", ("eclipse public license",)),
    _Rule("apache-2.0", ("apache license",), near=("version 2.0", "2.0")),
    _Rule("apache-1.1", ("apache software license",), near=("1.1",)),
    _Rule("cc0-1.0", ("creative commons",), also=("cc0",)),
    _Rule("cc-by-sa-4.0", ("creative commons",), also=("sharealike",)),
    _Rule("cc-by-4.0", ("creative commons",), also=("attribution",)),
    _Rule("unlicense", ("free and unencumbered software released into the public domain",)),
    _Rule("wtfpl", ("do what the fuck you want to",)),
    _Rule("bsl-1.0", ("boost software license",)),
    _Rule("isc", ("permission to use, copy, modify, and/or distribute this software for any purpose",
                  "permission to use, copy, modify, and distribute this software for any purpose with or without fee")),
    _Rule("mit-0", (_MIT_GRANT,), none_of=("the above copyright notice and this permission notice shall be included",)),
    _Rule("mit", (_MIT_GRANT,)),
    _Rule("bsd-4-clause", (_BSD_GRANT,), also=("all advertising materials",)),
    _Rule("bsd-3-clause", (_BSD_GRANT,), also=("endorse or promote products",)),
    _Rule("bsd-2-clause", (_BSD_GRANT,)),
    _Rule("zlib", ("altered source versions must be plainly marked",)),
    _Rule("artistic-2.0", ("artistic license",), near=("2.0",)),
    _Rule("artistic-1.0", ("artistic license",)),
)


def detect_license_text(text: str) -> str:
    """The SPDX id of the licence a licence file's text states first, or ``unknown``."""
    normalized = _normalize_text(text)
    best: tuple[int, int] | None = None
    for order, rule in enumerate(_RULES):
        position = rule.position(normalized)
        if position is not None and (best is None or (position, order) < best):
            best = (position, order)
    return _RULES[best[1]].license if best is not None else UNKNOWN_LICENSE


@dataclass(frozen=True)
class RepoLicense:
    """What was found about a repository's licence, and whether the recipe keeps it.

    ``rejected`` is None when the repository is kept, else the licence that failed it
    (``none`` when no licence was found at all).
    """

    licenses: tuple[str, ...]
    files: tuple[str, ...]
    rejected: str | None

    @property
    def allowed(self) -> bool:
        """True when the recipe keeps the repository's files."""
        return self.rejected is None

    @property
    def label(self) -> str:
        """One string for meta (``mit``, ``apache-2.0 AND mit``, ``none``)."""
        return " AND ".join(self.licenses) if self.licenses else NO_LICENSE

    @property
    def drop_reason(self) -> str | None:
        """``license_<id>`` naming the licence that failed the repository; None when kept."""
        return None if self.rejected is None else f"license_{self.rejected}"


def judge(licenses: Sequence[str], files: Sequence[str], allowed: Iterable[str]) -> RepoLicense:
    """Build a :class:`RepoLicense`: kept only if licences were found and all are allowed.

    A file whose text is not recognised is ignored when another file's is: such files are
    usually pointers ("see LICENSE-MIT and LICENSE-APACHE") or notices, not licences.
    """
    allowed = frozenset(allowed)
    unique = tuple(sorted(set(licenses)))
    if any(lic != UNKNOWN_LICENSE for lic in unique):
        unique = tuple(lic for lic in unique if lic != UNKNOWN_LICENSE)
    bad = [lic for lic in unique if lic not in allowed]
    rejected = NO_LICENSE if not unique else (bad[0] if bad else None)
    return RepoLicense(licenses=unique, files=tuple(files), rejected=rejected)


def license_files(repo_root: Path) -> list[Path]:
    """Licence files at the repository root, sorted by name (regular files only, no symlinks)."""
    try:
        entries = sorted(repo_root.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    return [p for p in entries if LICENSE_FILE.match(p.name) and p.is_file() and not p.is_symlink()]


def detect_repo_license(
    repo_root: Path, allowed: Iterable[str] = DEFAULT_ALLOWED, max_bytes: int = 256 * 1024
) -> RepoLicense:
    """Detect a cloned repository's licence from the licence files at its root."""
    found: list[str] = []
    names: list[str] = []
    for path in license_files(repo_root):
        with open(path, "rb") as handle:
            text = handle.read(max_bytes).decode("utf-8", errors="replace")
        found.append(detect_license_text(text))
        names.append(path.name)
    return judge(found, names, allowed)


def row_license(value: str | None, allowed: Iterable[str] = DEFAULT_ALLOWED) -> RepoLicense:
    """Judge a licence field of a row (a name, SPDX id or SPDX expression)."""
    ok, label = expression_verdict(value, allowed)
    licenses = (label,) if label != NO_LICENSE else ()
    return RepoLicense(licenses=licenses, files=(), rejected=None if ok else label)
