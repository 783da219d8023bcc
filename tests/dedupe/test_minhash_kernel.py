"""The compiled kernel's signatures equal the definition for any text, from threads, with or without its cache."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core import compiled
from dedupe import minhash_kernel
from dedupe.minhash import EMPTY_VALUE, MinHashConfig, MinHasher, fmix32
from dedupe.shingles import ShingleConfig, reference_shingle_hash, shingle_items

ROOT = Path(__file__).resolve().parents[2]
ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=60)  # lone surrogates too


def _definition(texts: list[str], config: MinHashConfig) -> np.ndarray:
    """datasketch's affine32 signature of the reference shingles, with Python integers."""
    hasher = MinHasher(config)
    rows = []
    for text in texts:
        items = shingle_items(text, config.shingles)
        if not items:
            rows.append([int(EMPTY_VALUE)] * config.num_perm)
            continue
        values = fmix32(np.array([reference_shingle_hash(i, config.shingles.ngram) >> 32 for i in items],
                                 dtype=np.uint32)).astype(object)
        rows.append([min((int(ak) * int(v) + int(bk)) % (1 << 32) for v in values) for ak, bk in zip(hasher.a, hasher.b, strict=True)])
    return np.array(rows, dtype=np.uint32).reshape(len(texts), config.num_perm)


@settings(max_examples=50, deadline=None)
@given(st.lists(ANY_TEXT, max_size=5), st.integers(1, 6), st.integers(1, 20), st.sampled_from([1, 3, 16, 1 << 14]))
def test_signatures_equal_the_definition_for_any_text(texts: list[str], ngram: int, num_perm: int,
                                                      piece_bytes: int) -> None:
    config = MinHashConfig(num_perm=num_perm, seed=ngram, shingles=ShingleConfig(ngram))
    saved = minhash_kernel.PIECE_BYTES
    minhash_kernel.PIECE_BYTES = piece_bytes  # hypothesis cannot take the function-scoped monkeypatch fixture
    try:
        ours = MinHasher(config).signatures(texts)
    finally:
        minhash_kernel.PIECE_BYTES = saved
    np.testing.assert_array_equal(ours, _definition(texts, config))


def test_huge_document_with_words_longer_than_a_piece() -> None:
    """A 300 KB document: many pieces, one word of 40,000 bytes carried across three of them,
    multi-byte characters cut by piece edges; empty and short documents around it."""
    body = " ".join(f"Wörd{i % 251}-{i}" for i in range(20_000))
    text = f"{body} {'x' * 40_000}Σ {body[:5000]}"
    texts = ["", text, "short one", "...", text.upper()[:30_000]]
    config = MinHashConfig(num_perm=16, seed=7)
    np.testing.assert_array_equal(MinHasher(config).signatures(texts), _definition(texts, config))


def test_threads_share_one_hasher() -> None:
    """MinHasher is used from threads (the flows' thread pools): same rows as one thread."""
    texts = [" ".join(f"w{(i * j) % 97}" for j in range(300)) for i in range(64)]
    hasher = MinHasher()
    alone = hasher.signatures(texts)
    with ThreadPoolExecutor(4) as pool:
        rows = list(pool.map(lambda i: hasher.signatures(texts[i : i + 8]), range(0, 64, 8)))
    np.testing.assert_array_equal(np.vstack(rows), alone)


def test_without_a_usable_cache_folder_the_kernel_is_compiled_in_memory(monkeypatch) -> None:
    """numba refuses ``cache=True`` (RuntimeError) when no cache folder is writable: no failed run."""
    import numba

    real = numba.njit
    calls: list[dict] = []

    def refusing(*args: object, **options: object):
        if args:  # numba's own modules use the plain decorator form
            return real(*args, **options)
        calls.append(options)
        if options.get("cache"):
            raise RuntimeError("cannot cache function: no locator available")
        return real(**options)

    monkeypatch.setattr(numba, "njit", refusing)
    double = compiled.jit(lambda x: x * 2)
    assert double(21) == 42 and [c.get("cache") for c in calls] == [True, None]


def _triple(value: int) -> int:
    return value * 3


def test_a_failed_cache_save_does_not_fail_the_call(monkeypatch) -> None:
    """A cache folder that breaks after the kernel is defined (full disk, removed): the call works."""
    kernel = compiled.jit(_triple)
    locator = kernel._cache._impl.locator

    def full_disk() -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(locator, "ensure_cache_path", full_disk)
    assert kernel(14) == 42


def test_installed_read_only_package_caches_in_the_user_folder(tmp_path: Path) -> None:
    """An installed package whose folder is not writable: numba caches in the per-user folder
    (``$XDG_CACHE_HOME/numba``), and a second process loads the kernel from there instead of
    compiling it (root can write anywhere: then the cache is beside the module)."""
    package = tmp_path / "site"
    (package / "dedupe").mkdir(parents=True)
    for module in (ROOT / "dedupe").glob("*.py"):  # the whole package, as an install has it
        (package / "dedupe" / module.name).write_bytes(module.read_bytes())
    cache = tmp_path / "user-cache"
    code = ("from dedupe.minhash import MinHasher; import dedupe.minhash_kernel as k; "
            "print(k.__file__, MinHasher().signatures(['the same five words here'])[0, :4].tolist(), "
            "sum(k.signatures_into._cache_hits.values()))")
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=f"{package}{os.pathsep}{ROOT}", XDG_CACHE_HOME=str(cache))
    (package / "dedupe").chmod(0o555)
    try:
        runs = [subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                               check=True)
                for _ in range(2)]
    finally:
        (package / "dedupe").chmod(0o755)
    first, second = (run.stdout.split() for run in runs)
    assert first[:-1] == second[:-1] and str(package) in first[0]
    assert (first[-1], second[-1]) == ("0", "1")  # compiled once, then loaded
    cached_in = package if os.geteuid() == 0 else cache
    assert any(cached_in.rglob("minhash_kernel.signatures_into-*.nbi"))
