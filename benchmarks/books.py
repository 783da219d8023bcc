"""Books throughput and memory: Gutenberg reading + cleaning and book near-dedup, each against a peer.

    python benchmarks/books.py                     # real books from ../shared/realdata, 60 in all
    python benchmarks/books.py --books 100 --repeat 3

Inputs: the real Project Gutenberg files in ``../shared/realdata/books`` (else four generated
books with a PG header and footer), replicated to ``--books`` files. Every third copy is a
near-duplicate of an original (a few words in a thousand replaced, its own eBook number: a
planted duplicate, Jaccard ~0.95); the others are mosaics of paragraphs drawn from all the
originals (new books, no duplicates). Copies keep their original's encoding (one is Latin-1).

Contenders, each in a fresh ``python -P`` process per repeat (so ``ru_maxrss`` is its own), on
one core (CPU time):

- reading: ``bare`` decodes each file (UTF-8, else Latin-1) and cuts between the ``*** START OF``
  and ``*** END OF`` lines with one simple regex; ``ours`` is :func:`sources.gutenberg.read_book`
  (encoding detection with the declared charset, every historical marker form, header fields,
  credit paragraph, line ends) and the ``min_chars`` filter.
- near-dedup (on the texts cleaned by ``ours``, read before the clock starts): ``datasketch``
  shingles each book into the same word 5-grams (lower-cased ``\\w+`` words, as strings),
  ``MinHash(num_perm=128).update_batch`` per book (SHA-1 of each shingle), then a greedy
  ``MinHashLSH(threshold=0.9)`` query/insert; ``ours`` is :mod:`dedupe.near_books`
  (``book_signatures`` over the whole batch, as ``write_signatures`` runs it, then
  ``find_near_duplicates``, default settings, candidates within ``exact_margin`` of 0.9 decided
  by the exact Jaccard of the re-shingled books); ``signatures`` is the limit: the project's batch
  MinHash alone (:meth:`dedupe.minhash.MinHasher.signatures`, 128 permutations, word 5-grams),
  no set sizes and no matching.

Each task's contenders run interleaved (one round = every contender once), ratios are taken
within a round, and min/median/max over ``--repeat`` rounds are reported.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

# Run as a script, this folder is sys.path[0]; a sibling module named like a standard one would
# shadow it, so import from the repository root (children also run with ``python -P``).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REALDATA = ROOT.parent / "shared" / "realdata" / "books"
CONTENDERS = {"read": ("bare", "ours"), "dedup": ("datasketch", "ours", "signatures")}
NEAR_EVERY = 3  # every third copy is a planted near-duplicate
_BODY = re.compile(r"(^\*{3}[^\n]*START OF[^\n]*\n)(.*?)(^\*{3}[^\n]*END OF|^End of (?:the )?Project Gutenberg|\Z)",
                   re.S | re.M | re.I)
_EBOOK = re.compile(r"\[E-?(?:Book|Text) #\d+\]", re.I)
_WORD = re.compile(r"\w+")


# -- inputs ----------------------------------------------------------------------------------------
def _generated_originals(count: int = 4, seed: int = 3) -> list[tuple[str, str, str]]:
    """Books with a PG header and footer from random words, when the real samples are absent."""
    rnd = random.Random(seed)
    words = ["".join(rnd.choices("etaoinshrdlucmfwypvbgk", k=rnd.randint(1, 9))) for _ in range(20_000)]
    books = []
    for n in range(count):
        paragraphs = []
        for _ in range(900):
            lines = [" ".join(rnd.choices(words, k=rnd.randint(9, 13))) for _ in range(rnd.randint(2, 8))]
            paragraphs.append("\n".join(lines))
        text = (f"The Project Gutenberg EBook of Generated Book {n}\n\nTitle: Generated Book {n}\n"
                f"Author: Nobody\n\nRelease Date: May 1, 2004 [EBook #{90000 + n}]\nLanguage: English\n\n"
                f"*** START OF THIS PROJECT GUTENBERG EBOOK GENERATED BOOK {n} ***\n\n\n"
                + "\n\n".join(paragraphs)
                + f"\n\n\n*** END OF THIS PROJECT GUTENBERG EBOOK GENERATED BOOK {n} ***\n\nLicence text.\n")
        books.append((f"pg{90000 + n}-generated.txt", text, "utf-8"))
    return books


def _originals() -> list[tuple[str, str, str]]:
    """(file name, decoded text, codec) of each original book."""
    from sources.gutenberg import decode_book

    if not REALDATA.is_dir() or not any(REALDATA.glob("*.txt")):
        return _generated_originals()
    books = []
    for path in sorted(REALDATA.glob("*.txt")):
        text, codec = decode_book(path.read_bytes())
        books.append((path.name, text, codec))
    return books


def _split(text: str) -> tuple[str, str, str]:
    """(header with start marker, body, footer from the end marker) of a PG text."""
    match = _BODY.search(text)
    if match is None:
        return "", text, ""
    return text[: match.end(1)], match.group(2), text[match.start(3):]


def _near_copy(text: str, number: int, rnd: random.Random) -> str:
    """A planted near-duplicate: ~3 words in 1000 replaced, the eBook number changed."""
    header, body, footer = _split(text)
    pieces = re.split(r"(\w+)", body)
    for index in range(1, len(pieces), 2):
        if rnd.random() < 0.003:
            pieces[index] = f"zz{rnd.randrange(10**6)}"
    return _EBOOK.sub(f"[EBook #{number}]", header) + "".join(pieces) + footer


def _mosaic(originals: list[tuple[str, str, str]], number: int, rnd: random.Random) -> str:
    """A new book: a PG frame around a shuffled half of the paragraphs of all the originals."""
    paragraphs = [p for _, text, _ in originals for p in _split(text.replace("\r\n", "\n"))[1].split("\n\n")
                  if p.strip()]
    chosen = rnd.sample(paragraphs, len(paragraphs) // (2 * len(originals)) * 2)
    return (f"The Project Gutenberg EBook of Mosaic {number}\n\nTitle: Mosaic {number}\nAuthor: Various\n\n"
            f"Release Date: June 1, 2010 [EBook #{number}]\nLanguage: English\nCharacter set encoding: UTF-8\n\n"
            f"*** START OF THIS PROJECT GUTENBERG EBOOK MOSAIC {number} ***\n\n\n" + "\n\n".join(chosen)
            + f"\n\n\n*** END OF THIS PROJECT GUTENBERG EBOOK MOSAIC {number} ***\n\nLicence text.\n")


def write_books(directory: Path, count: int, seed: int = 11) -> tuple[list[Path], int]:
    """The originals and copies up to ``count`` files in ``directory``; (paths, planted duplicates)."""
    rnd = random.Random(seed)
    originals = _originals()
    paths, planted = [], 0
    for name, text, codec in originals:
        source = REALDATA / name
        (directory / name).write_bytes(source.read_bytes() if source.is_file() else text.encode(codec))
        paths.append(directory / name)
    for copy in range(max(0, count - len(originals))):
        number = 70_000 + copy
        if copy % NEAR_EVERY == 0:
            name, text, codec = originals[(copy // NEAR_EVERY) % len(originals)]
            path = directory / f"pg{number}-near-{name.split('-', 1)[-1]}"
            path.write_bytes(_near_copy(text, number, rnd).encode(codec, errors="replace"))
            planted += 1
        else:
            path = directory / f"pg{number}-mosaic.txt"
            path.write_bytes(_mosaic(originals, number, rnd).encode("utf-8"))
        paths.append(path)
    return sorted(paths), planted


# -- contenders (each runs in its own process) ---------------------------------------------------
_BARE_START = re.compile(r"^\*\*\*\s*START OF[^\n]*$", re.M)
_BARE_END = re.compile(r"^\*\*\*\s*END OF", re.M)


def read_bare(paths: list[Path]) -> dict[str, float]:
    """Decode, then keep what is between the start and end marker lines."""
    books = chars = 0
    for path in paths:
        data = path.read_bytes()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
        start = _BARE_START.search(text)
        end = _BARE_END.search(text, start.end() if start else 0)
        body = text[start.end() if start else 0: end.start() if end else len(text)].strip()
        books += bool(body)
        chars += len(body)
    return {"books": books, "chars": chars}


def read_ours(paths: list[Path]) -> dict[str, float]:
    """Our reader and its length filter."""
    from core.document import Document
    from sources.gutenberg import BookSettings, MinChars, read_book

    settings = BookSettings()
    floor = MinChars(settings.min_chars)
    books = chars = 0
    for path in paths:
        record = read_book(path, settings, str(path))
        if isinstance(record, Document) and floor.decide(record) is None:
            books += 1
            chars += len(record.text)
    return {"books": books, "chars": chars}


def cleaned_texts(paths: list[Path]) -> list[str]:
    """The books as our reader cleans them (dedup input; built before the clock starts)."""
    from core.document import Document
    from sources.gutenberg import BookSettings, read_book

    records = [read_book(path, BookSettings(), str(path)) for path in paths]
    return [record.text for record in records if isinstance(record, Document)]


def dedup_datasketch(texts: list[str]) -> dict[str, float]:
    """Plain datasketch: string shingles, SHA-1 MinHash per book, greedy LSH at 0.9."""
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=0.9, num_perm=128)
    duplicates = 0
    for index, text in enumerate(texts):
        words = _WORD.findall(text.lower())
        shingles = {" ".join(words[i: i + 5]) for i in range(max(len(words) - 4, 1))}
        minhash = MinHash(num_perm=128, seed=1)
        minhash.update_batch([shingle.encode("utf-8") for shingle in shingles])
        if lsh.query(minhash):
            duplicates += 1
        else:
            lsh.insert(index, minhash)
    return {"books": len(texts), "chars": sum(map(len, texts)), "duplicates": duplicates}


def dedup_ours(texts: list[str]) -> dict[str, float]:
    """Our signatures and matcher, as the books flow runs them (minus Parquet files)."""
    import functools

    from dedupe.near_books import (
        BookSignature,
        NearDupSettings,
        book_signatures,
        find_near_duplicates,
        shingle_hashes,
    )

    settings = NearDupSettings()
    # the pipeline re-shingles a staged book for the exact check near the threshold; here from memory
    books = [BookSignature("bench", 0, index, f"book-{index}", None, None, size, values,
                           functools.partial(shingle_hashes, texts[index], settings.ngram))
             for index, (size, values) in enumerate(book_signatures(texts, settings))]
    matches = find_near_duplicates(books, settings)
    return {"books": len(texts), "chars": sum(map(len, texts)), "duplicates": len(matches)}


def dedup_signatures(texts: list[str]) -> dict[str, float]:
    """The limit: the project's batch MinHash signatures of all books, nothing else."""
    from dedupe.minhash import MinHasher

    MinHasher().signatures(texts)
    return {"books": len(texts), "chars": sum(map(len, texts))}


def child(task: str, mode: str, directory: Path) -> dict[str, float]:
    """Run one contender once; CPU time, input megabytes and this process's peak RSS."""
    import datasketch  # noqa: F401  (imports before the clock, the same for every contender)

    import dedupe.near_books  # noqa: F401
    import sources.gutenberg  # noqa: F401

    paths = sorted(directory.glob("*.txt"))
    if task == "read":
        megabytes = sum(path.stat().st_size for path in paths) / 1e6
        started, cpu = time.perf_counter(), time.process_time()
        result = (read_ours if mode == "ours" else read_bare)(paths)
    else:
        texts = cleaned_texts(paths)
        megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
        started, cpu = time.perf_counter(), time.process_time()
        result = {"ours": dedup_ours, "datasketch": dedup_datasketch, "signatures": dedup_signatures}[mode](texts)
    result["seconds"] = time.perf_counter() - started
    result["cpu"] = time.process_time() - cpu
    result["mb"] = megabytes
    result["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def _spawn(task: str, mode: str, directory: Path) -> dict[str, float]:
    output = subprocess.run([sys.executable, "-P", __file__, "--child", task, mode, str(directory)],
                            capture_output=True, text=True, check=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--books", type=int, default=60, help="book files in all (originals + copies)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (min/median/max over them)")
    parser.add_argument("--child", nargs=3, metavar=("TASK", "MODE", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        task, mode, directory = args.child
        print(json.dumps(child(task, mode, Path(directory))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths, planted = write_books(Path(tmp), args.books)
        source = "real books" if REALDATA.is_dir() and any(REALDATA.glob("*.txt")) else "generated books"
        print(f"{len(paths)} files from {source}, {sum(p.stat().st_size for p in paths) / 1e6:.1f} MB, "
              f"{planted} planted near-duplicates; peers: datasketch {metadata.version('datasketch')}; one core "
              f"(CPU time), {args.repeat} interleaved rounds, min/median/max; peak RSS = ru_maxrss of a fresh process\n")
        print(f"{'task':6} {'contender':11} {'books':>6} {'MB':>6} {'MB/s/core':>17} "
              f"{'peak RSS MB':>11} {'near dups':>9} {'x first (peer)':>16} {'x signatures':>16}")
        for task, modes in CONTENDERS.items():
            rounds = [{mode: _spawn(task, mode, Path(tmp)) for mode in modes} for _ in range(args.repeat)]
            for mode in modes:
                runs = [r[mode] for r in rounds]
                row = runs[0]
                dups = f"{row['duplicates']:.0f}" if "duplicates" in row else "-"
                vs_peer = [r[modes[0]]["cpu"] / r[mode]["cpu"] for r in rounds]
                if mode != modes[0]:
                    print("RESULT " + json.dumps({"metric": f"{task} {mode} vs {modes[0]}", "values": vs_peer}))
                vs_limit = _mmm([r["signatures"]["cpu"] / r[mode]["cpu"] for r in rounds], "{:.2f}") \
                    if "signatures" in modes else "-"
                print(f"{task:6} {mode:11} {row['books']:6.0f} {row['mb']:6.1f} "
                      f"{_mmm([r['mb'] / r['cpu'] for r in runs], '{:.2f}'):>17} "
                      f"{max(r['maxrss_mb'] for r in runs):11.0f} {dups:>9} {_mmm(vs_peer, '{:.2f}'):>16} {vs_limit:>16}")
        print("\nx first (peer): the first contender's CPU time / this one's, in the same round (above 1: faster); "
              "x signatures: the batch MinHash alone vs this one.\nMB: input files for read, cleaned text (UTF-8) "
              "for dedup. Reading books counts books kept (ours: PG frame found and min_chars met; bare: any text "
              "between markers).")


def _mmm(values: list[float], fmt: str) -> str:
    return "/".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


if __name__ == "__main__":
    main()
