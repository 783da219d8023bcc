"""StackExchange throughput and memory: our streaming reader vs a plain lxml ``iterparse`` loop.

    python benchmarks/stackexchange.py                        # 2k and 20k questions + real coffee site
    python benchmarks/stackexchange.py --sizes 20000,100000 --repeat 1
    python benchmarks/stackexchange.py --posts site.stackexchange.com-Posts.xml

Inputs: synthetic sites written in the real ``Posts.xml`` format (one ``<row .../>`` per post,
HTML bodies escaped into attributes, newlines as ``&#xA;``, answers posted some questions after
theirs, a few tag-wiki rows), one per ``--sizes`` entry (number of questions; about 1.5 answers
each), plus the real ``coffee.stackexchange.com-Posts.xml`` sample when ../shared/realdata exists.

Contenders, each in a fresh ``python -P`` process per repeat (so ``ru_maxrss`` is its own), on
one core (CPU time is measured; DuckDB runs with one thread):

- ``iterparse``: ``lxml.etree.iterparse`` over the file, rows cleared as they go, questions in a
  dict and answers grouped under them in another dict, then one text per question with
  ``lxml.html`` ``text_content()`` for the bodies. It holds the whole site in memory, so its peak
  RSS grows with the site (stackoverflow's Posts.xml is ~100 GB);
- ``iterparse+bs4``: the same loop with ``BeautifulSoup(body, "html.parser").get_text()`` for the
  bodies: the way the RedPajama and Pile StackExchange scripts turn bodies into text (the
  ``html.parser`` builder, faster here than bs4's ``lxml`` builder on these bodies);
- ``iterparse+html``: the same loop, bodies through :func:`sources.formats.html_text.html_to_text`
  (paragraphs, lists, code and link text kept; the converter the reader uses) and our text
  layout: the difference to ``ours`` is the cost of the out-of-core path;
- ``ours``: :class:`sources.stackexchange.StackExchangeReader`: incremental lxml parser ->
  Parquet row batches -> DuckDB external sort by thread -> one thread in memory at a time.
  Every record is consumed (documents and drops), nothing is written. DuckDB sorts in memory up
  to the reader's ``memory_limit`` (1GB by default), so its RSS grows with the site up to that
  bound and then stays flat; ``ours-lowmem`` runs it with ``--low-memory`` (128MB) to show the
  bound on sites that fit in a default run.
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

# Run as a script, this folder is sys.path[0]; a sibling module named like a standard one would
# shadow it, so import from the repository root (children also run with ``python -P``).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REALDATA = ROOT.parent / "shared" / "realdata" / "stackexchange"
CONTENDERS = ("iterparse", "iterparse+bs4", "iterparse+html", "ours", "ours-lowmem")
READER_MEMORY_LIMIT = "1GB"  # StackExchangeRecipe's default


# -- a synthetic site in the real Posts.xml format ---------------------------------------------
def _escape_attribute(value: str) -> str:
    """Escape like the dumps do: markup and quotes as entities, newlines as ``&#xA;``."""
    return (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            .replace("\n", "&#xA;"))


def _sentence(rnd: random.Random, words: list[str]) -> str:
    text = " ".join(rnd.choices(words, k=rnd.randint(6, 22)))
    return text[0].upper() + text[1:] + rnd.choice(".?.!.")


def _body(rnd: random.Random, words: list[str]) -> str:
    """An HTML post body: paragraphs, and sometimes a list, a code block, a link or an entity."""
    blocks = []
    for _ in range(rnd.randint(1, 4)):
        paragraph = " ".join(_sentence(rnd, words) for _ in range(rnd.randint(1, 4)))
        if rnd.random() < 0.3:
            paragraph += f' See <a href="https://example.com/{rnd.choice(words)}">{rnd.choice(words)}</a> &amp; more.'
        blocks.append(f"<p>{paragraph}</p>")
    if rnd.random() < 0.3:
        blocks.append("<ul>\n" + "".join(f"<li>{_sentence(rnd, words)}</li>\n" for _ in range(rnd.randint(2, 5)))
                      + "</ul>")
    if rnd.random() < 0.25:
        code = "\n".join(f"    {rnd.choice(words)} = {rnd.randint(0, 999)}  # {rnd.choice(words)}"
                         for _ in range(rnd.randint(2, 8)))
        blocks.append(f"<pre><code>{code}\n</code></pre>")
    rnd.shuffle(blocks)
    return "\n\n".join(blocks) + "\n"


def _row(attributes: dict[str, object]) -> str:
    return "  <row " + " ".join(f'{k}="{_escape_attribute(str(v))}"' for k, v in attributes.items()) + " />\n"


def _site_rows(questions: int, seed: int) -> Iterator[str]:
    """Rows in Id order: each question, then its answers interleaved with later questions."""
    rnd = random.Random(seed)
    syllables = ["ka", "to", "re", "mi", "an", "el", "so", "lu", "in", "ve", "or", "da", "pe", "ti", "go", "ul"]
    words = ["".join(rnd.choices(syllables, k=rnd.randint(1, 4))) for _ in range(4_000)]
    bodies = [_body(rnd, words) for _ in range(1_500)]
    tags = [f"<{rnd.choice(words)}>" for _ in range(300)]
    post_id = 0
    pending: list[tuple[int, int, int]] = []  # (due question index, tie-break, parent id)
    for index in range(questions + 60):
        while pending and (pending[0][0] <= index or index >= questions):
            _, _, parent = heapq.heappop(pending)
            post_id += 1
            yield _row({"Id": post_id, "PostTypeId": 2, "ParentId": parent, "CreationDate": "2016-03-01T10:00:00.000",
                        "Score": rnd.randint(-2, 40), "Body": rnd.choice(bodies), "OwnerUserId": rnd.randint(1, 9999),
                        "LastActivityDate": "2016-03-02T10:00:00.000", "CommentCount": rnd.randint(0, 5)})
        if index >= questions:
            break
        post_id += 1
        answers = rnd.choice((0, 1, 1, 1, 2, 2, 3, 4))
        for _ in range(answers):
            heapq.heappush(pending, (index + rnd.randint(0, 50), rnd.randrange(1 << 30), post_id))
        title = " ".join(rnd.choices(words, k=rnd.randint(4, 12))).capitalize() + "?"
        yield _row({"Id": post_id, "PostTypeId": 1, "CreationDate": "2016-03-01T09:00:00.000",
                    "Score": rnd.randint(-3, 80), "ViewCount": rnd.randint(10, 90_000), "Body": rnd.choice(bodies),
                    "OwnerUserId": rnd.randint(1, 9999), "LastActivityDate": "2016-03-02T09:00:00.000",
                    "Title": title, "Tags": "".join(rnd.sample(tags, rnd.randint(1, 5))),
                    "AnswerCount": answers, "CommentCount": rnd.randint(0, 9), "ContentLicense": "CC BY-SA 3.0"})
        if rnd.random() < 0.01:  # a tag wiki excerpt and its wiki
            for kind in (4, 5):
                post_id += 1
                yield _row({"Id": post_id, "PostTypeId": kind, "CreationDate": "2016-03-01T09:30:00.000",
                            "Score": 0, "Body": rnd.choice(bodies), "CommentCount": 0})


def write_site(directory: Path, questions: int, seed: int = 7) -> Path:
    """``bench<N>.stackexchange.com-Posts.xml`` with ``questions`` questions (deterministic)."""
    path = directory / f"bench{questions}.stackexchange.com-Posts.xml"
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write('\ufeff<?xml version="1.0" encoding="utf-8"?>\n<posts>\n')
        batch: list[str] = []
        for row in _site_rows(questions, seed):
            batch.append(row)
            if len(batch) >= 5_000:
                handle.write("".join(batch))
                batch.clear()
        handle.write("".join(batch) + "</posts>\n")
    return path


# -- contenders (each runs in its own process) ---------------------------------------------------
def run_iterparse(path: Path, bodies: str) -> dict[str, float]:
    """Plain loop: everything in dicts, then one text per question."""
    import lxml.html
    from bs4 import BeautifulSoup
    from lxml import etree

    from sources.formats.html_text import html_to_text

    def plain_text(html: str) -> str:
        return lxml.html.fromstring(html).text_content().strip() if html.strip() else ""

    def soup_text(html: str) -> str:
        return BeautifulSoup(html, "html.parser").get_text().strip() if html.strip() else ""

    to_text = {"ours": html_to_text, "lxml": plain_text, "bs4": soup_text}[bodies]
    questions: dict[int, tuple[str, str]] = {}
    answers: dict[int, list[tuple[int, int, str]]] = {}
    docs = chars = 0
    for _, row in etree.iterparse(str(path), events=("end",), tag="row", resolve_entities=False, no_network=True):
        attrib = row.attrib
        kind = attrib.get("PostTypeId")
        if kind == "1":
            questions[int(attrib["Id"])] = (attrib.get("Title", ""), attrib.get("Body", ""))
        elif kind == "2":
            answers.setdefault(int(attrib["ParentId"]), []).append(
                (-int(attrib.get("Score") or 0), int(attrib["Id"]), attrib.get("Body", "")))
        row.clear()
        while row.getprevious() is not None:
            del row.getparent()[0]
    for question_id in sorted(questions):
        title, body = questions[question_id]
        parts = [f"Q: {' '.join(title.split())}\n{to_text(body)}".rstrip()]
        parts.extend(f"A: {to_text(answer)}".rstrip() for *_, answer in sorted(answers.get(question_id, [])))
        chars += len("\n\n".join(parts))
        docs += 1
    return {"docs": docs, "chars": chars}


def run_ours(path: Path, memory_limit: str) -> dict[str, float]:
    """Our reader, every record consumed; DuckDB sorts within ``memory_limit`` and spills beyond."""
    from core.document import Document, InputSpec
    from sources.stackexchange import StackExchangeReader

    docs = chars = drops = 0
    with tempfile.TemporaryDirectory() as scratch:
        for record in StackExchangeReader(InputSpec(str(path), path, path.name), Path(scratch),
                                          memory_limit):
            if isinstance(record, Document):
                docs += 1
                chars += len(record.text)
            else:
                drops += 1
    return {"docs": docs, "chars": chars, "drops": drops}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _reap_shared_helpers() -> None:
    """End core.bounded's shared helpers (large threads are cleaned there) so their CPU is counted.

    ``RUSAGE_CHILDREN`` counts only children that were waited for, and a shared helper stays
    alive for the thread's next reader.
    """
    from core.helper_process import close_thread_helpers

    close_thread_helpers()


def child(mode: str, path: Path, low_memory: str) -> dict[str, float]:
    """Run one contender once; CPU and wall time, and this process's peak RSS.

    Imports happen before the clock starts, the same for every contender (our module loads
    DuckDB and pyarrow; the loop uses its ``html_to_text``), so start-up is not measured. pandas
    is one of them: DuckDB imports it on a process's first query (~0.25 s, once per worker, not
    per site), which on the small real site was most of ``ours``' CPU. CPU includes
    core.bounded's helper process (threads above its inline size are cleaned there).
    """
    import contextlib

    import bs4  # noqa: F401
    import lxml.html  # noqa: F401

    with contextlib.suppress(ImportError):
        import pandas  # noqa: F401

    import core.pipeline  # noqa: F401
    import sources.stackexchange  # noqa: F401

    started, cpu, kids = time.perf_counter(), time.process_time(), _children_cpu()
    if mode.startswith("ours"):
        result = run_ours(path, low_memory if mode == "ours-lowmem" else READER_MEMORY_LIMIT)
        _reap_shared_helpers()
    else:
        result = run_iterparse(path, {"iterparse": "lxml", "iterparse+bs4": "bs4", "iterparse+html": "ours"}[mode])
    result["seconds"] = time.perf_counter() - started
    result["cpu"] = time.process_time() - cpu + _children_cpu() - kids
    result["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def _spawn(mode: str, path: Path, low_memory: str) -> dict[str, float]:
    output = subprocess.run([sys.executable, "-P", __file__, "--child", mode, "--posts", str(path),
                             "--low-memory", low_memory],
                            capture_output=True, text=True, check=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def measure(path: Path, repeat: int, low_memory: str) -> list[dict[str, dict[str, float]]]:
    """``repeat`` interleaved rounds, each running every contender once on ``path``."""
    return [{mode: _spawn(mode, path, low_memory) for mode in CONTENDERS} for _ in range(repeat)]


def _mmm(values: list[float], fmt: str) -> str:
    return "/".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2000,20000", help="synthetic sites, in questions (comma-separated)")
    parser.add_argument("--posts", type=Path, action="append", help="also measure this Posts.xml (repeatable)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (min/median/max over them)")
    parser.add_argument("--no-realdata", action="store_true", help="skip the real coffee.stackexchange.com sample")
    parser.add_argument("--low-memory", default="128MB",
                        help="DuckDB memory_limit of the ours-lowmem contender (ours: the reader's 1GB default)")
    parser.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.posts[0], args.low_memory)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        inputs = list(args.posts or [])
        if not args.no_realdata:
            inputs += sorted(REALDATA.glob("*Posts.xml"))
        inputs += [write_site(Path(tmp), int(n)) for n in args.sizes.split(",") if n.strip()]
        print(f"one core (CPU time), {args.repeat} interleaved rounds, min/median/max; peak RSS = ru_maxrss of "
              f"a fresh process; lxml {metadata.version('lxml')}, beautifulsoup4 {metadata.version('beautifulsoup4')}, "
              f"duckdb {metadata.version('duckdb')}\n")
        print(f"{'input':40} {'MB':>6} {'docs':>6} {'contender':15} {'docs/s/core':>17} {'peak RSS MB':>11} "
              f"{'vs iterparse':>15} {'vs iterparse+bs4':>16}")
        for path in inputs:
            mb = path.stat().st_size / 1e6
            rounds = measure(path, args.repeat, args.low_memory)
            for mode in CONTENDERS:
                runs = [r[mode] for r in rounds]
                for peer in ("iterparse", "iterparse+bs4"):
                    if mode != peer:
                        print("RESULT " + json.dumps({"metric": f"{mode} vs {peer}", "input": path.name,
                                                      "values": [r[peer]["cpu"] / r[mode]["cpu"] for r in rounds]}))
                print(f"{path.name[:40]:40} {mb:6.1f} {runs[0]['docs']:6.0f} {mode:15} "
                      f"{_mmm([r['docs'] / r['cpu'] for r in runs], '{:.0f}'):>17} "
                      f"{max(r['maxrss_mb'] for r in runs):11.0f} "
                      f"{_mmm([r['iterparse']['cpu'] / r[mode]['cpu'] for r in rounds], '{:.2f}'):>15} "
                      f"{_mmm([r['iterparse+bs4']['cpu'] / r[mode]['cpu'] for r in rounds], '{:.2f}'):>16}")
        print("\nvs X: X's CPU time / the contender's in the same round (above 1: faster than X). "
              "Memory: iterparse holds the whole site;\n"
              f"ours holds one thread and a row batch in Python, and DuckDB sorts in memory up to its limit "
              f"({READER_MEMORY_LIMIT}; {args.low_memory} for ours-lowmem), spilling to disk beyond it.")


if __name__ == "__main__":
    main()
