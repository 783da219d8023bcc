"""Every package the product imports is declared in pyproject.toml (issue 25 item 1).

``pip install .`` installs what ``[project] dependencies`` names and what those name in turn,
nothing else. trafilatura imports ``lxml.html.clean``, a separate package (``lxml_html_clean``)
since lxml 5.2 that no requirement pulled: the dev venv had it by chance, a fresh install did not,
and every Common Crawl page became ``extract_error``. This test imports every product module and
trafilatura's extractor in a fresh interpreter, maps each loaded module to the distribution that
installed it, and checks each one is reachable from the declared requirements (dependencies plus
extras, followed through every distribution's own requirements): a module that only an
undeclared package provides fails here, in the dev venv, without a fresh install. (In the dev venv
justext happens to require ``lxml[html_clean]``; a fresh venv still went without it, so that one
package must be declared directly.)
"""

from __future__ import annotations

import importlib.metadata as md
import json
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.time_limits import timeout_for

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("core", "dedupe", "sources", "loader", "tasks", "flows", "kinda")
#: Extras whose packages a user installs on purpose (engines, charts, torch); the rest is the base.
EXTRAS = ("torch", "dask", "ray", "slurm", "report", "perplexity")

_LOADED = """
import importlib, json, pkgutil, sys
for top in {product!r}:
    for info in pkgutil.walk_packages(importlib.import_module(top).__path__, top + "."):
        if not info.name.rsplit(".", 1)[-1].startswith("__"):
            try:
                importlib.import_module(info.name)
            except ImportError as exc:  # an optional extra that is not installed here
                print("optional:", info.name, exc, file=sys.stderr)
import trafilatura, trafilatura.core  # pulls lxml.html.clean, the package that went missing
print(json.dumps(sorted({{name.split(".")[0] for name in sys.modules}})))
"""


def _closure(requirements: list[Requirement]) -> set[str]:
    """Distributions installed by ``requirements`` and, transitively, by theirs (with extras)."""
    seen: set[str] = set()
    todo = [(r, "") for r in requirements]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        key = f"{name}[{','.join(sorted(req.extras))}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            nested = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for text in nested:
            sub = Requirement(text)
            for wanted in ["", *sorted(req.extras)]:
                todo.append((sub, wanted))
    return {key.split("[")[0] for key in seen}


@timeout_for(600)  # its subprocess's limit (tests/time_limits.py)
def test_every_imported_package_is_declared() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = [Requirement(r) for r in project["dependencies"]]
    declared += [Requirement(r) for extra in EXTRAS for r in project["optional-dependencies"][extra]]
    reachable = _closure(declared)

    done = subprocess.run([sys.executable, "-c", _LOADED.format(product=PRODUCT)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    providers = md.packages_distributions()
    own = set(PRODUCT) | {"configs"}
    missing = {}
    for module in loaded:
        if module in own or module in sys.stdlib_module_names:
            continue
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if dists and not dists & reachable:
            missing[module] = sorted(dists)
    assert not missing, f"imported but not declared in pyproject.toml (nor required by what is): {missing}"
    # trafilatura imports lxml.html.clean without requiring it (justext asks for lxml[html_clean], an
    # extra the default pip of a fresh venv, 23.2.1, does not resolve): declared here by name
    assert "lxml-html-clean" in {canonicalize_name(r.name) for r in declared}
