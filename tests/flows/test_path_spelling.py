"""Released outputs depend on config, seed and input bytes only, never on how a path is spelled (issue 34).

GitHub shards recorded ``meta.input`` as the path was given (``data/sample/github/...`` in one run,
an absolute path in another), so the same inputs gave other shard bytes and a user's home folder
ended up in released data; stack_code and reasoning did the same, and a tensor set's
``metadata.json`` named the tokenizer by its path. Documents now name their input by its file
name (the manifest's input key) or by their own stable id (GitHub: repository + path in it); the
manifest, the user's own bookkeeping, still records where each input was read.

The end-to-end check (``tests/flows/test_llama.py``, on the G.1 sample that module already runs)
compares every released byte of two runs, one with a relative ``--out`` from one working folder and
one with an absolute ``--out`` from another, and looks for either folder's path in every released
file; the helpers it uses live here, with fast tests of their own and of each reader fixed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.document import Document, InputSpec
from loader.tensor_writer import released_source
from sources.github import GithubRecipe, repo_list_payload
from sources.reasoning import ReasoningRecipe
from sources.samples.github import write_sample_inputs as write_github_sample
from sources.samples.github_files import MIT
from sources.samples.reasoning import write_sample_inputs as write_reasoning_sample
from sources.samples.stack_code import write_sample_inputs as write_stack_code_sample
from sources.stack_code import StackCodeRecipe

#: The folders of an output root that are released data: document shards, labeled class shards,
#: attributes (dedup decisions, source drops), tensor sets. The manifest, ``_state``, ``_inputs``,
#: ``sample/`` and the reference index (``indexes/``: the user's copy of the Pile's, with its build
#: times) are the user's own bookkeeping and may name local paths; so are the resume markers a
#: tensor set keeps in its own ``_state/`` (each with the seconds its shard took).
RELEASED = ("docs", "labeled", "attributes", "tensors")


def released_files(out: Path) -> dict[str, str]:
    """``{path relative to out: sha256}`` of every released file of an output root."""
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for top in RELEASED for p in sorted((out / top).rglob("*"))
            if p.is_file() and "_state" not in p.relative_to(out).parts}


def differing(first: dict[str, str], second: dict[str, str]) -> list[str]:
    """The released files whose bytes differ, or that only one side has, each named with why."""
    return [f"{name}: {'bytes differ' if name in first and name in second else 'only in one run'}"
            for name in sorted(set(first) | set(second)) if first.get(name) != second.get(name)]


def texts_of(path: Path) -> Iterator[str]:
    """What a file says, to search for a path: its raw bytes and, for Parquet, what they encode.

    A byte grep cannot see inside a compressed Parquet page (every shard is zstd), so a Parquet
    file's key-value metadata and every value of every column are read out as well.
    """
    yield path.read_bytes().decode("latin-1")
    if path.suffix != ".parquet":
        return
    parquet = pq.ParquetFile(path)
    for key, value in (parquet.schema_arrow.metadata or {}).items():
        yield f"{key.decode(errors='replace')}={value.decode(errors='replace')}"
    table = parquet.read()
    for column in table.column_names:
        yield json.dumps(table.column(column).to_pylist(), default=str, ensure_ascii=False)


def leaks(out: Path, needles: list[str]) -> list[str]:
    """``<released file>: <needle>`` for every released file that names one of ``needles``."""
    found = []
    for name in released_files(out):
        texts = list(texts_of(out / name))
        found += [f"{name}: {needle}" for needle in needles if any(needle in text for text in texts)]
    return found


# -- the helpers catch what they are for ---------------------------------------------------------
def test_differing_names_each_file_that_differs_or_is_missing(tmp_path: Path) -> None:
    for run, (body, extra) in {"a": (b"one", True), "b": (b"two", False)}.items():
        (tmp_path / run / "docs" / "s").mkdir(parents=True)
        (tmp_path / run / "docs" / "s" / "x.parquet").write_bytes(body)
        (tmp_path / run / "tensors" / "_state").mkdir(parents=True)
        (tmp_path / run / "tensors" / "same.bin").write_bytes(b"\x00\x01")
        (tmp_path / run / "tensors" / "_state" / "x.json").write_bytes(body)  # resume marker: not compared
        (tmp_path / run / "manifest.duckdb").write_bytes(body)  # bookkeeping: not compared
        if extra:
            (tmp_path / run / "attributes").mkdir()
            (tmp_path / run / "attributes" / "only.parquet").write_bytes(b"z")
    first, second = released_files(tmp_path / "a"), released_files(tmp_path / "b")
    assert sorted(first) == ["attributes/only.parquet", "docs/s/x.parquet", "tensors/same.bin"]
    assert differing(first, second) == ["attributes/only.parquet: only in one run", "docs/s/x.parquet: bytes differ"]
    assert differing(first, first) == []


def test_leaks_are_found_inside_compressed_parquet_and_its_metadata(tmp_path: Path) -> None:
    secret = str(tmp_path / "home" / "someone")
    shard = tmp_path / "docs" / "s" / "x.parquet"
    shard.parent.mkdir(parents=True)
    table = pa.table({"meta": [json.dumps({"input": secret + "/in.jsonl"}) * 50]})
    pq.write_table(table, shard, compression="zstd")
    assert secret.encode() not in shard.read_bytes()  # a byte grep alone would miss it
    assert leaks(tmp_path, [secret]) == [f"docs/s/x.parquet: {secret}"]
    pq.write_table(pa.table({"x": [1]}).replace_schema_metadata({"kinda.where": secret}), shard)
    assert leaks(tmp_path, [secret]) == [f"docs/s/x.parquet: {secret}"]
    pq.write_table(pa.table({"x": [1]}), shard)
    assert leaks(tmp_path, [secret]) == []


# -- each reader that recorded the path, on its real sample, from two folders --------------------
def _read_both_ways(recipe: object, written: list[str], tmp_path: Path,
                    monkeypatch: pytest.MonkeyPatch) -> tuple[list[Document], list[Document]]:
    """Every document of ``written``, read once by a relative path from one folder and once by an
    absolute path from another (as ``--out data/`` and ``--out /abs/data`` give them)."""
    absolute = [Path(p).resolve() for p in written]
    one, other = tmp_path / "work-1", tmp_path / "elsewhere" / "work-2"
    one.mkdir()
    other.mkdir(parents=True)
    runs = []
    for cwd, spelled in ((one, [os.path.relpath(p, one) for p in absolute]), (other, [str(p) for p in absolute])):
        monkeypatch.chdir(cwd)
        docs = [r for loc in spelled for r in recipe.read(InputSpec(loc, Path(loc), Path(loc).name))  # type: ignore[attr-defined]
                if isinstance(r, Document)]
        runs.append(docs)
    assert runs[0] and any(not p.startswith("/") for p in [os.path.relpath(p, one) for p in absolute])
    return runs[0], runs[1]


def _no_folder(docs: list[Document], tmp_path: Path) -> None:
    for doc in docs:
        assert str(tmp_path) not in doc.meta_json() and "work-1" not in doc.meta_json(), doc.meta


@pytest.mark.parametrize("source", ["github", "stack_code", "reasoning"])
def test_documents_do_not_depend_on_how_the_input_path_is_spelled(source: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    writer, recipe = {"github": (write_github_sample, GithubRecipe()),
                      "stack_code": (write_stack_code_sample, StackCodeRecipe()),
                      "reasoning": (write_reasoning_sample, ReasoningRecipe())}[source]
    written = writer(tmp_path / "in" / source)
    relative, absolute = _read_both_ways(recipe, written, tmp_path, monkeypatch)
    assert relative == absolute
    _no_folder(relative, tmp_path)
    names = {Path(p).name for p in written}
    inputs = {str(d.meta["input"]).split(": ")[0] for d in relative}
    assert inputs <= names, inputs  # the input named by its file name (the manifest's input key)


def test_github_clones_are_named_by_repository_and_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clone = tmp_path / "clones" / "octo-tools"
    (clone / "src").mkdir(parents=True)
    (clone / ".git").mkdir()
    (clone / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:octo/tools.git\n')
    (clone / "LICENSE").write_text(MIT)
    (clone / "src" / "main.py").write_text("def main() -> int:\n    return 0\n")
    lists = []
    for n, folder in enumerate((tmp_path / "out-a" / "_inputs", tmp_path / "out-b" / "deeper" / "_inputs")):
        folder.mkdir(parents=True)
        listed = folder / f"repos-{n:05d}.repos.json"  # another batch name: repos_per_input is not hashed
        listed.write_text(json.dumps(repo_list_payload([clone])))
        lists.append(str(listed))
    relative, absolute = _read_both_ways(GithubRecipe(), lists[:1], tmp_path, monkeypatch)
    from_other_list = [r for r in GithubRecipe().read(InputSpec(lists[1], Path(lists[1]), Path(lists[1]).name))
                       if isinstance(r, Document)]
    assert relative == absolute == from_other_list
    assert [(d.meta["repo"], d.meta["path"]) for d in relative] == [("octo/tools", "src/main.py")]
    assert "input" not in relative[0].meta
    _no_folder(relative, tmp_path)


def test_a_tensor_set_names_a_local_tokenizer_by_its_file_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tokenizer.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert released_source("models/tokenizer.json") == released_source(str(tmp_path / "models" / "tokenizer.json")) \
        == "tokenizer.json"
    assert released_source("models") == "models"  # a folder holding tokenizer.json: its name
    assert released_source("meta-llama/Llama-2-7b-hf") == "meta-llama/Llama-2-7b-hf"  # a hub name as given


def test_config_hashes_do_not_depend_on_input_paths_or_file_locations(tmp_path: Path) -> None:
    """A source's config hash goes into every shard's metadata: the same inputs and files under other
    names or folders must give the same hash (Common Crawl and C4 hashed their input paths, and C4
    its bad-words list's install path)."""
    import shutil

    from flows.c4 import C4Config
    from flows.registry import SOURCES

    for spec in SOURCES.specs():
        for field in spec.config.INPUT_FIELDS:
            many = isinstance(getattr(spec.config(), field), list)  # a list of paths, or one (a dump date)
            spelled = [spec.config(**{field: [where] if many else where})
                       for where in (f"/home/someone/data/{spec.name}/input-0", f"data/{spec.name}/input-0")]
            assert spelled[0].config_hash() == spelled[1].config_hash(), (spec.name, field)
    moved = tmp_path / "elsewhere" / "badwords.txt"
    moved.parent.mkdir()
    default = C4Config()
    assert default.bad_words is not None
    shutil.copyfile(default.bad_words, moved)
    assert C4Config(bad_words=str(moved)).config_hash() == default.config_hash()
    moved.write_text("other\nwords\n")
    assert C4Config(bad_words=str(moved)).config_hash() != default.config_hash()
