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

# GraphiQL's assets (kernelindex/web/graphiql.py) and the frontend tooling (`make frontend`): the npm packages
# pinned in tooling/package.json and its lockfile, installed by one `npm ci` (only when the lockfile changed);
# GraphiQL's files are then copied into the package (git-ignored).
# The Python client's generator (clients/python): ariadne-codegen in a virtual environment of its own, since it
# needs graphql-core < 3.3 and the server's strawberry needs 3.3; pinned exactly in codegen-requirements.txt,
# so that every machine generates the same bytes (tests/clients/test_python_client.py compares them).
CODEGEN_VENV ?= .venv-codegen
CODEGEN_STAMP := $(CODEGEN_VENV)/.ariadne-codegen-installed
GRAPHIQL_MANIFEST := kernelindex/web/static/graphiql/vendor/manifest.json
NPM_TREE := tooling/node_modules/.package-lock.json

.PHONY: setup serve lint test schema bench-ingest clean graphiql browser frontend client client-tool

setup: $(STAMP)

# The Python client (clients/python) is installed beside the package, editable, with both DataFrame extras:
# the examples and tests/clients import it.
$(STAMP): pyproject.toml clients/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
		$(BIN)/pip install -q "$(TORCH_GPU)"; \
	else \
		$(BIN)/pip install -q "$(TORCH_CPU)"; \
	fi
	# The torch extra beside the torch just installed: what KernelBench problems import besides it (einops).
	$(BIN)/pip install -q -e '.[test,torch]' -e './clients/python[pandas,polars]'
	touch $(STAMP)

# Without npm the API is served all the same; /graphql then says how to install GraphiQL.
serve: setup
	@$(MAKE) --no-print-directory graphiql || echo "make: GraphiQL not installed (needs npm); serving the API without it"
	$(BIN)/kernelindex serve --migrate --seed --host $(HOST) --port $(PORT)

# What CI checks before the tests: ruff and mypy, both configured in pyproject.toml (mypy keeps its
# incremental cache in .mypy_cache, so a second run takes seconds).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

test: setup lint graphiql browser frontend client-tool
	$(BIN)/python -m pytest -q

graphiql: $(GRAPHIQL_MANIFEST)

$(NPM_TREE): tooling/package.json tooling/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "make: GraphiQL's assets and the frontend tooling come from the npm registry: install Node.js 18+ with npm (apt-get install nodejs npm), then run make graphiql frontend"; exit 1; }
	cd tooling && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	touch $(NPM_TREE)

$(GRAPHIQL_MANIFEST): $(NPM_TREE) kernelindex/web/graphiql.py | $(STAMP)
	$(BIN)/python -m kernelindex.web.graphiql vendor tooling/node_modules

# What a frontend team's tools say of schema.graphql and examples/operations/*.graphql: graphql-eslint (the
# Relay rules on the schema, the operation rules on the operations), graphql-inspector validate, and
# graphql-codegen with tsc over what it generates (tooling/check_operations.mjs; about 10 s).
frontend: $(NPM_TREE)
	@command -v node >/dev/null 2>&1 || { echo "make: the frontend check needs Node.js 18+ (apt-get install nodejs npm)"; exit 1; }
	node tooling/check_operations.mjs

# The browser test (tests/api/test_graphiql_offline.py) drives Debian's Chromium: installed here when it is
# missing and we are root (CI is); otherwise the test fails saying what to install.
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || [ -n "$$KERNELINDEX_TEST_CHROMIUM" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "make: installing Chromium for the browser test (apt-get install chromium)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	else echo "make: the browser test needs Chromium: apt-get install chromium, or set KERNELINDEX_TEST_CHROMIUM"; fi

schema: setup
	$(BIN)/kernelindex export-schema > schema.graphql

client-tool: $(CODEGEN_STAMP)

$(CODEGEN_STAMP): clients/python/codegen-requirements.txt
	test -x $(CODEGEN_VENV)/bin/python || $(PYTHON) -m venv $(CODEGEN_VENV)
	$(CODEGEN_VENV)/bin/pip install -q -r clients/python/codegen-requirements.txt
	touch $(CODEGEN_STAMP)

# Regenerates the Python client's generated package from schema.graphql and examples/operations: run it
# after `make schema` or an edit of an operation, and commit the result (a stale client fails the tests).
client: client-tool
	$(PYTHON) clients/python/select_operations.py examples/operations build/client-operations
	cd clients/python && $(abspath $(CODEGEN_VENV))/bin/ariadne-codegen client

clean:
	rm -rf $(VENV) $(CODEGEN_VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache tooling/node_modules tooling/generated kernelindex/web/static/graphiql/vendor
