"""The one way a flow records a run: lock, start, inputs, extra rows, artifacts, status.

Every flow (each source, dedup, label, tokenization, the Pile index) runs inside
``with RunRecorder(...) as run:``. On entry it takes the output root's lock (one writer per
``--out``; see :mod:`core.lock`), marks runs that a killed process left ``running`` as
``abandoned``, and records the new run. Inside, the flow hands it input records, extra records
(sites skipped by ranking, say) and artifacts. On exit the run gets its status (``completed``,
``partial``, or ``failed`` when an exception escaped) *after* everything else was recorded, so
nothing a run did lands outside its status and artifacts.

A run may also be recorded outside Prefect (``kinda filters apply``: a re-label whose work is
smaller than a Prefect run's fixed cost). Then Prefect is not imported at all: the run id is a
fresh UUID with no Prefect flow run behind it, warnings go to the standard ``logging`` module,
and the artifacts are left out (the command prints the same tables).

Only the flow process writes the manifest, in short transactions (tasks return plain records).
A reader holding the manifest never fails the run: writes that cannot get the file are queued
(:mod:`core.manifest`); the run's last write waits longest for the reader, then the run ends
as it would have, saying how many writes wait.
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from core.config import PipelineConfig
from core.lock import OutputLock
from core.manifest import InputRecord, Manifest
from core.version import code_version

#: Runs recorded by this process and not yet finished (a parent flow while its subflows run):
#: only the outermost one may mark other 'running' rows abandoned.
_LIVE_RUNS: set[str] = set()


def prefect_flow_run_id() -> str | None:
    """The id of the Prefect flow run this code runs in, or None outside one.

    Without Prefect imported no flow run can be active, so a run recorded outside Prefect never
    pays for importing it (~2 CPU-s) just to learn that.
    """
    if "prefect" not in sys.modules:
        return None
    from prefect.context import get_run_context

    try:
        return str(get_run_context().flow_run.id)  # type: ignore[union-attr]
    except Exception:
        return None


def current_run_id() -> str:
    """The Prefect flow run's id (the manifest's run id), or a fresh one outside a flow."""
    return prefect_flow_run_id() or str(uuid.uuid4())


def run_logger(in_prefect: bool, name: str) -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    """Prefect's logger of the current run inside one (its UI shows the lines), else ``kinda.<name>``."""
    if in_prefect:
        from prefect import get_run_logger

        return get_run_logger()
    return logging.getLogger(f"kinda.{name}")


class RunRecorder:
    """Record one flow run in the manifest of ``root`` (see the module docstring)."""

    def __init__(self, root: Path, flow: str, source: str | None, config: PipelineConfig) -> None:
        self.root = Path(root).resolve()
        self.flow = flow
        self.source = source
        self.config = config
        self.prefect_run_id = prefect_flow_run_id()
        self.run_id = self.prefect_run_id or str(uuid.uuid4())
        self.manifest = Manifest.for_output(self.root)
        self.status: str | None = None
        self.records: list[InputRecord] = []
        self._lock = OutputLock(self.root, flow, self.run_id)

    def __enter__(self) -> RunRecorder:
        self._lock.acquire()
        try:
            if not _LIVE_RUNS:  # the outermost run of this process: any other 'running' row is dead
                abandoned = self.manifest.abandon_stale_runs()
                if abandoned:
                    self.logger.warning("%d earlier run(s) were killed mid-way; marked abandoned", abandoned)
            self.manifest.start_run(self.run_id, self.flow, self.source, self.config.config_hash(),
                                    self.config.output_fields(), code_version(), prefect_flow_run_id=self.prefect_run_id)
        except BaseException:
            self._lock.release()
            raise
        _LIVE_RUNS.add(self.run_id)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            status = "failed" if exc_type is not None else (self.status or self._status_from_records())
            nested = bool(_LIVE_RUNS - {self.run_id})  # a stage of a parent run: the parent's end waits
            if not self.manifest.finish_run(self.run_id, status, wait_s=0.0 if nested else None) and not nested:
                self._say_queued()
        finally:
            _LIVE_RUNS.discard(self.run_id)
            self._lock.release()

    def _say_queued(self) -> None:
        """A reader held the manifest to the end: the run's rows wait in the queue (never lost)."""
        message = (f"manifest {self.manifest.path} is held open by a reader: {len(self.manifest.queued())} write(s) "
                   f"of this run wait in {self.manifest.queue_dir} and are applied by the next write (any run, "
                   "any `kinda manifest` command); every read already includes them")
        try:
            self.logger.warning(message)
        except Exception:  # Prefect's run logger with no run context left to log to
            print(f"warning: {message}", file=sys.stderr)

    def _status_from_records(self) -> str:
        if any(r.status in ("failed", "partial") for r in self.records):
            return "partial"
        return "completed"

    @property
    def logger(self) -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
        """Where the run's log lines go: Prefect's run logger in a flow run, else ``kinda.<flow>``."""
        return run_logger(self.prefect_run_id is not None, self.flow)

    # -- what a run records -----------------------------------------------------------------
    def inputs(self, records: Sequence[InputRecord], recipe: str | None = None) -> None:
        """Record input records (kept, dropped by reason, shards) under this run."""
        self.records.extend(records)
        self.manifest.record_inputs(self.run_id, list(records), recipe=recipe or self.flow,
                                    code_version=code_version())

    def table(self, key: str, rows: list[dict[str, Any]], description: str) -> None:
        """A table artifact of this run (none outside Prefect: no UI holds it)."""
        if self.prefect_run_id is not None:
            from prefect.artifacts import create_table_artifact

            create_table_artifact(rows, key=key, description=description)

    def markdown(self, key: str, text: str) -> None:
        """A markdown artifact of this run (none outside Prefect)."""
        if self.prefect_run_id is not None:
            from prefect.artifacts import create_markdown_artifact

            create_markdown_artifact(text, key=key)
