# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
APP ?= refund_gate
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed-dev

.PHONY: install run test lint docs bench test-container test-runtimes clean system-packages reliability fuzz generate mutation

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

# Every Python file of the repository goes through ruff; the import contracts ([tool.importlinter]
# in pyproject.toml) hold the package's layers.
LINT_PATHS := handler_kit example_servers tests bench reliability docker/*.py

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/lint-imports
	$(BIN)/mypy

# The code and docs that list the hook events, written from the one table of events
# (handler_kit/core/_event_table.py EVENTS) between their "<generated: ...>" marker lines; a test
# (tests/core/test_event_table.py) fails while a generated part is not current.
generate: $(RUN_STAMP)
	$(BIN)/python -m handler_kit.core._generate

# The site (MkDocs, Material theme) from docs/ and mkdocs.yml; strict, so a broken link or a
# missing included example fails the build, and with it `make test`.
# (NO_MKDOCS_2_WARNING: the theme prints an end-of-life notice on every build, not a problem of
# this one.)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site
	bash scripts/mermaid.sh site

# System packages first (scripts/system-packages.sh: apt-get when root or password-less sudo,
# otherwise one line naming what to install), so that no test skips.
system-packages:
	bash scripts/system-packages.sh

# The site `docs` has just built is the one tests/docs/test_mermaid.py opens in the browser
# (TESTS_DOCS_SITE), rather than a second build of the same sources.
# The tests run in TEST_WORKERS processes (pytest-xdist), one per core of a 2-core machine such
# as CI's: each test holds beside any other. Each worker takes whole files (--dist loadfile), so
# a module's fixtures (its servers, its batch of command runs) are made once, not once per
# worker, in the order of the collection (the files of slow tests first: tests/conftest.py)
# rather than xdist's largest-first, which left the one-test bench file to run alone at the end.
# TEST_WORKERS=0 runs them all in pytest's own process.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: system-packages $(STAMP) lint docs
	TESTS_DOCS_SITE=$(CURDIR)/site $(BIN)/python -m pytest -q $(XDIST)

# `make bench` first installs the bench extra (matplotlib) on top of dev, once per pyproject change.
$(VENV)/.installed-bench: $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev,bench]"
	touch $(VENV)/.installed-bench

bench: $(VENV)/.installed-bench
	$(BIN)/python -m bench $(BENCH_ARGS)

# Attacks, load and injected faults against real servers: the figures of docs/reliability.md
# (minutes, and a measurement of this machine, so not part of `make test`).
reliability: $(STAMP)
	$(BIN)/python -m reliability --fuzz-summary $(FUZZ_SUMMARY) $(RELIABILITY_ARGS)

# Mutation testing of the answer path (reliability/mutation.py; settings in [tool.mutmut] of
# pyproject.toml): each mutant runs the tests that call its function, niced for a shared machine.
# Prints the kill rate and its time and rewrites the mutation section of docs/reliability.md.
# mutmut works in mutants/ (ignored by git); MUTATION_ARGS passes patterns, e.g.
# MUTATION_ARGS="handler_kit.core.merge*". Not part of `make test`.
$(VENV)/.installed-mutation: $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev,mutation]"
	touch $(VENV)/.installed-mutation

mutation: $(VENV)/.installed-mutation
	nice -n 19 $(BIN)/python -m reliability.mutation $(MUTATION_ARGS)

# The property-based tests of tests/fuzz, long: FUZZ_EXAMPLES per property from a fresh seed
# (`make test` runs the same properties briefly, derandomized). Prints examples, failures and
# time per property, and writes them as JSON to FUZZ_SUMMARY. Not part of `make test`.
FUZZ_EXAMPLES ?= 20000
FUZZ_SUMMARY ?= $(VENV)/fuzz-summary.json
fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz --examples $(FUZZ_EXAMPLES) --summary $(FUZZ_SUMMARY) $(FUZZ_ARGS)

# The real agents (Claude Code, Codex; pinned in handler_kit/agents/versions.py) run headless
# against a scripted model with hooks installed by `handler-kit install` (tests/runtimes). npm
# installs them once into AGENTS_CACHE, outside the repository (about 660 MB), reused after.
# Needs Node.js and npm; not part of `make test`.
AGENTS_CACHE ?= $${XDG_CACHE_HOME:-$$HOME/.cache}/handler-kit/agents
test-runtimes: $(STAMP)
	dir="$$($(BIN)/python -m handler_kit.agents install --cache "$(AGENTS_CACHE)")" && \
	HANDLER_KIT_AGENTS_DIR="$$dir" $(BIN)/python -m pytest -q -m runtimes tests/runtimes $(RUNTIMES_ARGS)

test-container: $(STAMP)
	bash docker/test-container.sh

clean:
	rm -rf $(VENV) .pytest_cache site bench/results/*.tmp mutants
