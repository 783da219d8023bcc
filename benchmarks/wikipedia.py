"""Wikipedia throughput and memory: our full path vs a bare mwparserfromhell loop, side by side.

    python benchmarks/wikipedia.py                 # real uk/ja/vi samples if ../shared/realdata exists
    python benchmarks/wikipedia.py --dump X.xml.bz2 --repeat 3

For each contender a fresh process runs once per repeat (so peak RSS is its own) on one core:
- ``bare``: ``mwparserfromhell.parse(text).strip_code()`` over the article texts, already
  extracted from the dump into memory (it does no decompression, XML, writing or accounting);
- ``ours``: the whole per-input path: bz2 + XML streaming, cleaning, drop accounting, staging
  shards + dedup keys, run-wide exact dedup, final shards (``stage_input`` ->
  ``find_exact_duplicates`` -> ``finalize_input``).
Memory flatness: the same dump repeated 10x (pages renumbered) is run through ``ours``.
"""

from __future__ import annotations

import argparse
import bz2
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REALDATA = ROOT.parent / "shared" / "realdata" / "mediawiki"


def _article_texts(dump: Path) -> list[str]:
    from core.compressed import open_binary
    from sources.wikipedia import iter_chunks, parse_page

    texts = []
    with open_binary(dump) as stream:
        for kind, chunk, _ in iter_chunks(stream):
            if kind == "page":
                page = parse_page(chunk)
                if page.namespace == 0 and not page.redirect:
                    texts.append(page.text)
    return texts


def run_bare(dump: Path) -> dict[str, float]:
    import mwparserfromhell

    texts = _article_texts(dump)
    started, cpu = time.perf_counter(), time.process_time()
    for text in texts:
        mwparserfromhell.parse(text).strip_code()
    return {"pages": len(texts), "seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu}


def run_ours(dump: Path) -> dict[str, float]:
    from core import pipeline
    from core.document import InputSpec
    from core.shards import ShardLimits
    from sources.wikipedia import WikipediaRecipe

    recipe = WikipediaRecipe()
    with tempfile.TemporaryDirectory() as out:
        ctx = pipeline.RunContext(Path(out), "wikipedia", "bench", ShardLimits(), "wikipedia")
        spec = InputSpec(str(dump), dump, dump.name)
        started, cpu = time.perf_counter(), time.process_time()
        staged = pipeline.stage_input(recipe, spec, ctx)
        pipeline.find_exact_duplicates(ctx, [spec.key])
        record = pipeline.finalize_input(recipe, spec, ctx, pipeline.scope_hash([spec.key], "bench"), staged)
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    assert record.status in {"done", "partial"}, record.error
    not_articles = sum(d["count"] for d in record.drops
                       if d["reason"] in {"redirect", "not_article_namespace", "truncated_input"})
    return {"pages": record.records_in - not_articles, "seconds": seconds, "cpu": cpu_seconds, "kept": record.docs_kept,
            "records_in": record.records_in}


def repeated_dump(dump: Path, times: int, target: Path) -> Path:
    """The same pages ``times`` over, with fresh ids and titles, as one bz2 dump."""
    from core.compressed import open_binary

    with open_binary(dump) as stream:
        xml = stream.read().decode("utf-8")
    head, rest = xml.split("  <page>", 1)
    body = "  <page>" + rest.rsplit("</mediawiki>", 1)[0]
    copies = [head]
    for n in range(times):
        copies.append(re.sub(r"<title>(.*?)</title>", rf"<title>\1 ({n})</title>",
                             re.sub(r"(<page>\s*<title>.*?</title>\s*<ns>\d+</ns>\s*<id>)(\d+)",
                                    lambda m, n=n: f"{m.group(1)}{int(m.group(2)) * 100 + n}", body, flags=re.S)))
    copies.append("</mediawiki>\n")
    compressor = bz2.BZ2Compressor(9)
    with open(target, "wb") as handle:
        for part in copies:
            handle.write(compressor.compress(part.encode("utf-8")))
        handle.write(compressor.flush())
    return target


def _child(mode: str, dump: Path) -> dict[str, float]:
    output = subprocess.run([sys.executable, "-P", __file__, "--child", mode, "--dump", str(dump)],
                            capture_output=True, text=True, check=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", type=Path, action="append", help="dump(s) to measure (default: real samples)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=int, default=10, help="memory check: input repeated this many times")
    parser.add_argument("--child", choices=["bare", "ours"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = (run_bare if args.child == "bare" else run_ours)(args.dump[0])
        result["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return
    dumps = args.dump or sorted(REALDATA.glob("*wiki-truncated-100k.REPAIRED.xml.bz2"))
    if not dumps:
        from sources.wikipedia_sample import write_sample_dumps

        dumps = write_sample_dumps(Path(tempfile.mkdtemp()), pages=2000)
    print(f"{'dump':48} {'contender':6} {'pages/s/core':>12} {'MB/s/core':>10} {'peak RSS MB':>11} {'ratio':>6}")
    for dump in dumps:
        mb = dump.stat().st_size / 1e6
        results = {}
        for mode in ("bare", "ours"):
            runs = [_child(mode, dump) for _ in range(args.repeat)]
            cpu = statistics.median(r["cpu"] for r in runs)
            results[mode] = (runs[0]["pages"] / cpu, mb / cpu, max(r["maxrss_mb"] for r in runs))
        for mode, (pps, mbps, rss) in results.items():
            ratio = pps / results["bare"][0]
            print(f"{dump.name[:48]:48} {mode:6} {pps:12.1f} {mbps:10.3f} {rss:11.0f} {ratio:6.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        big = repeated_dump(dumps[0], args.scale, Path(tmp) / f"x{args.scale}-{dumps[0].name}")
        small, large = _child("ours", dumps[0]), _child("ours", big)
        print(f"\nmemory: {dumps[0].name} 1x: {small['maxrss_mb']:.0f} MB peak RSS "
              f"({dumps[0].stat().st_size / 1e6:.1f} MB dump); {args.scale}x: {large['maxrss_mb']:.0f} MB "
              f"({big.stat().st_size / 1e6:.1f} MB dump, {large['records_in']:.0f} pages)")


if __name__ == "__main__":
    main()
