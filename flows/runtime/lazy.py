"""``@flow`` and ``@task`` that import Prefect on first use, so ``python -m flows.<x> --help`` does not.

Importing Prefect costs ~2 CPU-s, which every ``--help`` and every command refused before its
run (a missing input, a bad ``--set``) used to pay. A flow module decorates with these instead of
Prefect's: when Prefect is already imported (a worker or ``prefect deploy`` loading an
entrypoint from prefect.yaml, a test that imported it), they *are* Prefect's decorators and the
module holds real ``Flow``/``Task`` objects. Otherwise the module holds a :class:`LazyPrefect`
that keeps the plain function (``.fn``, as Prefect's objects do) and builds the real object the
first time anything else is used (a call, ``submit``, ``with_options``, ``isinstance(x, Flow)``);
from then on every attribute is the real object's.

Type checkers see Prefect's own decorators (and types).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any


class LazyPrefect:
    """A Prefect flow or task, built from ``fn`` and its decorator options on first use."""

    def __init__(self, kind: str, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_options", options)
        object.__setattr__(self, "_real", None)
        object.__setattr__(self, "fn", fn)
        for name in ("__module__", "__name__", "__qualname__", "__doc__"):
            object.__setattr__(self, name, getattr(fn, name, None))

    def real(self) -> Any:
        """The Prefect object (imports Prefect the first time)."""
        if self._real is None:
            import prefect

            decorate = getattr(prefect, self._kind)
            object.__setattr__(self, "_real", decorate(**_resolved(self._options))(self.fn))
        return self._real

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return type(self.real())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.real()(*args, **kwargs)

    def __reduce__(self) -> tuple[Callable[[str, str], Any], tuple[str, str]]:
        """Pickled by name: a worker gets its own module's object."""
        return _module_attribute, (self.fn.__module__, self.fn.__qualname__)

    def __repr__(self) -> str:
        return f"<lazy Prefect {self._kind} {self.fn.__qualname__}>"


def _module_attribute(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


class LazyImport:
    """A module (``name`` None) or one of its attributes, imported on first use (call or attribute).

    For modules shared by every flow (``flows.runtime.source_flow``) whose imports (Prefect, DuckDB,
    pyarrow) only a run needs: ``pipeline = LazyImport("core.pipeline")`` keeps the call sites
    as they are. Not for classes used with ``isinstance``; type checkers see the real import.
    """

    def __init__(self, module: str, name: str | None = None) -> None:
        self._module, self._name = module, name
        self._target: Any = None

    def _load(self) -> Any:
        if self._target is None:
            module = importlib.import_module(self._module)
            self._target = module if self._name is None else getattr(module, self._name)
        return self._target

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._load(), name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._load()(*args, **kwargs)

    def __reduce__(self) -> tuple[type[LazyImport], tuple[str, str | None]]:
        return LazyImport, (self._module, self._name)


class Deferred:
    """A Prefect constant named before Prefect is imported (a decorator option such as ``NO_CACHE``)."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def resolve(self) -> Any:
        return _module_attribute(self.module, self.name)


def _resolved(options: dict[str, Any]) -> dict[str, Any]:
    return {key: value.resolve() if isinstance(value, Deferred) else value for key, value in options.items()}


def _lazy(kind: str) -> Callable[..., Any]:
    def decorator(__fn: Callable[..., Any] | None = None, **options: Any) -> Any:
        if "prefect" in sys.modules:  # already paid for: the real objects, nothing deferred
            import prefect

            real = getattr(prefect, kind)
            return real(__fn, **_resolved(options)) if __fn is not None else real(**_resolved(options))
        if __fn is not None:
            return LazyPrefect(kind, __fn, options)
        return lambda fn: LazyPrefect(kind, fn, options)

    return decorator


if TYPE_CHECKING:
    from prefect import flow as flow
    from prefect import task as task
    from prefect.cache_policies import NO_CACHE as NO_CACHE
else:
    flow = _lazy("flow")
    task = _lazy("task")
    NO_CACHE = Deferred("prefect.cache_policies", "NO_CACHE")
