"""The Redis-backed LSH against a real redis-server on 127.0.0.1 (skipped when it is not installed)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from dedupe.lsh import BandLayout
from dedupe.minhash import MinHasher
from dedupe.redis_index import redis_lsh


@pytest.fixture()
def redis_port(tmp_path: Path):
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server not installed (apt-get install redis-server)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", str(tmp_path)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_two_handles_share_one_redis_index(redis_port: int) -> None:
    text = " ".join(f"word{i}" for i in range(120))
    near = text.replace("word60 ", "changed ")
    signatures = MinHasher().signatures([text, near, "something else entirely, not like the others at all"])
    layout = BandLayout.named("0.8")
    writer = redis_lsh(layout, port=redis_port, basename="test")
    writer.insert("doc-a", signatures[0])
    writer.insert("doc-c", signatures[2])
    reader = redis_lsh(layout, port=redis_port, basename="test")  # e.g. another machine
    assert reader.query(signatures[1]) == ["doc-a"]
    assert redis_lsh(layout, port=redis_port, basename="other").query(signatures[1]) == []
