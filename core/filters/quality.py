"""Quality steps for web text: LLaMA's wiki-reference classifier and cc_net's perplexity buckets.

(a) LLaMA (section 2.1): "a linear model to classify pages used as references in Wikipedia v.s.
randomly sampled pages, and discarded pages not classified as references". Here: fastText
supervised, default hyper-parameters, one page per line with its newlines joined by spaces,
labels ``__label__wiki`` / ``__label__cc``; RedPajama kept pages with ``wiki_prob >= 0.25``.
Training is deterministic (one thread, fixed seed, shuffled with a seeded RNG) and reports
precision/recall of the positive class on a held-out split.

(b) cc_net: a KenLM 5-gram model over SentencePiece pieces, trained on Wikipedia, scores each
document; per-language perplexity cut-offs (30th/60th percentiles) make ``head``/``middle``/
``tail`` buckets. cc_net's published ``<lang>.arpa.bin`` + ``<lang>.sp.model`` work as they are.
``kenlm`` and ``sentencepiece`` are optional imports: without a configured model the step is
simply not part of the recipe, and the flow says so in its summary.
"""

from __future__ import annotations

import math
import random
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from core.atomic import atomic_path
from core.document import Document, Drop
from core.filters.ccnet import normalize_for_dedup
from core.filters.langid import load_fasttext, one_line
from core.steps import BatchedStep, Record, Step

POSITIVE = "wiki"
NEGATIVE = "cc"
#: RedPajama's threshold on the probability of the positive class.
WIKIREF_THRESHOLD = 0.25


def classifier_line(text: str, label: str | None = None) -> str:
    """One training/prediction line: ``__label__X`` then the page's text on one line."""
    body = " ".join(one_line(text).split())
    return f"__label__{label} {body}" if label else body


@dataclass(frozen=True)
class ClassifierReport:
    """Held-out quality of a trained classifier (positive class = wiki references)."""

    train_examples: int
    test_examples: int
    precision: float
    recall: float
    accuracy: float
    model_path: str

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for artifacts and JSON."""
        return dict(self.__dict__)


def positive_probability(model: Any, texts: Sequence[str]) -> list[float]:
    """P(wiki) per text from a two-label model."""
    if not texts:
        return []
    labels, scores = model.predict([classifier_line(t) for t in texts], k=2)
    out = []
    for label_list, score_list in zip(labels, scores, strict=True):
        probs = {label.removeprefix("__label__"): min(float(s), 1.0) for label, s in zip(label_list, score_list, strict=True)}
        out.append(probs.get(POSITIVE, 0.0))
    return out


def train_wikiref_classifier(
    positives: Iterable[str], negatives: Iterable[str], model_path: Path, holdout: float = 0.1, seed: int = 0,
    epoch: int = 5, lr: float = 0.1, word_ngrams: int = 1, threshold: float = 0.5,
) -> ClassifierReport:
    """Train, evaluate on a held-out split, save ``model_path`` atomically; fastText defaults otherwise."""
    import fasttext

    examples = [(POSITIVE, t) for t in positives if t.strip()] + [(NEGATIVE, t) for t in negatives if t.strip()]
    if len({label for label, _ in examples}) < 2:
        raise ValueError("training needs at least one positive and one negative page")
    random.Random(seed).shuffle(examples)
    n_test = max(1, int(len(examples) * holdout)) if holdout > 0 and len(examples) > 10 else 0
    test, train = examples[:n_test], examples[n_test:]
    with tempfile.TemporaryDirectory(prefix="wikiref-") as tmp:
        train_file = Path(tmp) / "train.txt"
        train_file.write_text("".join(classifier_line(t, label) + "\n" for label, t in train), encoding="utf-8")
        with atomic_path(model_path) as tmp_model:
            _train_in_clean_process(str(train_file), str(tmp_model), epoch, lr, word_ngrams, seed)
    model = fasttext.load_model(str(model_path))
    probabilities = positive_probability(model, [t for _, t in test])
    truth = [label == POSITIVE for label, _ in test]
    predicted = [p >= threshold for p in probabilities]
    tp = sum(p and t for p, t in zip(predicted, truth, strict=True))
    fp = sum(p and not t for p, t in zip(predicted, truth, strict=True))
    fn = sum(t and not p for p, t in zip(predicted, truth, strict=True))
    correct = sum(p == t for p, t in zip(predicted, truth, strict=True))
    return ClassifierReport(
        train_examples=len(train), test_examples=len(test),
        precision=tp / (tp + fp) if tp + fp else 0.0, recall=tp / (tp + fn) if tp + fn else 0.0,
        accuracy=correct / len(test) if test else 0.0, model_path=str(model_path),
    )


def _train_in_clean_process(train_file: str, model_file: str, epoch: int, lr: float, word_ngrams: int,
                            seed: int) -> None:
    """Train in a fresh spawned process and save the model there.

    fastText's trainer was seen to hit "Encountered NaN" on a corpus it trains fine on when the
    same process had already run other native libraries (the HF tokenizers' Rust thread pool);
    a clean process makes training independent of what the caller did before.
    """
    import concurrent.futures
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        pool.submit(_train_and_save, train_file, model_file, epoch, lr, word_ngrams, seed).result()


def _train_and_save(train_file: str, model_file: str, epoch: int, lr: float, word_ngrams: int, seed: int) -> None:
    import fasttext

    _train_with_backoff(fasttext, train_file, epoch, lr, word_ngrams, seed).save_model(model_file)


def _train_with_backoff(fasttext: Any, train_file: str, epoch: int, lr: float, word_ngrams: int, seed: int) -> Any:
    """fastText aborts with "Encountered NaN" when the learning rate is too high for a small or
    repetitive corpus; halve it (up to 4 times) instead of failing the flow."""
    for attempt in range(5):
        try:
            return fasttext.train_supervised(input=train_file, epoch=epoch, lr=lr / 2**attempt,
                                             wordNgrams=word_ngrams, thread=1, seed=seed, verbose=0)
        except RuntimeError as exc:
            if "NaN" not in str(exc) or attempt == 4:
                raise
    raise AssertionError("unreachable")


class WikiRefFilter(BatchedStep):
    """Keeps documents with ``wiki_prob >= threshold`` and records the probability in meta."""

    name = "wikiref_classifier"

    def __init__(self, model_path: str | Path, threshold: float = WIKIREF_THRESHOLD, batch_size: int = 256) -> None:
        if not Path(model_path).is_file():
            raise FileNotFoundError(f"wiki-reference classifier not found: {model_path}")
        self.model_path = str(model_path)
        self.threshold = threshold
        self.batch_size = batch_size

    def _flush(self, batch: list[Document]) -> Iterator[Record]:
        probabilities = positive_probability(load_fasttext(self.model_path), [d.text for d in batch])
        for doc, prob in zip(batch, probabilities, strict=True):
            if prob < self.threshold:
                yield Drop("wikiref_low", doc.id, language=doc.language)
            else:
                yield replace(doc, meta={**doc.meta, "wiki_prob": round(prob, 4)})


# -- perplexity buckets ---------------------------------------------------------------------
class LineScorer(Protocol):
    """What a perplexity model must do: log10 probability of one tokenized line, and tokenize."""

    def tokenize(self, line: str) -> str: ...

    def log10_score(self, tokens: str) -> float: ...


class KenLMScorer:
    """cc_net's models: SentencePiece to pieces, then a KenLM score of the space-joined pieces."""

    def __init__(self, lm_path: str | Path, sp_path: str | Path) -> None:
        self.lm_path, self.sp_path = str(lm_path), str(sp_path)

    @staticmethod
    @cache
    def _models(lm_path: str, sp_path: str) -> tuple[Any, Any]:
        try:
            import kenlm
            import sentencepiece
        except ImportError as exc:
            raise RuntimeError("perplexity buckets need `pip install kenlm sentencepiece`") from exc
        processor = sentencepiece.SentencePieceProcessor()
        processor.load(sp_path)
        return kenlm.Model(lm_path), processor

    def tokenize(self, line: str) -> str:
        return " ".join(self._models(self.lm_path, self.sp_path)[1].encode_as_pieces(line))

    def log10_score(self, tokens: str) -> float:
        return float(self._models(self.lm_path, self.sp_path)[0].score(tokens))


def document_perplexity(text: str, scorer: LineScorer) -> float:
    """cc_net's document perplexity: ``10 ** (-sum(log10 p) / tokens)``, counting one end token per line."""
    log_score, length = 0.0, 0
    for line in text.split("\n"):
        normalized = normalize_for_dedup(line) if line.strip() else ""
        if not normalized:
            continue
        tokens = scorer.tokenize(normalized)
        log_score += scorer.log10_score(tokens)
        length += len(tokens.split()) + 1
    return round(10.0 ** (-log_score / length), 1) if length else math.inf


def bucket_for(perplexity: float, head_max: float, middle_max: float) -> str:
    """cc_net's buckets: ``head`` below the 30th-percentile cut-off, ``middle`` below the 60th, else ``tail``."""
    if perplexity <= head_max:
        return "head"
    return "middle" if perplexity <= middle_max else "tail"


class PerplexityBuckets(Step):
    """Scores perplexity, records ``perplexity`` and ``bucket`` in meta, keeps ``keep`` buckets.

    ``cutoffs`` maps a language to its (head_max, middle_max) perplexities (cc_net's
    ``cutoff.csv`` 30th/60th percentiles); documents of a language without cut-offs or a model
    are kept unscored, and their count is visible as documents without ``bucket``.
    """

    name = "perplexity"

    def __init__(
        self, scorers: Mapping[str, LineScorer], cutoffs: dict[str, tuple[float, float]],
        keep: Sequence[str] = ("head", "middle"),
    ) -> None:
        self.scorers = scorers
        self.cutoffs = cutoffs
        self.keep = frozenset(keep)

    def run(self, docs: Iterable[Document]) -> Iterator[Record]:
        for doc in docs:
            language = doc.language or ""
            scorer, cutoff = self.scorers.get(language), self.cutoffs.get(language)
            if scorer is None or cutoff is None:
                yield doc
                continue
            perplexity = document_perplexity(doc.text, scorer)
            bucket = bucket_for(perplexity, *cutoff)
            if bucket not in self.keep:
                yield Drop(f"perplexity_{bucket}", doc.id, language=doc.language)
            else:
                yield replace(doc, meta={**doc.meta, "perplexity": perplexity, "bucket": bucket})
