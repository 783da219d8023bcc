"""A shared LSH index in Redis (datasketch's Redis storage), for several machines querying one index.

The out-of-core Parquet + DuckDB path (:mod:`dedupe.lsh`) is the default for batch runs; a Redis
index suits a long-lived service where many workers insert and query concurrently (e.g. dedup
while crawling). Signatures are our datasketch-compatible ones, so the bands are the same.

Needs a reachable ``redis-server`` (Debian: ``apt-get install redis-server``) and the ``redis``
Python package. Memory: Redis holds every band key in RAM (about ``bands * 60`` bytes per
document), which is why this is not the path for a billion-document reference.
"""

from __future__ import annotations

from dedupe.lsh import BandLayout, InMemoryLSH


def redis_storage_config(host: str = "127.0.0.1", port: int = 6379, basename: str = "kinda-lsh") -> dict:
    """datasketch ``storage_config`` for a Redis-backed ``MinHashLSH`` (``basename`` namespaces the keys)."""
    return {"type": "redis", "basename": basename.encode(), "redis": {"host": host, "port": port}}


def redis_lsh(layout: BandLayout, host: str = "127.0.0.1", port: int = 6379, basename: str = "kinda-lsh",
              num_perm: int = 128, seed: int = 1) -> InMemoryLSH:
    """An LSH index whose buckets live in Redis; two processes with the same ``basename`` share it."""
    return InMemoryLSH(layout, num_perm=num_perm, seed=seed,
                       storage_config=redis_storage_config(host, port, basename))
