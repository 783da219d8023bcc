"""One input-existence rule: the command line, the parent flow and a source run agree on every input."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field

from core.config import PipelineConfig
from core.locations import expand_locations, has_scheme, local_matches, missing_locations
from flows.runtime.llama_stages import missing_inputs


class _Inputs(PipelineConfig):
    inputs: list[str] = Field(default_factory=list)


def test_globs_paths_and_urls(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("b")
    (tmp_path / "a.txt").write_text("a")
    odd = tmp_path / "dump[1].xml"  # a real file whose name is not a pattern of itself
    odd.write_text("x")
    pattern, absent, url = str(tmp_path / "*.txt"), str(tmp_path / "none-*.txt"), "https://example.org/x.warc.gz"
    assert local_matches(pattern) == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    assert local_matches(str(odd)) == [str(odd)]
    assert missing_locations([pattern, str(odd), absent, url]) == [absent]
    assert missing_locations(["hf://datasets/x/*.parquet"]) == ["hf://datasets/x/*.parquet"]  # not downloaded by runs
    assert missing_locations(["hf://datasets/x/*.parquet"], remote=has_scheme) == []
    assert expand_locations([url, pattern, str(odd)]) == [url, str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), str(odd)]
    with pytest.raises(FileNotFoundError, match=r"input not found: .*none-"):
        expand_locations([pattern, absent])


def test_the_three_callers_agree(tmp_path: Path) -> None:
    present, absent = str(tmp_path / "x.txt"), str(tmp_path / "y.txt")
    Path(present).write_text("x")
    assert _Inputs(inputs=[present, absent]).missing_inputs() == [absent]
    # the parent flow reads a source's locations from its registry spec's input fields
    assert not missing_inputs([absent, present])  # one present input: the source runs
    assert missing_inputs([absent])
    assert not missing_inputs(["CC-MAIN-2023-06"])  # a crawl id: downloaded by the source
    assert not missing_inputs([])  # nothing named: the source's own check decides
