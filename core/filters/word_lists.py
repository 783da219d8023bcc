"""Word lists shipped with the filters (``core/filters/data``): their paths only.

Apart from the filters that read them (:mod:`core.filters.c4_rules` imports numpy and the bounded
cleaners) so a config naming a list as its default (``flows.c4``'s ``bad_words``) costs nothing
to import: ``python -m flows.c4 --help`` stays light.
"""

from __future__ import annotations

from pathlib import Path

#: LDNOOBW's English list (C4's bad-words filter).
BAD_WORDS_EN = Path(__file__).resolve().parent / "data" / "ldnoobw_en.txt"
