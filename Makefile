# chunkbridge: every target works on a fresh machine with Python 3.11+, Node 20+ and npm.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CONFORMANCE := tests/conformance

.PHONY: install test demo lint bench-micro e2e clean

# Re-runs cheaply: pip and npm are skipped when their inputs did not change.
install: $(VENV)/.installed $(CONFORMANCE)/node_modules/.installed

$(VENV)/.installed: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

$(CONFORMANCE)/node_modules/.installed: $(CONFORMANCE)/package.json $(CONFORMANCE)/package-lock.json
	cd $(CONFORMANCE) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest

demo: install
	$(BIN)/chunkbridge demo

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench-micro: install
	$(BIN)/python bench/pipeline.py

clean:
	rm -rf $(VENV) $(CONFORMANCE)/node_modules
