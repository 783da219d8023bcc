"""Fidelity corpus, tokenization: documents full of numbers through the tensor writer, for every family.

Each case is one document of :data:`DOCUMENTS` tokenized with digit splitting by the real path of
``--inputs`` (:func:`tasks.tokenize_external.tokenize_file`: JSONL in, tensor files out) with one
tokenizer family of :mod:`tests.tokenizer_families`; the tensors are read back and decoded with
the *original* tokenizer, as a training run would (case 09's ``check.py`` does the same). A case
matches when:

- the decoded text is what the original tokenizer's own round trip gives (the text itself
  wherever the family's vocabulary holds every character);
- the ASCII digits of the document come out as single-digit tokens, in order, and nothing else
  holds a digit (the expected digit tokens are written out by hand below);
- the tokens are the original tokenizer's pre-tokens with each digit cut out, encoded by the same
  model (:func:`tests.tokenizer_families.expected_tokens`).

Issue 31's case 09 (a Unigram tokenizer with Metaspace ``prepend_scheme="always"``) is rebuilt
here from its recipe and is the first case.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from loader.tensor_writer import TokenizeSettings, open_tokens
from sources.formats.datasets_text import DatasetFile, ReadOptions
from tasks.tokenize_external import ExternalJob, tokenize_file
from tests.tokenizer_families import SPLITTABLE, expected_tokens, family_path

#: (id, text, the ASCII digits it holds, in order): numbers, decimals, dates, times, phone numbers,
#: prices, versions and codes inside words, numbers at the very start and after several spaces,
#: digits of other scripts, and a text with no digit at all.
DOCUMENTS = [
    ("year", "In 2024 the bridge was 350 metres long.", "2024350"),
    ("count", "The town counted about 1200 cars each day.", "1200"),
    ("decimals", "Pi is 3.14159 and e is 2.71828; growth was -0.5% in Q3.", "314159271828053"),
    ("dates", "Opened on 2019-07-01, closed 31/12/2020 at 23:59.", "2019070131122020" "2359"),
    ("phone", "Call (555) 010-0199 or +44 20 7946 0958 today.", "5550100199442079460958"),
    ("prices", "It cost $1,250.00, about 12,500 units at 0.1 each.", "12500012500" "01"),
    ("codes", "v1.2.3-rc10 fixed COVID-19 on 4K screens and mp3 files.", "12310" "19" "4" "3"),
    ("start", "2024  was  a  year\n\n42\tanswers,  7 days.", "2024427"),
    ("unicode", "Arabic \u0662\u0660\u0662\u0664, full-width \uff12\uff10\uff12\uff14, Devanagari \u0968\u0966, m\u00b2 and \u00bd cup.", ""),
    ("none", "It's a \"quoted\" text - with caf\u00e9 and no numbers at all.", ""),
]
#: Where the original tokenizer itself does not give the text back (with or without digit
#: splitting), and why: there the decoded tensors must equal its own round trip.
NOT_ROUND_TRIP = {
    ("t5-unigram", "start"): "WhitespaceSplit folds every whitespace run into one space",
    ("t5-unigram", "unicode"): "characters outside the vocabulary become <unk> (no byte fallback)",
    ("unigram-first", "start"): "newlines and tabs are outside the vocabulary (<unk>)",
    ("unigram-first", "unicode"): "characters outside the vocabulary become <unk> (no byte fallback)",
}
_CASE09_WORDS = ["the", "bridge", "was", "built", "in", "metres", "long", "and", "opened", "by", "town", "council",
                 "river", "boat", "year", "people", "counted", "about", "cars", "each", "day", "when", "new", "road",
                 "map", "price", "rose", "to"]


def case09_tokenizer(path: Path) -> Path:
    """Case 09's tokenizer, by its recipe: Unigram, Metaspace ``always``, trained on its fixed corpus."""
    corpus = []
    for i in range(400):
        n = (i * 7919) % 100000
        corpus.append(f"In {1900 + i % 120} the {_CASE09_WORDS[i % len(_CASE09_WORDS)]} "
                      f"{_CASE09_WORDS[(i * 3) % len(_CASE09_WORDS)]} was {n} "
                      f"and {i} {_CASE09_WORDS[(i * 5) % len(_CASE09_WORDS)]} {n % 997}.")
    corpus += ["The Town Bridge Was Counted.", "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 .,"] * 20
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.train_from_iterator(corpus, trainers.UnigramTrainer(vocab_size=400, special_tokens=["<pad>", "</s>", "<unk>"],
                                                            unk_token="<unk>"))
    tok.save(str(path))
    return path


def _tensor_documents(folder: Path, tokenizer: Path, docs: list[tuple[str, str, str]]) -> dict[str, list[int]]:
    """Write ``docs`` as JSONL, tokenize it with digit splitting through the tensor writer; ids per document."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "docs.jsonl"
    data.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t, _ in docs), encoding="utf-8")
    out = folder / "tensors"
    job = ExternalJob(out, "dataset", TokenizeSettings(tokenizer=str(tokenizer), split_digits=True, holdout_fraction=0),
                      ReadOptions(id_column="id"))
    record = tokenize_file(DatasetFile(str(data), "docs.jsonl", "jsonl"), job)
    assert record["status"] == "done" and record["docs_kept"] == len(docs), record
    info = record["splits"]["train"]
    tokens, offsets = open_tokens(out / info["tokens_path"], out / info["docs_path"], record["dtype"])
    eos = job.settings.load().eos_id
    ids = [np.asarray(tokens[offsets[i]:offsets[i + 1]]).tolist() for i in range(len(docs))]
    assert all(doc_ids[-1] == eos for doc_ids in ids)  # each document ends with the end-of-document id
    return {doc_id: doc_ids[:-1] for (doc_id, _, _), doc_ids in zip(docs, ids, strict=True)}


@pytest.fixture(scope="module")
def tensors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, list[int]]]]:
    """Every family's tensors of :data:`DOCUMENTS` (one tokenize run per family), and case 09's."""
    root = tmp_path_factory.mktemp("fidelity-tok")
    written = {}
    for name in SPLITTABLE:
        path = family_path(name, root)
        written[name] = (path, _tensor_documents(root / name, path, DOCUMENTS))
    case09 = case09_tokenizer(root / "case09.json")
    written["case09"] = (case09, _tensor_documents(root / "case09-run", case09, DOCUMENTS[:2]))
    return written


@pytest.mark.fidelity("tokenization")
@pytest.mark.parametrize("doc", [d[0] for d in DOCUMENTS[:2]])
def test_case_09_metaspace_always_round_trips(tensors: dict[str, tuple[Path, dict[str, list[int]]]], doc: str) -> None:
    """Case 09: no ``▁`` added before each digit; the tensors decode to the document text."""
    path, ids = tensors["case09"]
    text, digits = next((t, d) for i, t, d in DOCUMENTS if i == doc)
    original = Tokenizer.from_file(str(path))
    pieces = [original.id_to_token(t) for t in ids[doc]]
    assert original.decode(ids[doc]) == text
    assert [p for p in pieces if any(c.isdigit() for c in p)] == list(digits)
    first = pieces.index(digits[0])
    assert pieces[first - 1: first + 4] == ["\u2581", *digits[:4]]
    assert ids[doc] == [i for _, i in expected_tokens(original, False, text)]


@pytest.mark.fidelity("tokenization")
@pytest.mark.parametrize("doc", [d[0] for d in DOCUMENTS])
@pytest.mark.parametrize("family", list(SPLITTABLE))
def test_family_document(tensors: dict[str, tuple[Path, dict[str, list[int]]]], family: str, doc: str) -> None:
    path, ids = tensors[family]
    text, digits = next((t, d) for i, t, d in DOCUMENTS if i == doc)
    original = Tokenizer.from_file(str(path))
    pieces = [original.id_to_token(t) for t in ids[doc]]
    if (family, doc) in NOT_ROUND_TRIP:
        assert original.decode(ids[doc]) == original.decode(original.encode(text).ids) != text
    else:  # ByteLevel's add_prefix_space puts a space before the text, with or without digit splitting
        assert original.decode(ids[doc]) == (" " + text if family == "bytelevel-prefix" else text)
    assert [p for p in pieces if any("0" <= c <= "9" for c in p) and not p.startswith("<0x")] == list(digits)
    assert ids[doc] == [i for _, i in expected_tokens(original, "ByteLevel" in path.read_text(encoding="utf-8"), text)]
