"""The offline sample corpus: generated inputs for every source that has a sample writer, a Pile
sample to match against, and a toy tokenizer, so a whole dataset run (sources, Pile index, dedup,
labels, tokens) completes without a download.

Wikipedia dumps come from :mod:`sources.samples.wikipedia` (the toy tokenizer is trained on
them); every other configured source whose :class:`core.registry.SourceSpec` has a ``sample``
writer gets its files under ``<out>/sample/<source>/`` (its ``sample_section`` says which config
fields they go to); a source without one is set to ``null``. When the dataset
runs dedup, the Pile sample (:mod:`sources.samples.pile`: exact and near copies of some sample
documents, plus unrelated ones) is written under ``<out>/sample/pile/``, ``flows.pile_index``
indexes it into ``<out>/indexes/pile-sample`` and dedup matches against that index, so the
``llama-in-ref`` class is not empty and G3 is smaller than G1. Common Crawl and C4 get a tiny
invented URL blocklist (:mod:`sources.samples.blocklist`, under ``<out>/sample/blocklist/``) that
pages planted in their samples hit, so the manifest shows ``url_blocklist:<category>`` drops.

Files are generated into a staging folder and moved into place only when their bytes changed:
an unchanged input keeps its mtime, so a second sample run resumes instead of redoing every
source.
"""

from __future__ import annotations

import bz2
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flows.runtime.lazy import LazyImport

if TYPE_CHECKING:
    from core.registry import Registry
    from sources.samples.pile import write_sample_inputs as write_pile_sample
else:  # the Pile sample's writer: for a sample run, not --help
    write_pile_sample = LazyImport("sources.samples.pile", "write_sample_inputs")

#: Where the Pile sample's index goes under the output root.
PILE_SAMPLE_INDEX = Path("indexes") / "pile-sample"
SAMPLE_PAGES = 300
#: The sources whose sample runs with the sample URL blocklist (the web sources that take one).
URL_BLOCKLIST_SOURCES = ("commoncrawl", "c4")


def sample_overrides(out: Path, configured: Iterable[str], registry: Registry, pages: int = SAMPLE_PAGES,
                     dedup: bool = True) -> dict[str, Any]:
    """Overrides that point a dataset at generated inputs and a toy tokenizer under ``<out>/sample``.

    ``configured``: the dataset's sources (not null); ``registry``: every known source, those
    without a sample set to null. ``dedup``: whether the dataset runs dedup (then the Pile sample
    is indexed and dedup matches against it; without dedup no index is built).
    """
    from sources.samples.blocklist import write_sample_blocklist
    from sources.samples.evals import write_sample_evals
    from sources.samples.wikipedia import write_sample_dumps

    root = out / "sample"
    dumps = write_sample_dumps(root, pages=pages)
    tokenizer = root / "tokenizer.json"
    if not tokenizer.exists():
        train_toy_tokenizer(dumps, tokenizer)
    wanted = set(configured)
    sections: dict[str, Any] = {name: None for name in registry}
    sections["wikipedia"] = {"dumps": [str(d) for d in dumps]}
    for spec in registry.specs():
        if spec.name in wanted and spec.sample is not None:
            sections[spec.name] = spec.sample_config(write_settled(root / spec.name, spec.sample))
    listed = [name for name in URL_BLOCKLIST_SOURCES if isinstance(sections.get(name), dict)]
    if listed:  # planted pages of these samples are on listed hosts and URLs
        write_settled(root / "blocklist", write_sample_blocklist)
        for name in listed:
            sections[name]["url_blocklist"] = str(root / "blocklist")
    overrides: dict[str, Any] = {"sources": sections, "pile_index": None, "tokenize": {"tokenizer": str(tokenizer)}}
    overrides["decontaminate"] = {"evals": [str(root / "evals")]}  # planted items (sources/samples/evals.py)
    write_settled(root / "evals", write_sample_evals)
    if dedup:  # the index the pile_index stage builds is the one dedup matches against
        pile = write_settled(root / "pile", write_pile_sample)
        overrides["pile_index"] = {"inputs": pile, "index": str(out / PILE_SAMPLE_INDEX)}
        overrides["dedup.against"] = None
    return overrides


def write_settled(directory: Path, writer: Callable[[Path], list[str]]) -> list[str]:
    """Run ``writer`` into a staging folder, then move each file into ``directory`` unless the same
    bytes are already there (an unchanged input keeps its mtime); return the final paths."""
    staging = directory.parent / f".staging-{directory.name}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        written = [Path(p) for p in writer(staging)]
        final = []
        for path in written:
            target = directory / path.relative_to(staging)
            if not (target.is_file() and target.read_bytes() == path.read_bytes()):
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
            final.append(str(target))
        return final
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def train_toy_tokenizer(dumps: list[Path], target: Path) -> None:
    """A 2,000-token byte-level BPE over the sample dumps' text: enough to exercise tokenization."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    lines = [line for d in dumps for line in bz2.decompress(d.read_bytes()).decode("utf-8").splitlines()]
    # show_progress off: the trainer's Rust progress bars write to the terminal's stdout directly (three
    # blank lines on a pipe, the first output of `make demo`), and a run has its own progress lines
    tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=2000, special_tokens=["<|endoftext|>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                       show_progress=False))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tok.save(str(tmp))
    tmp.replace(target)
