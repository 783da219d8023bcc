"""A small offline GSM8K sample in the real JSON-lines layout (main and Socratic variants).

Written with :func:`json.dumps` (ASCII escapes, as the GSM8K files use) so ``flows.reasoning``
and ``flows.llama --sample`` run without a download. The rows carry what real rows carry:
calculator annotations, a ``#### N`` last line, thousands separators, a Socratic row with
``sub-question ** step`` lines, a curly apostrophe, plus one malformed line and one answer
without its final line (both counted drops).
"""

from __future__ import annotations

import json
from pathlib import Path

from core.atomic import atomic_path

ROWS: list[dict[str, str]] = [
    {"question": "A baker makes 24 loaves each morning and sells 3/4 of them by noon. How many loaves are left?",
     "answer": "By noon she sells 24 * 3/4 = <<24*3/4=18>>18 loaves.\n"
               "So 24 - 18 = <<24-18=6>>6 loaves are left.\n#### 6"},
    {"question": "Tom\u2019s farm has 1,200 apple trees. Each tree gives 150 apples. How many apples does the farm give?",
     "answer": "The farm gives 1,200 * 150 = <<1200*150=180000>>180,000 apples.\n#### 180,000"},
    {"question": "A train travels 60 miles per hour for 2.5 hours. How far does it travel?",
     "answer": "How far does the train go? ** It travels 60 * 2.5 = <<60*2.5=150>>150 miles.\n#### 150"},
    {"question": "Maria buys 3 notebooks at $4 each and a pen for $2. How much does she spend?",
     "answer": "How much do the notebooks cost? ** The notebooks cost 3 * 4 = $<<3*4=12>>12.\n"
               "How much does she spend in all? ** She spends 12 + 2 = $<<12+2=14>>14.\n#### 14"},
    {"question": "A tank holds 500 liters and loses 20 liters a day. How much is left after 7 days?",
     "answer": "It loses 20 * 7 = <<20*7=140>>140 liters.\nSo 500 - 140 = <<500-140=360>>360 liters are left."},
]


def write_sample_inputs(directory: Path) -> list[str]:
    """Write ``gsm8k-sample.jsonl`` into ``directory``; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "gsm8k-sample.jsonl"
    lines = [json.dumps(row) for row in ROWS]
    lines.insert(3, '{"question": "What is 2 + 2?", "answer": "2 + 2 = <<2+2=4>>4')  # cut-off line
    with atomic_path(target) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [str(target)]
