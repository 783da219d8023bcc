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

The first kernel of a process, even one loaded from the cache, makes numba load its CPU target
(its typing and lowering registries), and with them it probes two optional integrations by
importing them: scipy's BLAS (``scipy.linalg``, for ``np.dot`` and ``np.linalg``: ~0.2 CPU-s) and
cffi (C functions as kernel arguments: ~0.15 CPU-s, pycparser compiling its lexer's patterns).
No kernel of ours uses either, and a worker pays this once per process, per input file of a small
source, so :func:`_load_target` loads the target when this module is imported with both hidden:
numba then records them as absent for this process (a kernel using ``np.dot`` would fail to
compile with numba's "scipy 0.16+ is required for linear algebra"; :data:`UNUSED_INTEGRATIONS`
is the list to shorten if one ever does). Where a module of them is already imported, it is
not hidden (it costs nothing more).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from typing import Any

import numba

#: Modules numba imports to probe an integration no kernel here uses (see the module's docstring).
UNUSED_INTEGRATIONS = ("scipy.linalg", "cffi")


class _HiddenFromOneThread:
    """A meta-path finder that refuses ``names`` to one thread only: the thread loading numba's
    target sees them as absent while any other thread (a task importing datasketch, which imports
    scipy, in the thread runner) imports them as usual. A ``None`` entry in ``sys.modules`` would
    hide them from every thread at once, and such an import would fail there."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names, self.thread = names, threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name in self.names and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"{name} hidden while numba loads its target", name=name)
        return None


def _load_target() -> None:
    """Load numba's CPU target now with the :data:`UNUSED_INTEGRATIONS` hidden from this thread
    (where not imported already), then unhide them."""
    hider = _HiddenFromOneThread(tuple(n for n in UNUSED_INTEGRATIONS if n not in sys.modules))
    sys.meta_path.insert(0, hider)
    try:
        from numba.core.registry import cpu_target
        from numba.core.typing import cffi_utils  # noqa: F401  probes cffi once, on its first import

        cpu_target.target_context.refresh()
    finally:
        sys.meta_path.remove(hider)


_load_target()


def jit(func: Callable[..., Any]) -> Any:
    """``numba.njit(cache=True, nogil=True)``, or without the cache when numba finds no folder for it.

    ``nogil``: kernels hold no state, so threads may run them at once.
    """
    return _compiled(func, nogil=True)


def leaf_jit(func: Callable[..., Any]) -> Any:
    """:func:`jit` for a helper that creates no array: compiled without numba's reference counting.

    A kernel's call to a helper taking two or more arrays otherwise cost ~20 ns (measured: a loop
    calling a two-array helper, 20 ns a call; the same with one array or compiled so, 0.5 ns):
    numba updates the arrays' reference counts around the call (atomic operations its pruning
    leaves in place), as much as the whole work of a helper called per word or per character (the
    word splitter's affix and infix helpers: half of its time). Such a helper cannot create an
    array (numba refuses to compile one that does: "Only accept returning of array passed into
    the function as argument").
    """
    return _compiled(func, nogil=True, _nrt=False)


def _compiled(func: Callable[..., Any], **options: Any) -> Any:
    """``numba.njit(cache=True, **options)``, in memory where numba finds no cache folder, saving what it can."""
    dispatcher: Any
    try:
        dispatcher = numba.njit(cache=True, **options)(func)
    except RuntimeError:  # numba found no writable cache folder at all
        return numba.njit(**options)(func)
    cache = dispatcher._cache
    save = cache.save_overload

    def save_or_skip(signature: Any, compiled: Any) -> None:
        with contextlib.suppress(OSError):  # the compiled code is in use already; only its copy on disk is lost
            save(signature, compiled)

    cache.save_overload = save_or_skip
    return dispatcher
