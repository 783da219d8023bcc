"""Compiling hot loops with numba: on-disk cache where a cache folder is usable, in memory where not.

numba compiles a kernel on its first call (seconds) and, with ``cache=True``, stores the machine
code beside the module (``__pycache__``) or, where that folder is read-only (an installed
package), in the per-user cache folder (``~/.cache/numba``; ``NUMBA_CACHE_DIR`` overrides both),
so later processes load it in a fraction of a second. It writes cache files under a temporary
name and renames them, so processes compiling at once (test workers, pool workers) do not corrupt
each other. Where it finds no usable folder at all it refuses ``cache=True`` with a RuntimeError
when the kernel is defined: :func:`jit` then compiles in memory (slower start, same results).
Saving to a folder that was usable when the kernel was defined can still fail (a full disk, the
folder removed): numba would raise that OSError from the first call, so :func:`jit` skips the
save instead (the next process compiles again).

Modules with kernels import this (and so numba, ~0.3 CPU-s) at their top; their users import
them on first use, so no command's ``--help`` pays for numba.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numba


def jit(func: Callable[..., Any]) -> Any:
    """``numba.njit(cache=True, nogil=True)``, or without the cache when numba finds no folder for it.

    ``nogil``: kernels hold no state, so threads may run them at once.
    """
    dispatcher: Any
    try:
        dispatcher = numba.njit(cache=True, nogil=True)(func)
    except RuntimeError:  # numba found no writable cache folder at all
        return numba.njit(nogil=True)(func)
    cache = dispatcher._cache
    save = cache.save_overload

    def save_or_skip(signature: Any, compiled: Any) -> None:
        with contextlib.suppress(OSError):  # the compiled code is in use already; only its copy on disk is lost
            save(signature, compiled)

    cache.save_overload = save_or_skip
    return dispatcher
