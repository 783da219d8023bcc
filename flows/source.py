"""The generic source flow: a source declared by a :class:`core.registry.SourceSpec` alone.

    python -m flows.source NAME --inputs 'raw/NAME/*.jsonl' --out data/
    python -m flows.source NAME --help      # NAME's config and flags
    python -m flows.source --help           # this text and the known sources

A source without a flow module of its own (``SourceSpec.run`` is None) runs here: its config
class (a :class:`core.registry.SourceConfig`) gives the recipe and the input fields, and
:func:`flows.runtime.source_flow.run_source` does the rest (stage, exact dedup, finalize, manifest), as
for every other source. The parent flow (:mod:`flows.llama`) runs such a source through
:func:`source_runner`: a new source is its ``sources/<name>.py`` (recipe, config, spec), its YAML and
its entry in the registry, with no module under ``flows/`` (docs/adding-a-source.md).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from core.registry import Registry, SourceSpec
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import LazyImport, flow

if TYPE_CHECKING:
    from flows.runtime.runner import make_task_runner
    from flows.runtime.source_flow import SourceRunSummary, print_summary, run_source
else:  # a run needs them (Prefect, pyarrow), --help does not
    make_task_runner = LazyImport("flows.runtime.runner", "make_task_runner")
    print_summary = LazyImport("flows.runtime.source_flow", "print_summary")
    run_source = LazyImport("flows.runtime.source_flow", "run_source")


@flow(name="source", log_prints=True, validate_parameters=False)
def source_flow(name: str, config: Any) -> SourceRunSummary:
    """Run source ``name`` (a registered spec without a flow of its own) over its config's inputs.

    Parameters are not validated by Prefect: ``config`` is the source's own config class, which
    Prefect would otherwise coerce into the annotation's. A deployment passes a mapping (the
    ``parameters`` of ``prefect.yaml``): it is validated here, by the source's config class.
    """
    spec = registry()[name]
    if isinstance(config, dict):
        config = spec.config.model_validate(config)
    locations = spec.locations(config.model_dump(mode="json"))
    if not locations:
        raise ValueError(f"no input: give {' or '.join('--' + f.replace('_', '-') for f in spec.input_fields)}")
    return run_source(name, config, config.recipe(), locations)


def registry() -> Registry:
    """Every registered source (imported when a run or a CLI needs it: it imports every source's module)."""
    from flows.registry import SOURCES

    return SOURCES


def run_generic(spec: SourceSpec, config: Any) -> SourceRunSummary:
    """The generic flow, named after the source, on the task runner the config asks for."""
    runner = make_task_runner(config)
    return source_flow.with_options(name=spec.name, task_runner=runner)(spec.name, config)


def source_runner(spec: SourceSpec) -> Callable[[Any], Any]:
    """How the parent flow runs ``spec``: its own flow module's ``run``, or the generic flow."""
    return spec.run if spec.run is not None else functools.partial(run_generic, spec)


def source_cli(spec: SourceSpec) -> FlowCLI[Any]:
    """``python -m flows.source NAME``: the spec's config, its YAML, and a flag per input field."""
    flags = [Flag("--" + field.replace("_", "-"), field, f"{field}: path, glob or URL (repeatable)", many=True)
             for field in spec.input_fields]
    return FlowCLI(source_flow, spec.config, spec.default_yaml, f"{spec.name}: " + (__doc__ or ""),
                   report=print_summary, flags=flags, runner=source_runner(spec))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m flows.source NAME [flags]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    sources = registry()
    generic = [name for name in sources if sources[name].run is None]
    if not args or args[0].startswith("-"):
        print("usage: python -m flows.source NAME [--help] [flags]\n" + (__doc__ or ""))
        print("sources with their own module: " + ", ".join(f"python -m flows.{n}" for n in sources
                                                          if sources[n].run is not None))
        print("sources run here: " + (", ".join(generic) or "(none registered)"))
        return 0 if args and args[0] in ("-h", "--help") else 2
    name, rest = args[0], args[1:]
    if name not in sources:
        print(f"python -m flows.source: error: unknown source {name!r}; known: {', '.join(sorted(sources))}",
              file=sys.stderr)
        return 2
    if sources[name].run is not None:
        print(f"python -m flows.source: error: {name} has its own flow: python -m flows.{name}", file=sys.stderr)
        return 2
    return source_cli(sources[name]).main(rest)


if __name__ == "__main__":
    sys.exit(main())
