# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
APP ?= refund_gate
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed-dev

.PHONY: install run test lint bench test-container clean

# `make run` installs the package alone; `make test` adds the test tools (the dev extra).
$(RUN_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

run: $(RUN_STAMP)
	HOST=$(HOST) PORT=$(PORT) $(BIN)/python -m example_servers.run $(APP)

lint: $(STAMP)
	$(BIN)/ruff check handler_kit example_servers tests bench
	$(BIN)/ruff format --check handler_kit example_servers tests bench

test: $(STAMP) lint
	$(BIN)/python -m pytest -q

# `make bench` first installs the bench extra (matplotlib) on top of dev, once per pyproject change.
$(VENV)/.installed-bench: $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev,bench]"
	touch $(VENV)/.installed-bench

bench: $(VENV)/.installed-bench
	$(BIN)/python -m bench $(BENCH_ARGS)

test-container: $(STAMP)
	bash docker/test-container.sh

clean:
	rm -rf $(VENV) .pytest_cache bench/results/*.tmp
