"""Imported by a process pool's fork server only (``flows.runtime.runner.PRELOAD``): the signals kernels, loaded once.

Every staged document gets its quality signals (:class:`core.pipeline.SignalSink`), so every pool
worker runs the compiled signals kernels. Loaded in each worker, they cost ~0.7 CPU-s there (numba's
import, its CPU target, the kernels' machine code from numba's cache) and more at its exit, per
worker of every run: 2.5 CPU-s of a 2-worker Wikipedia run, +25% of a 5 MB one. Importing this
module computes the signals of one short text, so all of that happens in the fork server, once,
and every worker forked from it starts with the code loaded (copy-on-write pages). Where numba's
cache is empty (a fresh checkout) the server compiles the kernels once instead of each worker
compiling them. Fork-safe: the kernels are not ``parallel``, so numba starts no thread to copy
or lose, and :mod:`core.compiled` unhides the integrations it hid before this import returns.

Nothing else imports it: a flow's ``--help`` and the flow process itself do not load numba. A
failure here is left for the workers to meet and report (with the document batch that failed),
not raised in the fork server, where it would break the pool for every stage.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

#: A text reaching the splitter's affix, contraction, URL and infix paths and the line rules.
WARM_TEXT = "The U.S. economy (e.g. 5km, $20) can't stop: see https://example.org/a.\n\n- one...\n- one...\nEnd."


def warm() -> int:
    """Compute the signals of :data:`WARM_TEXT`; the rows computed (1), or 0 where that failed."""
    try:
        from core.filters.signals import signals_table

        return signals_table(["warm"], [WARM_TEXT]).num_rows
    except Exception:  # the workers compute signals again and report the fault there, with its batch
        log.warning("signals kernels not preloaded in the fork server; each worker loads them", exc_info=True)
        return 0


warm()
