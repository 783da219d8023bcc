"""The shipped prose: every work loads as package data, draws are deterministic and disjoint."""

from __future__ import annotations

import pytest

from sources.samples import prose


def test_every_text_loads_without_gutenberg_boilerplate() -> None:
    for text in prose.TEXTS:
        raw = prose.raw_text(text.key)
        assert len(raw) > 15_000, text.key
        assert "gutenberg" not in raw.lower(), text.key
        assert "\r" not in raw
        assert len(prose.paragraphs(text.key)) > 20


def test_languages_hold_their_own_words() -> None:
    assert "Gregor Samsa" in prose.raw_text("de-die-verwandlung")
    assert "Thunder-ten-tronckh" in prose.raw_text("fr-candide")
    assert "En un lugar de la Mancha" in prose.raw_text("es-don-quijote")
    assert prose.LANGUAGES == ("de", "en", "es", "fr", "nl")


def test_draw_is_deterministic_and_shares_are_disjoint() -> None:
    first = prose.draw("en", 10, seed=3, share="c4")
    assert first == prose.draw("en", 10, seed=3, share="c4")
    assert first != prose.draw("en", 10, seed=4, share="c4")
    drawn = {share: {p.text for p in prose.draw("en", 15, seed=0, share=share)} for share in prose.SHARES}
    for share, texts in drawn.items():
        assert len(texts) == 15
        for other, other_texts in drawn.items():
            if other != share:
                assert not texts & other_texts
    assert all(len(p.text) >= 400 and "\n\n" not in p.paragraphs[0] for p in first)


def test_draw_refuses_what_a_share_cannot_give() -> None:
    with pytest.raises(ValueError, match="share 'c4' of 'nl'"):
        prose.draw("nl", 50, seed=0, share="c4")
    with pytest.raises(KeyError, match="unknown share"):
        prose.draw("en", 1, seed=0, share="nope")
    with pytest.raises(KeyError, match="known:"):
        prose.passages("xx")
