"""The Pile reference index: incremental, resumable, traceable to shard and line."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from core.document import Document
from core.exact import exact_hash
from core.shards import ShardWriter
from dedupe import minhash_kernel, reference, shingles
from dedupe.lsh import BandLayout, JoinSettings, SignaturePart, SignatureStore, save_signatures, verify_pairs
from dedupe.minhash import MinHashConfig, MinHasher, is_empty
from dedupe.reference import (
    PartBuilder,
    ReferenceIndex,
    best_reference_matches,
    index_pile_shard,
    reference_addresses,
    reference_band_pairs,
    sign_document_shard,
)

LAYOUTS = [BandLayout.named("0.8"), BandLayout.named("0.9")]


def words(rnd: random.Random, n: int = 200) -> list[str]:
    return [f"{rnd.choice('bdfgklmnprst')}{rnd.choice('aeiou')}{rnd.randrange(4000)}" for _ in range(n)]


def write_pile(path: Path, texts: list[str], sets: list[str] | None = None, extra: list[bytes] = ()) -> Path:
    sets = sets or ["Pile-CC"] * len(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"text": t, "meta": {"pile_set_name": s}}).encode() for t, s in zip(texts, sets, strict=True)]
    path.write_bytes(zstandard.ZstdCompressor().compress(b"".join(line + b"\n" for line in [*lines, *extra])))
    return path


def build(index: ReferenceIndex, shards: list[Path]) -> list[dict]:
    parts = [index_pile_shard(s, index.root, no, name, index.minhash, index.layouts) for s, no, name in index.plan(shards)]
    index.commit(parts)
    return parts


@pytest.fixture()
def corpus(tmp_path: Path):
    rnd = random.Random(3)
    pile_texts = [" ".join(words(rnd)) for _ in range(60)]
    shard_a = write_pile(tmp_path / "pile" / "00.jsonl.zst", pile_texts[:30], extra=[b"{broken", b'{"text": "\xff"}'])
    shard_b = write_pile(tmp_path / "pile" / "01.jsonl.zst", pile_texts[30:], ["ArXiv"] * 30)
    return tmp_path, pile_texts, shard_a, shard_b


def test_index_is_incremental_and_skips_known_shards(corpus) -> None:
    tmp_path, _, shard_a, shard_b = corpus
    index = ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), LAYOUTS)
    first = build(index, [shard_a])
    assert first[0]["count"] == 30 and first[0]["drops"] == {"bad_json": 1, "invalid_utf8": 1}
    assert first[0]["lines"] == 32
    reopened = ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), LAYOUTS)
    assert reopened.plan([shard_a]) == []  # already indexed
    build(reopened, [shard_a, shard_b])
    final = ReferenceIndex.open(tmp_path / "index")
    assert final.documents == 60 and [p["part_no"] for p in final.parts] == [0, 1]
    second = final.parts[1]
    ref = (1 << 32) + 4
    assert reference_addresses(final, [ref]) == {ref: {"shard": "01.jsonl.zst", "line": 5, "pile_set_name": "ArXiv"}}
    assert second["first"] == 1 << 32


def test_index_refuses_other_parameters(corpus) -> None:
    tmp_path, *_ = corpus
    ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), LAYOUTS)
    with pytest.raises(ValueError, match="built with"):
        ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(seed=9), LAYOUTS)
    with pytest.raises(ValueError, match="layouts"):
        ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), [BandLayout.named("0.7")])


def test_resume_reuses_a_finished_part(corpus) -> None:
    tmp_path, _, shard_a, _ = corpus
    index = ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), LAYOUTS)
    (shard, no, name), = index.plan([shard_a])
    first = index_pile_shard(shard, index.root, no, name, index.minhash, index.layouts)
    signatures = index.root / "signatures" / f"{name}.u16"
    before = signatures.stat().st_mtime_ns
    again = index_pile_shard(shard, index.root, no, name, index.minhash, index.layouts)
    assert again == first and signatures.stat().st_mtime_ns == before


def test_sparse_store_gathers_across_parts(tmp_path: Path) -> None:
    blocks = [np.arange(i * 40, i * 40 + 40, dtype=np.uint32).reshape(5, 8) for i in range(2)]
    parts = []
    for i, block in enumerate(blocks):
        part = save_signatures(tmp_path / f"{i}.u32", block)
        parts.append(SignaturePart(part.path, i << 32, 5, 8))
    store = SignatureStore(parts)
    got = store.gather(np.array([(1 << 32) + 2, 0, 4, (1 << 32)]))
    np.testing.assert_array_equal(got, np.vstack([blocks[1][2], blocks[0][0], blocks[0][4], blocks[1][0]]))
    with pytest.raises(IndexError):
        store.gather(np.array([7]))


def test_documents_are_matched_to_their_pile_line(corpus) -> None:
    tmp_path, pile_texts, shard_a, shard_b = corpus
    index = ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), LAYOUTS)
    build(index, [shard_a, shard_b])
    rnd = random.Random(11)
    near = pile_texts[40].split()
    for i in (100,):  # one edit: 5 of 196 shingles differ, Jaccard ~0.95
        near[i] = "edited"
    docs = [pile_texts[3], " ".join(near), " ".join(words(rnd)), "tiny"]
    out = tmp_path / "data"
    with ShardWriter(out, out / "docs" / "web" / "en", "x", "web") as writer:
        for i, text in enumerate(docs):
            writer.write(Document(f"web-{i}", text, "web"))
    shard = writer.finished[0].path
    query = tmp_path / "work"
    layout = index.layout("0.8")
    part = sign_document_shard(out, shard, query, "00000", 0, index.minhash, [layout])
    part["source"] = "web"
    pairs = [reference_band_pairs(query, index, layout, band, query, JoinSettings()) for band in range(layout.bands)]
    matches = pq.read_table(best_reference_matches(query, [part], index, layout, pairs, query, JoinSettings())).to_pylist()
    addresses = reference_addresses(index, [m["ref"] for m in matches])
    found = {m["doc"]: (m["kind"], addresses[m["ref"]]["shard"], addresses[m["ref"]]["line"]) for m in matches}
    assert found == {0: ("exact", "00.jsonl.zst", 4), 1: ("near", "01.jsonl.zst", 11)}
    assert 0.8 <= next(m["jaccard"] for m in matches if m["doc"] == 1) < 1.0


class _PerTextPartBuilder(PartBuilder):
    """The part builder before texts were encoded once per batch: the oracle of the fast path."""

    def add(self, texts, columns, encoded=None) -> None:
        if not texts:
            return
        signatures = self.hasher.signatures(texts)
        docs = np.arange(self.first + self.count, self.first + self.count + len(texts), dtype=np.int64)
        empty = is_empty(signatures)
        self._sigs.write(signatures)
        for bands in self._bands:
            bands.write(signatures, docs)
        table = {"doc": docs, "hash": [exact_hash(t) for t in texts], "empty": empty, **columns}
        self._docs.write_table(pa.table({name: table[name] for name in self.schema.names}, schema=self.schema))
        self.count += len(texts)
        self.empty += int(empty.sum())


def test_part_bytes_equal_the_per_text_oracle(tmp_path: Path, monkeypatch) -> None:
    """Every file of a part (signatures, band keys, docs table) is byte for byte what encoding,
    lowering and normalizing each text on its own gives (:func:`dedupe.shingles.normalize_for_shingles`):
    ASCII and non-ASCII prose, capitals that only case folding folds (É, Σ, İ, Cyrillic), ligatures
    and full-width forms that NFKC changes, curly quotes and dashes, NBSP and other Unicode spaces, ``\\x1c``,
    decomposed accents, whitespace-only texts and documents longer than one hashing chunk."""
    rnd = random.Random(5)
    pieces = [*words(rnd, 40), "“Quoted”", "—", "ÉCOLE", "ΣΟΦΙΑ", "İstanbul", "Привет", "Cafe\u0301", "日本語",
              "\u00a0", "\u3000", "\x1c", "\t\t", "\n\n", "  ", "naïve", "ǅ", "\ufb01ne", "\uff12\uff10",
              "straße", "soft\u00adhyphen", "it\u2019s", "a\u2026"]
    texts = [" ".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 400))) for _ in range(150)]
    texts += ["plain ascii text only " * 30, "  \u2003 ", "x", "Long " + "word " * 3000]
    shard = write_pile(tmp_path / "00.jsonl.zst", texts)
    monkeypatch.setattr(reference, "BATCH_DOCS", 37)  # several batches, one of them partial
    monkeypatch.setattr(minhash_kernel, "PIECE_BYTES", 4096)  # the long document is read in pieces
    index_pile_shard(shard, tmp_path / "new", 0, "p", MinHashConfig(), LAYOUTS)
    monkeypatch.setattr(reference, "PartBuilder", _PerTextPartBuilder)
    monkeypatch.setattr(shingles, "_fold_batch", lambda raws, _plain: shingles._joined(
        [shingles._encode(raw.decode("utf-8", errors="surrogatepass")) for raw in raws]))
    index_pile_shard(shard, tmp_path / "old", 0, "p", MinHashConfig(), LAYOUTS)
    old_files = sorted(p.relative_to(tmp_path / "old") for p in (tmp_path / "old").rglob("*") if p.is_file())
    assert len(old_files) > 3
    for name in old_files:
        if name.suffix != ".json":  # markers and records hold timings
            assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "old" / name).read_bytes(), name


def test_index_keeps_the_low_16_bits_and_verifies_as_the_whole_values(corpus) -> None:
    """The index stores each signature value's low 16 bits (half the disk); verification on them
    keeps exactly the pairs, and the Jaccard estimates, that the whole 32-bit values give."""
    tmp_path, pile_texts, shard_a, shard_b = corpus
    index = ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), LAYOUTS)
    build(index, [shard_a, shard_b])
    assert index.signature_bits == 16 and ReferenceIndex.open(index.root).signature_bits == 16
    whole = MinHasher(index.minhash).signatures(pile_texts[30:])
    part = index.parts[1]
    stored = np.fromfile(index.root / "signatures" / f"{part['part']}.u16", dtype="<u2").reshape(30, 128)
    np.testing.assert_array_equal(stored, whole & 0xFFFF)

    rnd = random.Random(2)
    near = [" ".join(w if rnd.random() > rate else "x" for w in text.split())
            for text, rate in zip(pile_texts[30:], np.linspace(0, 0.2, 30), strict=True)]
    query = save_signatures(tmp_path / "q.u32", MinHasher(index.minhash).signatures(near))
    pairs = tmp_path / "pairs.parquet"
    a = np.repeat(np.arange(30), 30)
    b = np.tile(np.arange(30), 30) + part["first"]
    pq.write_table(pa.table({"a": a, "b": b}), pairs)
    whole_store = SignatureStore([SignaturePart(save_signatures(tmp_path / "w.u32", whole).path, part["first"], 30)])

    def verified(store: SignatureStore) -> list[np.ndarray]:
        return [np.concatenate(x) for x in zip(*verify_pairs(pairs, SignatureStore([query]), store, 0.5), strict=True)]

    narrow, wide = verified(index.store()), verified(whole_store)
    assert len(wide[0]) > 10
    for got, expected in zip(narrow, wide, strict=True):
        np.testing.assert_array_equal(got, expected)


def test_an_index_of_whole_signatures_still_opens_and_grows_alike(corpus) -> None:
    """An index written before signatures were cut (no ``signature_bits`` in index.json) keeps
    32-bit parts when shards are added to it, and matches through them."""
    tmp_path, pile_texts, shard_a, shard_b = corpus
    old = ReferenceIndex(tmp_path / "index", MinHashConfig(), LAYOUTS)  # as the older code created it
    old.commit([])
    meta = json.loads((old.root / "index.json").read_text())
    del meta["signature_bits"]
    (old.root / "index.json").write_text(json.dumps(meta))
    index = ReferenceIndex.open_or_create(old.root, MinHashConfig(), LAYOUTS)
    assert index.signature_bits == 32
    parts = [index_pile_shard(s, index.root, no, name, index.minhash, index.layouts, signature_bits=index.signature_bits)
             for s, no, name in index.plan([shard_a, shard_b])]
    index.commit(parts)
    assert sorted(p.name for p in (index.root / "signatures").iterdir()) == [f"{p['part']}.u32" for p in parts]
    assert index.store().bits == 32
    np.testing.assert_array_equal(index.store().gather(np.array([1 << 32])),
                                  MinHasher(index.minhash).signatures([pile_texts[30]]))


def test_matching_reads_only_committed_parts(corpus) -> None:
    """A part whose files are finished but which ``index.json`` does not list (a build killed
    before its commit) is not read by the joins: its documents have no signatures in the index."""
    tmp_path, pile_texts, shard_a, shard_b = corpus
    index = ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), LAYOUTS)
    build(index, [shard_a])
    (shard, no, name), = ReferenceIndex.open(index.root).plan([shard_b])
    index_pile_shard(shard, index.root, no, name, index.minhash, index.layouts)  # finished, never committed
    index = ReferenceIndex.open(index.root)
    out = tmp_path / "data"
    with ShardWriter(out, out / "docs" / "web" / "en", "x", "web") as writer:
        for i, text in enumerate([pile_texts[40] + " tail", pile_texts[5] + " tail"]):
            writer.write(Document(f"web-{i}", text, "web"))
    query = tmp_path / "work"
    layout = index.layout("0.8")
    part = sign_document_shard(out, writer.finished[0].path, query, "00000", 0, index.minhash, [layout])
    pairs = [reference_band_pairs(query, index, layout, band, query, JoinSettings()) for band in range(layout.bands)]
    matches = pq.read_table(best_reference_matches(query, [part], index, layout, pairs, query, JoinSettings())).to_pylist()
    assert [(m["doc"], m["kind"], m["ref"]) for m in matches] == [(1, "near", 5)]


def test_an_index_of_the_old_normalization_is_refused_in_one_line(corpus) -> None:
    """Format 1 signed lowered text only: comparing it with today's signatures would miss every
    pair that differs in typography, so it is refused with what to do (issue 31, case 10)."""
    tmp_path, _, shard_a, _ = corpus
    index = ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), LAYOUTS)
    build(index, [shard_a])
    meta_path = tmp_path / "index" / "index.json"
    meta = json.loads(meta_path.read_text())
    assert meta["format"] == reference.INDEX_FORMAT == 2
    meta_path.write_text(json.dumps({**meta, "format": 1}))
    with pytest.raises(ValueError, match=r"index format 1 .*rebuild") as caught:
        ReferenceIndex.open(tmp_path / "index")
    assert "\n" not in str(caught.value) and shingles.NORMALIZATION in str(caught.value)


def test_part_markers_name_the_normalization(corpus) -> None:
    """A part signed under another normalization is built again, never reused."""
    tmp_path, _, shard_a, _ = corpus
    index = ReferenceIndex.open_or_create(tmp_path / "index", MinHashConfig(), LAYOUTS)
    (_, _, name), = index.plan([shard_a])
    build(index, [shard_a])
    marker = json.loads((tmp_path / "index" / "parts" / f"{name}.json").read_text())
    assert shingles.NORMALIZATION in json.dumps(marker)


def _records(root: Path) -> dict[str, dict]:
    """index.json and parts/*.json of an index, each part record without its timing."""
    files = [root / "index.json", *sorted((root / "parts").glob("*.json"))]
    found = {p.relative_to(root).as_posix(): json.loads(p.read_text(encoding="utf-8")) for p in files}
    for record in [*found["index.json"]["parts"], *(f["record"] for n, f in found.items() if n != "index.json")]:
        record.pop("seconds")
    return found


def test_index_records_name_a_shard_the_same_from_any_folder(corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """The records once held ``location``, the path as given (nothing read it): a local folder in released index files."""
    tmp_path, _, shard_a, _ = corpus
    elsewhere = tmp_path / "home" / "someone" / "raw" / "pile" / "00.jsonl.zst"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_bytes(shard_a.read_bytes())
    build(ReferenceIndex.open_or_create(tmp_path / "index-a", MinHashConfig(), LAYOUTS), [shard_a])
    monkeypatch.chdir(elsewhere.parent)
    build(ReferenceIndex.open_or_create(tmp_path / "index-b", MinHashConfig(), LAYOUTS), [Path("00.jsonl.zst")])
    first, second = _records(tmp_path / "index-a"), _records(tmp_path / "index-b")
    assert first == second and first["index.json"]["parts"][0]["shard"] == "00.jsonl.zst"
    for name in first:
        text = (tmp_path / "index-b" / name).read_text(encoding="utf-8")
        assert str(tmp_path) not in text and "someone" not in text, name
