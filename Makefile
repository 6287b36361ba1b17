# One entry point for people and CI. Every target builds the environment first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_STAMP := $(VENV)/.demo-stamp
PIP := python -m pip install --quiet --disable-pip-version-check -c constraints.txt
# The other supported Pythons: `make test-pythons` runs the fast suite on each one installed.
OTHER_PYTHONS := 3.12 3.13
# What `make test-fast` and the other Pythons run: everything but the slow and browser tests.
FAST := -m "not slow and not browser"
# Two test processes (pytest-xdist), a test file each at a time: the suite's many
# subprocesses and servers then keep both cores busy.
PARALLEL := -n 2 --dist loadfile
# The suite starts hundreds of Python processes (steps, servers, workers): each imports
# dagster_ds and the tests from their cached bytecode (__pycache__, git-ignored), which
# PYTHONDONTWRITEBYTECODE=1 in the environment would otherwise stop being written.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/pytest

.PHONY: demo demo-reset ui test test-fast test-pythons check lint types unit durations browser services bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip

# The whole development stack (tests, lint, types, benchmarks).
$(STAMP): pyproject.toml constraints.txt | $(VENV)/bin/python
	$(BIN)/$(PIP) -e '.[dev]'
	touch $(STAMP)

# The runtime dependencies and Dagster's web UI only: what the demo needs.
$(DEMO_STAMP): pyproject.toml constraints.txt | $(VENV)/bin/python
	$(BIN)/$(PIP) -e '.[demo]'
	touch $(DEMO_STAMP)

# The demo's folder (instance, store, Hub, cache), kept from one `make demo` to the next:
# .demo/, or $DAGSTER_DS_DEMO_DIR when set (definitions/demo.py reads it too).
DEMO := $(or $(DAGSTER_DS_DEMO_DIR),$(CURDIR)/.demo)
DEMO_HUB := $(DEMO)/dagster_home/storage/dagster_ds_hub

## Set up and refresh the example pipeline in .demo/: the first time from nothing, then
## (kept instance) only what changed; its scheduled ticks then launch no run.
demo: $(DEMO_STAMP)
	$(BIN)/python -m definitions.demo

## Delete .demo/ to start over; refused while `make ui` or `make demo` uses it.
demo-reset: $(DEMO_STAMP)
	$(BIN)/python -m definitions.demo --reset

## Start the Dagster web UI (and daemon) on the demo's instance: http://127.0.0.1:3000
## and the instance's embedded Hub on its recorded port, so the Hub links on
## materializations open (the URL is printed as HF_ENDPOINT=...). The schedules and
## the source sensor run (switched on by default). It holds the instance while it runs.
ui: $(DEMO_STAMP)
	mkdir -p $(DEMO_HUB)
	$(BIN)/dagster-ds hub serve --data-dir $(DEMO_HUB) --stable-port & hub=$$!; \
	trap 'kill $$hub 2>/dev/null' EXIT INT TERM; \
	DAGSTER_HOME=$(DEMO)/dagster_home DAGSTER_DS_CACHE=$(DEMO)/cache \
		$(BIN)/python -m definitions.demo --hold $(BIN)/dagster dev -w workspace.yaml

## Set up, then lint, type-check and run the whole test suite. Pyright runs beside
## pytest at the lowest CPU priority (nice 19): the suite leaves a core idle much of
## the time (its tests wait on subprocesses and servers), and pyright takes that time,
## not the tests'. Its report follows pytest's; either failing fails the target.
test: lint $(STAMP) browser services
	@types=$$(mktemp); nice -n 19 $(BIN)/pyright > $$types 2>&1 & pyright=$$!; \
	$(PYTEST) $(PARALLEL); tests=$$?; \
	wait $$pyright; checked=$$?; echo "== pyright"; cat $$types; rm -f $$types; \
	[ $$tests -eq 0 ] && [ $$checked -eq 0 ]

check: lint types

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

types: $(STAMP)
	$(BIN)/pyright

unit: $(STAMP) browser services
	$(PYTEST) $(PARALLEL)

## The inner loop: the suite without its slow and browser tests (make test stays the whole).
test-fast: $(STAMP)
	$(PYTEST) $(PARALLEL) $(FAST) -q

## The fast suite on Python 3.12 and 3.13, each in its own venv (.venv-3.12, ...);
## a Python that is not installed is skipped with a message.
test-pythons:
	@for version in $(OTHER_PYTHONS); do \
	  interpreter=$$(bash scripts/find_python.sh $$version); \
	  if [ -z "$$interpreter" ]; then \
	    echo "Python $$version is not installed: skipping the Python $$version leg"; continue; \
	  fi; \
	  $(MAKE) --no-print-directory .venv-$$version/.installed-stamp \
	    OTHER_PYTHON=$$interpreter || exit 1; \
	  echo "== Python $$version: pytest $(FAST)"; \
	  PYTHONDONTWRITEBYTECODE= .venv-$$version/bin/pytest $(PARALLEL) $(FAST) -q -p no:cacheprovider || exit 1; \
	done

.venv-%/.installed-stamp: pyproject.toml constraints.txt
	$(OTHER_PYTHON) -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	.venv-$*/bin/$(PIP) -e '.[test]'
	touch $@

## Run the whole suite and record how long each test file took (tests/durations.json):
## `make test` starts the longest ones first. Worth redoing when files grow or appear.
durations: $(STAMP) browser services
	$(PYTEST) $(PARALLEL) --record-durations -q

## Headless Chromium for the web UI test: installed from Debian when root, else the test skips.
browser:
	@bash scripts/ensure_chromium.sh

## Servers the tests start themselves (on free loopback ports): Debian's redis-server for the
## celery executor test, installed when root, else that test skips.
services:
	@bash scripts/ensure_redis.sh

## Side-by-side benchmarks (not part of the test run).
bench: $(STAMP)
	for script in benchmarks/bench_*.py; do $(BIN)/python $$script || exit 1; done

## Delete what the targets made; .demo/ only when nothing uses it (as demo-reset).
clean:
	@if [ -d .demo ] && [ -x $(BIN)/python ]; then \
		DAGSTER_DS_DEMO_DIR=$(CURDIR)/.demo $(BIN)/python -m definitions.demo --reset; fi
	rm -rf $(VENV) .venv-* .pytest_cache .ruff_cache .hypothesis .demo
