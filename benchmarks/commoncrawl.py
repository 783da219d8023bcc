"""WARC -> extract -> language ID -> C4 filters: kinda-llama vs datatrove, side by side, one core each.

    python benchmarks/commoncrawl.py                         # real CC/ClueWeb/wget WARCs from ../shared/realdata
    python benchmarks/commoncrawl.py --warc a.warc.gz --warc b.warc.gz --repeat 1
    python benchmarks/commoncrawl.py --legs ours             # without datatrove installed

Each leg runs in its own fresh process (so peak RSS is its own), single-threaded, over the same
files: ours = :class:`sources.warc.WarcReader` (language pre-filter before extraction, trafilatura
``fast``), tidy lines, fastText lid.176 (en >= 0.5), C4 rules; datatrove 0.10.1 = ``WarcReader``,
``Trafilatura`` (its defaults: favour_precision, sandbox process), ``LanguageFilter`` (en >= 0.5,
the same lid.176.ftz), ``C4QualityFilter``. Documents/s per core = WARC response records read
divided by CPU seconds (process + children: datatrove extracts in a child process). The closing
note compares the kept sets by URL. Peers: ``benchmarks/requirements.txt`` (a separate venv,
since datatrove needs ``xxhash<4``); run with that venv's python and ``PYTHONPATH=<repo>``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REALDATA = REPO.parent / "shared" / "realdata" / "warc"
DEFAULT_WARCS = ["resiliparse_CC-MAIN-2020-34_sample.warc.gz", "resiliparse_clueweb-quirk.warc.gz",
                 "dolma_sample-0000.warc.gz", "dolma_sample-0001.warc.gz", "whirlwind.warc.gz"]


def _usage() -> dict[str, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"cpu_s": own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime,
            "peak_rss_mb": max(own.ru_maxrss, kids.ru_maxrss) / 1024}


def leg_ours(folder: Path, use_prefilter: bool = True) -> dict:
    sys.path.insert(0, str(REPO))
    from core.document import Document
    from core.filters.c4_rules import C4CleanPage
    from core.filters.ccnet import TidyLines
    from core.filters.langid import LanguageID, LanguagePrefilter
    from core.steps import StepStats, run_steps
    from sources.warc import WarcReader, WarcRecords

    files = sorted(folder.glob("*.warc.gz"))
    responses = sum(1 for f in files for _ in WarcRecords(f))
    start, usage0 = time.perf_counter(), _usage()
    kept: list[str] = []
    stats = StepStats()
    prefilter = LanguagePrefilter(["en"], 0.9) if use_prefilter else None
    steps = [TidyLines(), LanguageID(["en"], 0.5), C4CleanPage()]
    for path in files:
        reader = WarcReader(path, str(path), "commoncrawl", path.name, prefilter=prefilter)
        kept += [d.meta["url"] for d in run_steps(reader, steps, stats) if isinstance(d, Document)]
    usage1 = _usage()
    return {"records": responses, "wall_s": time.perf_counter() - start, "cpu_s": usage1["cpu_s"] - usage0["cpu_s"],
            "peak_rss_mb": usage1["peak_rss_mb"], "kept": kept, "bytes": sum(f.stat().st_size for f in files)}


def leg_datatrove(folder: Path) -> dict:
    sys.path.insert(0, str(REPO))
    import datatrove.utils.lid as dt_lid
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import C4QualityFilter, LanguageFilter
    from datatrove.pipeline.readers import WarcReader

    from core.filters.langid import bundled_lid_model

    model = str(bundled_lid_model())
    dt_lid.cached_asset_path_or_download = lambda *a, **k: model  # same lid.176.ftz, no download
    start, usage0 = time.perf_counter(), _usage()
    records = 0

    def counted(data):
        nonlocal records
        for doc in data:
            records += 1
            yield doc

    data = counted(WarcReader(str(folder), glob_pattern="*.warc.gz").run(None))
    for step in (Trafilatura(), LanguageFilter(languages=["en"], language_threshold=0.5), C4QualityFilter()):
        data = step.run(data)
    kept = [doc.metadata.get("url") for doc in data]
    usage1 = _usage()
    return {"records": records, "wall_s": time.perf_counter() - start, "cpu_s": usage1["cpu_s"] - usage0["cpu_s"],
            "peak_rss_mb": usage1["peak_rss_mb"], "kept": kept,
            "bytes": sum(f.stat().st_size for f in folder.glob("*.warc.gz"))}


def prepare(warcs: list[Path], repeat: int, folder: Path) -> None:
    for copy in range(repeat):
        for path in warcs:
            shutil.copyfile(path, folder / f"r{copy}-{path.name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warc", action="append", type=Path, help="WARC file (repeatable); default: realdata samples")
    parser.add_argument("--repeat", type=int, default=2, help="read the set this many times (default 2)")
    parser.add_argument("--legs", default="ours,ours-nopre,datatrove",
                        help="comma-separated: ours, ours-nopre (no language pre-filter), datatrove")
    parser.add_argument("--leg", choices=["ours", "ours-nopre", "datatrove"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.leg:  # child process: one leg, JSON on stdout
        legs = {"ours": leg_ours, "ours-nopre": lambda f: leg_ours(f, False), "datatrove": leg_datatrove}
        result = legs[args.leg](args.folder)
        print(json.dumps(result))
        return 0
    warcs = args.warc or [REALDATA / name for name in DEFAULT_WARCS]
    missing = [w for w in warcs if not w.exists()]
    if missing:
        parser.error(f"WARC files not found: {missing}")
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="ccbench-") as tmp:
        prepare(warcs, args.repeat, Path(tmp))
        for leg in args.legs.split(","):
            # -P: keep this folder off sys.path so no sibling module can shadow a standard one
            out = subprocess.run([sys.executable, "-P", __file__, "--leg", leg, "--folder", tmp],
                                 capture_output=True, text=True, check=False)
            if out.returncode != 0:
                print(f"{leg}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
                continue
            results[leg] = json.loads(out.stdout.strip().splitlines()[-1])
    # one denominator for every leg: the response records in the files (datatrove's reader skips some)
    responses = max(r["records"] for r in results.values()) if results else 0
    print(f"{'pipeline':<10} {'records':>8} {'kept':>5} {'wall s':>7} {'cpu s':>7} {'docs/s/core':>12} "
          f"{'MB/s/core':>10} {'peak RSS MB':>12}")
    for leg, r in results.items():
        print(f"{leg:<10} {r['records']:>8} {len(r['kept']):>5} {r['wall_s']:>7.2f} {r['cpu_s']:>7.2f} "
              f"{responses / r['cpu_s']:>12.1f} {r['bytes'] / 1e6 / r['cpu_s']:>10.2f} {r['peak_rss_mb']:>12.0f}")
    if "ours" in results and "datatrove" in results:
        ours, peer = set(results["ours"]["kept"]), set(results["datatrove"]["kept"])
        speedup = results["datatrove"]["cpu_s"] / results["ours"]["cpu_s"]
        union = ours | peer
        print(f"\nspeed-up (docs/s per core): {speedup:.2f}x; kept-set overlap: {len(ours & peer)} of {len(union)} "
              f"URLs (Jaccard {len(ours & peer) / max(len(union), 1):.2f}); only ours: {len(ours - peer)}, "
              f"only datatrove: {len(peer - ours)}")
        if "ours-nopre" in results:
            nopre = set(results["ours-nopre"]["kept"])
            print(f"without the language pre-filter: {results['datatrove']['cpu_s'] / results['ours-nopre']['cpu_s']:.2f}x, "
                  f"kept set {'identical' if nopre == ours else f'differs by {len(nopre ^ ours)} URLs'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
