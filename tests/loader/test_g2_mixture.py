"""configs/g2_mixture.yaml: LLaMA's table plus the extension shares, loaded over G2-labeled tensors."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from core.document import Document, make_doc_id
from core.shards import ShardLimits, ShardWriter
from loader import Recipe
from loader.tensor_writer import TokenizeSettings, find_input_shards, tokenize_shard, write_metadata
from tests.toy import train_toy_tokenizer

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
LLAMA = ["commoncrawl", "c4", "github", "wikipedia", "books", "arxiv", "stackexchange"]
EXTENSIONS = ["pubmed_central", "pubmed_abstracts", "science_books", "dm_math", "stack_code", "dialogue", "reasoning"]


def test_weights_keep_the_llama_table_and_add_the_extensions() -> None:
    g2 = yaml.safe_load((CONFIGS / "g2_mixture.yaml").read_text(encoding="utf-8"))
    llama = yaml.safe_load((CONFIGS / "llama_mixture.yaml").read_text(encoding="utf-8"))
    by_source = {c["sources"][0]: c for c in g2["components"]}
    assert sorted(by_source) == sorted(LLAMA + EXTENSIONS) and all(len(c["sources"]) == 1 for c in g2["components"])
    for component in llama["components"]:  # the paper's weights and epochs, unchanged
        mine = by_source[component["sources"][0]]
        assert (mine["weight"], mine["epochs"]) == (component["weight"], component["epochs"])
    assert all(c["labels"] == ["G2"] for c in g2["components"])
    total = sum(c["weight"] for c in g2["components"])
    extension = sum(by_source[s]["weight"] for s in EXTENSIONS)
    assert total == pytest.approx(110.7407) and extension / total == pytest.approx(0.097, abs=0.001)
    code = (by_source["github"]["weight"] + by_source["stack_code"]["weight"]) / total
    assert code == pytest.approx(0.067, abs=0.001)  # the header's figure (Galactica: 7%)


def test_loads_over_g2_tensors(tmp_path: Path) -> None:
    """Every component finds its G2 tensors; the planned windows follow the weights."""
    rnd = random.Random(2)
    data = tmp_path / "data"
    texts: dict[str, list[str]] = {s: [" ".join(f"{s}{rnd.randrange(50)}" for _ in range(400)) for _ in range(3)]
                                   for s in LLAMA + EXTENSIONS}
    for source, docs in texts.items():
        cls, labels = ("llama", ["G1", "G2", "G3"]) if source in LLAMA else ("extension", ["G2"])
        with ShardWriter(data, data / "labeled" / cls / source / "en", "part", source, "en", labels,
                         ShardLimits(max_docs=100, row_group_docs=10)) as writer:
            for i, text in enumerate(docs):
                writer.write(Document(make_doc_id(source, str(i)), text, source, {"language": "en"}))
    tokenizer = train_toy_tokenizer(tmp_path / "tokenizer.json", [t for docs in texts.values() for t in docs])
    tensors = tmp_path / "tensors" / "g2"
    settings = TokenizeSettings(tokenizer=str(tokenizer), split_digits=True, holdout_fraction=0.0, work_tokens="text")
    shards = find_input_shards(data, ["G2"])
    assert len(shards) == 14
    write_metadata(tensors, [tokenize_shard(data, s, tensors, settings) for s in shards], settings, ["G2"])

    recipe = Recipe.from_yaml(CONFIGS / "g2_mixture.yaml", {"locations": [str(tensors)], "total_tokens": 16 * 110_741})
    assert [len(files) for files in recipe.component_files()] == [1] * 14
    ds = recipe.dataset(context_length=16)
    counts = dict(zip(ds.names, ds.counts, strict=True))
    assert sum(counts.values()) == 110_741
    assert counts["CommonCrawl"] == pytest.approx(67_000, abs=1) and counts["PubMedCentral"] == pytest.approx(3_400, abs=1)
    assert counts["Reasoning"] in (0, 1) and counts["StackCode"] == pytest.approx(2_900, abs=1)
    item = ds[0]
    assert item["token_ids"].shape[0] == 16 and int(item["token_ids"].max()) < 300

    # without total_tokens the epoch caps end the run: here the smallest component's cap decides
    capped = Recipe.from_yaml(CONFIGS / "g2_mixture.yaml", {"locations": [str(tensors)]}).dataset(context_length=16)
    assert 0 < sum(capped.counts) < 110_741
