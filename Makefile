# chunkbridge: every target works on a fresh machine with Python 3.11+, Node 20+ and npm
# (the browser test also needs Debian's chromium and the resume tests redis-server:
# `apt-get install chromium redis-server`; .ci/run does it).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CONFORMANCE := tests/conformance
EXAMPLE := examples/react-usechat
NPM_CI := npm ci --no-audit --no-fund --loglevel=error

.PHONY: install test e2e demo docs lint bench bench-micro clean

# The package's files: gateway/, translators/ and protocol_specs/ install as chunkbridge.gateway…
# (pyproject.toml's package directories). The editable install is setuptools' strict mode, a tree
# of links shaped like the wheel (build/__editable__.*), which mypy and import-linter read as
# well; it is made again whenever a module is added, moved or removed.
PACKAGE_FILES := $(shell find src gateway translators protocol_specs -name '*.py' -o -name '*.html' -o -name py.typed | sort | cksum | cut -d' ' -f1)

# Re-runs cheaply: pip and npm are skipped when their inputs did not change.
install: $(VENV)/.tree-$(PACKAGE_FILES) $(CONFORMANCE)/node_modules/.installed $(EXAMPLE)/node_modules/.installed

$(VENV)/.installed: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' --config-settings editable_mode=strict
	@touch $@

$(VENV)/.tree-$(PACKAGE_FILES): $(VENV)/.installed
	@rm -f $(VENV)/.tree-*
	$(BIN)/python -m pip install --quiet --no-deps -e . --config-settings editable_mode=strict
	@touch $@

$(CONFORMANCE)/node_modules/.installed: $(CONFORMANCE)/package.json $(CONFORMANCE)/package-lock.json
	cd $(CONFORMANCE) && $(NPM_CI)
	@touch $@

$(EXAMPLE)/node_modules/.installed: $(EXAMPLE)/package.json $(EXAMPLE)/package-lock.json
	cd $(EXAMPLE) && $(NPM_CI)
	@touch $@

# The whole suite: lint, types, architecture, then unit, property, real-client conformance,
# gateway, soak and browser tests, on pytest-xdist workers (cores + 1; pyproject's addopts).
test: install lint
	$(BIN)/python -m pytest

# Only the browser end-to-end tests (build the React app for AI SDK 5 and 7, drive Chromium),
# in this process (-n 0) so that -s shows their output.
e2e: install
	$(BIN)/python -m pytest -m e2e -n 0 -s

# agent-ops-v2's demo by default; DIALECT=anthropic-messages (ag-ui, gemini…) plays another's;
# AGENT=1: the agent loop (a scripted model calling a built-in MCP server's tools);
# TELEMETRY=1: each turn's OpenTelemetry trace drawn on the page (and sent to $OTEL_EXPORTER_OTLP_ENDPOINT).
# BUSY=queue (interrupt, steer): a message sent while an answer streams goes to the gateway, which
# decides (the demo's resume = memory allows it); default reject: Send waits for the answer.
demo: install
	$(BIN)/chunkbridge demo $(if $(AGENT),--agent,--dialect $(or $(DIALECT),agent-ops-v2)) \
		--target $(or $(TARGET),5) $(if $(TELEMETRY),--telemetry otlp) $(if $(BUSY),--busy $(BUSY))

# The documentation site (mkdocs.yml, docs/; the API reference from the docstrings) at
# http://127.0.0.1:8001/, rebuilt on every save. `make test` builds it with --strict
# (tests/test_docs_site.py): a broken link or a public name without a docstring fails.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve -a 127.0.0.1:8001

# ruff (style, sans-I/O imports), mypy --strict, import-linter (the core imports no dialect…).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# Pipeline micro-benchmark (no I/O); the end-to-end comparison is bench/run_gateway_bench.sh.
bench-micro: install
	$(BIN)/python bench/pipeline.py

clean:
	rm -rf $(VENV) build $(CONFORMANCE)/node_modules $(EXAMPLE)/node_modules $(EXAMPLE)/dist e2e-artifacts site
