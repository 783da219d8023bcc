"""The tensors completion marker is a core.markers.Marker: key, outputs intact, promised documents.

For our own shards (:func:`loader.tensor_writer.tokenize_shard`) and external files
(:func:`tasks.tokenize_external.tokenize_file`) alike: the marker names every tensor file with its
size and promises the documents they hold; a re-run trusts it only when all of that still holds
and every path it names stays inside the output root, and otherwise writes the same bytes again.
Runtime: ~3 s.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from loader.tensor_writer import TokenizeSettings, find_input_shards, marker_path, tokenize_shard
from sources.formats.datasets_text import ReadOptions, expand_inputs
from tasks.tokenize_external import ExternalJob, tokenize_file
from tasks.tokenize_external import marker_path as external_marker_path

OLD_NS = 1_000_000_000 * 1_000_000_000


def _settings(tokenizer: Path) -> TokenizeSettings:
    return TokenizeSettings(tokenizer=str(tokenizer), holdout_fraction=0.2, batch_docs=16)


def _tensor_files(out: Path, record: dict[str, Any]) -> dict[str, bytes]:
    return {info[key]: (out / info[key]).read_bytes() for info in record["splits"].values()
            for key in ("tokens_path", "docs_path")}


def _aged(out: Path, record: dict[str, Any]) -> None:
    """Set every existing tensor file's mtime to 2001, so a file written again is told apart."""
    for path in _tensor_files_present(out, record):
        os.utime(out / path, ns=(OLD_NS, OLD_NS))


def _tensor_files_present(out: Path, record: dict[str, Any]) -> list[str]:
    return [info[key] for info in record["splits"].values() for key in ("tokens_path", "docs_path")
            if (out / info[key]).exists()]


def _untouched(out: Path, record: dict[str, Any]) -> bool:
    """True when every tensor file still has the aged mtime (none was written again)."""
    return all((out / path).stat().st_mtime_ns == OLD_NS for path in _tensor_files_present(out, record))


@pytest.fixture()
def shard_run(corpus: tuple[Path, Path], toy_tokenizer: Path, tmp_path: Path):
    data, _ = corpus
    shard = find_input_shards(data)[0]
    out = tmp_path / "out"
    settings = _settings(toy_tokenizer)
    record = tokenize_shard(data, shard, out, settings)
    return lambda: tokenize_shard(data, shard, out, settings), record, out, marker_path(out, shard)


def test_shard_marker_names_outputs_and_promises_documents(shard_run) -> None:
    again, record, out, marker = shard_run
    payload = json.loads(marker.read_text())
    assert payload["promised_docs"] == sum(info["docs"] for info in record["splits"].values()) > 0
    assert set(record["splits"]) == {"train", "holdout"}
    assert [o["path"] for o in payload["outputs"]] == [record["splits"][s][k] for s in ("train", "holdout")
                                                        for k in ("tokens_path", "docs_path")]
    assert all(o["bytes"] == (out / o["path"]).stat().st_size for o in payload["outputs"])
    _aged(out, record)
    assert again() == record and "outputs" not in record  # resumed: the same record a fresh run returns
    assert _untouched(out, record)  # nothing was written again


@pytest.mark.parametrize("damage", ["cut_file", "deleted_file", "promise", "output_outside", "old_marker"])
def test_shard_marker_not_trusted_is_rebuilt_to_the_same_bytes(shard_run, tmp_path: Path, damage: str) -> None:
    again, record, out, marker = shard_run
    files = _tensor_files(out, record)
    payload = json.loads(marker.read_text())
    docs_file = out / record["splits"]["train"]["docs_path"]
    if damage == "cut_file":
        docs_file.write_bytes(docs_file.read_bytes()[:-8])
    elif damage == "deleted_file":
        docs_file.unlink()
    elif damage == "promise":
        payload["promised_docs"] += 1
    elif damage == "output_outside":  # the outputs lead out while the splits still look right
        shutil.copy(out / payload["outputs"][0]["path"], tmp_path / "outside.tokens")
        payload["outputs"][0]["path"] = "../outside.tokens"
    elif damage == "old_marker":  # a marker from before the outputs were named
        del payload["outputs"], payload["promised_docs"]
    marker.write_text(json.dumps(payload))
    _aged(out, record)
    rebuilt = again()
    assert {k: v for k, v in rebuilt.items() if k != "seconds"} == {k: v for k, v in record.items() if k != "seconds"}
    assert _tensor_files(out, rebuilt) == files  # the same bytes as the first run
    assert not any((out / path).stat().st_mtime_ns == OLD_NS for path in files)  # written again, not trusted
    assert json.loads(marker.read_text())["promised_docs"] == sum(i["docs"] for i in rebuilt["splits"].values())


def test_external_file_marker_is_the_same_marker(toy_tokenizer: Path, tmp_path: Path) -> None:
    source = tmp_path / "in" / "rows.jsonl"
    source.parent.mkdir()
    source.write_text("".join(json.dumps({"text": f"the river stone {i} and the north window"}) + "\n"
                              for i in range(50)) + "{broken\n", encoding="utf-8")
    file = expand_inputs([str(source)])[0]
    job = ExternalJob(tmp_path / "t", "ext", _settings(toy_tokenizer), ReadOptions(batch_rows=16))
    record = tokenize_file(file, job)
    payload = json.loads(external_marker_path(job.out, "ext", file.rel).read_text())
    assert payload["promised_docs"] == record["docs_kept"] == 50 and record["records_in"] == 51
    assert {o["path"] for o in payload["outputs"]} == set(_tensor_files(job.out, record))
    _aged(job.out, record)
    assert tokenize_file(file, job) == record and _untouched(job.out, record)
    (job.out / record["splits"]["train"]["tokens_path"]).unlink()
    again = tokenize_file(file, job)
    assert {k: v for k, v in again.items() if k != "seconds"} == {k: v for k, v in record.items() if k != "seconds"}
