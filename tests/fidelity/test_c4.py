"""Fidelity corpus, C4: released ``c4-*.json.gz`` lines, and C4's rules on Common Crawl text, kept text by hand.

Released C4 (RedPajama's route): each JSON line's ``text`` is the document, kept exactly (newlines,
Unicode, escapes); a line that is not a JSON object is one ``malformed_json`` drop, an object
without a string ``text`` one ``malformed_row``, an empty text an ``empty`` drop. C4 from Common Crawl: WET conversions (written by warcio, fixed
ids and dates) through :class:`C4FromCommonCrawlRecipe`'s phase A (tidy lines, then C4's line and
page rules) and its bad-words step: lines without terminal punctuation, with fewer than 3 words,
ending in an ellipsis, naming javascript or a cookie/privacy policy go; citation marks go; pages
with "lorem ipsum", a ``{``, a bad word or fewer than 5 sentences are dropped by name. All exact.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from core.document import Document, Drop, InputSpec
from core.filters.c4_rules import BadWords
from core.steps import StepStats, run_steps
from sources.c4 import C4FromCommonCrawlRecipe, C4Recipe
from tests.fixed import FixedWARCWriter, gzip_writer

pytestmark = pytest.mark.fidelity("c4")

#: released C4 line (raw JSON) -> expected text, or "drop:<reason>"
RELEASED: list[tuple[bytes, str]] = [
    (json.dumps({"text": "First line.\nSecond line.", "timestamp": "2019-04-25T12:57:54Z",
                 "url": "https://a.example/1"}).encode(), "First line.\nSecond line."),
    (json.dumps({"text": "Caf\u00e9 \u2014 \u201cquoted\u201d \u65e5\u672c\u8a9e \U0001f642",
                 "url": "https://a.example/2"}).encode(), "Caf\u00e9 \u2014 \u201cquoted\u201d \u65e5\u672c\u8a9e \U0001f642"),
    (b'{"text": "Escaped \\u00e9 and \\"quotes\\" and a tab\\there.", "url": "https://a.example/3"}',
     'Escaped \u00e9 and "quotes" and a tab\there.'),
    (json.dumps({"text": "  leading and trailing spaces stay  ", "url": "https://a.example/4"}).encode(),
     "  leading and trailing spaces stay  "),
    (b'{"text": "cut', "drop:malformed_json"),
    (b'{"url": "https://a.example/6"}', "drop:malformed_row"),
    (b'{"text": 42}', "drop:malformed_row"),
    (b'["text", "a list"]', "drop:malformed_json"),
    (json.dumps({"text": "   \n  ", "url": "https://a.example/9"}).encode(), "drop:empty"),
]

S = ("The council met on Tuesday. Residents filled the hall. The budget was approved. "
     "Roads will be repaired in May. The library gets a new roof.")

#: WET page text -> expected text after C4's rules, or "drop:<reason>"
FROM_CC: dict[str, tuple[str, str]] = {
    "clean": (S, S),
    "menu-lines": (f"Home\nNews | Sport\n{S}\nShare this", S),
    "short-lines": (f"Read more.\n{S}\nGo back.", S),
    "no-terminal-mark": (f"{S}\nThe council will meet again next month", S),
    "ellipsis": (f"{S}\nThe story continues after the break...", S),
    "javascript": (f"{S}\nPlease enable JavaScript to view the comments.", S),
    "cookies": (f"This site uses cookies to give you the best experience.\n{S}\nRead our privacy policy for details.", S),
    "citations": ("The council met on Tuesday.[1] Residents filled the hall.[citation needed] The budget was "
                  "approved.[edit] Roads will be repaired in May. The library gets a new roof.", S),
    "quote-end": (f'{S}\nThe mayor said "we are done."', f'{S}\nThe mayor said "we are done."'),
    "lorem": (f"{S}\nLorem ipsum dolor sit amet, consectetur adipiscing elit.", "drop:lorem_ipsum"),
    "code": (f"{S}\nfunction total() {{ return 1; }} is what the page said.", "drop:curly_bracket"),
    "few-sentences": ("The council met on Tuesday. Residents filled the hall.", "drop:too_few_sentences"),
    "few-after-rules": ("Home\nThe council met on Tuesday. Residents filled the hall. The vote was close.\nMenu",
                        "drop:too_few_sentences"),
    "bad-word": (f"{S} That was a shit decision, one resident said.", "drop:bad_words"),
    "unicode": ("Der Rat tagte am Dienstag. Die Halle war voll. Der Haushalt wurde beschlossen. "
                "Straßen werden im Mai repariert. Die Bücherei bekommt ein neues Dach.",
                "Der Rat tagte am Dienstag. Die Halle war voll. Der Haushalt wurde beschlossen. "
                "Straßen werden im Mai repariert. Die Bücherei bekommt ein neues Dach."),
}
BASE = "https://c4.example.org/"


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    path = tmp_path_factory.mktemp("c4") / "c4-train.00000-of-01024.json.gz"
    with gzip_writer(path) as handle:
        handle.write(b"".join(raw + b"\n" for raw, _ in RELEASED))
    recipe = C4Recipe()
    outcomes: list[str] = []
    stats = StepStats()
    for record in recipe.read(InputSpec(str(path), path, path.name)):
        if isinstance(record, Drop):
            outcomes.append(f"drop:{record.reason}")
        else:
            kept = list(run_steps(iter([record]), recipe.steps(), stats))
            outcomes.append(kept[0].text if kept else f"drop:{next(iter(stats.drops))[1]}")
    return outcomes


@pytest.mark.parametrize("line", range(len(RELEASED)))
def test_released_line_is_kept_exactly(released: list[str], line: int) -> None:
    assert released[line] == RELEASED[line][1]


def _wet(path: Path) -> Path:
    with open(path, "wb") as handle:
        writer = FixedWARCWriter(handle, gzip=True, key="c4-fidelity")
        for name, (text, _) in FROM_CC.items():
            writer.write_record(writer.create_warc_record(BASE + name, "conversion", payload=io.BytesIO(text.encode()),
                                                          warc_content_type="text/plain"))
    return path


@pytest.fixture(scope="module")
def from_cc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """URL -> kept text or ``drop:<reason>``: phase A's steps (tidy, C4 rules), then bad words."""
    path = _wet(tmp_path_factory.mktemp("c4cc") / "c4.warc.wet.gz")
    recipe = C4FromCommonCrawlRecipe(prefilter=False)
    assert recipe.bad_words is not None
    steps = [*recipe.pre_steps(), BadWords(recipe.bad_words)]
    out: dict[str, str] = {}
    for record in recipe.read_raw(InputSpec(str(path), path, path.name)):
        assert isinstance(record, Document), record
        stats = StepStats()
        kept = list(run_steps(iter([record]), steps, stats))
        out[record.meta["url"]] = kept[0].text if kept else f"drop:{next(iter(stats.drops))[1]}"
    return out


@pytest.mark.parametrize("name", sorted(FROM_CC))
def test_c4_rules_keep_what_c4_keeps(from_cc: dict[str, str], name: str) -> None:
    assert from_cc[BASE + name] == FROM_CC[name][1]
