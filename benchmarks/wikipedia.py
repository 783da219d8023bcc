"""Wikipedia: our reader vs wikiextractor and the ``bzcat`` floor, side by side, plus cleaning quality.

    python benchmarks/wikipedia.py                      # real uk/ja/vi dumps if ../shared/realdata exists
    python benchmarks/wikipedia.py --dump X.xml.bz2 --repeat 5 --scale 0

Input: the real ``{uk,ja,vi}wiki-truncated-100k.REPAIRED.xml.bz2`` pages-articles dumps (2023,
cut after 100k lines) from ../shared/realdata/mediawiki, or ``--dump`` files.

Peer install (benchmark only): ``pip install -r benchmarks/requirements-wikipedia.txt``.

Every contender runs in a fresh ``python -P`` process (so peak RSS is its own), one process at a
time, on one core; CPU time (user+sys) is measured. Repeats are interleaved (floor, peer, ours,
floor, peer, ours, ...) so that load from other processes hits them alike, and each ratio is
taken within one repeat; min/median/max over repeats are reported.

- ``bzcat``: the ``bzcat`` binary decompressing the dump to /dev/null: the floor, since every
  contender must at least decompress;
- ``wikiextractor``: wikiextractor's own functions in one process, as its ``process_dump``
  calls them (``--no-templates`` mode, which needs no first pass over template pages): siteinfo
  scanned for the template namespace (set as its global ``templateNamespace``, without which
  ``collect_pages`` returns nothing), ``collect_pages`` over the bz2 text stream, and
  ``Extractor(...).extract()`` per article into memory;
- ``ours-read``: :class:`sources.wikipedia.WikipediaReader` (bz2, page chunking, XML, cleaning
  under per-page bounds, drop accounting), every record consumed; the like-for-like contender;
- ``ours-full``: the whole per-input path: reading, staging shards + dedup keys, run-wide exact
  dedup, final shards (``stage_input`` -> ``find_exact_duplicates`` -> ``finalize_input``).

Pages: the dump's articles (namespace 0, not redirects), counted by our reader.

Quality, on every article page of each dump: today's fast cleaner vs the mwparserfromhell tree
walk the reader used before (``WikitextCleaner(engine="tree")``), and wikiextractor's text for
reference: markup residue left (``[[``, ``{{``, ``<ref``, quotes, tags, ...), characters kept,
pages with identical output, and word-level recall/precision of the fast output against the tree
walk's (multiset of ``\\w+`` words).

Memory flatness: the first dump repeated ``--scale`` times (pages renumbered) through ``ours-full``.
"""

from __future__ import annotations

import argparse
import bz2
import collections
import io
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

# Run as a script, this folder is sys.path[0]; keep sibling modules from shadowing real ones.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REALDATA = ROOT.parent / "shared" / "realdata" / "mediawiki"
CONTENDERS = ("bzcat", "wikiextractor", "ours-read", "ours-full")
RESIDUE = re.compile(r"\{\{|\}\}|\[\[|\]\]|<ref|</ref|<!--|-->|\{\||\|\}|'''|''|\[https?://"
                     r"|</?(?:div|span|table|tr|td|small|sup|sub|br|poem|blockquote|center|font)\b[^>]{0,40}>"
                     r"|&(?:nbsp|amp|lt|gt|quot|ndash|mdash);")


# -- contenders (each runs in its own process) ---------------------------------------------------
def run_wikiextractor(dump: Path, texts: list[str] | None = None) -> dict[str, Any]:
    """wikiextractor's own functions, single process (see the module docstring); ``texts`` gets each page's text."""
    from wikiextractor import WikiExtractor as wx
    from wikiextractor.extract import Extractor

    stream = wx.decode_open(str(dump))
    urlbase, known, prefix = "", {"Template"}, ""
    for line in stream:  # what process_dump does with <siteinfo>
        match = wx.tagRE.search(line)
        if not match:
            continue
        tag = match.group(2)
        if tag == "base":
            urlbase = match.group(3)[: match.group(3).rfind("/")]
        elif tag == "namespace":
            known.add(match.group(3))
            if 'key="10"' in line:
                wx.templateNamespace = match.group(3)
                prefix = wx.templateNamespace + ":"
        elif tag == "/siteinfo":
            break
    pages = chars = 0
    for page_id, revid, title, lines in wx.collect_pages(stream):
        out = io.StringIO()
        Extractor(page_id, revid, urlbase, title, lines, templatePrefix=prefix,
                  knownNamespaces=known).extract(out, html_safe=False)
        pages += 1
        chars += len(out.getvalue())
        if texts is not None:  # its <doc ...> wrapper and title line off
            texts.append(out.getvalue().split("\n", 2)[-1].rsplit("</doc>", 1)[0])
    return {"pages": pages, "chars": chars}


def run_ours_read(dump: Path) -> dict[str, Any]:
    """The reader alone, every record consumed."""
    from core.document import Document, InputSpec
    from sources.wikipedia import WikipediaReader

    docs = drops = chars = 0
    for record in WikipediaReader(InputSpec(str(dump), dump, dump.name)):
        if isinstance(record, Document):
            docs += 1
            chars += len(record.text)
        else:
            drops += 1
    return {"docs": docs, "drops": drops, "chars": chars}


def run_ours_full(dump: Path) -> dict[str, Any]:
    """Reading, staging, exact dedup and final shards for one input."""
    from core import pipeline
    from core.document import InputSpec
    from core.shards import ShardLimits
    from sources.wikipedia import WikipediaRecipe

    recipe = WikipediaRecipe()
    with tempfile.TemporaryDirectory() as out:
        ctx = pipeline.RunContext(Path(out), "wikipedia", "bench", ShardLimits(), "wikipedia")
        spec = InputSpec(str(dump), dump, dump.name)
        staged = pipeline.stage_input(recipe, spec, ctx)
        pipeline.find_exact_duplicates(ctx, [spec.key])
        record = pipeline.finalize_input(recipe, spec, ctx, pipeline.scope_hash([spec.key], "bench"), staged)
    assert record.status in {"done", "partial"}, record.error
    return {"kept": record.docs_kept, "records_in": record.records_in}


def child(mode: str, dump: Path) -> dict[str, Any]:
    """One contender once: its CPU seconds (user+sys) and this process's peak RSS."""
    if mode == "bzcat":
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(["bzcat", str(dump)], stdout=subprocess.DEVNULL, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {"cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
                "maxrss_mb": after.ru_maxrss / 1024}
    import wikiextractor.extract  # noqa: F401  imports before the clock, alike for all

    import core.pipeline  # noqa: F401
    import sources.wikipedia  # noqa: F401

    run = {"wikiextractor": run_wikiextractor, "ours-read": run_ours_read, "ours-full": run_ours_full}[mode]
    started, cpu = time.perf_counter(), _cpu_with_children()
    result = run(dump)
    _reap_shared_helpers()
    result["seconds"] = time.perf_counter() - started
    result["cpu"] = _cpu_with_children() - cpu
    result["maxrss_mb"] = max(resource.getrusage(who).ru_maxrss
                              for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024
    return result


def _cpu_with_children() -> float:
    """CPU seconds of this process and its reaped children: the bounded cleaners' helper counts too."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _reap_shared_helpers() -> None:
    """End core.bounded's shared helper processes so ``RUSAGE_CHILDREN`` includes their CPU time."""
    from core.helper_process import close_thread_helpers

    close_thread_helpers()


def _spawn(mode: str, dump: Path) -> dict[str, Any]:
    output = subprocess.run([sys.executable, "-P", __file__, "--child", mode, "--dump", str(dump)],
                            capture_output=True, text=True, check=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


# -- quality -------------------------------------------------------------------------------------
def _articles(dump: Path) -> tuple[frozenset[str], list[tuple[str, str]]]:
    from core.compressed import open_binary, read_blocks
    from sources.formats.wikipedia_names import drop_prefixes
    from sources.wikipedia import SiteInfo, iter_chunks, language_from_filename, parse_page, parse_siteinfo

    site, pages = SiteInfo(), []
    with open_binary(dump) as stream:
        for kind, chunk, _ in iter_chunks(read_blocks(stream)):
            if kind == "siteinfo":
                site = parse_siteinfo(chunk)
            elif kind == "page":
                page = parse_page(chunk)
                if page.namespace == 0 and not page.redirect:
                    pages.append((page.title, page.text))
    language = site.language or language_from_filename(dump.name)
    return drop_prefixes(language, site.drop_namespace_names), pages


def quality(dump: Path) -> dict[str, Any]:
    """Residue, kept characters and agreement of the fast cleaner vs the tree walk (and wikiextractor)."""
    from sources.wikipedia import WikitextCleaner

    prefixes, pages = _articles(dump)
    fast, tree = WikitextCleaner(prefixes), WikitextCleaner(prefixes, engine="tree")
    words = re.compile(r"\w+")
    out: dict[str, Any] = {"pages": len(pages), "identical": 0, "common_words": 0, "tree_words": 0, "fast_words": 0}
    residue = {name: collections.Counter() for name in ("fast", "tree", "wikiextractor")}
    chars = dict.fromkeys(residue, 0)
    for _, text in pages:
        new, old = fast.clean(text), tree.clean(text)
        out["identical"] += new == old
        for name, value in (("fast", new), ("tree", old)):
            chars[name] += len(value)
            residue[name].update(m.group(0)[:6] for m in RESIDUE.finditer(value))
        new_words, old_words = collections.Counter(words.findall(new)), collections.Counter(words.findall(old))
        out["common_words"] += sum((new_words & old_words).values())
        out["tree_words"] += sum(old_words.values())
        out["fast_words"] += sum(new_words.values())
    wx_texts: list[str] = []
    run_wikiextractor(dump, wx_texts)
    for value in wx_texts:
        chars["wikiextractor"] += len(value)
        residue["wikiextractor"].update(m.group(0)[:6] for m in RESIDUE.finditer(value))
    out["chars"] = chars
    out["residue"] = {name: dict(counter.most_common()) for name, counter in residue.items()}
    return out


# -- memory flatness -----------------------------------------------------------------------------
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


# -- report --------------------------------------------------------------------------------------
def _versions() -> str:
    bzip2 = subprocess.run(["bzcat", "--version"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    found = re.search(r"Version ([\d.]+)", bzip2.stderr + bzip2.stdout)
    bzip2_version = found.group(1) if found else "?"
    names = ("wikiextractor", "mwparserfromhell")
    return ", ".join([f"{name} {metadata.version(name)}" for name in names]
                     + [f"bzip2 {bzip2_version}", f"Python {sys.version.split()[0]}"])


def _mmm(values: list[float], fmt: str = "{:.1f}") -> str:
    return "/".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def measure(dump: Path, repeat: int) -> dict[str, list[dict[str, Any]]]:
    """``repeat`` interleaved rounds of every contender on ``dump``."""
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in CONTENDERS}
    for _ in range(repeat):
        for mode in CONTENDERS:
            runs[mode].append(_spawn(mode, dump))
    return runs


def report(dump: Path, runs: dict[str, list[dict[str, Any]]]) -> None:
    """Pages/s per core, ratios within each round (min/median/max), h per TB of bz2, peak RSS."""
    articles = runs["ours-read"][0]["docs"]  # the reader's documents: the dump's articles
    mb = dump.stat().st_size / 1e6
    for mode in CONTENDERS:
        cpus = [r["cpu"] for r in runs[mode]]
        pps = [articles / c for c in cpus]
        h_per_tb = [c / mb * 1e6 / 3600 for c in cpus]
        vs_wx = [w["cpu"] / r["cpu"] for w, r in zip(runs["wikiextractor"], runs[mode], strict=True)]
        floor = [b["cpu"] / r["cpu"] for b, r in zip(runs["bzcat"], runs[mode], strict=True)]
        if mode.startswith("ours"):
            print("RESULT " + json.dumps({"metric": f"{mode} vs wikiextractor", "input": dump.name, "values": vs_wx}))
        print(f"{dump.name[:40]:40} {mode:14} {_mmm(pps):>20} {_mmm(h_per_tb, '{:.0f}'):>16} "
              f"{_mmm(vs_wx, '{:.2f}'):>16} {_mmm(floor, '{:.2f}'):>16} "
              f"{max(r['maxrss_mb'] for r in runs[mode]):8.0f}")


def print_quality(dump: Path, result: dict[str, Any]) -> None:
    """The quality table of one dump."""
    recall = result["common_words"] / max(result["tree_words"], 1)
    precision = result["common_words"] / max(result["fast_words"], 1)
    print(f"\n{dump.name}: {result['pages']} articles; fast output identical to the tree walk's on "
          f"{result['identical']} ({result['identical'] / max(result['pages'], 1):.1%}); words of the tree walk's "
          f"output kept: {recall:.4f}; words of the fast output also in the tree walk's: {precision:.4f}")
    for name in ("fast", "tree", "wikiextractor"):
        total = sum(result["residue"][name].values())
        top = ", ".join(f"{k!r}:{v}" for k, v in list(result["residue"][name].items())[:8])
        print(f"  {name:14} chars kept {result['chars'][name]:>10,}  markup residue {total:>5}  {top}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", type=Path, action="append", help="dump(s) to measure (default: real samples)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (min/median/max over them)")
    parser.add_argument("--scale", type=int, default=10, help="memory check: input repeated N times (0: skip)")
    parser.add_argument("--no-quality", action="store_true", help="skip the cleaning-quality comparison")
    parser.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.dump[0])))
        return
    dumps = args.dump or sorted(REALDATA.glob("*wiki-truncated-100k.REPAIRED.xml.bz2"))
    if not dumps:
        from sources.samples.wikipedia import write_sample_dumps

        dumps = write_sample_dumps(Path(tempfile.mkdtemp()), pages=2000)
    print(f"peers: {_versions()}; {args.repeat} interleaved rounds, one process at a time, CPU time (one core)")
    for dump in dumps:
        print(f"input: {dump.name}: {dump.stat().st_size / 1e6:.1f} MB bz2")
    print(f"\n{'dump':40} {'contender':14} {'pages/s/core':>20} {'h per TB bz2':>16} "
          f"{'x wikiextractor':>16} {'share of bzcat':>16} {'RSS MB':>8}")
    print(f"{'':40} {'':14} {'(min/median/max)':>20}")
    for dump in dumps:
        report(dump, measure(dump, args.repeat))
    print("\nx wikiextractor: its CPU time / the contender's in the same round; share of bzcat: bzcat's CPU "
          "time / the contender's (1.0 = as fast as decompression alone)")
    if not args.no_quality:
        print("\nquality: fast cleaner (today) vs the mwparserfromhell tree walk (before) and wikiextractor")
        for dump in dumps:
            print_quality(dump, quality(dump))
    if args.scale:
        with tempfile.TemporaryDirectory() as tmp:
            big = repeated_dump(dumps[0], args.scale, Path(tmp) / f"x{args.scale}-{dumps[0].name}")
            small, large = _spawn("ours-full", dumps[0]), _spawn("ours-full", big)
            print(f"\nmemory: {dumps[0].name} 1x: {small['maxrss_mb']:.0f} MB peak RSS "
                  f"({dumps[0].stat().st_size / 1e6:.1f} MB dump); {args.scale}x: {large['maxrss_mb']:.0f} MB "
                  f"({big.stat().st_size / 1e6:.1f} MB dump, {large['records_in']:.0f} pages)")


if __name__ == "__main__":
    main()
