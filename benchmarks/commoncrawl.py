"""WARC -> extract -> language ID -> C4 filters: kinda-llama vs datatrove, side by side, one core each.

    python benchmarks/commoncrawl.py                         # real CC/ClueWeb/wget WARCs from ../shared/realdata
    python benchmarks/commoncrawl.py --warc a.warc.gz --warc b.warc.gz --repeat 1
    python benchmarks/commoncrawl.py --legs ours,ours-resiliparse   # without datatrove installed
    python benchmarks/commoncrawl.py --flow before=../cc_before,after=. --kind wet --size-mb 100 --work /tmp/cc
    PYTHONPATH=<cc_net repo>:<func_argparse, bs4> python benchmarks/commoncrawl.py --leg ccnet-wet --folder DIR

``--flow``: the whole flow as users run it (``python -m flows.commoncrawl``, default runner, 2
workers) from each named checkout, interleaved, on generated WARC or WET files
(``benchmarks/corpus_inputs/commoncrawl.py``): CPU-s per GB of the flow and all its processes, and
whether the kept ids are the same. ``ccnet-wet``: cc_net's per-line pipeline on WET (see
:func:`leg_ccnet`), the peer for WET as datatrove is for WARC.

Legs, two of each kind so that settings and code are told apart:

- ``ours``: the product's defaults (language pre-filter, trafilatura ``fast``);
  ``datatrove``: datatrove's defaults (``favour_precision``, its dedup, no pre-filter).
- like for like: ``ours-nopre`` (no pre-filter) against ``datatrove-like`` (its Trafilatura step
  given our settings: ``fast=True, favour_precision=False, deduplicate=False``): the same work,
  so the ratio measures code, not settings.
- ``ours-resiliparse``: ``ours-nopre`` with ``extract.engine: resiliparse``; the report gives its
  speed and how much of trafilatura's kept text it keeps (word overlap on pages both keep).

Each leg runs in its own fresh process (so peak RSS is its own), single-threaded, over the same
files: ours = :class:`sources.formats.warc.WarcReader` (language pre-filter before extraction, trafilatura
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
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REALDATA = REPO.parent / "shared" / "realdata" / "warc"
DEFAULT_WARCS = ["resiliparse_CC-MAIN-2020-34_sample.warc.gz", "resiliparse_clueweb-quirk.warc.gz",
                 "dolma_sample-0000.warc.gz", "dolma_sample-0001.warc.gz", "whirlwind.warc.gz"]


def _usage() -> dict[str, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"cpu_s": own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime,
            "peak_rss_mb": max(own.ru_maxrss, kids.ru_maxrss) / 1024}


def _reap_shared_helpers() -> None:
    """End core.bounded's shared helper processes (the extractor's) so their CPU time is counted.

    ``RUSAGE_CHILDREN`` only counts children that were waited for, and a shared helper stays
    alive for the thread's next reader; without this, extraction would not be measured at all.
    """
    from core.helper_process import close_thread_helpers

    close_thread_helpers()


def leg_ours(folder: Path, use_prefilter: bool = True, engine: str = "trafilatura") -> dict:
    sys.path.insert(0, str(REPO))
    from core.document import Document
    from core.filters.c4_rules import C4CleanPage
    from core.filters.ccnet import TidyLines
    from core.filters.langid import LanguageID, LanguagePrefilter
    from core.steps import StepStats, run_steps
    from sources.formats.html_text import ExtractOptions
    from sources.formats.warc import WarcReader, WarcRecords

    files = sorted(folder.glob("*.warc.gz"))
    responses = sum(1 for f in files for _ in WarcRecords(f))
    start, usage0 = time.perf_counter(), _usage()
    kept: list[str] = []
    texts: dict[str, str] = {}
    stats = StepStats()
    prefilter = LanguagePrefilter(["en"], 0.9) if use_prefilter else None
    steps = [TidyLines(), LanguageID(["en"], 0.5), C4CleanPage()]
    for path in files:
        reader = WarcReader(path, str(path), "commoncrawl", path.name, prefilter=prefilter,
                            extract=ExtractOptions(engine=engine))
        for doc in run_steps(reader, steps, stats):
            if isinstance(doc, Document):
                kept.append(doc.meta["url"])
                texts[doc.meta["url"]] = doc.text
    _reap_shared_helpers()
    usage1 = _usage()
    return {"records": responses, "wall_s": time.perf_counter() - start, "cpu_s": usage1["cpu_s"] - usage0["cpu_s"],
            "peak_rss_mb": usage1["peak_rss_mb"], "kept": kept, "texts": texts,
            "bytes": sum(f.stat().st_size for f in files)}


def leg_datatrove(folder: Path, like_ours: bool = False) -> dict:
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
    extractor = Trafilatura(fast=True, favour_precision=False, deduplicate=False) if like_ours else Trafilatura()
    for step in (extractor, LanguageFilter(languages=["en"], language_threshold=0.5), C4QualityFilter()):
        data = step.run(data)
    kept = [doc.metadata.get("url") for doc in data]
    usage1 = _usage()
    return {"records": records, "wall_s": time.perf_counter() - start, "cpu_s": usage1["cpu_s"] - usage0["cpu_s"],
            "peak_rss_mb": usage1["peak_rss_mb"], "kept": kept,
            "bytes": sum(f.stat().st_size for f in folder.glob("*.warc.gz"))}


#: The WET header lines in the order cc_net's parser reads by position (Common Crawl's before 2018).
CCNET_HEADERS = ("WARC-Type", "WARC-Target-URI", "WARC-Date", "WARC-Record-ID", "WARC-Refers-To",
                 "WARC-Block-Digest", "Content-Type", "Content-Length")


def ccnet_header_order(lines):  # type: ignore[no-untyped-def]
    """Each record's header lines put in :data:`CCNET_HEADERS` order, others left out.

    cc_net's ``parse_doc`` takes the URL, date, digest and length by line number, as Common Crawl
    wrote them in 2019; later WET files add ``WARC-Identified-Content-Language`` before
    ``Content-Type`` (and writers order headers freely), which makes it drop every document.
    """
    header: dict[str, str] | None = None
    for line in lines:
        if line.strip() == "WARC/1.0":
            header = {}
            yield line
        elif header is not None:
            if line.strip():
                name = line.split(":", 1)[0]
                if name in CCNET_HEADERS:
                    header[name] = line
                continue
            yield from (header[name] for name in CCNET_HEADERS if name in header)
            header = None
            yield line
        else:
            yield line


def leg_ccnet(folder: Path) -> dict:
    """cc_net's per-line pipeline on WET files, in one process: its WET parser, its single-pass line
    dedup (``DuplicatesRemover(collect=True)``: a line seen earlier is removed, as ours), its fastText
    language ID (``split_by_lang.Classifier``, the same lid.176.ftz), English >= 0.5 and 300 chars kept.

    cc_net is not installable from PyPI (its metadata names kenlm by a git URL, which pip refuses):
    put the repository's ``cc_net`` folder and ``func_argparse`` + ``beautifulsoup4`` on ``PYTHONPATH``.
    """
    sys.path.insert(0, str(REPO))
    from cc_net import dedup, jsonql, process_wet_file, split_by_lang

    from core.filters.langid import bundled_lid_model

    files = sorted(folder.glob("*.wet.gz"))
    start, usage0 = time.perf_counter(), _usage()
    docs = (doc for path in files
            for doc in process_wet_file.parse_warc_file(ccnet_header_order(jsonql.open_read(path)), min_len=1))
    deduped = dedup.DuplicatesRemover("raw_content", [], collect=True).map(docs)
    classifier = split_by_lang.Classifier(Path(str(bundled_lid_model())), "raw_content", "language", top=1,
                                          rounding=4)
    kept = [doc["url"] for doc in classifier.map(deduped) if doc is not None
            and doc.get("language") == "en" and doc.get("language_score", 0) >= 0.5 and doc["length"] >= 300]
    usage1 = _usage()
    return {"records": sum(1 for path in files
                           for _ in process_wet_file.parse_warc_file(ccnet_header_order(jsonql.open_read(path)))),
            "wall_s": time.perf_counter() - start, "cpu_s": usage1["cpu_s"] - usage0["cpu_s"],
            "peak_rss_mb": usage1["peak_rss_mb"], "kept": kept, "bytes": sum(f.stat().st_size for f in files)}


def leg_breakdown(folder: Path) -> dict:
    """Where our time goes: each stage run alone over the whole set, in this process, CPU seconds.

    WARC parsing, charset decoding, the language pre-filter (visible text + fastText), extraction
    (trafilatura ``fast``, called directly: no helper process), then the steps one after the other
    on materialized lists: TidyLines, LanguageID (fastText on the extracted text), C4 rules.
    """
    sys.path.insert(0, str(REPO))
    import trafilatura  # noqa: F401  (import before the clocks)

    from core.document import Document, make_doc_id
    from core.filters.c4_rules import C4CleanPage
    from core.filters.ccnet import TidyLines
    from core.filters.langid import LanguageID, LanguagePrefilter
    from sources.formats.html_text import ExtractOptions, decode_html, extract_text
    from sources.formats.warc import WarcPage, WarcRecords, visible_text

    files = sorted(folder.glob("*.warc.gz"))
    prefilter, options = LanguagePrefilter(["en"], 0.9), ExtractOptions()
    prefilter("warm up the model")
    seconds: dict[str, float] = {}

    def timed(name: str, func):  # type: ignore[no-untyped-def]
        started = time.process_time()
        result = func()
        seconds[name] = time.process_time() - started
        return result

    pages = timed("warc", lambda: [p for f in files for p in WarcRecords(f) if isinstance(p, WarcPage)])
    decoded = timed("decode", lambda: [(p, decode_html(p.body, p.content_type)) for p in pages if p.kind == "html"])
    passed = timed("prefilter_lid", lambda: [(p, d) for p, d in decoded if not prefilter(visible_text(d.text))])
    texts = timed("extract", lambda: [(p, extract_text(d.text, options).strip()) for p, d in passed])
    docs = [Document(id=make_doc_id("commoncrawl", p.record_id), text=t, source="commoncrawl", meta={"url": p.url})
            for p, t in texts if t]
    for name, step in (("tidy", TidyLines()), ("lid", LanguageID(["en"], 0.5)), ("c4_rules", C4CleanPage())):
        docs = timed(name, lambda step=step, docs=docs: [d for d in step.run(docs) if isinstance(d, Document)])
    return {"records": len(pages), "seconds": seconds, "kept": [d.meta["url"] for d in docs],
            "bytes": sum(f.stat().st_size for f in files)}


def flow_run(tree: Path, inputs: Path, out: Path) -> dict:
    """``python -m flows.commoncrawl`` as users run it (default runner, 2 workers) from checkout ``tree``.

    CPU is the run's and every process under it (the Prefect server, the worker pool, the
    extraction helpers: ``os.wait4`` gives the rusage of the child and its reaped descendants).
    The kept documents are the ids in the shards the run wrote.
    """
    import os

    import pyarrow.parquet as pq

    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "flows.commoncrawl", "--inputs", str(inputs / "*.gz"), "--out", str(out),
               "--workers", "2"]
    started = time.perf_counter()
    with open(out.with_suffix(".log"), "w") as log:
        child = subprocess.Popen(command, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, stdout=log,
                                 stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise RuntimeError(f"{tree}: flows.commoncrawl failed, see {out.with_suffix('.log')}")
    ids = sorted(i for part in sorted((out / "docs").rglob("*.parquet"))
                 for i in pq.read_table(part, columns=["id"]).column("id").to_pylist())
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": time.perf_counter() - started,
            "peak_rss_mb": usage.ru_maxrss / 1024, "kept": ids}


def flow_benchmark(trees: dict[str, Path], kind: str, size_mb: float, rounds: int, work: Path) -> int:
    """Interleaved rounds of the Common Crawl flow from each checkout on generated WET or WARC files."""
    sys.path.insert(0, str(REPO))
    from benchmarks.corpus_inputs.commoncrawl import write_commoncrawl

    inputs = work / f"{kind}-{size_mb:g}mb"
    if not inputs.exists():
        write_commoncrawl(inputs, int(size_mb * 1e6), kind, seed=0, file_bytes=25_000_000)
    size = sum(p.stat().st_size for p in inputs.glob("*.gz"))
    found: dict[str, list[dict]] = {name: [] for name in trees}
    for number in range(rounds):
        for name, tree in trees.items():
            found[name].append(flow_run(tree, inputs, work / f"out-{name}-{number}"))
            print(f"round {number + 1} {name}: {found[name][-1]['cpu_s']:.1f} CPU-s", file=sys.stderr)
    print(f"input: {size / 1e6:.0f} MB of generated {kind.upper()} (benchmarks/corpus_inputs/commoncrawl.py, seed 0), "
          f"{rounds} interleaved rounds, CPU of the flow process and its children, min/median/max")
    for name, runs in found.items():
        cpus = [r["cpu_s"] for r in runs]
        print(f"{name:<10} kept {len(runs[0]['kept']):>7}  CPU-s per GB {_mmm([c / size * 1e9 for c in cpus], '{:.0f}')}"
              f"  wall {_mmm([r['wall_s'] for r in runs], '{:.0f}')} s  peak RSS {max(r['peak_rss_mb'] for r in runs):.0f} MB")
    names = list(trees)
    for name in names[1:]:
        ratios = [a["cpu_s"] / b["cpu_s"] for a, b in zip(found[names[0]], found[name], strict=True)]
        same = found[names[0]][0]["kept"] == found[name][0]["kept"]
        print(f"{names[0]} / {name}: {_mmm(ratios)}x CPU; kept documents {'identical' if same else 'DIFFERENT'}")
        print("RESULT " + json.dumps({"metric": f"flow {kind} {names[0]} / {name}", "values": ratios}))
    return 0


def prepare(warcs: list[Path], repeat: int, folder: Path) -> None:
    for copy in range(repeat):
        for path in warcs:
            shutil.copyfile(path, folder / f"r{copy}-{path.name}")


def _spawn(leg: str, folder: Path) -> dict | None:
    # -P: keep this folder off sys.path so no sibling module can shadow a standard one
    out = subprocess.run([sys.executable, "-P", __file__, "--leg", leg, "--folder", str(folder)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        print(f"{leg}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


#: Each leg: a function of the WARC folder, run in its own process.
LEGS = {
    "ours": leg_ours,
    "ours-nopre": lambda folder: leg_ours(folder, use_prefilter=False),
    "ours-resiliparse": lambda folder: leg_ours(folder, use_prefilter=False, engine="resiliparse"),
    "datatrove": leg_datatrove,
    "datatrove-like": lambda folder: leg_datatrove(folder, like_ours=True),
    "ccnet-wet": leg_ccnet,
}
#: Ratios the report prints: (label, peer leg, our leg).
RATIOS = [("default settings, ours vs datatrove", "datatrove", "ours"),
          ("like for like, ours-nopre vs datatrove-like", "datatrove-like", "ours-nopre"),
          ("resiliparse vs trafilatura (ours-resiliparse vs ours-nopre)", "ours-nopre", "ours-resiliparse")]


def word_overlap(reference: dict[str, str], other: dict[str, str]) -> tuple[float, float, int]:
    """Word recall and precision of ``other``'s kept text against ``reference``'s, on pages both keep.

    Words are counted as a multiset (a repeated word must be repeated), summed over the pages.
    """
    from collections import Counter

    shared = sorted(set(reference) & set(other))
    common = ref_total = other_total = 0
    for url in shared:
        ref_words, other_words = Counter(reference[url].split()), Counter(other[url].split())
        common += sum((ref_words & other_words).values())
        ref_total += sum(ref_words.values())
        other_total += sum(other_words.values())
    return common / max(ref_total, 1), common / max(other_total, 1), len(shared)


def _mmm(values: list[float], fmt: str = "{:.2f}") -> str:
    return "/".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def _versions() -> str:
    names = ("trafilatura", "fasttext-numpy2-wheel", "warcio", "datatrove")
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warc", action="append", type=Path, help="WARC file (repeatable); default: realdata samples")
    parser.add_argument("--repeat", type=int, default=2, help="read the set this many times (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the legs (min/median/max)")
    parser.add_argument("--legs", default=",".join(LEGS),
                        help="comma-separated, of: " + ", ".join(LEGS) + " (see the module docstring)")
    parser.add_argument("--no-breakdown", action="store_true", help="skip the per-stage breakdown of ours")
    parser.add_argument("--flow", help="name=checkout,... : the Common Crawl flow from each checkout, interleaved, "
                        "on generated files (e.g. before=../cc_before,after=.)")
    parser.add_argument("--kind", choices=["wet", "warc"], default="wet", help="with --flow: generated file kind")
    parser.add_argument("--size-mb", type=float, default=100, help="with --flow: gzip MB to generate")
    parser.add_argument("--work", type=Path, help="with --flow: folder for inputs and outputs")
    parser.add_argument("--leg", choices=[*LEGS, "breakdown"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.flow:
        trees = {name: Path(path).resolve() for name, path in (part.split("=", 1) for part in args.flow.split(","))}
        work = args.work or Path(tempfile.mkdtemp(prefix="ccflow-"))
        return flow_benchmark(trees, args.kind, args.size_mb, args.rounds, work)
    if args.leg:  # child process: one leg, JSON on stdout
        result = {**LEGS, "breakdown": leg_breakdown}[args.leg](args.folder)
        print(json.dumps(result))
        return 0
    warcs = args.warc or [REALDATA / name for name in DEFAULT_WARCS]
    missing = [w for w in warcs if not w.exists()]
    if missing:
        parser.error(f"WARC files not found: {missing}")
    legs = args.legs.split(",")
    rounds: list[dict[str, dict]] = []
    with tempfile.TemporaryDirectory(prefix="ccbench-") as tmp:
        prepare(warcs, args.repeat, Path(tmp))
        for _ in range(args.rounds):
            found = {leg: _spawn(leg, Path(tmp)) for leg in legs}
            rounds.append({leg: r for leg, r in found.items() if r is not None})
        breakdown = None if args.no_breakdown else _spawn("breakdown", Path(tmp))
    legs = [leg for leg in legs if all(leg in r for r in rounds)]
    if not legs:
        return 1
    # one denominator for every leg: the response records in the files (datatrove's reader skips some)
    responses = max(r[leg]["records"] for r in rounds for leg in legs)
    size = rounds[0][legs[0]]["bytes"]
    print(f"input: {len(warcs)} WARC files x {args.repeat} = {size / 1e6:.1f} MB gzip, {responses} response "
          f"records; {_versions()}; {args.rounds} interleaved rounds, min/median/max; CPU = process + children\n")
    print(f"{'pipeline':<16} {'kept':>5} {'docs/s/core':>20} {'MB/s/core':>17} {'h per TB WARC':>17} "
          f"{'x datatrove':>17} {'peak RSS MB':>12}")
    for leg in legs:
        cpus = [r[leg]["cpu_s"] for r in rounds]
        ratio = (_mmm([r["datatrove"]["cpu_s"] / r[leg]["cpu_s"] for r in rounds])
                 if "datatrove" in legs else "-")
        print(f"{leg:<16} {len(rounds[0][leg]['kept']):>5} {_mmm([responses / c for c in cpus], '{:.1f}'):>20} "
              f"{_mmm([size / 1e6 / c for c in cpus]):>17} {_mmm([c / size * 1e12 / 3600 for c in cpus], '{:.0f}'):>17} "
              f"{ratio:>17} {max(r[leg]['peak_rss_mb'] for r in rounds):>12.0f}")
    print()
    for label, peer_leg, our_leg in RATIOS:
        if peer_leg in legs and our_leg in legs:
            ratios = [r[peer_leg]["cpu_s"] / r[our_leg]["cpu_s"] for r in rounds]
            print(f"{label}: {_mmm(ratios)}x (min/median/max CPU ratio, same round)")
            print("RESULT " + json.dumps({"metric": f"{our_leg} vs {peer_leg}", "values": ratios}))
    if "ours-resiliparse" in legs and "ours-nopre" in legs:
        base, fast = rounds[0]["ours-nopre"]["texts"], rounds[0]["ours-resiliparse"]["texts"]
        recall, precision, pages = word_overlap(base, fast)
        print(f"resiliparse keeps {len(fast)} pages, trafilatura {len(base)}, both {pages}; on those, resiliparse's "
              f"text holds {recall:.1%} of trafilatura's words, and {precision:.1%} of its words are trafilatura's")
    if "ours" in legs and "datatrove" in legs:
        ours, peer = set(rounds[0]["ours"]["kept"]), set(rounds[0]["datatrove"]["kept"])
        union = ours | peer
        print(f"\nkept-set overlap with datatrove: {len(ours & peer)} of {len(union)} URLs (Jaccard "
              f"{len(ours & peer) / max(len(union), 1):.2f}); only ours: {len(ours - peer)}, only datatrove: "
              f"{len(peer - ours)}")
    if "ours-nopre" in legs and "ours" in legs:
        nopre = set(rounds[0]["ours-nopre"]["kept"])
        same = nopre == set(rounds[0]["ours"]["kept"])
        print(f"without the language pre-filter the kept set is {'identical' if same else 'different'}")
    if breakdown is not None:
        total = sum(breakdown["seconds"].values())
        parts = ", ".join(f"{name} {sec:.2f} s ({sec / total:.0%})" for name, sec in breakdown["seconds"].items())
        print(f"\nwhere our time goes (each stage alone, in one process, CPU): {parts}; total {total:.2f} s "
              f"= {total / size * 1e12 / 3600:.0f} h per TB of WARC per core, without the extraction helper "
              f"process and the step plumbing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
