"""The sources this repository ships, in run order: each one's :class:`core.registry.SourceSpec`.

Each spec is declared next to its source (``SPEC`` in ``flows/<name>.py``); this module only
lists them, with real imports (mypy and the import graph see every source the parent flow can
run). The parent flow (:mod:`flows.llama`), the sample corpus (:mod:`flows.runtime.sample`), the input
checks and the label lists read :data:`SOURCES`; a test checks ``prefect.yaml``,
``configs/labels.yaml`` and ``configs/g2.yaml`` against it.

Importing this module imports every source flow module (their configs and flags, not Prefect or
pyarrow): the parent flow imports it when a run starts, not for ``--help``. A source that lives
outside this repository (a plugin, a test's toy source) is added with ``SOURCES.register(spec)``.
"""

from __future__ import annotations

from core.registry import Registry
from flows import (
    arxiv,
    books,
    c4,
    commoncrawl,
    dialogue,
    dm_math,
    github,
    pubmed,
    reasoning,
    science_books,
    stack_code,
    stackexchange,
    wikipedia,
)

#: The seven LLaMA sources in the paper's table 1 order (the run order: biggest first), then the
#: G.2 extension sources (configs/g2.yaml).
SOURCES = Registry([
    commoncrawl.SPEC, c4.SPEC, github.SPEC, wikipedia.SPEC, books.SPEC, arxiv.SPEC, stackexchange.SPEC,
    pubmed.SPEC, science_books.SPEC, dm_math.SPEC, stack_code.SPEC, dialogue.SPEC, reasoning.SPEC,
])
