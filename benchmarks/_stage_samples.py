"""Stage sample inputs in this fresh process; exit naming the first reader whose staging imported pandas.

    python benchmarks/_stage_samples.py '{"c4": ["c4-train.00000-of-01024.json.gz"]}' OUT [--pandas-first]

The inputs are a JSON mapping of source name to its sample files (written by another process:
the sample writers themselves use ``pa.table``). Each input is staged as a worker stages it
(:func:`core.pipeline.stage_input`: read, clean, write the staging shards and hashes); an input
that fails, or a source that keeps no document, is an error too, so the check cannot pass by
staging nothing. ``--pandas-first``: import pandas up front the way pyarrow did (``pa.array``
once) and check nothing: the peer in ``benchmarks/worker_pandas.py``. Used by
``tests/sources/test_no_pandas.py``.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any

# Run as a script, this folder is sys.path[0]: import from the repository root instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


class _FirstPandas:
    """Notes where pandas is first imported from (the stack without the libraries' lines)."""

    where = ""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" and not self.where:
            self.where = "".join(line for line in traceback.format_stack()[:-1] if "site-packages" not in line)


def main() -> None:
    watch = _FirstPandas()
    sys.meta_path.insert(0, watch)  # type: ignore[arg-type]
    from core.config import deep_merge, stage_yaml
    from core.document import InputSpec
    from core.pipeline import RunContext, stage_input
    from flows.registry import SOURCES
    from sources.c4 import C4Recipe

    inputs, out, pandas_first = json.loads(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:] == ["--pandas-first"]
    if pandas_first:
        import pyarrow as pa

        pa.array(["x"])
    for name, files in inputs.items():
        spec = SOURCES[name]
        section = spec.sample_config(files)
        config = spec.config.model_validate(deep_merge(stage_yaml(spec.default_yaml), {**section, "out": str(out)}))
        recipe = C4Recipe() if name == "c4" else config.recipe()  # type: ignore[attr-defined]  # released C4's
        ctx = RunContext(out, recipe.name, config.config_hash(), config.shards.limits(), recipe.name)
        kept = 0
        for location in spec.locations(section):
            record = stage_input(recipe, InputSpec(location, Path(location), Path(location).name), ctx)
            if record.status != "done":
                sys.exit(f"{name}: {location} {record.status}: {record.error}")
            if not pandas_first and "pandas" in sys.modules:
                sys.exit(f"{name} imported pandas staging {location}:\n{watch.where}")
            kept += record.docs_kept
        if not kept:
            sys.exit(f"{name}: its sample staged no document")


if __name__ == "__main__":
    main()
