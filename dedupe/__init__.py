"""Deduplication: text normalization, exact hashes, MinHash signatures and LSH indexes (no Prefect)."""
