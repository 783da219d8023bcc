"""Book-level near-dedup settings: shared by ``flows.books`` and ``flows.science_books``.

The ``near_dedup`` section of both configs. The phase itself (MinHash per input, one run-wide
match, between the run-wide exact dedup and finalize) is :func:`dedupe.near_books_phase.near_dedup_phases`,
re-exported here; its Prefect tasks are in ``tasks.phases``. Here, not in ``flows.books``, so
neither flow imports the other's module (``tests/test_layout_rules.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from flows.runtime.lazy import LazyImport

if TYPE_CHECKING:
    from dedupe import near_books
    from dedupe.near_books_phase import near_dedup_phases
else:  # only a run needs them (pyarrow, datasketch): not --help or a refused command
    near_books = LazyImport("dedupe.near_books")
    near_dedup_phases = LazyImport("dedupe.near_books_phase", "near_dedup_phases")

__all__ = ["NearDedupConfig", "near_dedup_phases"]


class NearDedupConfig(BaseModel):
    """Book-level near-dedup (see :mod:`dedupe.near_books`)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    mode: Literal["jaccard", "containment"] = "jaccard"
    threshold: float = Field(0.9, gt=0, le=1)
    candidate_threshold: float = Field(0.7, gt=0, le=1)
    num_perm: int = Field(128, gt=0)
    ngram: int = Field(5, gt=0)
    seed: int = 1

    def settings(self) -> near_books.NearDupSettings:
        """As the pure module's settings."""
        return near_books.NearDupSettings(self.mode, self.threshold, self.candidate_threshold, self.num_perm,
                                          self.ngram, self.seed)
