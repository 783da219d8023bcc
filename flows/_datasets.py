"""Config layering for dataset files: ``extends`` chains and deep merges.

A dataset file (``configs/g2.yaml``) names only what differs from the file it extends
(``g1.yaml``), and each stage section goes on top of the stage's own YAML. One merge rule
serves all of it, and ``--set``'s dotted keys use it too, so the same key means the same thing
in a file, on the command line and in a deployment's parameters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.config import CONFIG_DIR, load_yaml_file


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: mappings merge key by key, anything else (lists too) replaces.

    A dotted key (``latex.cut_appendix``) addresses a nested field, as ``--set`` does.
    """
    merged = dict(base)
    for key, value in top.items():
        if "." in key:
            head, rest = key.split(".", 1)
            value, key = {rest: value}, head
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_layered(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A dataset file with its ``extends`` chain resolved (``g3.yaml`` extends ``g1.yaml``)."""
    path = Path(path).resolve()
    if path in seen:
        raise ValueError(f"{path}: 'extends' loops back to itself")
    data = load_yaml_file(path) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    parent = data.pop("extends", None)
    if parent is None:
        return data
    return deep_merge(load_layered(resolve_config_path(parent, path.parent), (*seen, path)), data)


def resolve_config_path(name: str | Path, relative_to: Path | None = None) -> Path:
    """A config path as written: absolute, next to the file naming it, under cwd, or in ``configs/``."""
    candidate = Path(name)
    for base in ([relative_to] if relative_to else []) + [Path.cwd(), CONFIG_DIR]:
        if candidate.is_absolute() or (base / candidate).exists():
            return candidate if candidate.is_absolute() else base / candidate
    raise FileNotFoundError(f"config not found: {name}")


def stage_yaml(name: str) -> dict[str, Any]:
    """A stage's own YAML (``configs/<name>``), the bottom layer of its config in a dataset run."""
    data = load_yaml_file(CONFIG_DIR / name) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{CONFIG_DIR / name}: expected a mapping at the top level")
    return data
