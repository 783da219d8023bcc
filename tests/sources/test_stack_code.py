"""the-stack / github-code exports: licence filter, language mapping, blob ids, bad input as counted drops."""

from __future__ import annotations

import gzip
import json
import subprocess
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.document import Document, Drop, InputSpec
from core.steps import StepStats, run_steps
from sources.formats.rows import _batch_rows, utf8_key
from sources.github import is_binary
from sources.samples.stack_code import github_code_table, stack_table, write_sample_inputs
from sources.stack_code import (
    StackCodeRecipe,
    StackCodeSettings,
    _sniffs_binary,
    code_record,
    dataset_language,
    git_blob_sha1,
    list_license,
    stack_row,
)


def run(path: Path, recipe: StackCodeRecipe | None = None) -> tuple[list[Document], StepStats]:
    recipe = recipe or StackCodeRecipe()
    stats = StepStats()
    docs = list(run_steps(recipe.read(InputSpec(str(path), path, path.name)), recipe.steps(), stats))
    assert stats.balanced(), stats
    return docs, stats


def reasons(stats: StepStats) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for (_, reason, _), n in stats.drops.items():
        counts[reason] += n
    return dict(counts)


# -- real exports -------------------------------------------------------------------------------
def test_real_github_code_drops_lgpl_rows_with_reason(realdata: Path) -> None:
    docs, stats = run(realdata / "code" / "github-code-format.DERIVED.parquet")
    assert stats.records_in == 38
    assert reasons(stats)["license_lgpl-3.0"] == 4
    assert {d.meta["repo"] for d in docs} == {"titipata/pubmed_parser", "openai/grade-school-math",
                                              "allenai/s2orc-doc2json", "huggingface/datasets"}
    assert {d.meta["license"] for d in docs} == {"mit", "apache-2.0"}
    recipe = StackCodeRecipe()
    lgpl = [r for r in recipe.read(InputSpec("x", realdata / "code" / "github-code-format.DERIVED.parquet", "x"))
            if isinstance(r, Drop) and r.reason == "license_lgpl-3.0"]
    assert all(r.record.startswith("markgw/pimlico/") for r in lgpl)
    assert {r.language for r in lgpl} == {"java", "shell"}


def test_real_the_stack_licences_and_language_mapping(realdata: Path) -> None:
    path = realdata / "code" / "the-stack-format.DERIVED.parquet"
    docs, stats = run(path)
    assert stats.records_in == 34 and not any(r.startswith("license_") for r in reasons(stats))
    table = pq.read_table(path, columns=["max_stars_repo_path", "ext", "lang"]).to_pylist()
    by_path = {d.meta["path"]: d for d in docs}
    for row in table:
        doc = by_path.get(row["max_stars_repo_path"])
        if row["lang"] in ("YAML", "TOML"):  # not in the GitHub recipe's whitelist
            assert doc is None
        elif doc is not None:
            assert doc.meta["language"] == dataset_language(row["lang"]), row
            assert doc.meta["dataset_language"] == row["lang"]
    assert by_path["docs/Makefile"].meta["language"] == "makefile"  # ext=Makefile, no dot
    assert reasons(stats)["extension_not_allowed"] == sum(r["lang"] in ("YAML", "TOML") for r in table)
    wider = StackCodeRecipe(StackCodeSettings(extra_languages=frozenset({"yaml", "toml"})))
    more, _ = run(path, wider)
    assert {d.meta["language"] for d in more} - {d.meta["language"] for d in docs} == {"yaml", "toml"}


def test_real_blob_ids_agree_across_exports(realdata: Path) -> None:
    """github-code has no blob id: computing git's gives the-stack's ``hexsha``, so ids match."""
    stack = pq.read_table(realdata / "code" / "the-stack-format.DERIVED.parquet", columns=["hexsha", "content"])
    for sha, content in zip(stack.column("hexsha").to_pylist(), stack.column("content").to_pylist(), strict=True):
        assert git_blob_sha1(content.encode("utf-8")) == sha
    stack_docs, _ = run(realdata / "code" / "the-stack-format.DERIVED.parquet")
    code_docs, _ = run(realdata / "code" / "github-code-format.DERIVED.parquet")
    assert {d.id for d in stack_docs} == {d.id for d in code_docs}


# -- the sample writer (main suite: no real data needed) ----------------------------------------
def test_sample_exports_cover_every_reason(tmp_path: Path) -> None:
    paths = [Path(p) for p in write_sample_inputs(tmp_path)]
    assert pq.ParquetFile(paths[2]).metadata.row_group(0).column(0).compression == "ZSTD"
    assert pq.ParquetFile(paths[2]).schema_arrow.field("max_stars_repo_licenses").type == pa.list_(pa.string())
    for path in paths[1:]:
        docs, stats = run(path)
        assert reasons(stats) == {"extension_not_allowed": 1, "license_lgpl-3.0": 1, "license_none": 1,
                                  "max_line_length": 1, "skipped_license_file": 1}
        header_free = next(d for d in docs if d.meta["path"] == "textkit/config.py")
        assert header_free.text.startswith("import json") and header_free.meta["header_removed"]
    docs, stats = run(paths[0])
    assert len(docs) == 3 and reasons(stats) == {"malformed_json": 1}
    assert stats.errors[0]["record"].endswith("github-code-sample.jsonl.gz: line 4")


def test_git_blob_sha1_matches_git(tmp_path: Path) -> None:
    assert git_blob_sha1(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    data = "print('héllo')\n".encode()
    (tmp_path / "f").write_bytes(data)
    try:
        out = subprocess.run(["git", "hash-object", str(tmp_path / "f")], capture_output=True, check=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git not available")
    assert git_blob_sha1(data) == out.stdout.strip()


@pytest.mark.parametrize(("string_type", "dictionary"), [(pa.string(), True), (pa.large_string(), False)])
def test_parquet_rows_hash_the_bytes_their_text_came_from(tmp_path: Path, string_type: pa.DataType,
                                                         dictionary: bool) -> None:
    """A Parquet row's content is hashed from the reader's buffer: the same ids and hashes as encoding it
    (the JSON-lines path encodes), for ASCII, non-ASCII, empty and null content, over several batches."""
    contents = ["print('héllo')\n", "x = 1\n", "", None, "# 日本語 ✓\nα = 'β'\n", "y = 2\n" * 50]
    rows = {"code": contents, "repo_name": ["o/r"] * 6, "path": [f"m{i}.py" for i in range(6)],
            "license": ["mit"] * 6}
    table = pa.table(rows, schema=pa.schema([("code", string_type), *((k, pa.string()) for k in list(rows)[1:])]))
    pq.write_table(table, tmp_path / "rows.parquet", row_group_size=4, use_dictionary=dictionary)
    with (tmp_path / "rows.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(dict(zip(rows, values, strict=True))) + "\n" for values in zip(*rows.values(), strict=True))
    recipe = StackCodeRecipe(StackCodeSettings(batch_rows=3))
    by_format = []
    for name in ("rows.parquet", "rows.jsonl"):
        spec = InputSpec(name, tmp_path / name, name)
        by_format.append([(r.id, r.text, r.meta["bytes"], r.meta["blob_sha1"], r.meta["content_sha256"])
                          if isinstance(r, Document) else r.reason for r in recipe.read(spec)])
    assert by_format[0] == by_format[1]
    assert by_format[0][3] == "malformed_row" and by_format[0][0][3] == git_blob_sha1("print('héllo')\n".encode())


def test_utf8_views_of_a_sliced_batch_are_its_rows_bytes() -> None:
    """A batch that starts inside its buffers (an Arrow slice) gives each row its own bytes, dictionary-encoded too."""
    texts = ["zero", "ünï", None, "", "vier ✓"]
    nulls = pa.record_batch([pa.array([None, None], pa.string()).dictionary_encode()], names=["code"])
    assert [bytes(row[utf8_key("code")]) for row in _batch_rows(nulls, {}, ("code",))] == [b"", b""]
    for string_type in (pa.string(), pa.large_string()):
        batch = pa.record_batch([pa.array(texts, string_type)], names=["code"]).slice(1)
        coded = pa.record_batch([pa.array(texts, string_type).dictionary_encode()], names=["code"]).slice(1)
        for sliced in (batch, coded):
            rows = list(_batch_rows(sliced, {}, ("code",)))
            assert [bytes(row[utf8_key("code")]) for row in rows] == [(t or "").encode() for t in texts[1:]]
            assert [row["code"] for row in rows] == texts[1:]


@given(st.text(alphabet=st.sampled_from(["a", "\x00", "é", "日", "\n"]), max_size=30), st.integers(0, 40))
def test_binary_sniff_of_the_string_is_the_bytes_sniff(content: str, sniff_bytes: int) -> None:
    """A NUL in the first ``sniff_bytes`` bytes, whether found in an ASCII string or in the bytes."""
    data = content.encode()
    expected = is_binary(data, sniff_bytes)
    assert _sniffs_binary(content, data, sniff_bytes) == expected
    assert _sniffs_binary(content, memoryview(data), sniff_bytes) == expected


def test_licence_lists_need_every_licence_allowed() -> None:
    allowed = frozenset({"mit", "apache-2.0"})
    assert list_license(["MIT", "Apache-2.0"], allowed).allowed
    assert list_license(["MIT", "GPL-3.0-only"], allowed).drop_reason == "license_gpl-3.0"
    assert list_license([], allowed).drop_reason == "license_none"
    assert list_license(None, allowed).drop_reason == "license_none"
    assert list_license(["", None], allowed).drop_reason == "license_none"


# -- bad input ------------------------------------------------------------------------------------
def test_parquet_missing_column_is_one_drop_per_row(tmp_path: Path) -> None:
    path = tmp_path / "no-licence.parquet"
    pq.write_table(github_code_table().drop_columns(["license"]), path, row_group_size=3)
    docs, stats = run(path)
    assert docs == [] and reasons(stats) == {"missing_column": 9}
    assert "license" in stats.errors[0]["detail"] and stats.errors[0]["record"].endswith("row 0")
    neither = tmp_path / "neither.parquet"
    pq.write_table(pa.table({"text": ["x", "y"]}), neither)
    assert reasons(run(neither)[1]) == {"missing_column": 2}


def test_rows_without_licence_and_null_content(tmp_path: Path) -> None:
    table = stack_table().slice(0, 2)
    licenses = pa.array([None, []], type=pa.list_(pa.string()))
    table = table.set_column(table.schema.get_field_index("max_stars_repo_licenses"), "max_stars_repo_licenses", licenses)
    for kind in ("issues", "forks"):
        table = table.drop_columns([f"max_{kind}_repo_licenses"])
    path = tmp_path / "nolic.parquet"
    pq.write_table(table, path)
    assert reasons(run(path)[1]) == {"license_none": 2}
    nulls = github_code_table().slice(0, 1)
    nulls = nulls.set_column(0, "code", pa.array([None], pa.string()))
    pq.write_table(nulls, tmp_path / "null.parquet")
    _docs, stats = run(tmp_path / "null.parquet")
    assert reasons(stats) == {"malformed_row": 1} and "content is null" in stats.errors[0]["detail"]


def test_not_parquet_and_truncated_parquet(tmp_path: Path) -> None:
    (tmp_path / "junk.parquet").write_bytes(b"this is not parquet at all")
    _docs, stats = run(tmp_path / "junk.parquet")
    assert reasons(stats) == {"unreadable_input": 1} and "junk.parquet" in stats.errors[0]["record"]
    good = tmp_path / "good.parquet"
    pq.write_table(github_code_table(), good)
    data = good.read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    assert reasons(run(tmp_path / "cut.parquet")[1]) == {"unreadable_input": 1}


def test_corrupt_row_group_drops_its_rows_and_reads_the_others(tmp_path: Path) -> None:
    path = tmp_path / "rg.parquet"
    pq.write_table(github_code_table(), path, row_group_size=3, compression="snappy")
    meta = pq.ParquetFile(path).metadata
    column = meta.row_group(1).column(0)  # the ``code`` chunk of the second row group
    data = bytearray(path.read_bytes())
    start = column.data_page_offset
    data[start + 20: start + column.total_compressed_size] = b"\xff" * (column.total_compressed_size - 20)
    path.write_bytes(bytes(data))
    docs, stats = run(path)
    assert reasons(stats).get("corrupt_row_group") == 3
    assert stats.records_in == 9 and {d.meta["row"] for d in docs} <= {0, 1, 2, 6, 7, 8}


def test_jsonl_bad_lines_and_truncated_gzip(tmp_path: Path) -> None:
    rows = github_code_table().slice(0, 2).to_pylist()
    lines = [json.dumps(rows[0]), "[1, 2]", "{not json", json.dumps({"repo_name": "a/b", "path": "x.py"}),
             json.dumps(stack_table().slice(0, 1).to_pylist()[0]), json.dumps(rows[1])]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    docs, stats = run(path)
    assert len(docs) == 3 and reasons(stats) == {"malformed_json": 2, "missing_column": 1}
    assert {d.meta["format"] for d in docs} == {"github-code", "the-stack"}
    packed = gzip.compress(path.read_bytes(), mtime=0)
    (tmp_path / "cut.jsonl.gz").write_bytes(packed[: len(packed) - 30])
    docs, stats = run(tmp_path / "cut.jsonl.gz")
    assert reasons(stats).get("truncated_input") == 1


def test_a_licence_list_holding_objects_is_one_drop(tmp_path: Path) -> None:
    """A JSON export with ``[{"key": "mit"}]`` for a licence list: that row is dropped, its neighbours kept."""
    rows = stack_table().slice(0, 3).to_pylist()
    rows[1]["max_stars_repo_licenses"] = [{"key": "mit"}]
    path = tmp_path / "objects.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    docs, stats = run(path)  # the cached licence lookup raised TypeError (unhashable dict): the file failed
    assert [d.meta["path"] for d in docs] == [rows[0]["max_stars_repo_path"], rows[2]["max_stars_repo_path"]]
    assert reasons(stats) == {"license_{'key':-'mit'}": 1}


# -- properties -------------------------------------------------------------------------------------
LICENCES = st.lists(st.sampled_from(["MIT", "Apache-2.0", "BSD-3-Clause", "GPL-2.0", "LGPL-3.0", "", "mit"]),
                    max_size=3)
PATHS = st.sampled_from(["a.py", "b/c.rs", "Makefile", "d.yml", "LICENSE", "e.min.js", "f.txt", "g/h.C", ""])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(LICENCES, PATHS, st.text(max_size=200)), max_size=12))
def test_every_row_is_one_record_and_kept_rows_are_allowed(rows: list[tuple[list[str], str, str]]) -> None:
    recipe = StackCodeRecipe()
    allowed = recipe.settings.allowed_licenses
    records = []
    for i, (licences, path, content) in enumerate(rows):
        row = {"content": content, "max_stars_repo_path": path, "max_stars_repo_name": "o/r",
               "max_stars_repo_licenses": licences, "lang": "Python"}
        records.append(code_record(stack_row(row, allowed), recipe.settings, "mem", i))
    assert len(records) == len(rows)
    for record, (licences, path, _) in zip(records, rows, strict=True):
        if isinstance(record, Document):
            assert licences and all(x.lower() in allowed for x in licences if x)
            assert record.meta["language"] is not None and path
        else:
            assert record.reason
