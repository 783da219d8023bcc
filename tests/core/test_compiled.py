"""core.compiled loads numba's target without the integrations no kernel uses, and leaves them importable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_CHILD = r"""
import importlib, importlib.util, json, sys
import core.compiled
from core.compiled import UNUSED_INTEGRATIONS, jit

@jit
def twice(x):
    return 2 * x

loaded = {name: name in sys.modules for name in (*UNUSED_INTEGRATIONS, "pycparser")}
later = {}
for name in UNUSED_INTEGRATIONS:  # importable again (where installed at all)
    installed = importlib.util.find_spec(name.split(".")[0]) is not None
    later[name] = not installed or importlib.import_module(name).__name__ == name
print(json.dumps({"twice": twice(21), "loaded": loaded, "later": later}))
"""


def test_target_loads_without_blas_or_cffi_and_both_import_afterwards() -> None:
    done = subprocess.run([sys.executable, "-c", _CHILD], cwd=REPO, capture_output=True, text=True, check=True,
                          timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["twice"] == 42
    assert result["loaded"] == {"scipy.linalg": False, "cffi": False, "pycparser": False}
    assert result["later"] == {"scipy.linalg": True, "cffi": True}


_THREADS = r"""
import json, sys, threading
from core.compiled import _HiddenFromOneThread

hider = _HiddenFromOneThread(("scipy.linalg",))
sys.meta_path.insert(0, hider)
seen = {}

def other():
    import scipy.linalg  # another thread (a task importing datasketch) imports it as usual
    seen["other"] = scipy.linalg.__name__

try:
    import scipy.linalg
    seen["this"] = "imported"
except ModuleNotFoundError:
    seen["this"] = "hidden"
worker = threading.Thread(target=other)
worker.start()
worker.join()
sys.meta_path.remove(hider)
print(json.dumps(seen))
"""


def test_the_integrations_are_hidden_from_the_loading_thread_only() -> None:
    done = subprocess.run([sys.executable, "-c", _THREADS], cwd=REPO, capture_output=True, text=True, check=True,
                          timeout=300)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"this": "hidden", "other": "scipy.linalg"}


def test_a_kernel_calls_a_leaf_helper_compiled_without_reference_counting() -> None:
    """``leaf_jit``: a helper taking arrays, called per element from a ``jit`` kernel, gives the same
    result as the loop written out; one that creates an array is refused when compiled."""
    import numba
    import numpy as np
    import pytest

    from core.compiled import jit, leaf_jit

    @leaf_jit
    def above(values: np.ndarray, limits: np.ndarray, k: int) -> bool:
        return bool(values[k] > limits[k])

    @jit
    def count_above(values: np.ndarray, limits: np.ndarray) -> int:
        n = 0
        for k in range(len(values)):
            n += above(values, limits, k)
        return n

    values, limits = np.arange(10), np.array([4, 0, 9, 1, 8, 2, 7, 3, 6, 5])
    assert count_above(values, limits) == int((values > limits).sum()) == 6

    @leaf_jit
    def makes_an_array(n: int) -> np.ndarray:
        return np.zeros(n)

    with pytest.raises(numba.core.errors.TypingError):
        makes_an_array(3)
