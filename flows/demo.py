"""The main job on built-in defaults: generate sample dumps, run the Wikipedia flow, summarize.

    python -m flows.demo            # offline: embedded Prefect, DuckDB manifest under data/

It needs no network and no server: sample dumps in the real MediaWiki format (English schema
0.11, German schema 0.10) are generated under ``<out>/sample/``, then processed exactly as a
real dump would be.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.source_flow import print_summary
from flows.wikipedia import WikipediaConfig, wikipedia_flow
from sources.samples.wikipedia import write_sample_dumps


def sample_dumps(args: argparse.Namespace) -> dict[str, Any]:
    """Generate the sample corpus under ``<out>/sample`` and read it (``--pages`` per dump)."""
    out = Path(args.out or "data")
    dumps = write_sample_dumps(out / "sample", pages=args.flag_pages or 300)
    print("sample dumps:", *[str(d) for d in dumps], sep="\n  ")
    return {"out": str(out), "dumps": [str(d) for d in dumps]}


cli = FlowCLI(wikipedia_flow, WikipediaConfig, "wikipedia.yaml", __doc__, report=print_summary, prepare=sample_dumps,
              flags=[Flag("--pages", "", "pages per sample dump (default: 300)", type=int)])
main = cli.main

if __name__ == "__main__":
    sys.exit(main())
