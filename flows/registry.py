"""The sources this repository ships, in run order: each one's :class:`core.registry.SourceSpec`.

Each spec is declared in the module that runs its source: ``flows/<name>.py`` for a source with a
flow of its own (every shipped one), ``sources/<name>.py`` beside the recipe for one the generic
flow runs (docs/adding-a-source.md). This module only lists them, with real imports (mypy and the
import graph see every source the parent flow can run). The parent flow (:mod:`flows.llama`), the
sample corpus (:mod:`flows.runtime.sample`), the input checks, the label flow and the tests read
:data:`SOURCES`; tests/flows/test_registry.py checks the files that cannot (``prefect.yaml``, the
dataset files) against it.

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
