"""A small offline Pile (v1) reference: ``train/00.jsonl.zst`` and ``train/01.jsonl.zst``, one
``{"text": ..., "meta": {"pile_set_name": ...}}`` per line, as the Pile's shards are laid out.

It holds exact and near copies of some documents of the other samples, so the sample run's
``flows.pile_index`` indexes something the dedup stage then finds (the ``llama-in-ref`` class, G3
smaller than G1), plus documents of Pile subsets no sample has (Pile-CC, PubMed Abstracts,
FreeLaw, ...), which match nothing. Copies are made of the text as the product cleans it (the
Wikipedia reader on the sample's own pages, the LaTeX cleaner on the arXiv sample's e-print, the
StackExchange thread formatter on the sample's posts, a Gutenberg book's prose, a GitHub file's content), so an "exact" copy is exact after
:func:`core.exact.normalize_for_exact`, and a "near" copy differs by a word or two (MinHash
Jaccard well above the 0.8 layout's threshold). :data:`PLANTED` lists them: (document id,
kind, Pile subset, shard, 1-based line), which the tests and the README's examples use.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import zstandard

from core.atomic import atomic_path
from core.document import Document, InputSpec, make_doc_id
from sources.formats.latex import clean_paper
from sources.samples import arxiv as arxiv_sample
from sources.samples import github_files, prose
from sources.samples import gutenberg as gutenberg_sample
from sources.samples import stackexchange as se_sample
from sources.stackexchange import Thread, thread_text

SHARDS = ("00.jsonl.zst", "01.jsonl.zst")


@dataclass(frozen=True)
class Planted:
    """A sample document copied into the Pile sample: which, how, and where."""

    doc_id: str
    kind: str  # exact | near
    pile_set_name: str
    shard: str
    line: int


def near_copy(text: str) -> str:
    """``text`` with one word changed past its middle: what a later revision or a scrape differs by."""
    middle = len(text) // 2
    at = text.find(" the ", middle)
    if at < 0:
        raise ValueError("near_copy needs a text with ' the ' past its middle")
    return text[:at] + " this " + text[at + len(" the "):]


# -- the sample documents, as the product cleans them ------------------------------------------
def wikipedia_texts(pages: int = 12) -> dict[str, str]:
    """English sample pages cleaned by the Wikipedia reader: doc id -> text (first ``pages`` pages,
    which are the same whatever page count the sample run uses)."""
    from sources.samples.wikipedia import write_sample_dumps
    from sources.wikipedia import WikipediaRecipe

    with tempfile.TemporaryDirectory(prefix="pile-sample-") as tmp:
        english = next(p for p in write_sample_dumps(Path(tmp), pages=pages) if p.name.startswith("en"))
        records = WikipediaRecipe().read(InputSpec(str(english), english, english.name))
        return {r.id: r.text for r in records if isinstance(r, Document)}


def arxiv_texts() -> dict[str, str]:
    """The arXiv sample's kept papers cleaned by :func:`sources.formats.latex.clean_paper`: doc id -> text."""
    papers = {"2301.00001": arxiv_sample.paper_files(), "2301.00002": {"note.tex": arxiv_sample.NOTE_TEX}}
    texts = {}
    for arxiv_id, files in papers.items():
        text = clean_paper(files).text
        if text is None:
            raise ValueError(f"arXiv sample {arxiv_id} cleans to nothing")
        texts[make_doc_id("arxiv", arxiv_id)] = text
    return texts


def books_texts() -> dict[str, str]:
    """Gutenberg sample books as their prose (what ``flows.books`` keeps between the PG markers)."""
    return {make_doc_id("books", f"gutenberg/{book.number}"): prose.raw_text(book.key)
            for book in gutenberg_sample.BOOKS if not book.edition}


def github_texts() -> dict[str, str]:
    """GitHub sample files kept as written (no licence header to strip): doc id -> content."""
    return {make_doc_id("github", "sample-owner/textkit/textkit/stats.py"): github_files.STATS_PY}


def stackexchange_texts() -> dict[str, str]:
    """The StackExchange sample's threads as :func:`sources.stackexchange.thread_text` writes them."""
    texts = {}
    for question in (p for p in se_sample.POSTS if p.type == 1):
        answers = sorted((p for p in se_sample.POSTS if p.parent == question.id), key=lambda p: (-p.score, p.id))
        thread = Thread({"title": question.title, "body": question.body}, [{"body": a.body} for a in answers])
        texts[make_doc_id("stackexchange", f"{se_sample.SITE}/{question.id}")] = thread_text(thread)
    return texts


# -- documents of Pile subsets no sample has ---------------------------------------------------
UNRELATED: list[tuple[str, str]] = [
    ("Pile-CC", "Spring Cleaning Checklist\n\nStart at the top of each room and work down: dust ceiling fans and "
                "light fixtures before the shelves, and the shelves before the floor. Wash windows on a cloudy "
                "day so the cleaner does not dry into streaks. Pull the sofa away from the wall at least once a "
                "year; you will be surprised what lives behind it."),
    ("PubMed Abstracts", "Background: Regular physical activity is associated with a lower risk of type 2 "
                         "diabetes. Methods: We followed 4,212 adults aged 40 to 65 years for a median of 8.3 "
                         "years and recorded self-reported weekly activity. Results: Participants in the highest "
                         "activity quartile had a 31% lower incidence of diabetes than those in the lowest "
                         "(hazard ratio 0.69; 95% CI 0.58-0.82). Conclusions: Moderate weekly activity was "
                         "associated with a substantially reduced risk."),
    ("FreeLaw", "OPINION\n\nThe appellant contends that the trial court erred in admitting the testimony of the "
                "officer regarding statements made at the scene. We disagree. The statements were offered not "
                "for their truth but to explain the officer's subsequent conduct, and the jury was so "
                "instructed. Finding no abuse of discretion, we affirm."),
    ("HackerNews", "Show HN: I built a tiny static site generator in 300 lines\n\nIt reads Markdown files, "
                   "applies one HTML template and writes the result. No plugins, no configuration file. I wrote "
                   "it because every generator I tried needed more time to configure than my blog needs to "
                   "write.\n\nNice. How do you handle drafts?\n\nFiles whose name starts with an underscore are "
                   "skipped."),
    ("Enron Emails", "Subject: Re: meeting on Thursday\n\nJeff,\n\nThursday at 2pm works for me. I will bring "
                     "the revised schedule for the pipeline capacity filing and the numbers from the west desk. "
                     "Please send the draft to Sally as well.\n\nThanks,\nKim"),
    ("USPTO Backgrounds", "BACKGROUND OF THE INVENTION\n\nThe present invention relates to fastening devices and "
                          "more particularly to a clip for holding cables against a flat surface. Conventional "
                          "cable clips require a screw for each clip, which makes installation slow and leaves "
                          "holes when the cables are moved."),
    ("DM Mathematics", "Solve -42*r + 27*c = -1167, 3*c = -16*r + 55 for r.\n4\n"
                       "What is the third derivative of 2*f**5 - 3*f**3 + f wrt f?\n120*f**2 - 18"),
    ("Ubuntu IRC", "[12:01] <alice> how do I see which process holds port 8080?\n[12:02] <bob> alice: sudo ss "
                   "-ltnp | grep 8080\n[12:02] <alice> thanks, that was it"),
    ("PhilPapers", "It is often claimed that knowledge requires justified true belief. Gettier's cases show that "
                   "the three conditions are not sufficient: a belief can be true and justified and yet true "
                   "only by luck. Much of the subsequent literature searches for a fourth condition that rules "
                   "out such luck without ruling out ordinary knowledge."),
    ("NIH ExPorter", "The goal of this project is to characterize the role of sleep in memory consolidation in "
                     "older adults. Aim 1 will measure slow-wave activity with home EEG; Aim 2 will test whether "
                     "acoustic stimulation during sleep improves overnight retention of word pairs."),
]


def _line(text: str, pile_set_name: str) -> str:
    return json.dumps({"text": text, "meta": {"pile_set_name": pile_set_name}}, ensure_ascii=False)


#: What is copied into the Pile sample: (texts function, doc id, kind, Pile subset, shard index).
Copy = tuple[Callable[[], dict[str, str]], str, str, str, int]
COPIES: list[Copy] = [
    (wikipedia_texts, make_doc_id("wikipedia", "en/10"), "exact", "Wikipedia (en)", 0),
    (wikipedia_texts, make_doc_id("wikipedia", "en/12"), "near", "Wikipedia (en)", 1),
    (arxiv_texts, make_doc_id("arxiv", "2301.00002"), "exact", "ArXiv", 0),
    (arxiv_texts, make_doc_id("arxiv", "2301.00001"), "near", "ArXiv", 1),
    (stackexchange_texts, make_doc_id("stackexchange", f"{se_sample.SITE}/8"), "exact", "StackExchange", 1),
    (books_texts, make_doc_id("books", "gutenberg/3261"), "near", "Gutenberg (PG-19)", 0),
    (github_texts, make_doc_id("github", "sample-owner/textkit/textkit/stats.py"), "exact", "Github", 1),
]


def shard_lines() -> tuple[list[list[str]], list[Planted]]:
    """The lines of each shard (unrelated documents and copies, alternating) and where each copy went."""
    unrelated: list[list[str]] = [[] for _ in SHARDS]
    for number, (name, text) in enumerate(UNRELATED):
        unrelated[number % len(SHARDS)].append(_line(text, name))
    copies: list[list[tuple[str, str, str, str]]] = [[] for _ in SHARDS]
    cache: dict[Callable[[], dict[str, str]], dict[str, str]] = {}
    for texts, doc_id, kind, pile_set, shard in COPIES:
        source = cache.setdefault(texts, texts())
        if doc_id not in source:
            raise ValueError(f"the Pile sample copies {doc_id}, which its sample does not hold")
        text = source[doc_id] if kind == "exact" else near_copy(source[doc_id])
        copies[shard].append((doc_id, kind, pile_set, _line(text, pile_set)))
    shards: list[list[str]] = []
    planted = []
    for number, (others, copied) in enumerate(zip(unrelated, copies, strict=True)):
        lines: list[str] = []
        for index in range(max(len(others), len(copied))):
            lines.extend(others[index:index + 1])
            if index < len(copied):
                doc_id, kind, pile_set, line = copied[index]
                lines.append(line)
                planted.append(Planted(doc_id, kind, pile_set, SHARDS[number], len(lines)))
        shards.append(lines)
    return shards, planted


def write_sample_inputs(directory: Path) -> list[str]:
    """Write the Pile sample shards under ``directory/train/``; return their paths."""
    train = directory / "train"
    train.mkdir(parents=True, exist_ok=True)
    shards, _ = shard_lines()
    written = []
    for name, lines in zip(SHARDS, shards, strict=True):
        target = train / name
        data = zstandard.ZstdCompressor(level=10).compress(("\n".join(lines) + "\n").encode("utf-8"))
        with atomic_path(target) as tmp:
            tmp.write_bytes(data)
        written.append(str(target))
    return written


def planted() -> list[Planted]:
    """Where each sample document was copied into the Pile sample (for tests and docs)."""
    return shard_lines()[1]
