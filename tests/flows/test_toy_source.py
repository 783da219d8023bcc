"""A new source is its recipe module, its YAML and its tests (docs/adding-a-source.md).

The toy source here lives in a package under ``tmp_path`` that the repository knows nothing of:
one module (a config class, a recipe reading gzip'd tab-separated quotes, and its
:class:`core.registry.SourceSpec`) and one YAML. Registered at run time, it runs through the
parent flow (:mod:`flows.llama`) with the generic source flow: sources, then dedup and labels,
and its documents get the G2 label because its spec says ``extension``. It also runs from
``python -m flows.source`` (parsed and checked, not run: that is the same flow).
"""

from __future__ import annotations

import gzip
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.manifest import Manifest
from flows import llama
from flows import source as generic
from flows.registry import SOURCES

TOY_MODULE = '''
"""Quotes, one per line of a gzip'd TSV file: ``<id>\\t<text>``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.compressed import open_binary
from core.document import Document, Drop, InputSpec, make_doc_id
from core.registry import SourceConfig, SourceSpec
from core.steps import Record, Step


@dataclass(frozen=True)
class QuoteRecipe:
    """One document per well-formed line; a line without a tab or text is a counted drop."""

    min_chars: int
    name: str = "toy_quotes"

    def input_language(self, spec: InputSpec) -> str | None:
        return "en"

    def read(self, spec: InputSpec) -> Iterator[Record]:
        with open_binary(spec.path) as raw:
            for number, line in enumerate(raw.read().decode("utf-8").splitlines(), 1):
                local_id, tab, text = line.partition("\\t")
                where = f"{spec.key}:{number}"
                if not tab or len(text.strip()) < self.min_chars:
                    yield Drop("bad_line", where, detail="expected <id> TAB <text>")
                    continue
                yield Document(make_doc_id(self.name, local_id), text.strip(), self.name, {"line": number})

    def steps(self) -> Sequence[Step]:
        return []

    def partition(self, doc: Document) -> str:
        return "en"


class QuoteConfig(SourceConfig):
    """Settings of the toy recipe (defaults in toy_quotes.yaml)."""

    min_chars: int = 3

    def recipe(self) -> QuoteRecipe:
        return QuoteRecipe(self.min_chars)


SPEC = SourceSpec("toy_quotes", QuoteConfig, "extension", deployment=None,
                  default_yaml=str(Path(__file__).with_name("toy_quotes.yaml")))
'''


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy package on ``sys.path``, its source registered; one input file with a bad line."""
    package = tmp_path / "toy_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "quotes.py").write_text(textwrap.dedent(TOY_MODULE))
    (package / "toy_quotes.yaml").write_text("min_chars: 5\nshards: {row_group_docs: 100}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from toy_pkg import quotes  # type: ignore[import-not-found]

    SOURCES.register(quotes.SPEC)
    data = tmp_path / "raw" / "quotes.tsv.gz"
    data.parent.mkdir()
    lines = ["q1\tThe only way out is through.", "no tab here", "q2\tKnowledge is power.",
             "q3\tThe only way out is through.", "q4\tok"]
    data.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    try:
        yield data
    finally:
        SOURCES.unregister("toy_quotes")
        sys.modules.pop("toy_pkg.quotes", None)
        sys.modules.pop("toy_pkg", None)


@pytest.mark.prefect
def test_a_registered_toy_source_runs_through_the_parent_flow(toy: Path, prefect_api_url: str,
                                                              tmp_path: Path) -> None:
    out = tmp_path / "data"
    config = llama.parse_args(["--config", str(Path(llama.__file__).parents[1] / "configs" / "g1.yaml"),
                               "--out", str(out), "--runner", "sequential", "--stages", "sources,dedup,labels",
                               "--sources", "toy_quotes", "--set", f"sources.toy_quotes.inputs=['{toy}']"])
    assert config.selected_sources() == ["toy_quotes"]
    summary = llama.run(config)
    assert [(s.stage, s.status) for s in summary.stages] == [
        ("toy_quotes", "completed"), ("dedup", "completed"), ("labels", "completed")]
    _, rows = Manifest.for_output(out).query(
        "SELECT records_in, docs_kept FROM inputs WHERE source = 'toy_quotes'")
    assert rows == [(5, 2)]  # two kept; the tab-less line and "ok" dropped, one exact duplicate
    _, drops = Manifest.for_output(out).query(
        "SELECT reason, sum(count) FROM latest_drops WHERE source = 'toy_quotes' GROUP BY 1 ORDER BY 1")
    assert drops == [("bad_line", 2), ("duplicate_exact", 1)]
    _, labels = Manifest.for_output(out).query(
        "SELECT DISTINCT list_contains(labels, 'G2'), list_contains(labels, 'G1') FROM shards "
        "WHERE source = 'toy_quotes' AND starts_with(path, 'labeled/')")
    assert labels == [(True, False)]  # an extension (its spec's kind): G2 only


def test_the_toy_source_has_a_command_line(toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli = generic.source_cli(SOURCES["toy_quotes"])
    config = cli.parse_args(["--inputs", str(toy), "--out", str(tmp_path / "out")])
    assert (type(config).__name__, config.inputs, config.min_chars) == ("QuoteConfig", [str(toy)], 5)
    assert generic.main(["toy_quotes", "--inputs", str(tmp_path / "absent.tsv.gz")]) == 2
    assert "input not found" in capsys.readouterr().err
    assert generic.main(["nope"]) == 2 and "unknown source 'nope'" in capsys.readouterr().err
    assert generic.main(["--help"]) == 0 and "toy_quotes" in capsys.readouterr().out
    with pytest.raises(ValueError, match="no input: give --inputs"):  # a deployment's mapping, validated
        generic.source_flow.fn("toy_quotes", {"out": str(tmp_path / "out")})
