"""Quality signals against datatrove 0.10's Gopher and FineWeb filters, side by side on real text.

    python benchmarks/signals.py --peer-python /tmp/dedup-peers/bin/python [--docs 5000] [--rounds 3]

The documents are real text from ``../shared/realdata`` (:data:`CORPORA`: C4-format, dolma Common
Crawl and mini-Pile web pages, then Stack Exchange posts, MEDLINE abstracts, GSM8K problems, Reddit
comments and Ubuntu chat logs, in that order, each at most ``--max-chars``). For each of datatrove's three
filters (``GopherQualityFilter``, ``GopherRepetitionFilter``, ``FineWebQualityFilter``, default
thresholds) the script compares its keep/drop decision per document with the same rule applied
to our stored signals by the product's own code (:func:`decisions`), and lists the documents where they differ with both
sides' reasons. CPU: ours is :func:`core.filters.signals.signals_table` over the documents in
batches of 512 plus the threshold checks; datatrove's is its three filters' ``filter`` calls in a
child process on the peer venv (``benchmarks/requirements-dedup.txt``: spaCy's English tokenizer
for word splitting, as datatrove loads it), each document through the three in turn as a datatrove
pipeline passes it (so the three share one word split, datatrove's cache). Each side is timed around its loop only (imports and
model loads excluded), the rounds interleaved, the medians compared.
"""

from __future__ import annotations

import argparse
import gzip
import html
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from dedupe.signal_filters import PRESET_WORD, failures, parse_filters  # noqa: E402

REALDATA = REPO.parent / "shared" / "realdata"
WEB = ("c4/c4-format-00000-of-00001.DERIVED.json.gz", "c4/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz",
       "c4/dolma_cc_en_head-0091.jsonl.gz", "c4/dolma_cc_en_head-0174.jsonl.gz",
       "pile/mini-pile-v1-format.DERIVED.jsonl.zst")
FILTERS = ("gopher_quality", "gopher_repetition", "fineweb_quality")
#: Our filter group (a preset of :mod:`dedupe.signal_filters`) for each of datatrove's filters.
GROUPS = {"gopher_quality": "gopher", "gopher_repetition": "gopher_repetition", "fineweb_quality": "fineweb"}


def _lines(path: Path) -> Iterator[bytes]:
    if path.suffix == ".zst":
        import zstandard

        with open(path, "rb") as raw:  # Pushshift dumps use a 2 GiB window
            yield from io.BufferedReader(zstandard.ZstdDecompressor(max_window_size=2**31).stream_reader(raw))
        return
    with gzip.open(path, "rb") as handle:
        yield from handle


def _web() -> Iterator[str]:
    """C4, dolma Common Crawl and the mini Pile, in file order."""
    for name in WEB:
        if (REALDATA / name).exists():
            yield from (json.loads(line).get("text") or "" for line in _lines(REALDATA / name))


class _HTMLText(HTMLParser):
    """A Stack Exchange post body's text: the HTML's character data, entities decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _stackexchange() -> Iterator[str]:
    path = REALDATA / "stackexchange" / "coffee.stackexchange.com-Posts.xml"
    if not path.exists():
        return
    for _, row in ET.iterparse(path):
        if row.tag == "row":
            parser = _HTMLText()
            parser.feed(row.get("Body") or "")
            parser.close()
            yield "\n".join(filter(None, [row.get("Title"), "".join(parser.parts)]))
            row.clear()


def _medline() -> Iterator[str]:
    path = REALDATA / "pubmed" / "baseline" / "medline16n0902.xml.gz"
    if not path.exists():
        return
    with gzip.open(path) as handle:
        for _, citation in ET.iterparse(handle):
            if citation.tag == "MedlineCitation":
                parts = [citation.findtext(".//ArticleTitle") or ""]
                parts += ["".join(a.itertext()) for a in citation.iterfind(".//AbstractText")]
                yield "\n".join(parts)
                citation.clear()


def _gsm8k() -> Iterator[str]:
    path = REALDATA / "reasoning" / "gsm8k_test.first500.jsonl"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            yield f"{item['question']}\n{item['answer']}"


def _reddit() -> Iterator[str]:
    path = REALDATA / "dialogue" / "reddit" / "RC_2005-12.zst"
    if path.exists():
        for line in _lines(path):
            body = html.unescape(json.loads(line).get("body") or "")
            if body not in ("[deleted]", "[removed]"):
                yield body


def _ubuntu() -> Iterator[str]:
    path = REALDATA / "dialogue" / "ubuntu" / "dialogues_small.json"
    if path.exists():
        yield from (item["text"] for item in json.loads(path.read_text(encoding="utf-8")))


#: The corpora, in the order documents are taken: web pages first, then the other real registers
#: (Q&A posts, abstracts, maths word problems, comments, chat logs) for line and word rules on
#: text that is not a web page.
CORPORA: tuple[Callable[[], Iterator[str]], ...] = (_web, _stackexchange, _medline, _gsm8k, _reddit, _ubuntu)


def load_texts(limit: int, max_chars: int) -> list[str]:
    """Up to ``limit`` non-empty texts of the real corpora, in order."""
    texts: list[str] = []
    for corpus in CORPORA:
        for text in corpus():
            if text.strip():
                texts.append(text[:max_chars])
            if len(texts) >= limit:
                return texts
    return texts


def decisions(table: pa.Table) -> dict[str, list[str | None]]:
    """Per filter, each document's first failed rule (None: kept), judged by the product's own code.

    The rules are the presets users get (``{group: defaults}`` through :func:`parse_filters`) and
    the judgement is :func:`failures`, the label stage's: the benchmark measures what users get.
    """
    rules = parse_filters({group: PRESET_WORD for group in GROUPS.values()})
    failed = failures(table, rules)
    ids = table.column("id").to_pylist()
    out: dict[str, list[str | None]] = {}
    for name, group in GROUPS.items():
        out[name] = [next((r for r in failed.get(doc_id, ()) if r.startswith(f"{group}.")), None) for doc_id in ids]
    return out


def ours(texts: list[str]) -> tuple[float, dict[str, list[str | None]]]:
    """CPU seconds of our signals plus the threshold checks, and the decisions."""
    from core.filters.signals import signals_table

    signals_table(["warm"], ["warm up the compiled pass"])  # its load from numba's cache is not per document
    started = time.process_time()
    tables = [signals_table([str(start + i) for i in range(len(batch))], batch)
              for start in range(0, len(texts), 512) for batch in [texts[start:start + 512]]]
    result = decisions(pa.concat_tables(tables))
    return time.process_time() - started, result


PEER = r'''
import json, sys, time
from datatrove.data import Document
from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter, FineWebQualityFilter
texts = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
filters = {"gopher_quality": GopherQualityFilter(), "gopher_repetition": GopherRepetitionFilter(),
           "fineweb_quality": FineWebQualityFilter()}
def reason(result):
    if result is True:
        return None
    return result[1] if isinstance(result, tuple) else "dropped"
docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
for f in filters.values():
    f.filter(Document(text="warm up the word tokenizer, please.", id="w"))
started = time.process_time()
out = {name: [] for name in filters}
for d in docs:  # document by document through the three filters, as a datatrove pipeline runs them
    for name, f in filters.items():  # (its word split cached between them: split_into_words' lru_cache)
        out[name].append(reason(f.filter(d)))
print(json.dumps({"cpu": time.process_time() - started, "decisions": out}))
'''


def peer(python: str, texts_file: Path) -> tuple[float, dict[str, list[str | None]]]:
    """CPU seconds of datatrove's three filters over the texts (a child on the peer venv), and its decisions."""
    done = subprocess.run([python, "-c", PEER, str(texts_file)], capture_output=True, text=True, check=True)
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    return float(payload["cpu"]), payload["decisions"]


def compare(texts: list[str], mine: dict[str, list[str | None]], theirs: dict[str, list[str | None]],
            show: int) -> dict[str, float]:
    """Per filter: the share of documents both keep or both drop; prints the differences."""
    agreement = {}
    for name in FILTERS:
        differ = [i for i, (a, b) in enumerate(zip(mine[name], theirs[name], strict=True)) if (a is None) != (b is None)]
        agreement[name] = 1 - len(differ) / len(texts)
        print(f"{name}: same decision on {len(texts) - len(differ)}/{len(texts)} ({agreement[name]:.2%}); "
              f"kept by us {sum(r is None for r in mine[name])}, by datatrove {sum(r is None for r in theirs[name])}")
        for i in differ[:show]:
            print(f"  doc {i}: ours {mine[name][i] or 'keep'} / datatrove {theirs[name][i] or 'keep'}: "
                  f"{texts[i][:90]!r}")
    return agreement


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-python", required=True, help="python of a venv with datatrove 0.10 and spaCy")
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--max-chars", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--show", type=int, default=5, help="differences printed per filter")
    args = parser.parse_args(argv)
    texts = load_texts(args.docs, args.max_chars)
    if not texts:
        print(f"no real data under {REALDATA}", file=sys.stderr)
        return 2
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    print(f"{len(texts)} documents, {megabytes:.1f} MB of real text")
    with tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.jsonl"
        texts_file.write_text("".join(json.dumps(t) + "\n" for t in texts), encoding="utf-8")
        our_cpu, peer_cpu = [], []
        for _ in range(args.rounds):  # interleaved: each round runs both
            seconds, mine = ours(texts)
            our_cpu.append(seconds)
            seconds, theirs = peer(args.peer_python, texts_file)
            peer_cpu.append(seconds)
    compare(texts, mine, theirs, args.show)
    ours_median, peer_median = statistics.median(our_cpu), statistics.median(peer_cpu)
    print(f"CPU per round: ours {[round(s, 2) for s in our_cpu]} s, datatrove {[round(s, 2) for s in peer_cpu]} s")
    print(f"median: ours {ours_median:.2f} s ({megabytes / ours_median:.1f} MB/CPU-s), datatrove {peer_median:.2f} s "
          f"({megabytes / peer_median:.2f} MB/CPU-s): {peer_median / ours_median:.1f}x less CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
