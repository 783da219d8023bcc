"""The Pile-scale path measured: a reference index of N Pile-format documents, then a corpus matched against it.

    python benchmarks/pile_scale.py --sizes 1000000 --corpus 100000           # ~1 GB of reference text
    python benchmarks/pile_scale.py --sizes 1000000,3000000,10000000 --corpus 1000000 --workers 2
    python benchmarks/pile_scale.py --sizes 200000 --corpus 20000 --work /tmp --keep   # keep the files
    python benchmarks/pile_scale.py --sizes 1000000 --work /scratch --reuse   # shards generated once, then reused
    python benchmarks/pile_scale.py --sizes 3000000 --work /scratch --reuse --compare-workers 1,2   # build only

With ``--compare-workers 1,2`` only the build runs: the same reference is indexed with each worker
count (``--runner dask`` unless another runner is named), ``--rounds`` times in interleaved order
(1, 2, then 2, 1, ...), each into a fresh index folder, while the CPU of every process of the build
is polled once a second. Reported per worker count (medians): wall, CPU of the process tree, the
parts' task time and CPU (the Dask workers' task threads), the window in which the parts ran and
the wall outside it (start-up, commit, shutdown), and the CPU that is not the parts' by process
(the flow process with the Dask scheduler and nannies, the Prefect server, the workers' main
threads: imports and Dask's event loop), in all and as a share of a core during the window (what
competed with the parts). Then the speed-up (median wall with the first count over the last), the
ideal speed-up from those figures, and whether every index file is byte-identical across all
runs (sha256 of each; ``index.json`` and ``parts/*.json`` hashed without the parts' build
``seconds``, the one field that times the run).

Per reference size N, the way a user runs it:

1. **Generate** (not timed): N documents in the Pile's layout, ``--shards`` (30) ``NN.jsonl.zst``
   files of ``{"text", "meta": {"pile_set_name"}}`` lines, ``pile_set_name`` drawn over the real
   subsets by their share of the Pile. Text is real prose: word windows cut from the public-domain
   books shipped in ``sources/samples/data`` and joined, lengths drawn from a log-normal (median
   ~400 words, a long tail up to 20,000 words).
2. **Build**: ``python -m flows.pile_index --inputs 'ref/*.jsonl.zst' --index idx --workers W``.
3. **Match**: a corpus of ``--corpus`` documents (an output root: document shards and manifest
   rows, as a source flow leaves them) holding planted copies of reference documents, exact and
   near at known Jaccard levels (0.5 to 1.0), run through ``python -m flows.dedup --data corpus
   --against idx --workers W --layout 0.7 --set threshold=0.8`` (within-source dedup off, so every
   decision is a reference match): candidates from the 14x9 bands, verified at 0.8 on the index's
   stored signatures, the recall-first way to match against the Pile (``--layout``, ``--threshold``).

Reported per size: build MB of text per CPU-second (flow process, Prefect server and workers
together) and per wall-second, peak RSS of any process (``ru_maxrss`` of the whole process tree),
index bytes per document, match CPU per corpus document, and recall (planted pairs with true
Jaccard >= 0.85 found, matched to the right reference line) and precision (matches whose reference
document's true word 5-gram Jaccard with the matched document reaches the threshold less 0.05).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # the product; run as a script, benchmarks/ (dedup.py's near-copy maker) is first
    sys.path.insert(0, str(REPO))

#: The Pile's subsets with their approximate share of documents (Gao et al. 2020, table 1, by documents).
PILE_SETS = {
    "Pile-CC": 0.25, "PubMed Central": 0.015, "Books3": 0.0001, "OpenWebText2": 0.08, "ArXiv": 0.006,
    "Github": 0.095, "FreeLaw": 0.017, "StackExchange": 0.075, "USPTO Backgrounds": 0.028,
    "PubMed Abstracts": 0.075, "Gutenberg (PG-19)": 0.0001, "OpenSubtitles": 0.0002, "Wikipedia (en)": 0.029,
    "DM Mathematics": 0.0053, "Ubuntu IRC": 0.00001, "BookCorpus2": 0.00001, "EuroParl": 0.00003,
    "HackerNews": 0.004, "YoutubeSubtitles": 0.0001, "PhilPapers": 0.00002, "NIH ExPorter": 0.0047,
    "Enron Emails": 0.0025,
}
#: Jaccard levels of planted near copies (1.0 = an exact copy).
LEVELS = (1.0, 0.95, 0.9, 0.85, 0.7, 0.5)
RECALL_AT = 0.85


@dataclass(frozen=True)
class Measured:
    """CPU, wall and peak RSS of one command and every process it started."""

    cpu_s: float
    wall_s: float
    peak_rss_mb: float
    returncode: int
    tail: str
    samples: list[Sample] = field(default_factory=list)


@dataclass(frozen=True)
class Sample:
    """The cumulative CPU of each process of a command's tree at one moment (see :class:`TreeSampler`)."""

    at_s: float
    #: pid -> (role, CPU-s of the process, CPU-s of its main thread)
    cpu: dict[int, tuple[str, float, float]]


#: What a process of a build is, by a piece of its command line (the first match wins); a Dask
#: worker is started by its nanny through multiprocessing's spawn.
ROLES = (("flows.pile_index", "flow"), ("uvicorn", "prefect server"), ("spawn_main", "dask worker"))


def role_of(cmdline: list[str]) -> str:
    line = " ".join(cmdline)
    return next((role for piece, role in ROLES if piece in line), "other")


class TreeSampler:
    """Polls the CPU of every process under ``root`` (and of each one's main thread) every ``every_s``.

    ``os.wait4`` gives the tree's total only; this tells the flow process (Prefect client, Dask
    scheduler and nannies), the Prefect server and each Dask worker apart, and in a worker its
    main thread (start-up imports, Dask's event loop) from the threads that run the parts. A
    process's CPU after its last poll is missed (at most ``every_s`` of it); the report shows
    the tree's total beside the sum. The polling runs in this process, beside the build: one
    poll of a build's ~6 processes costs a few milliseconds of CPU.
    """

    def __init__(self, root: int, every_s: float = 1.0) -> None:
        import psutil

        self.root, self.every_s = psutil.Process(root), every_s
        self.samples: list[Sample] = []
        self.roles: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="tree-sampler", daemon=True)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        started = time.monotonic()
        while not self._stop.is_set():
            self.samples.append(Sample(time.monotonic() - started, self._read()))
            self._stop.wait(self.every_s)

    def _read(self) -> dict[int, tuple[str, float, float]]:
        import psutil

        cpu: dict[int, tuple[str, float, float]] = {}
        try:
            processes = self.root.children(recursive=True)
        except psutil.Error:  # the launcher is gone: the command ended
            return cpu
        for process in processes:
            try:
                with process.oneshot():
                    times = process.cpu_times()
                    main = sum(t.user_time + t.system_time for t in process.threads() if t.id == process.pid)
                    role = self.roles.get(process.pid) or self.roles.setdefault(process.pid, role_of(process.cmdline()))
            except psutil.Error:  # ended between the listing and the read
                continue
            cpu[process.pid] = (role, times.user + times.system, main)
        return cpu


#: Runs a command and writes the ``os.wait4`` usage of it (and its reaped descendants) to a file.
#: It is a fresh, small interpreter: ``ru_maxrss`` of a process started straight from this one
#: would carry this process's own peak (the reference texts it keeps, gigabytes at 10M) across
#: the exec, and report that instead of the flow's.
_LAUNCHER = ("import json,os,subprocess,sys;p=subprocess.Popen(sys.argv[2:]);_,s,u=os.wait4(p.pid,0);"
             "open(sys.argv[1],'w').write(json.dumps([u.ru_utime+u.ru_stime,u.ru_maxrss,"
             "os.waitstatus_to_exitcode(s)]))")


def measure(argv: list[str], cwd: Path, by_process: bool = False) -> Measured:
    """Run ``argv``: its CPU and the largest RSS of it and its reaped descendants (``os.wait4``,
    taken by a small launcher process, see ``_LAUNCHER``); with ``by_process``, also the CPU of
    each process over time (:class:`TreeSampler`)."""
    log, usage_file = cwd / "command.log", cwd / "usage.json"
    usage_file.unlink(missing_ok=True)
    started = time.monotonic()
    samples: list[Sample] = []
    with log.open("wb") as out:
        launcher = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(usage_file), *argv], cwd=cwd, stdout=out,
                                    stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO)})
        if by_process:
            with TreeSampler(launcher.pid) as sampler:
                launcher.wait()
            samples = sampler.samples
        launcher.wait()
    wall = time.monotonic() - started
    tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
    if not usage_file.exists():
        return Measured(0.0, wall, 0.0, launcher.returncode or 1, tail, samples)
    cpu_s, maxrss_kb, code = json.loads(usage_file.read_text(encoding="utf-8"))
    return Measured(cpu_s, wall, maxrss_kb / 1024, code, tail, samples)


#: The CPU of a build, split: the parts themselves, and the rest by process.
TASKS, WORKER_MAIN, UNSAMPLED = "dask worker tasks", "dask worker main threads", "not sampled"


def split_sample(sample: Sample) -> dict[str, float]:
    """CPU-s by role in one sample; a Dask worker's split into its main thread and its other
    threads (the ones that run the parts, and Prefect's log and event shipping for them)."""
    split: dict[str, float] = {}
    for role, cpu, main in sample.cpu.values():
        if role == "dask worker":
            split[WORKER_MAIN] = split.get(WORKER_MAIN, 0.0) + main
            split[TASKS] = split.get(TASKS, 0.0) + cpu - main
        else:
            split[role] = split.get(role, 0.0) + cpu
    return split


@dataclass(frozen=True)
class CpuSplit:
    """Where a build's CPU went: by role over the run, and by role while the parts ran (the window,
    from ``start_s`` after the launch for ``window_s``)."""

    total: dict[str, float]
    start_s: float
    window_s: float
    in_window: dict[str, float]


def cpu_split(measured: Measured) -> CpuSplit:
    """The CPU of a sampled build by role, in all and in the parts' window.

    The window runs from the last poll before the workers' part threads used any CPU to the
    first poll that found all of their CPU (±1 poll); in it, everything but the parts competes
    with them for the cores. Each role's CPU is summed over its processes as last polled (a
    process that ended counts with its last poll); what the polls missed is :data:`UNSAMPLED`.
    """
    last: dict[int, tuple[str, float, float]] = {}
    timeline = []
    for sample in measured.samples:
        last.update(sample.cpu)
        timeline.append((sample.at_s, split_sample(Sample(sample.at_s, dict(last)))))
    if not timeline:
        return CpuSplit({}, 0.0, 0.0, {})
    at_end = timeline[-1][1]
    total = {**at_end, UNSAMPLED: max(measured.cpu_s - sum(at_end.values()), 0.0)}
    final = at_end.get(TASKS, 0.0)
    start = max((i for i, (_, split) in enumerate(timeline) if split.get(TASKS, 0.0) <= 0.05), default=0)
    end = min((i for i, (_, split) in enumerate(timeline) if split.get(TASKS, 0.0) >= final - 0.05), default=start)
    (t0, first), (t1, second) = timeline[start], timeline[max(end, start)]
    return CpuSplit(total, t0, t1 - t0, {role: second.get(role, 0.0) - first.get(role, 0.0) for role in second})


# -- generation ---------------------------------------------------------------------------------
def vocabulary_words() -> list[str]:
    """Every word of the shipped public-domain prose, in text order (windows of it read as prose)."""
    from sources.samples.prose import TEXTS, paragraphs

    return [w for text in TEXTS for p in paragraphs(text.key) for w in p.split()]


class TextMaker:
    """Documents of real prose: log-normal length, made of word windows at random places."""

    def __init__(self, seed: int) -> None:
        self.words = vocabulary_words()
        self.rnd = random.Random(seed)

    def document(self) -> str:
        # capped at 20,000 words: longer windows-of-prose documents would cover most of the shipped
        # prose and look alike, which real long documents (books) do not
        length = min(int(self.rnd.lognormvariate(6.0, 1.1)) + 20, 20_000)
        parts: list[str] = []
        total = 0
        while total < length:
            start = self.rnd.randrange(len(self.words) - 60)
            take = self.rnd.randint(8, 60)
            parts.append(" ".join(self.words[start:start + take]))
            total += take
        return " ".join(parts)


def near_copy(text: str, jaccard: float, rnd: random.Random) -> str:
    """A copy whose word 5-gram Jaccard with ``text`` is about ``jaccard`` (an exact copy at 1.0)."""
    from dedup import perturb  # benchmarks/dedup.py: spread-out words replaced

    return text if jaccard >= 1.0 else perturb(text, jaccard, rnd)


def write_reference(folder: Path, documents: int, shards: int, seed: int,
                    keep_every: int) -> tuple[dict[tuple[str, int], str], float]:
    """The Pile-format shards; returns a sample of documents by (shard name, 1-based line) for
    planting, and the megabytes of document text written (what build throughput is per)."""
    import zstandard

    folder.mkdir(parents=True, exist_ok=True)
    maker = TextMaker(seed)
    names, weights = list(PILE_SETS), list(PILE_SETS.values())
    kept: dict[tuple[str, int], str] = {}
    per_shard = -(-documents // shards)
    made = text_bytes = 0
    for shard_no in range(shards):
        name = f"{shard_no:02d}.jsonl.zst"
        count = min(per_shard, documents - made)
        with open(folder / name, "wb") as handle, zstandard.ZstdCompressor(level=3).stream_writer(handle) as out:
            for line in range(1, count + 1):
                text = maker.document()
                text_bytes += len(text.encode("utf-8"))
                subset = maker.rnd.choices(names, weights)[0]
                out.write(json.dumps({"text": text, "meta": {"pile_set_name": subset}}).encode() + b"\n")
                if (made + line) % keep_every == 0:
                    kept[(name, line)] = text
        made += count
    return kept, text_bytes / 1e6


def write_corpus(out: Path, documents: int, kept: dict[tuple[str, int], str], planted_share: float,
                 seed: int) -> tuple[list[dict[str, object]], float]:
    """An output root of ``documents`` (shards + manifest rows); returns the planted copies' truth
    and the megabytes of text (what match throughput is per)."""
    from core.document import Document
    from core.manifest import Manifest
    from core.shards import ShardWriter

    rnd = random.Random(seed + 1)
    maker = TextMaker(seed + 2)
    targets = sorted(kept)
    truth: list[dict[str, object]] = []
    text_bytes = 0
    manifest = Manifest.for_output(out)
    with ShardWriter(out, out / "docs" / "web" / "en", "corpus", "web", "en") as writer:
        for i in range(documents):
            doc_id = f"c{i:09d}"
            if targets and rnd.random() < planted_share:
                shard, line = targets[rnd.randrange(len(targets))]
                level = LEVELS[rnd.randrange(len(LEVELS))]
                text = near_copy(kept[(shard, line)], level, rnd)
                truth.append({"id": doc_id, "shard": shard, "line": line, "level": level})
            else:
                text = maker.document()
            writer.write(Document(doc_id, text, "web", {"language": "en"}))
            text_bytes += len(text.encode("utf-8"))
    manifest.record_shards("pile-scale-corpus", [s.to_dict() for s in writer.finished], "bench", "web", "bench")
    return truth, text_bytes / 1e6


# -- scoring ---------------------------------------------------------------------------------------
def true_jaccard(a: str, b: str) -> float:
    from dedupe.shingles import shingle_items

    left, right = set(shingle_items(a)), set(shingle_items(b))
    return len(left & right) / max(len(left | right), 1)


def reference_texts(ref: Path, wanted: set[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """The texts of some reference lines ``(shard name, 1-based line)``, read back from the shards
    (only the wanted lines are parsed)."""
    import io

    import zstandard

    texts: dict[tuple[str, int], str] = {}
    for shard in sorted({name for name, _ in wanted}):
        lines = {line for name, line in wanted if name == shard}
        with open(ref / shard, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
            for number, line in enumerate(io.BufferedReader(reader, 1 << 20), start=1):  # type: ignore[arg-type]
                if number in lines:
                    texts[(shard, number)] = json.loads(line)["text"]
    return texts


def score(out: Path, ref: Path, truth: list[dict[str, object]], threshold: float) -> dict[str, float]:
    """Recall and precision of the reference matches, from the dedup attributes.

    Recall: planted copies of level >= 0.85 matched to their own reference line. Precision: a
    match is right when the true word 5-gram Jaccard of the document and the reference document
    it was matched to reaches the threshold less 0.05 (MinHash's estimate scatters around it),
    planted or not (generated prose can overlap for real); ``precision_own_line`` is the stricter
    share of matches that are planted copies matched to their own line at that Jaccard. Both on
    samples of at most 2,000.
    """
    import pyarrow.parquet as pq

    from core.shards import read_documents

    found: dict[str, tuple[str, int]] = {}
    for path in (out / "attributes").rglob("*.parquet"):
        for row in pq.read_table(path, columns=["id", "reference_shard", "reference_line"]).to_pylist():
            if row["reference_shard"] is not None:
                found[row["id"]] = (row["reference_shard"], row["reference_line"])
    planted = {str(t["id"]): t for t in truth}
    positives = [t for t in truth if float(t["level"]) >= RECALL_AT]  # type: ignore[arg-type]
    recall_sample = positives[:: max(len(positives) // 2000, 1)]
    hits = sum(found.get(str(t["id"])) == (t["shard"], t["line"]) for t in recall_sample)
    matched = sorted(found)
    checked = set(matched[:: max(len(matched) // 2000, 1)])
    texts = {d.id: d.text for p in (out / "docs").rglob("*.parquet") for d in read_documents(p) if d.id in checked}
    references = reference_texts(ref, {found[doc_id] for doc_id in checked})
    right = own_line = 0
    for doc_id in checked:
        similar = true_jaccard(texts[doc_id], references[found[doc_id]]) >= threshold - 0.05
        right += similar
        item = planted.get(doc_id)
        own_line += similar and item is not None and found[doc_id] == (item["shard"], item["line"])
    return {"recall": hits / max(len(recall_sample), 1), "precision": right / max(len(checked), 1),
            "precision_own_line": own_line / max(len(checked), 1), "matches": len(found), "planted": len(truth)}


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def reference_shards(ref: Path, size: int, args: argparse.Namespace) -> tuple[dict[tuple[str, int], str], float]:
    """Generate the reference shards, or reuse those a run with ``--reuse`` left (``kept.json`` last)."""
    done = ref / "kept.json"
    if args.reuse and done.exists():
        saved = json.loads(done.read_text(encoding="utf-8"))
        return {(shard, line): text for shard, line, text in saved["kept"]}, float(saved["text_mb"])
    keep_every = max(size // max(args.corpus // 4, 1), 1)
    kept, text_mb = write_reference(ref, size, args.shards, args.seed, keep_every)
    if args.reuse:
        done.write_text(json.dumps({"kept": [[s, n, t] for (s, n), t in kept.items()], "text_mb": text_mb}))
    return kept, text_mb


def run_size(size: int, args: argparse.Namespace, work: Path) -> dict[str, object]:
    """Generate, build and match at one reference size; returns the row."""
    ref, index, corpus = work / "ref", work / "index", work / "corpus"
    for made in (index, corpus):  # a reused folder keeps its reference shards only
        shutil.rmtree(made, ignore_errors=True)
    started = time.monotonic()
    kept, text_mb = reference_shards(ref, size, args)
    truth, corpus_mb = write_corpus(corpus, args.corpus, kept, args.planted, args.seed)
    print(f"size {size:,}: generated {text_mb:,.0f} MB of reference text, {args.corpus:,} corpus documents "
          f"({len(truth):,} planted) in {time.monotonic() - started:.0f} s", flush=True)
    python = [sys.executable, "-m"]
    workers = ["--workers", str(args.workers), "--runner", args.runner]
    build = build_index(ref, index, args.workers, args.runner, work)
    threshold = ["--set", f"threshold={args.threshold}"] if args.threshold is not None else []
    match = measure([*python, "flows.dedup", "--data", str(corpus), "--against", str(index), "--set",
                     "within_sources=false", "--layout", args.layout, *threshold, *workers], work)
    if match.returncode != 0:
        raise SystemExit(f"flows.dedup failed:\n{match.tail}")
    from dedupe.lsh import BandLayout

    scores = score(corpus, ref, truth, BandLayout.named(args.layout, args.threshold).threshold)
    index_bytes = du(index)
    return {"documents": size, "text_mb": round(text_mb), "build_cpu_s": round(build.cpu_s, 1),
            "build_wall_s": round(build.wall_s, 1), "mb_per_cpu_s": round(text_mb / build.cpu_s, 1),
            "mb_per_wall_s": round(text_mb / build.wall_s, 1), "build_peak_rss_mb": round(build.peak_rss_mb),
            "index_bytes_per_doc": round(index_bytes / size), "match_cpu_s": round(match.cpu_s, 1),
            "match_mb_per_cpu_s": round(corpus_mb / match.cpu_s, 1),
            "match_ms_per_doc": round(1000 * match.cpu_s / args.corpus, 3),
            "match_peak_rss_mb": round(match.peak_rss_mb), **{k: round(v, 4) for k, v in scores.items()}}


def build_index(ref: Path, index: Path, workers: int, runner: str, work: Path, by_process: bool = False) -> Measured:
    """``flows.pile_index`` over every shard of ``ref`` into ``index``, measured; exits when it fails."""
    build = measure([sys.executable, "-m", "flows.pile_index", "--inputs", str(ref / "*.jsonl.zst"),
                     "--index", str(index), "--workers", str(workers), "--runner", runner], work, by_process)
    if build.returncode != 0:
        raise SystemExit(f"flows.pile_index --workers {workers} failed:\n{build.tail}")
    return build


# -- 1 vs 2 workers: same bytes, how much faster ---------------------------------------------------
#: Fields of a part's record that time the run instead of describing what was built.
RUN_FIELDS = frozenset({"seconds"})
RECORDS = ("index.json", "parts/")
#: The roles whose CPU is not the parts', in the order the report lists them.
NON_PART = ("flow", "prefect server", WORKER_MAIN, "other", UNSAMPLED)


def _untimed(value: object) -> object:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in RUN_FIELDS}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def index_digests(index: Path) -> dict[str, str]:
    """sha256 of every file of an index by relative path; a JSON record (``index.json``,
    ``parts/*.json``) is hashed as its canonical JSON without :data:`RUN_FIELDS`."""
    digests = {}
    for path in sorted(p for p in index.rglob("*") if p.is_file()):
        name = path.relative_to(index).as_posix()
        data = path.read_bytes()
        if name.startswith(RECORDS):
            data = json.dumps(_untimed(json.loads(data)), sort_keys=True).encode()
        digests[name] = hashlib.sha256(data).hexdigest()
    return digests


def part_seconds(index: Path) -> list[float]:
    """Each part's build time (its task's wall seconds, in part order), from ``index.json``."""
    meta = json.loads((index / "index.json").read_text(encoding="utf-8"))
    return [float(p["seconds"]) for p in meta["parts"]]


def _load() -> str:
    return "/".join(f"{v:.1f}" for v in os.getloadavg())


def build_figures(build: Measured, index: Path) -> dict[str, float]:
    """One build's figures: wall, CPU, the parts' task time and CPU, the window they ran in, and the
    CPU of everything else by role, in all (``cpu_s_<role>``) and as a share of a core while the
    parts ran (``core_share_<role>``: what competed with them)."""
    split = cpu_split(build)
    window = max(split.window_s, 1e-9)
    competing = sum(split.in_window.get(role, 0.0) for role in NON_PART[:-1])
    return {"wall_s": build.wall_s, "cpu_s": build.cpu_s, "part_s_sum": sum(part_seconds(index)),
            "task_cpu_s": split.total.get(TASKS, 0.0), "window_s": split.window_s, "before_s": split.start_s,
            "after_s": build.wall_s - split.start_s - split.window_s, "outside_s": build.wall_s - split.window_s,
            **{f"cpu_s_{role}": split.total.get(role, 0.0) for role in NON_PART},
            **{f"core_share_{role}": split.in_window.get(role, 0.0) / window for role in NON_PART[:-1]},
            "competing_cpu_s": competing}


def _logged_build(ref: Path, index: Path, workers: int, runner: str, work: Path, label: str) -> dict[str, float]:
    """One measured build into a fresh ``index`` (its figures), printed with the load average around it."""
    shutil.rmtree(index, ignore_errors=True)
    before = _load()
    build = build_index(ref, index, workers, runner, work, by_process=True)
    figures = build_figures(build, index)
    others = ", ".join(f"{role} {figures[f'cpu_s_{role}']:.1f}" for role in NON_PART)
    print(f"{label}, {workers} worker(s): wall {build.wall_s:.1f} s, CPU {build.cpu_s:.1f} s (parts {figures['task_cpu_s']:.1f}; "
          f"{others}), peak RSS {build.peak_rss_mb:.0f} MB, load {before} -> {_load()}", flush=True)
    return figures


def compare_workers(size: int, args: argparse.Namespace, work: Path) -> dict[str, object]:
    """Build the reference of ``size`` documents with each of ``--compare-workers``, interleaved.

    Each build is sampled by process (:class:`TreeSampler`), so the row holds, per worker count
    (medians over the rounds): wall, CPU, the parts' task time (``part_s_sum``, their tasks' wall
    seconds) and CPU (``task_cpu_s``), the parts' window and the wall before and after it
    (start-up; commit and shutdown), and every other process's CPU (see :func:`build_figures`).

    Two speed-ups from CPU figures, which a loaded machine disturbs far less than the wall ratio:
    both take a build as the fixed cost (the wall outside the window: the same work for any
    count, so the shortest of all runs, the least disturbed, stands for every run) plus the
    parts' CPU spread over the workers, each a core of its own. ``ideal_speedup`` gives the last
    count the first count's parts' CPU spread evenly, nothing beside it: the ceiling.
    ``cpu_bound_speedup`` gives it its own parts' CPU plus all the CPU that ran beside the parts
    (flow, server, workers' main threads): what as many idle cores as workers would give,
    contention for the cores included (not an uneven end of the last parts).
    """
    ref = work / "ref"
    _, text_mb = reference_shards(ref, size, args)
    counts = [int(c) for c in args.compare_workers.split(",")]
    runs: dict[int, list[dict[str, float]]] = {w: [] for w in counts}
    digests: list[dict[str, str]] = []
    for round_no in range(args.rounds):
        for workers in counts if round_no % 2 == 0 else counts[::-1]:
            index = work / f"index-workers-{workers}"
            runs[workers].append(_logged_build(ref, index, workers, args.runner, work, f"round {round_no + 1}"))
            digests.append(index_digests(index))
            if not args.keep:
                shutil.rmtree(index, ignore_errors=True)
    differing = sorted({name for d in digests for name in set(d) | set(digests[0]) if d.get(name) != digests[0].get(name)})
    median = {w: {key: statistics.median(run[key] for run in runs[w]) for key in runs[w][0]} for w in counts}
    first, last = counts[0], counts[-1]
    one, many = median[first], median[last]
    fixed = min(run["outside_s"] for w in counts for run in runs[w])
    alone = fixed + one["task_cpu_s"] / first  # the first count's build, each worker a core of its own
    ideal = alone / (fixed + one["task_cpu_s"] / last)
    expected = alone / (fixed + (many["task_cpu_s"] + many["competing_cpu_s"]) / last)
    return {"documents": size, "text_mb": round(text_mb), "runner": args.runner, "rounds": args.rounds,
            "speedup": round(one["wall_s"] / many["wall_s"], 3), "ideal_speedup": round(ideal, 3),
            "cpu_bound_speedup": round(expected, 3), "fixed_s": round(fixed, 1), "identical": not differing,
            "files": len(digests[0]),
            "differing": differing[:10], "load_after": _load(),
            **{f"{key}_{w}": round(value, 3 if key.startswith("core_share") else 1)
               for w in counts for key, value in median[w].items()}}


#: The whole Pile (v1): documents, megabytes of text, shards (one index part each).
PILE_DOCS, PILE_MB, PILE_SHARDS = 210e6, 825e3, 30
#: A LLaMA-size corpus to match: tokens, and UTF-8 bytes per token (an assumption: ~4 for English
#: web text with LLaMA's tokenizer, more for code).
LLAMA_TOKENS, BYTES_PER_TOKEN = 1.2e12, 4.3


def projection(row: dict[str, object]) -> list[str]:
    """The whole Pile from one measured row: per-byte and per-document costs times the Pile's size.

    Assumes the measured rates hold (the build is per shard, nothing global, so it is linear by
    construction; matching's joins read the reference band keys once per band, small beside
    signing the corpus), that workers scale to the cores (each worker builds one whole shard, so
    the index build uses at most ``PILE_SHARDS`` cores), and that peak memory per worker does not
    grow with the index (streamed in batches of documents; measured by ``ru_maxrss``).
    """
    build_core_h = PILE_MB / float(row["mb_per_cpu_s"]) / 3600  # type: ignore[arg-type]
    per_shard_h = build_core_h / PILE_SHARDS
    llama_mb = LLAMA_TOKENS * BYTES_PER_TOKEN / 1e6
    match_core_h = llama_mb / float(row["match_mb_per_cpu_s"]) / 3600  # type: ignore[arg-type]
    disk_gb = float(row["index_bytes_per_doc"]) * PILE_DOCS / 1e9  # type: ignore[arg-type]
    return [
        f"build the Pile index ({PILE_DOCS / 1e6:.0f}M documents, {PILE_MB / 1e3:.0f} GB): {build_core_h:,.1f} core-hours; "
        f"one 2-core machine {build_core_h / 2:,.1f} h; 64 cores {max(build_core_h / 64, per_shard_h):,.2f} h "
        f"(one shard per worker: {PILE_SHARDS} busy, {per_shard_h:,.2f} h each)",
        f"index on disk: {disk_gb:,.0f} GB; peak RSS per process {row['build_peak_rss_mb']} MB (build), "
        f"{row['match_peak_rss_mb']} MB (match)",
        f"match {LLAMA_TOKENS / 1e12:.1f}T tokens (~{llama_mb / 1e6:.1f} TB at {BYTES_PER_TOKEN} bytes/token): "
        f"{match_core_h:,.0f} core-hours; one 2-core machine {match_core_h / 2 / 24:,.1f} days; "
        f"64 cores {match_core_h / 64:,.1f} h",
    ]


def print_sizes(rows: list[dict[str, object]]) -> None:
    """The table of the full runs (build and match), the projection and the build's linearity."""
    cols = list(rows[0]) if rows else []
    print("\n" + " ".join(f"{c:>18}" for c in cols))
    for row in rows:
        print(" ".join(f"{row[c]!s:>18}" for c in cols))
    if rows:
        print("\nprojected from the largest size:\n  " + "\n  ".join(projection(rows[-1])))
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        per_doc = [float(r["build_cpu_s"]) / int(r["documents"]) for r in (first, last)]  # type: ignore[arg-type]
        print(f"\nbuild CPU per document: {1e6 * per_doc[0]:.1f} us at {first['documents']:,}, "
              f"{1e6 * per_doc[1]:.1f} us at {last['documents']:,} ({per_doc[1] / per_doc[0] - 1:+.1%})")
        print(f"build at the margin, {first['documents']:,} -> {last['documents']:,} documents: "
              f"{marginal_rate(first, last):.1f} MB of text per CPU-second (the run's fixed cost cancels out)")


def marginal_rate(smaller: dict[str, object], larger: dict[str, object]) -> float:
    """MB of text per CPU-second of the build between two sizes: the extra text over the extra CPU.

    A run's fixed cost (Prefect's server, imports, the workers' start and the compiled kernel's
    load) is the same at both sizes and drops out; what is left is the cost of indexing more text.
    """
    text = float(larger["text_mb"]) - float(smaller["text_mb"])  # type: ignore[arg-type]
    cpu = float(larger["build_cpu_s"]) - float(smaller["build_cpu_s"])  # type: ignore[arg-type]
    return text / cpu if cpu > 0 else float("nan")


def print_comparison(row: dict[str, object], counts: list[int]) -> None:
    """The worker comparison in words and one table: speed-up, same bytes, where the CPU went."""
    first, last = counts[0], counts[-1]
    print(f"\n{row['documents']:,} documents ({row['text_mb']:,} MB), --runner {row['runner']}, medians of "
          f"{row['rounds']} round(s): speed-up {row['speedup']}x with {last} workers over {first}; "
          f"index files byte-identical across every run: {'yes' if row['identical'] else 'NO'} ({row['files']} files"
          f"{'' if row['identical'] else '; differing: ' + ', '.join(row['differing'])})")  # type: ignore[arg-type]
    lines = [("wall s", "wall_s"), ("CPU s (whole tree)", "cpu_s"), ("parts' task time s (sum)", "part_s_sum"),
             ("parts' CPU s (worker task threads)", "task_cpu_s"), ("parts' window s", "window_s"),
             ("before the window s (imports, server, cluster)", "before_s"),
             ("after the window s (commit, shutdown)", "after_s"),
             *((f"non-part CPU s: {role}", f"cpu_s_{role}") for role in NON_PART),
             *((f"  % of a core in the window: {role}", f"core_share_{role}") for role in NON_PART[:-1])]
    print(f"{'workers':>56}" + "".join(f"{w:>10}" for w in counts))
    for label, key in lines:
        share = key.startswith("core_share")
        print(f"{label:>56}" + "".join(f"{100 * float(row[f'{key}_{w}']) if share else row[f'{key}_{w}']:>10.1f}"  # type: ignore[arg-type]
                                       for w in counts))
    print(f"from the CPU figures and a fixed cost of {row['fixed_s']} s (the shortest wall outside the parts), on "
          f"{last} idle cores: {row['cpu_bound_speedup']}x with what competed with the parts, {row['ideal_speedup']}x if "
          f"nothing had (load average now, 1/5/15 min: {row['load_after']})")


def work_folder(size: int, args: argparse.Namespace) -> Path:
    """``--work/pile-scale-N`` with ``--reuse``, else a new temporary folder."""
    if args.reuse:
        work = Path(args.work) / f"pile-scale-{size}"
        work.mkdir(parents=True, exist_ok=True)
        return work
    return Path(tempfile.mkdtemp(prefix=f"pile-scale-{size}-", dir=args.work))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000000", help="reference sizes in documents (comma-separated)")
    parser.add_argument("--corpus", type=int, default=100_000, help="documents in the matched corpus")
    parser.add_argument("--planted", type=float, default=0.2, help="share of corpus documents that are copies")
    parser.add_argument("--shards", type=int, default=30, help="Pile shards (the Pile has 30)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runner", default=None,
                        help="process or dask (a local cluster); default process, dask with --compare-workers")
    parser.add_argument("--compare-workers", default=None, metavar="N,M",
                        help="build only, with each worker count (e.g. 1,2) in interleaved rounds: speed-up and "
                             "byte-identical index files (see above)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of --compare-workers (default: %(default)s)")
    parser.add_argument("--layout", default="0.7", help="band layout of the candidates (0.7 = 14x9)")
    parser.add_argument("--threshold", type=float, default=0.8, help="estimated Jaccard a match must reach")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=None, help="where the files go (default: system temp)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files (and compared indexes)")
    parser.add_argument("--reuse", action="store_true",
                        help="generate the reference shards once into --work/pile-scale-N and reuse them on later "
                             "runs (index and corpus are made again; the folder is kept)")
    args = parser.parse_args(argv)
    if args.reuse and args.work is None:
        parser.error("--reuse needs --work")
    args.runner = args.runner or ("dask" if args.compare_workers else "process")
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        work = work_folder(size, args)
        try:
            rows.append(compare_workers(size, args, work) if args.compare_workers else run_size(size, args, work))
            print(json.dumps(rows[-1]), flush=True)
        finally:
            if not (args.keep or args.reuse):
                shutil.rmtree(work, ignore_errors=True)
    if args.compare_workers:
        for row in rows:
            print_comparison(row, [int(c) for c in args.compare_workers.split(",")])
    else:
        print_sizes(rows)
    return 0

if __name__ == "__main__":
    sys.exit(main())
