"""The compiled fastText prediction (core.filters.lid176) gives fastText's own label and score, bit for bit."""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.filters import lid176
from core.filters.langid import load_fasttext, one_line, predict_languages, predict_top1, resolve_lid_model

#: What fastText's tokenizer treats specially: its split bytes, the end-of-line token (reading
#: stops there) and the label prefix (not a word), beside multi-byte UTF-8 and spaces it does not split on.
TRICKY = ["a", "bc", "dé", "ü", "\t", "\x0b", "\x0c", "\x00", " ", "  ", "</s>", "__label__en", "__label__xx",
          "日本語", "Ωσς", "😀", "\u200b", "\xa0", "\u3000", "-", ".", "\x1c", "\x85", "e\u0301"]


def lid_path() -> str:
    return str(resolve_lid_model())


def assert_same(path: str, texts: list[str]) -> None:
    model = lid176.load(path)
    assert model is not None
    expected = predict_top1(load_fasttext(path), texts)
    got = model.predict([one_line(t) for t in texts])
    assert [(i, g) for i, (g, e) in enumerate(zip(got, expected, strict=True)) if g != e] == []


def test_real_pages_in_many_languages_match_fasttext(realdata: Path) -> None:
    texts = [json.loads(line)["text"] for line in gzip.open(realdata / "c4" / "c4-format-00000-of-00001.DERIVED.json.gz", "rt")][:300]
    for wiki in ("jawiki", "ukwiki", "viwiki"):  # Japanese, Ukrainian, Vietnamese wikitext, markup and all
        with open(realdata / "mediawiki" / f"ssvb-xztextfilter_{wiki}-truncated-100k.xml.xz", "rb") as fh:
            import lzma

            raw = lzma.decompress(fh.read()).decode("utf-8", "replace")
        texts += [m.group(1)[:5000] for m in re.finditer(r"<text[^>]*>(.*?)</text>", raw, re.S)][:100]
    assert len({label for label, _ in predict_top1(load_fasttext(lid_path()), texts)}) >= 4
    assert_same(lid_path(), texts)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TRICKY), max_size=40), st.text(max_size=30))
def test_tokenizer_edge_cases_match_fasttext(pieces: list[str], noise: str) -> None:
    text = "".join(pieces) + noise
    assert_same(lid_path(), [text.encode("utf-8", "replace").decode("utf-8")])


def test_text_after_an_end_of_line_token_is_not_read() -> None:
    """fastText stops reading a line at ``</s>``: what follows changes nothing, in either."""
    english = "The committee will meet on Thursday to discuss the budget for next year."
    german = "Der Ausschuss trifft sich am Donnerstag, um den Haushalt zu besprechen."
    model = lid176.load(lid_path())
    assert model is not None
    (first,) = model.predict([f"{english} </s> {german}"])
    assert first == model.predict([f"{english} </s> {german} {german}"])[0] and first[0] == "en"
    assert_same(lid_path(), [f"{english} </s> {german}", f"{german}</s> {english}"])


@pytest.fixture(scope="module")
def small_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A tiny supervised model trained here: dense (.bin, n-grams unpruned) and quantized with a cut-off (.ftz)."""
    import fasttext

    folder = tmp_path_factory.mktemp("fasttext")
    rng = random.Random(7)
    words = {"a": "sun moon star river stone tree", "b": "Haus Baum Fluss Stein Stern Mond", "c": "東京 大阪 京都 山 川"}
    lines = [f"__label__{label} " + " ".join(rng.choice(vocab.split()) for _ in range(8))
             for _ in range(300) for label, vocab in words.items()]
    train = folder / "train.txt"
    train.write_text("\n".join(lines) + "\n", encoding="utf-8")
    model = fasttext.train_supervised(str(train), loss="hs", minn=2, maxn=4, dim=8, epoch=3, lr=0.05, bucket=5000, thread=1,
                                      seed=1, verbose=0)
    model.save_model(str(folder / "small.bin"))
    model.quantize(input=str(train), qnorm=True, cutoff=400, retrain=False, dsub=2, verbose=0)
    model.save_model(str(folder / "small.ftz"))
    return {"bin": str(folder / "small.bin"), "ftz": str(folder / "small.ftz")}


@pytest.mark.parametrize("kind", ["bin", "ftz"])
def test_dense_and_pruned_quantized_models_match_fasttext(small_models: dict[str, str], kind: str) -> None:
    rng = random.Random(3)
    texts = ["sun moon river", "Haus Stern", "京都 山", "stone Baum 川 star", "", "zzz unknown words", *(
        " ".join(rng.choice(["sun", "Mond", "東京", "qq", "Sterne", "rivers", "ä"]) for _ in range(rng.randint(1, 12)))
        for _ in range(200))]
    assert_same(small_models[kind], texts)


def test_a_model_kind_not_covered_is_predicted_by_fasttext(tmp_path: Path) -> None:
    """A softmax model is left to fastText (read_model says None); the step's results are fastText's."""
    data = bytearray(Path(lid_path()).read_bytes())
    data[8 + 6 * 4 : 8 + 7 * 4] = (3).to_bytes(4, "little")  # args.loss = softmax
    other = tmp_path / "softmax.ftz"
    other.write_bytes(bytes(data))
    assert lid176.read_model(other) is None
    texts = ["The committee will meet on Thursday.", "Der Ausschuss trifft sich am Donnerstag."]
    assert predict_languages(str(other), texts) == predict_top1(load_fasttext(str(other)), texts)
