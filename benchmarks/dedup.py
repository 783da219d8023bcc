"""MinHash dedup benchmark: signatures per second vs peers, and end-to-end scaling against a reference.

    python benchmarks/dedup.py signatures --docs 2000 --peer-python /tmp/dedup-peers/bin/python
    python benchmarks/dedup.py end-to-end --sizes 250000,1000000 --doc-words 200
    python benchmarks/dedup.py build --shards 'ref/0[0-3].jsonl.zst' --peer /tmp/old-checkout --rounds 3

``signatures``: one core, shingling included, same generated corpus for everyone; ours (batch of
1,024 documents), ``datasketch.MinHash.update_batch`` per document (SHA1, Python shingles), and,
when ``--peer-python`` names a venv with them (``benchmarks/requirements-dedup.txt``), datatrove's
``MinhashDedupSignature`` and rensa's ``RMinHash``. Median of ``--repeat`` runs, CPU time of the process (all
threads), so the ratios hold on a loaded machine.

``end-to-end``: for each size N, a reference of N documents and N query documents (20% planted
near-duplicates of reference documents, 5% planted within the query set), each size in a fresh
process: index build, query signatures, band joins, verification, clustering. Prints wall time,
peak RSS, and precision/recall at 0.8 against exact shingle Jaccard of the planted pairs.

``build``: the Pile index build on real-format shards (``benchmarks/pile_scale.py`` writes them),
this checkout against a ``--peer`` checkout (e.g. ``git worktree add /tmp/old <commit>``) in
interleaved rounds: the shard function (``index_pile_shard`` over every shard in one process, its
CPU without imports) and the whole flow (``python -m flows.pile_index``: Prefect server, worker
pool and all, CPU of every process by ``os.wait4``). MB of text per CPU-second, medians, and
whether both checkouts wrote the same bytes (every index file but the JSON records, which hold
timings).
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run as a script, this folder is sys.path[0]; a sibling module named like a standard one
# would shadow it when numpy/pyarrow load, so import from the repository root.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REALDATA_BOOKS = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata" / "books"
_WORD = re.compile(r"[A-Za-z]+")


@functools.cache
def vocabulary(seed: int = 0) -> list[str]:
    """Words drawn from real books when the samples exist (real word-length and frequency mix)."""
    words: list[str] = []
    if REALDATA_BOOKS.is_dir():
        for book in sorted(REALDATA_BOOKS.iterdir()):
            words += _WORD.findall(book.read_text(encoding="utf-8", errors="replace"))
    if len(words) < 10_000:
        rnd = random.Random(seed)
        words = ["".join(rnd.choice("etaoinshrdlucmfwyp") for _ in range(rnd.randint(1, 9))) for _ in range(50_000)]
    return words


def make_docs(count: int, words_per_doc: int, seed: int) -> list[str]:
    """``count`` documents of ``words_per_doc`` words sampled from the vocabulary."""
    rnd = random.Random(seed)
    vocab = vocabulary()
    return [" ".join(rnd.choices(vocab, k=words_per_doc)) for _ in range(count)]


def perturb(text: str, jaccard: float, rnd: random.Random) -> str:
    """A near-duplicate: replace spread-out words so about ``1 - jaccard`` of the shingles change."""
    words = text.split()
    shingles = max(len(words) - 4, 1)
    changes = round(shingles * (1 - jaccard) / (5 * (1 + jaccard)))
    for position in rnd.sample(range(0, len(words), 6), min(changes, len(words) // 6)):
        words[position] = f"zz{rnd.randrange(10**9)}"
    return " ".join(words)


def shingles(text: str, n: int = 5) -> list[str]:
    words = text.split()
    return [" ".join(words[i : i + n]) for i in range(max(len(words) - n + 1, 1))]


# -- signatures: each engine in its own function, timed on the same corpus --------------------
def bench_ours(texts: list[str]) -> float:
    from dedupe.minhash import MinHasher

    hasher = MinHasher()
    start = time.process_time()
    for i in range(0, len(texts), 1024):
        hasher.signatures(texts[i : i + 1024])
    return time.process_time() - start


def bench_datasketch(texts: list[str]) -> float:
    from datasketch import MinHash

    start = time.process_time()
    for text in texts:
        sketch = MinHash(num_perm=128)
        sketch.update_batch([s.encode() for s in shingles(text)])
    return time.process_time() - start


def bench_rensa(texts: list[str]) -> float:
    from rensa import RMinHash

    start = time.process_time()
    for text in texts:
        sketch = RMinHash(num_perm=128, seed=42)
        sketch.update(shingles(text))
        sketch.digest()
    return time.process_time() - start


def bench_datatrove(texts: list[str]) -> float:
    from datatrove.data import Document
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature

    with tempfile.TemporaryDirectory() as folder:
        step = MinhashDedupSignature(output_folder=folder, config=MinhashConfig(n_grams=5, num_buckets=9,
                                                                                hashes_per_bucket=13))
        docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
        start = time.process_time()
        step.run(iter(docs), rank=0, world_size=1)
        return time.process_time() - start


ENGINES = {"ours": bench_ours, "datasketch": bench_datasketch, "rensa": bench_rensa, "datatrove": bench_datatrove}


def run_engine(name: str, docs: int, words: int, repeat: int) -> dict:
    texts = make_docs(docs, words, seed=1)
    times = [ENGINES[name](texts) for _ in range(repeat)]
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    median = statistics.median(times)
    return {"engine": name, "docs_per_s": docs / median, "mb_per_s": megabytes / median, "seconds": median}


def cmd_signatures(args: argparse.Namespace) -> None:
    rows = []
    for name in ("ours", "datasketch"):
        rows.append(run_engine(name, args.docs, args.doc_words, args.repeat))
    if args.peer_python:
        for name in ("rensa", "datatrove"):
            docs = args.docs if name != "datatrove" else max(args.docs // 10, 50)
            done = subprocess.run([args.peer_python, __file__, "_engine", name, str(docs), str(args.doc_words),
                                   str(args.repeat)], capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{name}: failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                continue
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    ours = rows[0]["docs_per_s"]
    avg_kb = len(" ".join(make_docs(20, args.doc_words, 1))) / 20 / 1000
    print(f"\nMinHash signatures, 128 permutations, word 5-grams, shingling included, 1 process; "
          f"{args.docs} docs of ~{avg_kb:.1f} KB, median of {args.repeat}")
    print(f"{'engine':<12}{'docs/s':>10}{'MB/s':>8}{'ours is':>10}")
    for row in rows[1:]:
        print("RESULT " + json.dumps({"metric": f"ours vs {row['engine']}", "values": [ours / row["docs_per_s"]]}))
    for row in rows:
        print(f"{row['engine']:<12}{row['docs_per_s']:>10.0f}{row['mb_per_s']:>8.2f}{ours / row['docs_per_s']:>9.1f}x")


# -- end to end -------------------------------------------------------------------------------
def true_jaccard(a: str, b: str) -> float:
    from dedupe.shingles import shingle_items

    left, right = set(shingle_items(a)), set(shingle_items(b))
    return len(left & right) / max(len(left | right), 1)


def end_to_end(size: int, words: int, layout_name: str, threshold: float | None, workdir: Path) -> dict:
    """One size, in this process: returns timings, RSS and precision/recall."""
    import pyarrow.parquet as pq

    from dedupe.explain import cluster_documents
    from dedupe.lsh import BandLayout, JoinSettings, near_duplicate_pairs
    from dedupe.minhash import MinHashConfig, MinHasher
    from dedupe.reference import (
        DOCUMENT_SCHEMA,
        REFERENCE_SCHEMA,
        PartBuilder,
        ReferenceIndex,
        best_reference_matches,
        reference_band_pairs,
        signature_parts,
    )

    layout = BandLayout.named(layout_name, threshold)
    rnd = random.Random(7)
    hasher = MinHasher(MinHashConfig())
    settings = JoinSettings(memory_limit="1GB", threads=1, temp_directory=workdir / "tmp")
    levels = (0.85, 0.9, 0.95, 1.0, 0.5, 0.65)
    timings: dict[str, float] = {}
    planted: list[tuple[int, int, str, str, str]] = []  # (query doc, target, kind, query text, target text)

    start = time.perf_counter()
    index = ReferenceIndex.open_or_create(workdir / "index", MinHashConfig(), [layout])
    kept_reference: dict[int, str] = {}
    builder = PartBuilder(index.root, "00000-gen", 0, hasher, [layout], REFERENCE_SCHEMA)
    for lo in range(0, size, 4096):
        batch = make_docs(min(4096, size - lo), words, seed=1000 + lo)
        for i in range(0, len(batch), 37):  # keep some (many distinct) for planting
            kept_reference[lo + i] = batch[i]
        builder.add(batch, {"line": list(range(lo + 1, lo + len(batch) + 1)), "shard": ["gen"] * len(batch),
                            "pile_set_name": ["gen"] * len(batch)})
    part = builder.close()
    index.commit([{**part, "part_no": 0, "shard": "gen", "size": 0}])
    timings["index"] = time.perf_counter() - start

    start = time.perf_counter()
    query = workdir / "query"
    qbuilder = PartBuilder(query, "000000", 0, hasher, [layout], DOCUMENT_SCHEMA)
    ref_keys = sorted(kept_reference)
    doc = 0
    recent: list[tuple[int, str]] = []
    for lo in range(0, size, 4096):
        batch = make_docs(min(4096, size - lo), words, seed=10**7 + lo)
        for i in range(len(batch)):
            roll = rnd.random()
            level = levels[rnd.randrange(len(levels))]
            if roll < 0.2:
                target = ref_keys[rnd.randrange(len(ref_keys))]
                batch[i] = perturb(kept_reference[target], level, rnd)
                planted.append((lo + i, target, "reference", batch[i], kept_reference[target]))
            elif roll < 0.25 and recent:
                target, text = recent[rnd.randrange(len(recent))]
                batch[i] = perturb(text, level, rnd)
                planted.append((lo + i, target, "within", batch[i], text))
            elif rnd.random() < 0.01:
                recent = [*recent[-200:], (lo + i, batch[i])]
        qbuilder.add(batch, {"id": [f"q{lo + i}" for i in range(len(batch))], "source": ["gen"] * len(batch),
                             "shard": ["gen"] * len(batch), "row": list(range(lo, lo + len(batch)))})
        doc += len(batch)
    qpart = {**qbuilder.close(), "source": "gen"}
    timings["query_signatures"] = time.perf_counter() - start

    start = time.perf_counter()
    store = signature_parts(query, [qpart])
    verified = near_duplicate_pairs(query / "bands", query / "work", store, layout, settings)
    counts = cluster_documents([qpart], store, [verified], query / "roots.parquet", across_sources=True)
    timings["within_dedup"] = time.perf_counter() - start

    start = time.perf_counter()
    pairs = [reference_band_pairs(query, index, layout, b, query / "work", settings) for b in range(layout.bands)]
    matches = pq.read_table(best_reference_matches(query, [qpart], index, layout, pairs, query / "work", settings))
    timings["reference_match"] = time.perf_counter() - start

    found_ref = dict(zip(matches.column("doc").to_pylist(), matches.column("ref").to_pylist(), strict=True))
    verified_pairs = pq.read_table(verified)
    found_within = set(zip(verified_pairs.column("a").to_pylist(), verified_pairs.column("b").to_pylist(), strict=True))
    tp = fn = fp = 0
    sample = planted[:: max(len(planted) // 3000, 1)]  # exact Jaccard in Python is slow: a fixed sample
    for query_doc, target, kind, query_text, target_text in sample:
        positive = true_jaccard(query_text, target_text) >= 0.8
        hit = found_ref.get(query_doc) == target if kind == "reference" else (target, query_doc) in found_within
        tp += hit and positive
        fn += positive and not hit
        fp += hit and not positive
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"size": size, **{k: round(v, 1) for k, v in timings.items()}, "total_s": round(sum(timings.values()), 1),
            "peak_rss_mb": round(rss), "precision": round(tp / max(tp + fp, 1), 4),
            "recall": round(tp / max(tp + fn, 1), 4), "duplicates": counts["duplicates"],
            "reference_matches": len(found_ref), "layout": layout.name, "planted_sampled": len(sample)}


def cmd_end_to_end(args: argparse.Namespace) -> None:
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory(dir=args.tmp) as folder:
            done = subprocess.run([sys.executable, __file__, "_e2e", str(size), str(args.doc_words), args.layout,
                                   str(args.threshold or ""), folder], capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    print(f"\nend to end, N query docs against an N-doc reference, {args.doc_words} words/doc, layout {args.layout}")
    cols = ["size", "index", "query_signatures", "within_dedup", "reference_match", "total_s", "peak_rss_mb",
            "precision", "recall"]
    print("".join(f"{c:>17}" for c in cols))
    for row in rows:
        print("".join(f"{row[c]!s:>17}" for c in cols))


#: Indexes the shards in one process with a checkout's own code (run with that checkout's PYTHONPATH);
#: prints the CPU seconds spent in ``index_pile_shard`` (imports excluded). Same settings as configs/dedup.yaml.
_INDEX_SHARDS = """
import sys, time
from pathlib import Path
from dedupe.lsh import BandLayout
from dedupe.minhash import MinHashConfig
from dedupe.reference import ReferenceIndex, index_pile_shard
index = ReferenceIndex.open_or_create(Path(sys.argv[2]), MinHashConfig(), [BandLayout.named(n) for n in ("0.7", "0.8", "0.9")])
started = time.process_time()
parts = [index_pile_shard(shard, index.root, no, name, index.minhash, index.layouts, 256 << 20, index.signature_bits)
         for shard, no, name in index.plan([Path(p) for p in sys.argv[1].split(",")])]
index.commit(parts)
print(time.process_time() - started)
"""


def run_measured(argv: list[str], checkout: Path) -> tuple[float, str]:
    """CPU seconds of a command and every process it started (``os.wait4``), and its output."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, cwd=checkout, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[:3]} in {checkout} failed:\n{text[-3000:]}")
    return usage.ru_utime + usage.ru_stime, text


def index_files(root: Path) -> dict[str, bytes]:
    """Every file of an index but its JSON records (they hold timings and the input's location)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.suffix != ".json"}


def cmd_build(args: argparse.Namespace) -> None:
    from core.pile_format import PileLine, iter_pile

    shards = sorted(glob.glob(args.shards))
    if not shards:
        raise SystemExit(f"no shard matches {args.shards}")
    text_mb = sum(len(i.utf8) for s in shards for i in iter_pile(Path(s)) if isinstance(i, PileLine)) / 1e6
    checkouts = {"this": Path(__file__).resolve().parent.parent}
    if args.peer:
        checkouts["peer"] = Path(args.peer).resolve()
    work = Path(tempfile.mkdtemp(prefix="dedup-build-", dir=args.tmp))
    cpu: dict[tuple[str, str], list[float]] = {}
    same = True
    try:
        for round_no in range(args.rounds):
            order = list(checkouts.items()) if round_no % 2 == 0 else list(checkouts.items())[::-1]
            for mode in ("shard function", "flow") if args.flow else ("shard function",):
                built = {}
                for name, checkout in order:
                    index = work / f"{name}-{mode.replace(' ', '-')}"
                    shutil.rmtree(index, ignore_errors=True)
                    if mode == "flow":
                        inputs = [arg for shard in shards for arg in ("--inputs", shard)]
                        seconds, _ = run_measured([sys.executable, "-m", "flows.pile_index", *inputs, "--index", str(index)],
                                                  checkout)
                    else:
                        _, printed = run_measured([sys.executable, "-c", _INDEX_SHARDS, ",".join(shards), str(index)],
                                                  checkout)
                        seconds = float(printed.strip().splitlines()[-1])
                    cpu.setdefault((mode, name), []).append(seconds)
                    built[name] = index
                    print(f"round {round_no + 1} {mode:14s} {name}: {seconds:.2f} CPU-s", flush=True)
                if "peer" in built:
                    same = same and index_files(built["this"]) == index_files(built["peer"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{len(shards)} shards, {text_mb:,.1f} MB of text, {args.rounds} interleaved rounds (median CPU-s)")
    for (mode, name), values in cpu.items():
        median = statistics.median(values)
        ratio = ""
        if name == "this" and (mode, "peer") in cpu:
            ratio = f"  {statistics.median(cpu[(mode, 'peer')]) / median:.2f}x the peer"
        print(f"{mode:14s} {name:5s} {median:7.2f} CPU-s ({min(values):.2f}-{max(values):.2f})  "
              f"{text_mb / median:6.1f} MB/CPU-s{ratio}")
    if args.peer:
        print("same index bytes as the peer:", "yes" if same else "NO")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_engine":
        print(json.dumps(run_engine(argv[1], int(argv[2]), int(argv[3]), int(argv[4]))))
        return
    if argv and argv[0] == "_e2e":
        threshold = float(argv[4]) if argv[4] else None
        print(json.dumps(end_to_end(int(argv[1]), int(argv[2]), argv[3], threshold, Path(argv[5]))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sig = sub.add_parser("signatures", help="signatures per second vs datasketch, rensa, datatrove")
    sig.add_argument("--docs", type=int, default=1000)
    sig.add_argument("--doc-words", type=int, default=900, help="about 5 KB of text at 900 words")
    sig.add_argument("--repeat", type=int, default=3)
    sig.add_argument("--peer-python", help="python of a venv with rensa and datatrove (requirements-dedup.txt)")
    sig.set_defaults(func=cmd_signatures)
    e2e = sub.add_parser("end-to-end", help="index + dedup at growing sizes: wall time, peak RSS, precision/recall")
    e2e.add_argument("--sizes", default="20000,50000")
    e2e.add_argument("--doc-words", type=int, default=200)
    e2e.add_argument("--layout", default="0.8")
    e2e.add_argument("--threshold", type=float)
    e2e.add_argument("--tmp", default=None, help="where the work files go (default: system temp)")
    e2e.set_defaults(func=cmd_end_to_end)
    build = sub.add_parser("build", help="Pile index build, MB of text per CPU-second: this checkout vs a peer")
    build.add_argument("--shards", required=True, help="glob of Pile-format *.jsonl.zst shards")
    build.add_argument("--peer", help="another checkout of the project (e.g. a git worktree of an older commit)")
    build.add_argument("--rounds", type=int, default=3)
    build.add_argument("--no-flow", dest="flow", action="store_false", help="only the shard function, not the flow")
    build.add_argument("--tmp", default=None, help="where the indexes go (default: system temp)")
    build.set_defaults(func=cmd_build)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
