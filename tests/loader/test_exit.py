"""A training script that never calls ``close()`` must still exit 0 (issue 16.7).

Before the fix, the prefetch thread (a daemon) was still inside torch when the interpreter tore
down its native runtimes, and the process died with SIGABRT (``terminate called without an
active exception``, exit code 134) in about 4 runs of 6. The script below is the README's loader
snippet as a user writes it, with per-document positions and masks asked for (they keep the
prefetch thread busiest in torch, so the race shows under any load: 18 of 20 parallel runs
aborted before the fix); it runs 10 times in parallel subprocesses and must exit 0 every time
(before the fix, 10 clean runs in a row had a chance below 1e-9 at 18 aborts in 20; each run
imports torch, so 20 cost the suite ~35 s).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

RUNS = 10

SCRIPT = textwrap.dedent("""
    import sys
    from loader import Recipe

    recipe = Recipe.from_yaml(sys.argv[1])
    it = recipe.iterator(context_length=64, batch_size=2, position_ids=True, attention_mask=True)
    for _ in range(3):
        batch = next(it)
    print("batches ok", tuple(batch["token_ids"].shape))
""")


def test_script_without_close_exits_zero_every_time(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    _, tensors = corpus
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"locations": [str(tensors)], "components": [
        {"name": "wiki", "sources": ["wiki"], "weight": 2}, {"name": "c4", "sources": ["c4"]}]}))
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    root = Path(__file__).resolve().parents[2]
    procs = [subprocess.Popen([sys.executable, str(script), str(recipe)], cwd=root, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
             for _ in range(RUNS)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    failed = [(code, err[-300:]) for code, _, err in results if code != 0]
    assert not failed, f"{len(failed)} of {RUNS} runs failed: {failed[:3]}"
    assert all("batches ok (2, 64)" in out for _, out, _ in results)
    assert not any("terminate called" in err for _, _, err in results)
