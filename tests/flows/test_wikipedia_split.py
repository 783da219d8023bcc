"""A multistream dump split into page-range tasks gives the one-task run's shards, byte for byte.

Real-format dumps: a ``-pages-articles-multistream.xml.bz2`` (header stream, page streams,
closing stream) with its ``-multistream-index.txt.bz2``, written from the sample pages and, in
the realdata test, from real ukwiki pages. Flow runs through Prefect (~20-40 s per test).
"""

from __future__ import annotations

import bz2
import hashlib
from pathlib import Path

import pytest

from core.layout import staging_dir, state_path
from core.manifest import Manifest
from flows.wikipedia import parse_args, run
from sources.formats.wikipedia_multistream import plan_split, read_index
from sources.samples.wikipedia import write_multistream, write_sample_dumps, write_sample_multistream

pytestmark = pytest.mark.prefect


def _checksums(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "docs").rglob("*.parquet"))}


def _inputs(out: Path) -> list[tuple[object, ...]]:
    _, rows = Manifest.for_output(out).query(
        "SELECT input_key, status, records_in, docs_kept, docs_dropped, sha256 FROM inputs ORDER BY input_key")
    return rows


def _run(dumps: list[Path], out: Path, split_bytes: int, *extra: str) -> list[str]:
    """Run the flow; the names of its stage task runs."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    args = [f"--dump={d}" for d in dumps]
    summary = run(parse_args([*args, "--out", str(out), "--runner", "thread", "--workers", "2",
                              "--split-bytes", str(split_bytes), *extra]))
    assert not summary.failed, [r.error for r in summary.failed]
    with get_client(sync_client=True) as client:
        task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[summary.run_id])))
    return sorted(t.name for t in task_runs if t.name.startswith("stage "))


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A split-able English multistream dump (30 streams) and a German single-stream dump."""
    root = tmp_path_factory.mktemp("split")
    dump, _ = write_sample_multistream(root, pages=300, seed=3, pages_per_stream=10)
    german = write_sample_dumps(root / "plain", pages=60, seed=3)[1]
    return [dump, german]


def test_split_run_is_byte_identical_and_resumes_per_range(prefect_api_url: str, sample: list[Path],
                                                            tmp_path: Path) -> None:
    dump = sample[0]
    split_bytes = dump.stat().st_size // 6
    ranges = plan_split(dump, split_bytes)
    assert ranges is not None and len(ranges) >= 6
    one, split, kept = tmp_path / "one", tmp_path / "split", tmp_path / "kept"
    _run(sample, one, 0)
    stages = _run(sample, split, split_bytes)
    # a task per range and per unsplit dump; the joined dump's staging costs no task of its own
    assert len(stages) == len(ranges) + 1 and f"stage {sample[1].name}" in stages
    assert f"stage {dump.name}" not in stages
    assert _checksums(split) == _checksums(one) and len(_checksums(one)) == 2
    assert _inputs(split) == _inputs(one)  # one manifest row per dump, same counts
    # the dump's SHA256, hashed once (by its first range), not once per range
    assert _inputs(split)[1][-1] == hashlib.sha256(dump.read_bytes()).hexdigest()
    _, dup = Manifest.for_output(split).query("SELECT sum(count) FROM drops WHERE reason = 'duplicate_exact'")
    assert dup[0][0] > 0  # the sample's copied pages are duplicates across ranges
    assert not list((split / "_state").rglob("*#*")) and not list((split / "_state").rglob(f"{dump.name}_*"))

    # resume: with the range stagings kept, only the range whose marker is gone is staged again
    _run(sample, kept, split_bytes, "--set", "keep_staging=true")
    range_dirs = sorted(staging_dir(kept, "wikipedia", dump.name).parent.glob(f"{dump.name}_*"))
    assert len(range_dirs) == len(ranges)
    for phase in ("done", "stage"):
        state_path(kept, "wikipedia", dump.name, phase).unlink()
    lost = range_dirs[2].name
    (kept / "_state" / "wikipedia" / f"{lost}.stage.json").unlink()
    before = {d.name: (d / "hashes.parquet").stat().st_mtime_ns for d in range_dirs}
    _run(sample, kept, split_bytes, "--set", "keep_staging=true")
    after = {d.name: (d / "hashes.parquet").stat().st_mtime_ns for d in range_dirs}
    assert [name for name in before if after[name] != before[name]] == [lost]
    assert _checksums(kept) == _checksums(one)


def test_truncated_multistream_keeps_the_ranges_before_the_cut(prefect_api_url: str, sample: list[Path],
                                                                tmp_path: Path) -> None:
    dump = sample[0]
    offsets = read_index(dump.with_name(dump.name.replace(".xml.bz2", "-index.txt.bz2")))
    cut_dir = tmp_path / "cut"
    cut_dir.mkdir()
    cut = cut_dir / dump.name
    cut.write_bytes(dump.read_bytes()[: offsets[25] + 200])  # inside stream 26 of 30
    index = dump.with_name(dump.name.replace(".xml.bz2", "-index.txt.bz2"))
    (cut_dir / index.name).write_bytes(index.read_bytes())
    split_bytes = cut.stat().st_size // 5
    assert len(plan_split(cut, split_bytes) or []) >= 5
    _run([cut], tmp_path / "one", 0)
    _run([cut], tmp_path / "split", split_bytes, "--set", "keep_staging=true")
    assert len(list(staging_dir(tmp_path / "split", "wikipedia", cut.name).parent.glob(f"{cut.name}_*"))) >= 5
    assert _checksums(tmp_path / "split") == _checksums(tmp_path / "one")
    rows = _inputs(tmp_path / "split")
    assert rows == _inputs(tmp_path / "one")
    _, status, records_in, kept, dropped, _ = rows[0]
    assert status == "partial" and isinstance(kept, int) and isinstance(dropped, int)
    assert records_in == kept + dropped and kept > 150  # 25 whole streams of 10 pages
    _, drops = Manifest.for_output(tmp_path / "split").query(
        "SELECT sum(count) FROM drops WHERE reason = 'truncated_input'")
    assert drops[0][0] >= 1


@pytest.mark.realdata
def test_real_pages_split_into_many_tasks_are_byte_identical(prefect_api_url: str, realdata: Path,
                                                              tmp_path: Path) -> None:
    with bz2.open(realdata / "mediawiki" / "ukwiki-truncated-100k.REPAIRED.xml.bz2", "rt", encoding="utf-8") as f:
        xml = f.read()
    cut = 0
    for _ in range(250):
        cut = xml.index("</page>\n", cut) + len("</page>\n")
    dump, _ = write_multistream(xml[:cut] + "</mediawiki>\n", tmp_path / "dumps", "ukwiki-20230101", 25)
    split_bytes = dump.stat().st_size // 8
    assert len(plan_split(dump, split_bytes) or []) >= 7
    _run([dump], tmp_path / "one", 0)
    _run([dump], tmp_path / "split", split_bytes)
    assert _checksums(tmp_path / "split") == _checksums(tmp_path / "one") != {}
    assert _inputs(tmp_path / "split") == _inputs(tmp_path / "one")
