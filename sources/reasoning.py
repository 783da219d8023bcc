"""Step-by-step reasoning as Galactica's ``<work>`` documents (G.2, seed A.6): GSM8K and GSM8K-Socratic.

Galactica (Taylor et al. 2022, section 3.1.1) wraps step-by-step reasoning in a ``<work>`` block
and states the result after it, so a model learns to "think" inside the block and answer outside
it. A GSM8K row ``{"question", "answer"}`` has its steps on ``\\n``-separated lines, calculator
annotations ``<<48/2=24>>`` before the numbers they produce, and a last line ``#### 72``. It
becomes::

    Question: Natalia sold clips to 48 of her friends in April, ...

    <work>
    Natalia sold 48/2 = 24 clips in May.
    Natalia sold 48+24 = 72 clips altogether in April and May.
    </work>

    Answer: 72

Calculator annotations (setting ``annotations``):

* ``strip`` (default): removed, so the work block reads as a person writes it (``48/2 = 24``); the
  annotation only repeats the computation on its left and the number on its right, and a model
  without a calculator at inference gains nothing from the markup;
* ``keep``: left verbatim inside the work block (``48/2 = <<48/2=24>>24``), as the explicit
  computation GSM8K's calculator-using models were trained on.

The Socratic variant puts a sub-question before each step (``How many ...? ** step``); both are
kept, the sub-question on its own line, then its step. The final answer is written as the
dataset gives it (``2,125`` keeps its comma); ``meta.answer_number`` holds it without thousands
separators for exact-match evaluation.

Inputs: JSON lines (plain or compressed, as the GSM8K repository ships them) or Parquet with
``question``/``answer`` columns (the Hugging Face export). A line that is not JSON
(``malformed_json``), a row without both fields (``malformed_row``), an answer without a
``#### N`` last line (``no_final_answer``), an unclosed annotation (``malformed_annotation``),
a text already containing ``<work>`` (``work_token_in_text``, it would make the block
ambiguous), a row over ``max_chars`` or a line over ``max_line_bytes`` (``too_large``, the size
bound, checked before the row is parsed) or a Parquet row whose strings are not UTF-8
(``invalid_utf8``) is a counted drop naming the file and line or row. Every step is linear in the
text, and rows over 64 K characters are formatted in a bounded helper (:class:`RowBound`), like
every other per-record cleaner.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from core.bounded import BoundedCleaner
from core.document import Document, Drop, InputSpec, make_doc_id
from core.filters.record_bound import INLINE_CHARS
from core.steps import Record, Step
from sources.formats.rows import Oversized, RowAt, RowReader

SOURCE = "reasoning"
WORK_OPEN = "<work>"
WORK_CLOSE = "</work>"

AnnotationMode = Literal["strip", "keep"]

#: A GSM8K calculator annotation: ``<<expression=value>>`` (no nesting).
ANNOTATION = re.compile(r"<<([^<>\n]*)>>")
#: The final line's mark: ``#### 72`` (the number may carry commas, a sign, a decimal point, a unit).
FINAL_MARK = "####"
#: The Socratic variant's separator between a sub-question and its step.
SOCRATIC_SEPARATOR = " ** "


@dataclass(frozen=True)
class ReasoningSettings:
    """How rows become documents (see the module docstring)."""

    annotations: AnnotationMode = "strip"
    dataset: str = "gsm8k"
    max_chars: int = 100_000
    #: A JSON line (or Parquet value) longer than this is a ``too_large`` drop, never read whole.
    max_line_bytes: int = 1_000_000


@dataclass(frozen=True)
class Solution:
    """A parsed GSM8K answer: the reasoning lines, the final answer, the variant."""

    steps: tuple[str, ...]
    answer: str
    socratic: bool


def strip_annotations(text: str) -> str:
    """``48/2 = <<48/2=24>>24`` -> ``48/2 = 24``."""
    return ANNOTATION.sub("", text)


def answer_number(answer: str) -> str:
    """The final answer without thousands separators (``2,125`` -> ``2125``), for exact match."""
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", answer).strip()


def parse_answer(answer: str) -> Solution | str:
    """Split a GSM8K answer into steps and final answer; a string is the drop reason."""
    lines = [line.strip() for line in answer.replace("\r\n", "\n").split("\n")]
    lines = [line for line in lines if line]
    if not lines:
        return "no_final_answer"
    final = final_answer(lines[-1])
    if final is None or any(line.startswith(FINAL_MARK) for line in lines[:-1]):
        return "no_final_answer"
    steps = lines[:-1]
    socratic = bool(steps) and all(SOCRATIC_SEPARATOR in step for step in steps)
    return Solution(tuple(steps), final, socratic)


def final_answer(line: str) -> str | None:
    """The answer of a ``#### N`` line, or None.

    String methods, not a regex: ``^####\\s*(.+?)\\s*$`` backtracks over trailing whitespace
    from every start of the lazy group, quadratic in the line (30 s on ``#### 1`` + 95,000
    spaces + ``x``); ``strip`` is linear.
    """
    if not line.startswith(FINAL_MARK):
        return None
    answer = line[len(FINAL_MARK):].strip()
    return answer or None


def render_step(step: str, socratic: bool, annotations: AnnotationMode) -> str:
    """One reasoning step as it appears in the work block."""
    if annotations == "strip":
        step = strip_annotations(step)
    if socratic:
        question, _, body = step.partition(SOCRATIC_SEPARATOR)
        return f"{question.strip()}\n{body.strip()}"
    return step


def format_work_document(question: str, solution: Solution, annotations: AnnotationMode = "strip") -> str:
    """The Galactica layout: question, the ``<work>`` block with the steps, the answer after it."""
    work = "\n".join(render_step(step, solution.socratic, annotations) for step in solution.steps)
    block = f"{WORK_OPEN}\n{work}\n{WORK_CLOSE}" if work else f"{WORK_OPEN}\n{WORK_CLOSE}"
    return f"Question: {question.strip()}\n\n{block}\n\nAnswer: {solution.answer}"


def _unclosed_annotation(text: str) -> bool:
    rest = ANNOTATION.sub("", text)
    return "<<" in rest or ">>" in rest


def row_record(row: Any, where: str, settings: ReasoningSettings, origin: str | None = None) -> Record:
    """One ``{question, answer}`` row -> a Document or a Drop.

    ``where`` (the input as the run was given it, and the line) names drops for the user; a
    document records ``origin`` (the input's file name and the line) as its ``input``, so released
    bytes never depend on how the path was spelled or which folder holds it.
    """
    if not isinstance(row, Mapping):
        return Drop("malformed_json", where, f"a JSON {type(row).__name__}, not an object")
    question, answer = row.get("question"), row.get("answer")
    size = _row_chars(row)
    if size > settings.max_chars or isinstance(question, Oversized) or isinstance(answer, Oversized):
        return Drop("too_large", where, f"{where}: {size:,} characters > {settings.max_chars:,}")
    if not isinstance(question, str) or not isinstance(answer, str) or not question.strip():
        return Drop("malformed_row", where, "needs string 'question' and 'answer' fields")
    if WORK_OPEN in question or WORK_CLOSE in question or WORK_OPEN in answer or WORK_CLOSE in answer:
        return Drop("work_token_in_text", where)
    if _unclosed_annotation(answer):
        return Drop("malformed_annotation", where, "a '<<' or '>>' without its pair")
    solution = parse_answer(answer)
    if isinstance(solution, str):
        return Drop(solution, where, f"{where}: the answer has no single last line '#### N'")
    variant = "socratic" if solution.socratic else "main"
    digest = hashlib.sha256(question.strip().encode("utf-8")).hexdigest()[:24]
    meta = {
        "language": "en", "dataset": settings.dataset, "variant": variant, "annotations": settings.annotations,
        "answer": solution.answer, "answer_number": answer_number(solution.answer), "steps": len(solution.steps),
        "calculator_annotations": len(ANNOTATION.findall(answer)), "input": origin or where,
    }
    text = format_work_document(question, solution, settings.annotations)
    doc_id = make_doc_id(SOURCE, f"{settings.dataset}/{variant}/{digest}")
    return Document(id=doc_id, text=text, source=SOURCE, meta=meta)


class RowBound:
    """:func:`row_record` under the time and size bound of every per-record cleaner.

    Rows up to :data:`core.filters.record_bound.INLINE_CHARS` characters (every real GSM8K row is
    under 2 KB) are formatted in this process: the work is linear, and a helper round trip would
    cost more than the row. Larger rows (up to ``max_chars``) go to a
    :class:`core.bounded.BoundedCleaner` helper under its deadline, as the regex steps do.
    Pickles without its helper (sent to process-pool workers; restarted on first need).
    """

    def __init__(self, settings: ReasoningSettings) -> None:
        self.settings = settings
        self._cleaner: BoundedCleaner[Record] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_cleaner": None}

    def adapt(self, row: dict[str, Any], at: RowAt) -> Record:
        """The row reader's adapter (:class:`sources.formats.rows.RowReader`): the row at ``at``."""
        return self.run(row, at.where, at.origin)

    def run(self, row: Any, where: str, origin: str | None = None) -> Record:
        """The row's Document or Drop; ``cleaner_timeout`` when it runs past the deadline."""
        size = _row_chars(row)
        if size <= INLINE_CHARS or size > self.settings.max_chars:
            return row_record(row, where, self.settings, origin)
        if self._cleaner is None:
            self._cleaner = BoundedCleaner(row_record, shared=True)
        return self._cleaner.run(where, row, where, self.settings, origin)


def _row_chars(row: Any) -> int:
    if not isinstance(row, Mapping):
        return 0
    return sum(len(v) if isinstance(v, str) else v.nbytes if isinstance(v, Oversized) else 0
               for v in (row.get("question"), row.get("answer")))


@dataclass
class ReasoningRecipe:
    """The ``reasoning`` source for :mod:`core.pipeline`."""

    settings: ReasoningSettings = field(default_factory=ReasoningSettings)
    name: str = SOURCE

    def input_language(self, spec: InputSpec) -> str | None:
        """GSM8K is English."""
        return "en"

    def read(self, spec: InputSpec) -> Iterator[Record]:
        """JSON lines, or Parquet by file name, through the shared row reader (:class:`RowReader`)."""
        reader = RowReader(RowBound(self.settings).adapt, columns=("question", "answer"),
                           max_bytes=self.settings.max_line_bytes)
        return reader(spec)

    def steps(self) -> list[Step]:
        """Formatting happens in the reader; no filter follows (the rows are curated)."""
        return []

    def partition(self, doc: Document) -> str:
        """One directory per dataset variant (``main``, ``socratic``)."""
        return str(doc.meta.get("variant") or "main")
