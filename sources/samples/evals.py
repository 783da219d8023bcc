"""A small invented evaluation set for the offline sample, in the layout decontamination reads.

Two lm-eval-harness-style files in one folder (``flows.decontaminate`` reads the folder): a
question-answering set whose items are not from any real benchmark, and a GSM8K-style test split.
Some items are planted: a sentence of a sample document (C4's and Common Crawl's prose, G.2's
GSM8K reasoning rows), written with other case and punctuation, so the sample run finds
contamination (and must, through the normalization). The others share no 13 words with any
sample document, and one planted sentence is shorter than 13 words (too short to be checked).
Fixed content: the files are byte-identical on every run.
"""

from __future__ import annotations

import json
from pathlib import Path

from core.atomic import atomic_path

QA: list[dict[str, str]] = [
    # planted: the C4 sample's Complete Angler ("'Tis worth ten shillings to make gloves; the gloves of an
    # _Otter_ are the best fortification for your hands against wet weather that can be thought of.")
    {"id": "qa-1", "question": "Complete the sentence from the dialogue between the Huntsman and Piscator.",
     "answer": "TIS WORTH TEN SHILLINGS TO MAKE GLOVES: THE GLOVES OF AN OTTER ARE THE BEST FORTIFICATION FOR "
               "YOUR HANDS AGAINST WET WEATHER"},
    # planted: the Common Crawl sample's News from Nowhere page ("one long house on either side of the way,
    # built of timber and plaster, and with a pretty arcade over the footway before it.")
    {"id": "qa-2", "question": "Which street does the narrator describe?",
     "answer": "One long house on either side of the way - built of timber AND plaster; and with a pretty "
               "arcade over the footway before it!"},
    # too short to be checked (9 words), though a sample document holds it
    {"id": "qa-3", "question": "Where did the road plunge?", "answer": "The road plunged at once into a beautiful wood."},
    # in no sample document
    {"id": "qa-4", "question": "What does a lighthouse keeper record each night in the log book of the station?",
     "answer": "The time the lamp was lit, the weather, the passing ships and the state of the sea at dawn."},
]
GSM8K: list[dict[str, str]] = [
    # planted: the G.2 reasoning sample's second question (curly apostrophe, other case)
    {"question": "TOM'S FARM HAS 1,200 APPLE TREES. EACH TREE GIVES 150 APPLES. HOW MANY APPLES DOES THE FARM GIVE?",
     "answer": "#### 180000"},
    {"question": "A gardener plants 12 rows of 15 tulips and then gives away a third of all the tulips she planted. "
                 "How many tulips does she keep?", "answer": "#### 120"},
]


def write_sample_evals(directory: Path) -> list[str]:
    """Write ``sample-qa.jsonl`` and ``gsm8k-sample/test.jsonl`` into ``directory``; return their paths."""
    written = []
    for name, rows in (("sample-qa.jsonl", QA), ("gsm8k-sample/test.jsonl", GSM8K)):
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(target) as tmp:
            tmp.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows), encoding="utf-8")
        written.append(str(target))
    return written
