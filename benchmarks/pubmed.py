"""PubMed Central JATS throughput against pubmed_parser, and memory on a large bulk package.

    python benchmarks/pubmed.py                           # 700 articles x 3 repeats, 500 MB package
    python benchmarks/pubmed.py --articles 1400 --repeat 5 --package-mb 100

Inputs: the real ``.nxml`` files in ``../shared/realdata/pubmed/oa_nxml`` (else the generated
sample articles), copied to ``--articles`` files. Contenders, each in a fresh ``python -P``
process per repeat, timed in CPU seconds of that process (articles/s per core):

- ``pubmed_parser``: ``parse_pubmed_xml(path)`` (title, abstract, metadata) plus
  ``parse_pubmed_paragraph(path, all_paragraph=True)`` (body paragraphs with section names) per
  file: the reference tool (``pip install pubmed_parser``, see requirements-pubmed.txt);
- ``ours``: :func:`sources.pubmed.iter_central` over an article list of all the files, as the
  flow runs it: each article in the bounded helper process (:mod:`core.bounded`; its CPU time,
  and the pickling both ways, are counted), safe parse (no DTD, no network, no
  entities), title + labelled abstract + headed sections in order + captions + linearised tables
  + math (tex-math / MathML linearised / image formulas counted) + licence, as a Document;
- ``ours_inprocess``: the same without the helper process (the parser's own speed).

Memory: a PMC-style bulk package (``PMC…/PMC<n>.xml`` members, gzip'd tar) of ``--package-mb``
uncompressed MB, and one a tenth of its size, are each read to the end by ``iter_central`` in a
fresh process (in-process parsing, so the one RSS covers reading, decompression and parsing);
the peak RSS (``ru_maxrss``) of both is reported: flat means the two are close.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REALDATA = ROOT.parent / "shared" / "realdata" / "pubmed" / "oa_nxml"


def originals() -> list[bytes]:
    """The real articles, or generated ones when the samples are absent."""
    files = sorted(REALDATA.glob("*.nxml")) if REALDATA.is_dir() else []
    if files:
        return [f.read_bytes() for f in files]
    from sources.samples.pubmed import jats_article, nlm23_article

    return [jats_article(f"9{i:06d}", f"Generated article {i}") for i in range(4)] + [nlm23_article("9100000", "Old")]


def write_corpus(folder: Path, count: int) -> list[Path]:
    """``count`` article files cycling through the originals."""
    sources = originals()
    paths = []
    for index in range(count):
        path = folder / f"article{index:06d}.nxml"
        path.write_bytes(sources[index % len(sources)])
        paths.append(path)
    return paths


def write_package(target: Path, megabytes: float) -> int:
    """A gzip'd tar of articles streamed to disk (never held in memory); return the member count."""
    sources = originals()
    limit = int(megabytes * 1024 * 1024)
    written = members = 0
    with gzip.open(target, "wb", compresslevel=1) as raw, tarfile.open(fileobj=raw, mode="w|") as archive:
        while written < limit:
            data = sources[members % len(sources)]
            info = tarfile.TarInfo(f"PMC{members // 10000:03d}xxxxxx/PMC{members:08d}.xml")
            info.size, info.mtime = len(data), 1_700_000_000
            archive.addfile(info, io.BytesIO(data))
            written += len(data)
            members += 1
    return members


# -- children (fresh processes) -------------------------------------------------------------
def child_speed(contender: str, folder: Path) -> dict[str, float]:
    """Time one contender over every file of ``folder`` (CPU seconds of this process)."""
    paths = sorted(folder.glob("*.nxml"))
    if contender == "pubmed_parser":
        import pubmed_parser as pp

        start = time.process_time()
        chars = 0
        for path in paths:
            meta = pp.parse_pubmed_xml(str(path))
            paragraphs = pp.parse_pubmed_paragraph(str(path), all_paragraph=True)
            chars += len(meta.get("abstract") or "") + sum(len(p.get("text") or "") for p in paragraphs)
    else:
        from core.document import Document
        from sources.pubmed import CentralSettings, iter_central, list_payload

        # as the flow reads single files: one article list per task, one bounded helper per list
        listing = folder.parent / f"{contender}.pmc.json"
        listing.write_text(json.dumps(list_payload(paths)), encoding="utf-8")
        settings = CentralSettings()
        start = time.process_time()
        chars = 0
        for record in iter_central(listing, settings, bounded=contender == "ours"):
            if isinstance(record, Document):
                chars += len(record.text)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the bounded helper, once it has exited
    seconds = time.process_time() - start + children.ru_utime + children.ru_stime
    return {"articles": len(paths), "seconds": seconds, "chars": chars}


def child_memory(package: Path) -> dict[str, float]:
    """Read a whole package; report documents and peak RSS."""
    from core.document import Document
    from sources.pubmed import CentralSettings, iter_central

    docs = drops = 0
    start = time.process_time()
    for record in iter_central(package, CentralSettings(), bounded=False):
        if isinstance(record, Document):
            docs += 1
        else:
            drops += 1
    return {"docs": docs, "drops": drops, "seconds": time.process_time() - start,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_child(*args: str) -> dict[str, float]:
    """Run this script as a child (``python -P``) and parse its JSON line."""
    result = subprocess.run([sys.executable, "-P", __file__, "--child", *args], check=True, capture_output=True,
                            text=True, cwd=ROOT)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print a table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, default=700)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--package-mb", type=float, default=500.0, help="uncompressed size of the big package")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, target = args.child[0], Path(args.child[-1])
        result = child_memory(target) if kind == "memory" else child_speed(kind, target)
        print(json.dumps(result))
        return 0
    with tempfile.TemporaryDirectory(prefix="kinda-pubmed-bench-") as tmp:
        folder = Path(tmp) / "articles"
        folder.mkdir()
        write_corpus(folder, args.articles)
        rates: dict[str, list[float]] = {"pubmed_parser": [], "ours": [], "ours_inprocess": []}
        for _ in range(args.repeat):
            for contender in rates:
                try:
                    result = run_child(contender, str(folder))
                except subprocess.CalledProcessError as exc:
                    print(f"{contender}: failed ({exc.stderr.strip().splitlines()[-1] if exc.stderr else exc})")
                    rates[contender] = []
                    break
                rates[contender].append(result["articles"] / result["seconds"])
        print(f"JATS articles/s per core, {args.articles} articles ({len(originals())} distinct), "
              f"{args.repeat} repeats (min / median / max):")
        for contender, values in rates.items():
            if values:
                print(f"  {contender:15s} {min(values):8.1f} {statistics.median(values):8.1f} {max(values):8.1f}")
        for contender in ("ours", "ours_inprocess"):
            if rates[contender] and len(rates[contender]) == len(rates["pubmed_parser"]):
                ratios = [o / p for o, p in zip(rates[contender], rates["pubmed_parser"], strict=True)]
                print("RESULT " + json.dumps({"metric": f"{contender} vs pubmed_parser", "values": ratios}))
        if rates["ours"] and rates["pubmed_parser"]:
            print(f"  ratio ours / pubmed_parser (medians): "
                  f"{statistics.median(rates['ours']) / statistics.median(rates['pubmed_parser']):.2f}x")
        if args.package_mb > 0:
            print("\nMemory on a streamed bulk package (fresh process each):")
            for megabytes in (args.package_mb / 10, args.package_mb):
                package = Path(tmp) / f"bulk-{megabytes:g}MB.tar.gz"
                members = write_package(package, megabytes)
                result = run_child("memory", str(package))
                print(f"  {megabytes:7.1f} MB uncompressed ({package.stat().st_size / 2**20:6.1f} MB gz, {members} "
                      f"articles): {result['docs']:.0f} docs, {result['drops']:.0f} drops, "
                      f"{result['docs'] / result['seconds']:.0f} articles/s, peak RSS {result['max_rss_mb']:.0f} MB")
                package.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
