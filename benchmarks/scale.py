"""One giant dump from 100 MB to 2 GB: throughput and peak memory per size (issue 15, goal 7).

    nice -n 5 python benchmarks/scale.py                        # 100 MB, 500 MB, 2 GB of bz2; ~13 min on 2 cores
    nice -n 5 python benchmarks/scale.py --sizes 20,60 --split-bytes 8000000   # quick look

The input: one ukwiki ``-pages-articles-multistream.xml.bz2`` with its index per size, real
format, built from the real pages of ``../shared/realdata/mediawiki`` (the sample generator's
pages where the folder is absent). A base dump of the pages repeated ``--copies`` times under
new page ids is compressed once (100 pages per stream, as Wikimedia does); each size then tiles
the base's compressed page streams until the dump reaches its size, writing index lines with
the shifted offsets. Tiles repeat page ids and texts: past the first tile every page is an
exact duplicate, which costs the same reading, cleaning and hashing as a new page and is
dropped at exact dedup, so staging does all the work and the kept output stays small.

Each size runs the Wikipedia flow as users run it (``--runner dask``, a LocalCluster of
``--workers`` single-threaded processes, ``--split-bytes`` page-range tasks) into a fresh
output root under one embedded Prefect server. A sampler thread reads every process's RSS
every 0.2 s: the report gives the flow process's peak (it reads the index, plans the ranges,
joins them), each Dask worker's peak, and the whole tree's peak at one moment, next to
throughput (MB of bz2 per second of wall, and per worker CPU second).
"""

from __future__ import annotations

import argparse
import bz2
import itertools
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import scaling  # the sibling benchmark: real pages, CPU per process tree, cluster start

import flows  # noqa: F401  (offline Prefect defaults before Prefect is imported)

MB = 1_000_000


# -- inputs ---------------------------------------------------------------------------------
def base_dump(directory: Path, copies: int) -> tuple[Path, Path]:
    """The ukwiki real pages ``copies`` times (distinct ids) as a multistream dump with its index."""
    from sources.samples.wikipedia import write_multistream

    dump = directory / "base" / "ukwiki-20230101-pages-articles-multistream.xml.bz2"
    index = dump.with_name(dump.name.replace(".xml.bz2", "-index.txt.bz2"))
    stamp = directory / "base" / f"copies-{copies}"
    if stamp.is_file() and dump.is_file() and index.is_file():
        return dump, index
    xml = scaling._real_xml("uk") or scaling._sample_xml("uk")
    written = write_multistream(scaling._repeated(xml, copies, 0), directory / "base", "ukwiki-20230101")
    stamp.write_text("")
    return written


def _page_streams(dump: Path, index: Path) -> tuple[bytes, list[tuple[bytes, list[str]]], bytes]:
    """The dump's header stream, its page streams (bytes, index lines without the offset), its closing stream."""
    data = dump.read_bytes()
    by_offset: dict[int, list[str]] = {}
    for line in bz2.decompress(index.read_bytes()).decode("utf-8").splitlines(keepends=True):
        offset, rest = line.split(":", 1)
        by_offset.setdefault(int(offset), []).append(rest)
    offsets = sorted(by_offset)
    decompressor = bz2.BZ2Decompressor()
    decompressor.decompress(data[offsets[-1]:])
    closing = len(data) - len(decompressor.unused_data)  # the stream after the last pages: </mediawiki>
    bounds = [*offsets, closing]
    streams = [(data[a:b], by_offset[a]) for a, b in itertools.pairwise(bounds)]
    return data[:offsets[0]], streams, data[closing:]


def tiled_dump(base: tuple[Path, Path], directory: Path, size: int) -> Path:
    """A dump of about ``size`` bytes: the base's header, its page streams cycled, its closing stream."""
    dump_path, index_path = base
    target = directory / f"{size // MB}mb" / dump_path.name
    index_target = target.with_name(index_path.name)
    if target.is_file() and index_target.is_file():
        return target
    head, streams, tail = _page_streams(dump_path, index_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".tmp")
    with open(partial, "wb") as out, bz2.open(index_target, "wt", encoding="utf-8") as index:
        out.write(head)
        for stream, lines in itertools.cycle(streams):
            if out.tell() + len(stream) + len(tail) > size:
                break
            index.writelines(f"{out.tell()}:{rest}" for rest in lines)
            out.write(stream)
        out.write(tail)
    partial.rename(target)
    return target


# -- memory ---------------------------------------------------------------------------------
class PeakRss:
    """Peak RSS per process of this process's tree, sampled by a thread until stopped."""

    def __init__(self, every: float = 0.2) -> None:
        import psutil

        self.me = psutil.Process()
        self.every = every
        self.peaks: dict[int, int] = {}
        self.tree_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        import psutil

        total = 0
        for proc in [self.me, *self.me.children(recursive=True)]:
            try:
                rss = proc.memory_info().rss
            except psutil.Error:
                continue
            total += rss
            self.peaks[proc.pid] = max(self.peaks.get(proc.pid, 0), rss)
        self.tree_peak = max(self.tree_peak, total)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.every)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


# -- runs -----------------------------------------------------------------------------------
@dataclass
class SizeRun:
    size: int
    tasks: int
    pages: int
    wall: float
    worker_cpu: float
    flow_cpu: float
    flow_peak: int
    worker_peak: int
    tree_peak: int


def run_size(dump: Path, out: Path, workers: int, split_bytes: int) -> SizeRun:
    """The Wikipedia flow over ``dump`` on a fresh LocalCluster; wall, CPU and peak RSS."""
    from core.manifest import Manifest
    from flows.wikipedia import WikipediaConfig, run
    from sources.formats.wikipedia_multistream import plan_split

    cluster, client, _ = scaling.start_cluster(workers)
    try:
        worker_pids = set(client.run(os.getpid).values())
        config = WikipediaConfig(dumps=[str(dump)], out=out, runner="dask", workers=workers,
                                 dask_address=cluster.scheduler_address, progress=False, split_bytes=split_bytes)
        before, started = scaling._tree(), time.perf_counter()
        with PeakRss() as memory:
            summary = run(config)
        wall = time.perf_counter() - started
        cpu = scaling.cpu_delta(before, scaling._tree(), worker_pids)
    finally:
        client.close()
        cluster.close()
    if summary.failed:
        raise SystemExit(f"failed: {[r.error for r in summary.failed]}")
    _, rows = Manifest.for_output(out).query("SELECT sum(records_in) FROM inputs")
    return SizeRun(
        size=dump.stat().st_size, tasks=len(plan_split(dump, split_bytes) or [None]), pages=int(rows[0][0]),
        wall=wall, worker_cpu=cpu.workers, flow_cpu=cpu.flow,
        flow_peak=memory.peaks.get(os.getpid(), 0),
        worker_peak=max((memory.peaks.get(pid, 0) for pid in worker_pids), default=0),
        tree_peak=memory.tree_peak,
    )


def report(runs: list[SizeRun], workers: int, split_bytes: int, kind: str) -> None:
    print(f"\none ukwiki multistream dump per size ({kind} pages), {workers} Dask workers, "
          f"page-range tasks of ~{split_bytes / MB:.0f} MB; {os.cpu_count()} cores")
    print(f"{'size MB':>8} {'tasks':>6} {'pages':>9} {'wall s':>8} {'MB/s':>7} {'MB/worker-CPU-s':>16} "
          f"{'flow peak MB':>13} {'worker peak MB':>15} {'tree peak MB':>13}")
    for r in runs:
        print(f"{r.size / MB:8.0f} {r.tasks:6d} {r.pages:9d} {r.wall:8.1f} {r.size / MB / r.wall:7.2f} "
              f"{r.size / MB / r.worker_cpu:16.3f} {r.flow_peak / MB:13.0f} {r.worker_peak / MB:15.0f} "
              f"{r.tree_peak / MB:13.0f}")
    small, large = runs[0], runs[-1]
    print(f"\n{large.size / small.size:.0f}x the input: wall throughput x{(large.size / large.wall) / (small.size / small.wall):.2f}, "
          f"per worker CPU x{(large.size / large.worker_cpu) / (small.size / small.worker_cpu):.2f}, "
          f"flow peak RSS x{large.flow_peak / small.flow_peak:.2f}, worker peak RSS x{large.worker_peak / small.worker_peak:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,500,2000", help="dump sizes in MB of bz2 (default: %(default)s)")
    parser.add_argument("--copies", type=int, default=30, help="distinct-id copies in the base dump (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=2, help="Dask worker processes (default: %(default)s)")
    parser.add_argument("--split-bytes", type=int, default=32 * MB,
                        help="compressed bytes per page-range task (default: %(default)s)")
    parser.add_argument("--inputs", type=Path, default=Path(tempfile.gettempdir()) / "kinda-scale-inputs",
                        help="where the dumps are built and kept (default: %(default)s)")
    args = parser.parse_args(argv)
    from flows.runtime.runner import prefect_api

    kind = "real" if scaling._real_xml("uk") is not None else "sample"
    base = base_dump(args.inputs, args.copies)
    dumps = [tiled_dump(base, args.inputs, int(float(s) * MB)) for s in args.sizes.split(",")]
    runs: list[SizeRun] = []
    with tempfile.TemporaryDirectory(prefix="kinda-scale-") as tmp, prefect_api():
        for dump in dumps:
            out = Path(tmp) / dump.parent.name
            runs.append(run_size(dump, out, args.workers, args.split_bytes))
            print(f"{scaling._uptime()}  after {dump.parent.name}: wall {runs[-1].wall:.1f} s", flush=True)
            shutil.rmtree(out, ignore_errors=True)
    report(runs, args.workers, args.split_bytes, kind)
    return 0


if __name__ == "__main__":
    sys.exit(main())
