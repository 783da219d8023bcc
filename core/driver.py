"""The source-run driver: one function owns a source run, whatever runs its tasks.

:func:`drive_source` takes a recipe, its resolved inputs and the run context, and does what a
source run is, in this order:

1. **resume**: the run's dedup scope (:func:`core.pipeline.scope_hash` of its input keys); when
   every input holds a valid done marker for it, the records come back and nothing else happens;
2. ``before_stage`` of the source's :class:`SourcePhases` (Common Crawl's extraction,
   StackExchange's ranking); a ``failed`` or ``skipped`` record ends its input there;
3. **split inputs** (a multistream dump with its index): each range is staged as its own
   input, then the ranges are joined into the input's staging (:mod:`core.splits`);
4. **stage** every input not staged before (a valid stage marker costs no task);
5. the run-wide **exact dedup** over the inputs staged, then ``after_dedup`` (book near-dedup
   adds its drops);
6. **finalize** every input, its done marker valid for the set of inputs deduplicated together
   (an input that failed is not in it: once fixed, it may hold the first copy of another's
   documents, so the others are finalized again; an input ``before_stage`` skipped is, and holds
   a done marker of its own); then, when no input failed and staging is
   not kept, **clean staging**, the phases' own files and the folders they leave empty.

It returns one :class:`core.manifest.InputRecord` per input, in input order; writing them to
the manifest is the caller's (the flow process is the manifest's one writer).

The work itself runs through an :class:`Executor` (``submit`` a core function, wait on its
futures ``as_completed``): :class:`InProcessExecutor` here calls the function at once, which is
what the driver's tests and a plain script need; ``tasks.executor.PrefectExecutor`` submits the
Prefect tasks of ``tasks.pipeline`` instead, so a flow run shows one task run per input and
phase. The driver holds no Prefect, so all of the above is tested without a Prefect API.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from core import pipeline, splits
from core.document import InputSpec
from core.manifest import InputRecord

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

log = logging.getLogger(__name__)


class Future(Protocol[T_co]):
    """The handle ``Executor.submit`` returns: ``result()`` waits, and raises what the call raised."""

    def result(self) -> T_co:
        """The call's return value (waits for it)."""
        ...


class Executor(Protocol):
    """What the driver needs from whatever runs its work (in process, Prefect tasks, ...).

    ``fn`` is a core function (:func:`core.pipeline.stage_input`, ``find_exact_duplicates``,
    ``finalize_input``); an executor may run it as it is or as the task that wraps it.
    """

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Start ``fn(*args, **kwargs)``; return its future."""
        ...

    def as_completed(self, futures: Sequence[Future[T]]) -> Iterator[Future[T]]:
        """The futures, each as soon as it has finished."""
        ...


class RunLog(Protocol):
    """The logger the driver writes to (a ``logging.Logger``, or Prefect's run logger)."""

    def info(self, msg: str, *args: Any) -> None:
        """Progress worth a line."""

    def error(self, msg: str, *args: Any) -> None:
        """An input that failed."""


#: ``progress(done, total)``: called with ``done=0`` once the number of input tasks is known, then
#: after each input staged or finalized.
ProgressCallback = Callable[[int, int], None]


@dataclass(eq=False)
class Done(Generic[T]):
    """The future of a call that already ran: its value, or the exception it raised."""

    value: T | None = None
    error: BaseException | None = None

    def result(self) -> T:
        """The value; re-raises the call's exception."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


@dataclass
class InProcessExecutor:
    """Runs each submitted call at once, in this process (the driver's tests, plain scripts).

    An exception is kept in the future and raised by ``result()``, as a Prefect future does, so
    the driver behaves the same under both. ``submitted`` lists the names of the calls made,
    so a caller can see which work a run did (a resumed run submits no stage or finalize).
    """

    submitted: list[str] = field(default_factory=list)

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Done[T]:
        """Call ``fn`` now; its value or exception goes into the returned future."""
        self.submitted.append(fn.__name__)
        try:
            return Done(value=fn(*args, **kwargs))
        except Exception as exc:  # raised again by result(), where a task's failure would be
            return Done(error=exc)

    def as_completed(self, futures: Sequence[Future[T]]) -> Iterator[Future[T]]:
        """Every future has finished already: in submission order."""
        return iter(list(futures))


@dataclass(frozen=True)
class PhaseRun:
    """What a phase hook gets from the driver: the run's executor and its logger.

    A hook submits its work (a core function per input or group) to ``executor``, as the driver
    does: in process it runs at once, under Prefect as the task that wraps it
    (``tasks.executor.TASKS``), so the same phase runs with or without a Prefect API.
    """

    executor: Executor
    log: RunLog


@dataclass
class SourcePhases:
    """The one hook a source uses to add phases around stage -> exact dedup -> finalize.

    Each callable runs in the driver's process and submits its own work (one call per input or
    group) through the :class:`PhaseRun`'s executor.

    - ``before_stage(ctx, specs, run)``: work before staging. Returns records by input key: a
      ``failed`` or ``skipped`` record ends that input there (it is not staged); a ``done`` or
      ``partial`` one is merged into the input's final record (its reads and drops add up, so
      ``records_in == kept + dropped`` still holds). Inputs it returns nothing for go on as usual.
    - ``after_dedup(ctx, keys, run)``: after the run-wide exact dedup, before finalize; adds rows,
      each with its own step and reason, to the run's drop list (:func:`core.pipeline.add_drops`).
    - ``cleanup(ctx, keys)``: remove the phase's own files once the run finished.
    - ``tables()``: extra table artifacts of the run, as ``(key, rows, description)``.
    """

    before_stage: Callable[[pipeline.RunContext, list[InputSpec], PhaseRun], dict[str, InputRecord]] | None = None
    after_dedup: Callable[[pipeline.RunContext, list[str], PhaseRun], None] | None = None
    cleanup: Callable[[pipeline.RunContext, list[str]], None] | None = None
    tables: Callable[[], list[tuple[str, list[dict[str, Any]], str]]] | None = None


#: ``split(spec)``: the range inputs (:func:`core.splits.range_spec`) one input is staged as, in
#: file order; empty when it is staged whole.
Splitter = Callable[[InputSpec], Sequence[InputSpec]]


@dataclass(frozen=True)
class _Run:
    """One call of :func:`drive_source`: what every step of it needs."""

    recipe: pipeline.SourceRecipe
    ctx: pipeline.RunContext
    #: The scope of every input of the run: all of them finished for it is a run with nothing to do.
    scope: str
    executor: Executor
    log: RunLog
    progress: ProgressCallback


def drive_source(
    recipe: pipeline.SourceRecipe, specs: Sequence[InputSpec], ctx: pipeline.RunContext, executor: Executor,
    *, phases: SourcePhases | None = None, split: Splitter | None = None, keep_staging: bool = False,
    progress: ProgressCallback | None = None, logger: RunLog | None = None,
) -> list[InputRecord]:
    """Run one source over ``specs`` (see the module docstring); one record per input, in order.

    ``split`` cuts an input into ranges staged as tasks of their own; ``keep_staging`` leaves
    the staging (and the phases' files) in place after a clean run, for inspection or a resume.
    """
    phases = phases or SourcePhases()
    keys = [s.key for s in specs]
    run = _Run(recipe, ctx, pipeline.scope_hash(keys, ctx.config_hash), executor, logger or log,
               progress or (lambda done, total: None))
    finished = finished_before(specs, ctx)
    if finished is not None:
        run.log.info("all %d inputs already finished for this config; nothing to do", len(specs))
        return finished
    started = time.perf_counter()
    phase_run = PhaseRun(executor, run.log)
    before = phases.before_stage(ctx, list(specs), phase_run) if phases.before_stage is not None else {}
    ended = {k: r for k, r in before.items() if r.status in ("failed", "skipped")}
    ended.update(_stage_ranges(run, [s for s in specs if s.key not in ended], split))
    active = [s for s in specs if s.key not in ended]
    skipped = [s for s in specs if s.key in ended and ended[s.key].status == "skipped"]
    finals = _stage_dedup_finalize(run, active, skipped, before, ended, phases)
    finals.update(ended)
    records = [finals[k] for k in keys]
    if not keep_staging and all(r.status != "failed" for r in records):
        pipeline.clean_staging(ctx, keys)
        if phases.cleanup is not None:
            phases.cleanup(ctx, keys)
        if split is not None:
            splits.remove_ranges(ctx, keys)
        _remove_empty_staging(ctx)
    run.log.info("processed %d inputs in %.1fs", len(specs), time.perf_counter() - started)
    return records


def finished_before(specs: Sequence[InputSpec], ctx: pipeline.RunContext) -> list[InputRecord] | None:
    """The records of a run with nothing to do (every input finished before, for this config and
    this set of inputs), in input order; None when something is left to do (or there is no input).

    :func:`drive_source` returns them without running anything; a flow asks first to say
    "nothing to do" in its summary rather than "completed".
    """
    scope = pipeline.scope_hash([s.key for s in specs], ctx.config_hash)
    done = [pipeline.load_done(s, ctx, scope) for s in specs]
    if not specs or any(record is None for record in done):
        return None
    return [record for record in done if record is not None]


def _remove_empty_staging(ctx: pipeline.RunContext) -> None:
    """Remove this source's phase folders (``_staging/<source>.<phase>``) and ``_staging`` once empty.

    :func:`core.pipeline.clean_staging` runs before the phases' own cleanup, so when it tried to
    remove ``_staging`` a phase's folder (Common Crawl's ``commoncrawl.extract``) still held
    files; the phase then emptied its folder but left it. Only empty folders go: another source
    may still be staging beside this one.
    """
    root = ctx.out / "_staging"
    for directory in [*root.glob(f"{glob.escape(ctx.source)}.*"), root]:
        with contextlib.suppress(OSError):
            directory.rmdir()


def _stage_dedup_finalize(
    run: _Run, active: list[InputSpec], skipped: list[InputSpec], before: dict[str, InputRecord],
    ended: dict[str, InputRecord], phases: SourcePhases,
) -> dict[str, InputRecord]:
    """Stage the inputs still to stage, dedup across the run, finalize each; records by key.

    ``before`` holds what ``before_stage`` recorded (merged into the staged records), ``ended``
    the inputs that ended before staging (only named here when they failed). The ``skipped``
    inputs (a phase ended them with a reason) are part of the scope the done markers hold and get
    one themselves: with no failure, the scope is the whole run's, so a re-run has nothing to do.
    """
    steps = _Steps(run.progress, 2 * len(active))
    # inputs staged before (a resumed run, a split input joined from its ranges) cost no task
    resumed = {s.key: r for s in active if (r := pipeline.load_staged(s, run.ctx)) is not None}
    staged = _gather(run.executor, {
        run.executor.submit(pipeline.stage_input, run.recipe, s, run.ctx): s.key for s in active if s.key not in resumed
    }, steps.step)
    for key, record in resumed.items():
        staged[key] = record
        steps.step()
    staged = {k: pipeline.merge_records(before[k], r) if k in before else r for k, r in staged.items()}
    for record in [*ended.values(), *staged.values()]:
        if record.status == "failed":
            run.log.error("input failed: %s", record.error)
    ok_keys = [s.key for s in active if staged[s.key].status != "failed"]
    # what was deduplicated together, and the inputs whose outcome was to hold nothing
    scope = pipeline.scope_hash(ok_keys + [s.key for s in skipped], run.ctx.config_hash)
    for spec in skipped:
        pipeline.finish_skipped(spec, run.ctx, scope, ended[spec.key])
    duplicates = run.executor.submit(pipeline.find_exact_duplicates, run.ctx, ok_keys).result()
    run.log.info("exact dedup across %d inputs: %d duplicates", len(ok_keys), sum(duplicates.values()))
    if phases.after_dedup is not None:
        phases.after_dedup(run.ctx, ok_keys, PhaseRun(run.executor, run.log))
    return _gather(run.executor, {
        run.executor.submit(pipeline.finalize_input, run.recipe, s, run.ctx, scope, staged[s.key]): s.key
        for s in active
    }, steps.step)


class _Steps:
    """Counts finished input tasks for the progress callback."""

    def __init__(self, progress: ProgressCallback, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0
        progress(0, total)

    def step(self) -> None:
        self.done += 1
        self.progress(self.done, self.total)


def _gather(executor: Executor, futures: dict[Future[T], str], on_done: Callable[[], None]) -> dict[str, T]:
    """Wait for ``futures`` (each named by its input key); their results by key."""
    results: dict[str, T] = {}
    for future in executor.as_completed(list(futures)):
        results[futures[future]] = future.result()
        on_done()
    return results


def _ranges(run: _Run, spec: InputSpec, split: Splitter) -> list[InputSpec]:
    """The ranges ``spec`` is still to be staged as: none when it is whole, staged or finished."""
    if not spec.path.exists() or pipeline.load_done(spec, run.ctx, run.scope) is not None:
        return []
    if pipeline.stage_marker(spec, run.ctx).load(run.ctx.out) is not None:
        return []
    return list(split(spec))


def _stage_ranges(run: _Run, specs: Iterable[InputSpec], split: Splitter | None) -> dict[str, InputRecord]:
    """Stage each split input as range tasks and join them into its staging; the failed inputs' records.

    A joined input holds a valid stage marker, so the usual staging costs it no task, and dedup
    and finalize see one input, as in a run that staged it whole. Only the range that starts
    the file hashes it (one SHA256 of a 22 GB dump, not one per range).
    """
    if split is None:
        return {}
    plans = {s.key: (s, parts) for s in specs if (parts := _ranges(run, s, split))}
    if not plans:
        return {}
    futures = {run.executor.submit(pipeline.stage_input, run.recipe, part, run.ctx, hash_input=number == 0): part.key
               for _, parts in plans.values() for number, part in enumerate(parts)}
    run.log.info("staging %d inputs as %d range tasks", len(plans), len(futures))
    staged = _gather(run.executor, futures, lambda: None)
    failed = {}
    for key, (spec, parts) in plans.items():
        record = splits.join_ranges(run.ctx, spec, [splits.RangeInput(p, staged[p.key]) for p in parts])
        if record.status == "failed":
            failed[key] = record
    return failed
