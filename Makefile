# Two entry points: `make run` (the main job on the embedded defaults) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export HF_HUB_OFFLINE ?= 1

.PHONY: run test install db lint clean-db

# torch first, from the CPU build on local disk: an unpinned torch would pull GBs of CUDA wheels.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

db: install
	$(BIN)/medrag db start
	$(BIN)/medrag db migrate

run: db
	$(BIN)/medrag db status

lint: install
	$(BIN)/ruff check .

test: db lint
	$(BIN)/pytest

clean-db: install
	-$(BIN)/medrag db stop
