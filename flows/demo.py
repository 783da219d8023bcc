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

from flows._source_flow import cli_main
from flows.wikipedia import DEFAULT_CONFIG, WikipediaConfig, run
from sources.wikipedia_sample import write_sample_dumps


def main(argv: list[str] | None = None) -> int:
    """Generate the sample corpus and process it."""
    parser = argparse.ArgumentParser(prog="python -m flows.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("data"), help="output root (default: %(default)s)")
    parser.add_argument("--pages", type=int, default=300, help="pages per sample dump (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=0, help="parallel tasks (default: one per core)")
    args = parser.parse_args(argv)
    dumps = write_sample_dumps(args.out / "sample", pages=args.pages)
    print("sample dumps:", *[str(d) for d in dumps], sep="\n  ")
    config = WikipediaConfig.from_yaml(
        DEFAULT_CONFIG, {"out": str(args.out), "dumps": [str(d) for d in dumps], "workers": args.workers}
    )
    return cli_main(lambda: run(config))


if __name__ == "__main__":
    sys.exit(main())
