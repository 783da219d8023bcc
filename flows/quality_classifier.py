"""Train LLaMA's wiki-reference classifier: Wikipedia-cited pages (positives) vs random CC pages.

    python -m flows.quality_classifier --positives refs.warc.gz --negatives cc.warc.gz --out models/wikiref.bin
    python -m flows.quality_classifier --positives 'refs/*.jsonl.gz' --negatives 'cc/*.warc.wet.gz' --out m.bin

Inputs are WARC (HTML, extracted with trafilatura), WET, or JSON lines (``{"text": ...}``, plain or
gz). One ``read-pages`` task per input file; training and the held-out report run in one task.
The report (precision/recall of the positive class) is printed, saved beside the model as
``<model>.report.json`` and published as a Prefect table artifact. Then filter with
``python -m flows.commoncrawl ... --wikiref-model models/wikiref.bin``.
"""

from __future__ import annotations

import gzip
import random
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from core.atomic import write_json_atomic
from core.config import PipelineConfig
from core.document import Document
from core.json_line import parse_json_line
from flows.runtime.cli import Flag, FlowCLI
from flows.runtime.lazy import NO_CACHE, LazyImport, flow, task
from flows.runtime.source_flow import expand_locations

if TYPE_CHECKING:
    from prefect.artifacts import create_table_artifact

    from core.filters.ccnet import tidy_lines
    from core.filters.quality import ClassifierReport, train_wikiref_classifier
    from sources.formats.warc import WarcReader
else:  # only a run needs them (Prefect, warcio, the filters): not --help or a refused command
    create_table_artifact = LazyImport("prefect.artifacts", "create_table_artifact")
    tidy_lines = LazyImport("core.filters.ccnet", "tidy_lines")
    ClassifierReport = LazyImport("core.filters.quality", "ClassifierReport")
    train_wikiref_classifier = LazyImport("core.filters.quality", "train_wikiref_classifier")
    WarcReader = LazyImport("sources.formats.warc", "WarcReader")


class ClassifierConfig(PipelineConfig):
    """Settings of the classifier training."""

    positives: list[str] = Field(default_factory=list)
    negatives: list[str] = Field(default_factory=list)
    model: Path = Path("models/wikiref.bin")
    holdout: float = Field(0.1, ge=0, lt=1)
    max_pages_per_class: int | None = Field(None, gt=0, description="balance/limit each class (seeded sample)")
    min_chars: int = 300
    epoch: int = 5
    lr: float = 0.1
    word_ngrams: int = 1


def read_texts(location: str, min_chars: int) -> list[str]:
    """The page texts of one input file (WARC/WET or JSON lines); unreadable records are skipped."""
    path = Path(location)
    if ".warc" in path.name:
        reader = WarcReader(path, location, "wikiref", path.name, prefilter=None)
        texts = [tidy_lines(r.text) for r in reader if isinstance(r, Document)]
    else:
        opener = gzip.open if path.name.endswith(".gz") else open
        texts = []
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    row = parse_json_line(line)
                except ValueError:  # not JSON, or nested too deeply
                    continue
                if isinstance(row, dict) and isinstance(row.get("text"), str):
                    texts.append(row["text"])
    return [t for t in texts if len(t) >= min_chars]


@task(name="read-pages", cache_policy=NO_CACHE, task_run_name="read {location}")
def read_task(location: str, min_chars: int) -> list[str]:
    """Texts of one input file."""
    return read_texts(location, min_chars)


@task(name="train-classifier", cache_policy=NO_CACHE)
def train_task(positives: list[str], negatives: list[str], config: ClassifierConfig) -> ClassifierReport:
    """Train and evaluate (see :func:`core.filters.quality.train_wikiref_classifier`)."""
    rng = random.Random(config.seed)
    if config.max_pages_per_class:
        positives = rng.sample(positives, min(len(positives), config.max_pages_per_class))
        negatives = rng.sample(negatives, min(len(negatives), config.max_pages_per_class))
    return train_wikiref_classifier(positives, negatives, Path(config.model), holdout=config.holdout,
                                    seed=config.seed, epoch=config.epoch, lr=config.lr, word_ngrams=config.word_ngrams)


@flow(name="quality-classifier", log_prints=True)
def classifier_flow(config: ClassifierConfig) -> ClassifierReport:
    """Read both classes, train, report, save."""
    futures = {
        label: [read_task.submit(loc, config.min_chars) for loc in expand_locations(locations)]
        for label, locations in (("pos", config.positives), ("neg", config.negatives))
    }
    texts = {label: [t for f in fs for t in f.result()] for label, fs in futures.items()}
    report = train_task(texts["pos"], texts["neg"], config)
    write_json_atomic(Path(str(config.model) + ".report.json"), report.as_dict())
    create_table_artifact([report.as_dict()], key="wikiref-classifier", description="held-out report")
    print(f"positives {len(texts['pos'])}, negatives {len(texts['neg'])}: {report.as_dict()}")
    return report


cli = FlowCLI(classifier_flow, ClassifierConfig, None, __doc__, out_is_root=False, out_field="model", flags=[
    Flag("--positives", "positives", "pages cited by Wikipedia (repeatable)", many=True, required=True),
    Flag("--negatives", "negatives", "random CC pages (repeatable)", many=True, required=True),
    Flag("--max-pages-per-class", "max_pages_per_class", "cap on pages per class", type=int),
])
parse_args, run, main = cli.parse_args, cli.run, cli.main


if __name__ == "__main__":
    sys.exit(main())
