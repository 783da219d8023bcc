"""Wiki-reference classifier (train, report, filter) and cc_net perplexity buckets."""

from __future__ import annotations

import gzip
import importlib
import inspect
import json
import re
from pathlib import Path

import pytest

from core.document import Document, Drop
from core.filters.quality import (
    PerplexityBuckets,
    WikiRefFilter,
    bucket_for,
    classifier_line,
    document_perplexity,
    train_wikiref_classifier,
)


def stdlib_docs(modules: list[str]) -> list[str]:
    """Real English prose available everywhere: docstrings of standard-library modules."""
    out: list[str] = []
    for name in modules:
        module = importlib.import_module(name)
        for attr in sorted(dir(module)):
            doc = inspect.getdoc(getattr(module, attr, None)) or ""
            if len(doc) > 150 and doc not in out:
                out.append(doc)
    return out


NUMERIC = ["statistics", "fractions", "decimal", "datetime", "calendar", "random", "math", "collections"]
NETWORK = ["http.client", "email.message", "smtplib", "urllib.request", "ftplib", "imaplib", "socket", "ssl"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory):
    model = tmp_path_factory.mktemp("wikiref") / "wikiref.bin"
    positives, negatives = stdlib_docs(NUMERIC), stdlib_docs(NETWORK)
    report = train_wikiref_classifier(positives, negatives, model, holdout=0.2, seed=0, epoch=50, lr=0.5)
    return model, report, positives, negatives


def test_training_reports_held_out_split(trained) -> None:
    model, report, positives, negatives = trained
    assert model.is_file() and report.model_path == str(model)
    assert report.train_examples + report.test_examples == len(positives) + len(negatives)
    assert report.test_examples == int(0.2 * (len(positives) + len(negatives)))
    assert 0.0 <= report.precision <= 1.0 and 0.0 <= report.recall <= 1.0


def test_training_needs_both_classes(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        train_wikiref_classifier(stdlib_docs(["math"]), [], tmp_path / "m.bin")


def test_filter_threshold_and_meta(trained) -> None:
    model, _, positives, negatives = trained
    docs = [Document(f"d{i}", t, "cc", {"language": "en"}) for i, t in enumerate(positives[:3] + negatives[:3])]
    everything = list(WikiRefFilter(model, threshold=0.0, batch_size=4).run(docs))
    assert all(isinstance(r, Document) and 0.0 <= r.meta["wiki_prob"] <= 1.0 for r in everything)
    nothing = list(WikiRefFilter(model, threshold=1.01).run(docs))
    assert {r.reason for r in nothing if isinstance(r, Drop)} == {"wikiref_low"} and len(nothing) == 6
    assert classifier_line("a\nb  c", "wiki") == "__label__wiki a b c"
    with pytest.raises(FileNotFoundError):
        WikiRefFilter(model.with_name("missing.bin"))


@pytest.mark.realdata
def test_classifier_separates_books_from_web_pages(realdata: Path, tmp_path: Path) -> None:
    books = []
    for path in sorted((realdata / "books").glob("pg*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        books += [p for p in re.split(r"\r?\n\s*\r?\n", text) if len(p) > 400][:150]
    with gzip.open(realdata / "c4" / "c4-format-00000-of-00001.DERIVED.json.gz", "rt") as handle:
        web = [json.loads(line)["text"] for line in handle][:400]
    report = train_wikiref_classifier(books[:400], web, tmp_path / "m.bin", holdout=0.2, seed=0, epoch=20)
    assert report.precision > 0.85 and report.recall > 0.85, report


class FakeScorer:
    """log10 p = -1 per token: perplexity 10 ** (tokens / (tokens + lines))."""

    def tokenize(self, line: str) -> str:
        return line

    def log10_score(self, tokens: str) -> float:
        return -float(len(tokens.split()))


def test_document_perplexity_and_buckets() -> None:
    assert document_perplexity("one two three\nfour", FakeScorer()) == round(10 ** (4 / 6), 1)
    assert bucket_for(10, 100, 200) == "head" and bucket_for(150, 100, 200) == "middle"
    assert bucket_for(250, 100, 200) == "tail"
    step = PerplexityBuckets({"en": FakeScorer()}, {"en": (3.0, 5.0)}, keep=("head", "middle"))
    docs = [
        Document("short", "a b", "cc", {"language": "en"}),           # 10**(2/3) = 4.6: middle
        Document("long", "a b c d e f g h i j", "cc", {"language": "en"}),  # 10**(10/11) = 8.1: tail
        Document("head", "a\nb\nc", "cc", {"language": "en"}),        # 10**(3/6) = 3.2 -> middle
        Document("de", "x y z", "cc", {"language": "de"}),            # no model: kept unscored
    ]
    out = list(step.run(docs))
    assert [(r.id, r.meta.get("bucket")) for r in out if isinstance(r, Document)] == [
        ("short", "middle"), ("head", "middle"), ("de", None)]
    assert [(r.record, r.reason) for r in out if isinstance(r, Drop)] == [("long", "perplexity_tail")]
