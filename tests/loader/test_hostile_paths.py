"""Paths read from data stay inside their root (issue 11.2): metadata, markers, document shards.

A hostile ``metadata.json`` served over HTTP once made the remote loader overwrite a file outside
its cache. Each place in loader/ that joins a path read from data is fed absolute paths, ``..``,
backslashes and symlinks out, and must refuse the set before any byte is read or written.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from loader import Recipe
from loader.remote import RemoteFiles, cache_dir_for
from loader.safe_paths import UnsafePathError, inside
from loader.tensor_writer import (
    TokenizeSettings,
    export_megatron,
    find_input_shards,
    marker_path,
    tokenize_shard,
)
from loader.tensors import open_tensor_set


def _hostile_copy(tensors: Path, target: Path, bad: str, key: str = "tokens_path") -> Path:
    """A copy of the tensor set whose first shard's train ``key`` is ``bad``."""
    shutil.copytree(tensors, target)
    meta = json.loads((target / "metadata.json").read_text())
    meta["shards"][0]["splits"]["train"][key] = bad
    (target / "metadata.json").write_text(json.dumps(meta))
    return target


def _bad_paths(tmp_path: Path) -> list[str]:
    victim = tmp_path / "victim.txt"
    return [str(victim), "../victim.txt", "train/../../victim.txt", "..\\victim.txt", "C:/victim.txt", ""]


def test_local_metadata_paths_must_stay_inside(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    _, tensors = corpus
    (tmp_path / "victim.txt").write_text("precious")
    for n, bad in enumerate(_bad_paths(tmp_path)):
        for key in ("tokens_path", "docs_path"):
            hostile = _hostile_copy(tensors, tmp_path / f"set{n}{key}", bad, key)
            with pytest.raises(UnsafePathError, match=r"metadata\.json.*refused"):
                open_tensor_set(hostile)
            with pytest.raises(UnsafePathError):  # the Megatron export reads the files the metadata names
                export_megatron(hostile, tmp_path / f"mega{n}")
            assert not (tmp_path / f"mega{n}.bin").exists()


def test_symlink_out_of_the_set_is_refused(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    _, tensors = corpus
    target = tmp_path / "set"
    shutil.copytree(tensors, target)
    first = open_tensor_set(target).files[0]
    outside = tmp_path / "elsewhere"
    shutil.move(str(target / Path(first.tokens_path).parent), outside)
    (target / Path(first.tokens_path).parent).symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="symlink"):
        open_tensor_set(target)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def serve() -> Iterator[functools.partial[str]]:
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(directory: Path) -> str:
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                functools.partial(_Quiet, directory=str(directory)))
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield functools.partial(start)
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def test_remote_metadata_cannot_write_outside_the_cache(corpus: tuple[Path, Path], tmp_path: Path,
                                                         serve: functools.partial[str]) -> None:
    _, tensors = corpus
    served = _hostile_copy(tensors, tmp_path / "served", "x")
    real = json.loads((tensors / "metadata.json").read_text())["shards"][0]["splits"]["train"]["tokens_path"]
    victim = tmp_path / "victim.tokens"
    victim.write_bytes(b"precious")
    cache_root = tmp_path / "cache"
    for bad in (str(victim), "../../victim.tokens", "../" * 6 + str(victim).lstrip("/")):
        meta = json.loads((served / "metadata.json").read_text())
        meta["shards"][0]["splits"]["train"]["tokens_path"] = bad
        (served / "metadata.json").write_text(json.dumps(meta))
        # the server really has the bytes at that URL: only the path check stands between them and the victim
        (served / "x").write_bytes((tensors / real).read_bytes())
        url = start_url = serve(served)
        with pytest.raises(UnsafePathError, match=rf"{start_url}/metadata\.json.*refused"):
            open_tensor_set(url, cache_root=cache_root)
        assert victim.read_bytes() == b"precious"
        written = {p.relative_to(cache_root).parts[-1] for p in cache_root.rglob("*") if p.is_file()}
        assert written <= {"metadata.json"}  # nothing else was fetched
        with pytest.raises(UnsafePathError):  # the downloader refuses such a path on its own too
            RemoteFiles(url, cache_root / "direct", [(bad, 8, "0" * 64)])
        assert not (cache_root / "direct").exists()


def test_cache_dir_is_one_plain_directory(tmp_path: Path) -> None:
    for url in ("http://h/..", "http://h/a/../..", "https://h:8/%2e%2e/x y", "http://h/.", "http://h"):
        cache = cache_dir_for(url, tmp_path)
        assert cache.parent == tmp_path and cache.name not in (".", "..") and "/" not in cache.name


def test_marker_with_outside_paths_is_not_trusted(corpus: tuple[Path, Path], toy_tokenizer: Path,
                                                   tmp_path: Path) -> None:
    data, _ = corpus
    out = tmp_path / "out"
    settings = TokenizeSettings(tokenizer=str(toy_tokenizer), holdout_fraction=0.0, batch_docs=16)
    shard = find_input_shards(data)[0]
    record = tokenize_shard(data, shard, out, settings)
    real = out / record["splits"]["train"]["tokens_path"]
    outside = tmp_path / "outside.tokens"
    shutil.copy(real, outside)  # same size: a size check alone would accept it
    marker = json.loads(marker_path(out, shard).read_text())
    marker["splits"]["train"]["tokens_path"] = "../outside.tokens"
    marker_path(out, shard).write_text(json.dumps(marker))
    again = tokenize_shard(data, shard, out, settings)
    assert again["splits"]["train"]["tokens_path"] == record["splits"]["train"]["tokens_path"]


def test_document_shard_symlinked_out_is_refused(corpus: tuple[Path, Path], toy_tokenizer: Path,
                                                 tmp_path: Path) -> None:
    data, _ = corpus
    root = tmp_path / "data"
    shutil.copytree(data, root)
    shard = sorted((root / "docs" / "wiki").rglob("*.parquet"))[0]
    outside = tmp_path / "outside.parquet"
    shutil.move(str(shard), outside)
    shard.symlink_to(outside)
    recipe = Recipe.model_validate({"documents": str(root), "tokenizer": str(toy_tokenizer),
                                    "components": [{"name": "wiki", "sources": ["wiki"]}]})
    with pytest.raises(UnsafePathError, match="document shard"):
        recipe.iterator(context_length=16, batch_size=2, mode="documents", workers=0)


def test_inside_accepts_plain_relative_paths(tmp_path: Path) -> None:
    assert inside(tmp_path, "train/wiki/en/a.tokens") == tmp_path / "train/wiki/en/a.tokens"
    assert inside(tmp_path, "a..b/c") == tmp_path / "a..b/c"
