# KernelIndex: `make serve` sets everything up and serves the API; `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.kernelindex-installed
HOST ?= 127.0.0.1
PORT ?= 8000
# torch: the CPU build where there is no GPU (2.13.0 lies on disk on the team's machines), a CUDA build otherwise.
TORCH_CPU ?= torch==2.13.0
TORCH_GPU ?= torch

.PHONY: setup serve lint test schema bench-ingest clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
		$(BIN)/pip install -q "$(TORCH_GPU)"; \
	else \
		$(BIN)/pip install -q "$(TORCH_CPU)"; \
	fi
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

serve: setup
	$(BIN)/kernelindex serve --migrate --seed --host $(HOST) --port $(PORT)

# What CI checks before the tests: ruff and mypy, both configured in pyproject.toml (mypy keeps its
# incremental cache in .mypy_cache, so a second run takes seconds).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

test: setup lint
	$(BIN)/python -m pytest -q

schema: setup
	$(BIN)/kernelindex export-schema > schema.graphql

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
