"""``kinda deployments --check|--write``: ``prefect.yaml``'s source deployments, from the source specs.

``prefect.yaml`` is the one file Prefect reads, so it cannot import the registry; this command
keeps it in step instead. Every registered source whose spec names a deployment
(:attr:`core.registry.SourceSpec.deployment`) has exactly one, tagged ``source`` (and ``g2`` for
an extension), pointing at the flow that runs it (its own flow module's, or the generic
``flows/source.py:source_flow`` with the source's ``name``); no ``source`` deployment names a
source the registry lacks. ``--check`` prints one line per difference, naming the file and the
deployment (exit 1); ``--write`` adds the deployments that are missing, built from the spec (its
config class's docstring, its ``configs/g2.yaml`` section, the values of its default YAML that
differ from the config class's defaults: a deployment's parameters are validated by the config
class alone, without the YAML), and leaves every hand-written entry and comment as it is.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from core.registry import Registry, SourceSpec

#: Where generated deployments go: before the stages' block (the file's own section comment).
STAGES_MARKER = "  # -- the stages after the sources"
#: The generic flow a source without a flow module of its own is deployed with.
GENERIC_ENTRYPOINT = "flows/source.py:source_flow"


def entrypoint(spec: SourceSpec) -> str:
    """``path/to/module.py:function`` of the flow that runs ``spec``."""
    if spec.flow is None:
        return GENERIC_ENTRYPOINT
    return f"{spec.flow.fn.__module__.replace('.', '/')}.py:{spec.flow.fn.__name__}"


def deployment_problems(text: str, registry: Registry, file: str = "prefect.yaml") -> list[str]:
    """One line per way ``text`` (a ``prefect.yaml``) differs from the specs; empty when in step."""
    declared = {d["name"]: d for d in (yaml.safe_load(text) or {}).get("deployments") or []}
    problems = []
    wanted = {spec.deployment: spec for spec in registry.specs() if spec.deployment}
    for name, spec in wanted.items():
        deployment = declared.get(name)
        if deployment is None:
            problems.append(f"{file}: no deployment {name!r} for source {spec.name!r} (kinda deployments --write adds it)")
            continue
        if deployment.get("entrypoint") != entrypoint(spec):
            problems.append(f"{file}: deployment {name!r}: entrypoint {deployment.get('entrypoint')!r}, "
                            f"the spec's flow is {entrypoint(spec)!r}")
        tags = deployment.get("tags") or []
        if "source" not in tags or ("g2" in tags) != (spec.kind == "extension"):
            problems.append(f"{file}: deployment {name!r}: tags {tags} (a {spec.kind} source: 'source'"
                            f"{' and g2' if spec.kind == 'extension' else ', not g2'})")
        if spec.flow is None and (deployment.get("parameters") or {}).get("name") != spec.name:
            problems.append(f"{file}: deployment {name!r}: the generic flow needs parameter name: {spec.name}")
    for name, deployment in declared.items():
        if "source" in (deployment.get("tags") or []) and name not in wanted:
            problems.append(f"{file}: deployment {name!r} is tagged source but no registered source deploys it")
    return problems


def _yaml_values(spec: SourceSpec, config_dir: Path) -> dict[str, Any]:
    """The spec's default YAML's values that differ from its config class's defaults."""
    from core.config import load_layered

    path = Path(spec.default_yaml) if Path(spec.default_yaml).is_absolute() else config_dir / spec.default_yaml
    loaded = load_layered(path) if path.is_file() else {}
    defaults = spec.config.model_validate({}).model_dump(mode="json")
    merged = spec.config.model_validate(loaded).model_dump(mode="json")
    return {key: merged[key] for key in loaded if key in merged and merged[key] != defaults.get(key)}


def _inline(value: Any) -> str:
    """``value`` as one line of YAML (flow style; a plain scalar without the ``...`` document end)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    return text.removesuffix("...").strip()


def deployment_entry(spec: SourceSpec, config_dir: Path) -> str:
    """The YAML text of ``spec``'s deployment, indented as ``prefect.yaml``'s list items."""
    datasets = [yaml.safe_load((config_dir / name).read_text(encoding="utf-8")) or {} for name in ("g1.yaml", "g2.yaml")]
    section: dict[str, Any] = next((d["sources"][spec.name] for d in datasets if (d.get("sources") or {}).get(spec.name)), {})
    config = {**_yaml_values(spec, config_dir), **section, "out": "data"}
    parameters: dict[str, Any] = {"config": config} if spec.flow is not None else {"name": spec.name, "config": config}
    summary = ((spec.config.__doc__ or spec.name).strip().splitlines() or [spec.name])[0]
    tags = "[kinda, source, g2]" if spec.kind == "extension" else "[kinda, source]"
    flow_params = "\n".join(f"      {key}: {_inline(value)}" for key, value in parameters.items())
    return (f"  - name: {spec.deployment}\n    entrypoint: {entrypoint(spec)}\n"
            f"    description: {_inline(summary)}\n"
            f"    tags: {tags}\n    parameters:\n{flow_params}\n    work_pool: *local_pool\n")


def with_missing(text: str, registry: Registry, config_dir: Path) -> str:
    """``text`` with a generated deployment for every deployed source it lacks (before the stages' block)."""
    declared = {d["name"] for d in (yaml.safe_load(text) or {}).get("deployments") or []}
    entries = "".join(deployment_entry(spec, config_dir) for spec in registry.specs()
                      if spec.deployment and spec.deployment not in declared)
    if not entries:
        return text
    head, marker, tail = text.partition(STAGES_MARKER)
    if not marker:
        return text.rstrip("\n") + "\n" + entries
    return head.rstrip("\n") + "\n" + entries + "\n" + marker + tail


def cmd_deployments(args: argparse.Namespace) -> int:
    """Check ``prefect.yaml`` against the specs, or add what it lacks (``--write``)."""
    from core.config import CONFIG_DIR
    from flows.registry import SOURCES

    path = Path(args.file)
    text = path.read_text(encoding="utf-8")
    if args.write:
        updated = with_missing(text, SOURCES, CONFIG_DIR)
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            print(f"{path}: deployments added for the sources it lacked")
        text = updated
    problems = deployment_problems(text, SOURCES, str(path))
    for line in problems:
        print(line)
    return 1 if problems else 0


def register(subparsers: Any) -> None:
    """Add ``kinda deployments`` (called by :func:`kinda.cli.build_parser`)."""
    parser = subparsers.add_parser("deployments", help="check prefect.yaml's source deployments against the specs")
    parser.add_argument("--file", default="prefect.yaml", help="the Prefect project file (default: prefect.yaml)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="print each difference, exit 1 if any (the default)")
    mode.add_argument("--write", action="store_true", help="add the deployments the file lacks, then check")
    parser.set_defaults(func=cmd_deployments)
