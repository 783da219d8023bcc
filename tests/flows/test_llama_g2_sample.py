"""G.2 offline, end to end through Prefect: ``python -m flows.llama --config configs/g2.yaml --sample``
runs every source with a sample writer (here, to keep the test short, Wikipedia and the extension
sources; tests/flows/test_llama.py runs the G.1 sources) on generated inputs, then the Pile sample's
index, dedup, labels and tokens; the extension shards carry G2 and not G1, ``kinda report`` lists
them, and a mixture over them loads. Runs every extension flow for real (~60 s on two loaded cores)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config import CONFIG_DIR
from core.manifest import Manifest
from flows import llama
from flows.registry import SOURCES
from kinda.cli import main as kinda_main
from loader import Recipe

#: The extension sources (each has a sample writer).
EXTENSION_SAMPLES = SOURCES.names("extension")
#: The document sources the extension flows write (pubmed writes two), from their specs.
EXTENSION_DOCS = sorted(SOURCES.documents("extension"))


@pytest.mark.prefect
def test_g2_sample_labels_every_extension_source(prefect_api_url: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "data"
    config = llama.parse_args(["--config", str(CONFIG_DIR / "g2.yaml"), "--sample", "--sample-pages", "10",
                               "--out", str(out), "--runner", "thread", "--workers", "2",
                               "--sources", ",".join(["wikipedia", *EXTENSION_SAMPLES]),
                               "--set", "sources.science_books.pdf.ocr='off'"])
    assert config.selected_sources() == ["wikipedia", *EXTENSION_SAMPLES]
    summary = llama.run(config)
    assert [(s.stage, s.status) for s in summary.stages] == [
        *[(name, "completed") for name in ["wikipedia", *EXTENSION_SAMPLES]],
        ("pile_index", "completed"), ("dedup", "completed"), ("decontaminate", "completed"),
        ("labels", "completed"), ("tokenize", "completed")]

    _, rows = Manifest.for_output(out).query(
        "SELECT source, bool_and(list_contains(labels, 'G2')), bool_or(list_contains(labels, 'G1')), sum(docs) "
        "FROM shards WHERE starts_with(path, 'labeled/') AND len(labels) > 0 GROUP BY 1 ORDER BY 1")  # classes
    # without a set (contaminated, filtered) hold stored documents with no label: not part of this check
    by_source = {source: (g2, g1, docs) for source, g2, g1, docs in rows}
    assert sorted(by_source) == sorted([*EXTENSION_DOCS, "wikipedia"])
    for source in EXTENSION_DOCS:
        g2, g1, docs = by_source[source]
        assert g2 and not g1 and docs > 0, (source, by_source[source])
    assert by_source["wikipedia"][:2] == (True, True)

    capsys.readouterr()
    assert kinda_main(["report", "--out", str(out)]) == 0
    report = capsys.readouterr().out
    assert all(source in report for source in EXTENSION_DOCS), report

    recipe = Recipe.model_validate({
        "name": "g2-sample", "locations": [str(out / "tensors" / "g2")], "on_empty": "error",
        "components": [{"name": source, "sources": [source], "weight": 1.0}
                       for source in ["wikipedia", *EXTENSION_DOCS]]})
    dataset = recipe.dataset(context_length=32)
    assert len(dataset) > 0
    with recipe.iterator(context_length=32, batch_size=2) as batches:
        batch = next(batches)
    assert tuple(batch["token_ids"].shape) == (2, 32)
