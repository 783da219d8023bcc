"""Run logs without tracebacks for errors of the machine, not the code (a full disk, a read-only mount),
and the lines a command prints before Prefect's logging is up (:func:`say`).

Prefect logs every failed task and flow with its traceback, on the console and in the UI. For a
full disk that is ~100 lines saying what one line says already ("No space left on device"),
and it buries the command's own one-line error. The filter keeps the log line (with the
exception's repr) and drops the traceback for those errnos only; every other exception keeps its
traceback. Installed in the flow process by the command line and in each process-pool worker as
its initializer (a spawned worker does not inherit the parent's logging setup).
"""

from __future__ import annotations

import datetime
import errno
import logging
import sys

#: Errors fixed outside the code (free space, quota, a writable mount, the device).
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})
#: Prefect's loggers for flow and task runs (their failure messages carry ``exc_info``).
RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")


def environment_error(exc: BaseException | None) -> OSError | None:
    """The OSError of the machine in ``exc`` or its causes, if any."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS:
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


class EnvironmentErrorFilter(logging.Filter):
    """Keep the record, drop its traceback when the exception is one of :data:`ENVIRONMENT_ERRNOS`."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and environment_error(record.exc_info[1]) is not None:
            record.exc_info = None
            record.exc_text = None
        return True


def quiet_environment_errors() -> None:
    """Install the filter on Prefect's run loggers of this process (once)."""
    for name in RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, EnvironmentErrorFilter) for f in logger.filters):
            logger.addFilter(EnvironmentErrorFilter())


def say(message: str) -> None:
    """One line of what a command is doing, on stderr at once, in the look of Prefect's console lines.

    Prefect's own logging starts only once its API is up, which takes seconds idle and minutes on
    a loaded machine (importing Prefect, starting the temporary server): before then a command
    that says nothing looks hung. Plain ``print``, not a logger: no logging is configured yet.
    """
    now = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
    print(f"{now} | INFO    | kinda - {message}", file=sys.stderr, flush=True)
