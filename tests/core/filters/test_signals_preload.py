"""The pool's fork server loads the signals kernels once; a worker forked from it starts with them loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.filters.signals import document_signals
from core.filters.signals_preload import WARM_TEXT
from flows.runtime.runner import PRELOAD

REPO = Path(__file__).resolve().parents[3]

# A script (not ``-c``): the forked worker imports the function it runs from the parent's main file.
_CHILD = r'''
import json, multiprocessing, sys
sys.path.insert(0, sys.argv[1])


def probe(text):
    """In the worker, before it computes anything: what it inherited; then the signals of ``text``."""
    inherited = {"preload": "core.filters.signals_preload" in sys.modules, "numba": "numba" in sys.modules}
    from core.filters import signal_kernel  # already imported: the fork server's copy
    inherited["word_kernel"] = [str(s) for s in signal_kernel.word_kernel.signatures]
    from core.filters.signals import document_signals
    return inherited, document_signals(text)


if __name__ == "__main__":
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["core.filters.signals_preload"])
    with context.Pool(1) as pool:
        inherited, signals = pool.apply(probe, (sys.argv[2],))
    print(json.dumps({"inherited": inherited, "signals": signals, "parent_numba": "numba" in sys.modules}))
'''


def test_pool_fork_server_preloads_the_signals_kernels() -> None:
    assert "core.filters.signals_preload" in PRELOAD


def test_worker_forked_from_the_preloading_server_has_the_kernels_loaded(tmp_path: Path) -> None:
    child = tmp_path / "child.py"
    child.write_text(_CHILD)
    text = "Ein Satz. Another line, with the words of the line.\n\nAnother line, with the words of the line."
    done = subprocess.run([sys.executable, str(child), str(REPO), text], cwd=tmp_path, capture_output=True, text=True,
                          check=True, timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["inherited"]["preload"] and result["inherited"]["numba"]
    assert len(result["inherited"]["word_kernel"]) == 1  # compiled or loaded in the server, not in the worker
    assert not result["parent_numba"]  # only the server loaded numba, not the process that made the pool
    assert result["signals"] == document_signals(text)


def test_warm_text_computes_its_signals() -> None:
    from core.filters.signals_preload import warm

    assert warm() == 1
    assert document_signals(WARM_TEXT)["words"] > 20
