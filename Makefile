# One entry point for people and CI. Every target builds the environment first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo ui test check lint types unit browser services bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $(STAMP)

## Set up and run the example pipeline: from nothing, then again (everything skipped).
demo: $(STAMP)
	$(BIN)/python -m definitions.demo

## Start the Dagster web UI (and daemon) on the demo's instance: http://127.0.0.1:3000
## and the instance's embedded Hub on its recorded port, so the Hub links on
## materializations open (the URL is printed as HF_ENDPOINT=...).
DEMO := $(CURDIR)/.demo
DEMO_HUB := $(DEMO)/dagster_home/storage/dagster_ds_hub
ui: $(STAMP)
	mkdir -p $(DEMO_HUB)
	$(BIN)/dagster-ds hub serve --data-dir $(DEMO_HUB) --stable-port & hub=$$!; \
	trap 'kill $$hub 2>/dev/null' EXIT INT TERM; \
	DAGSTER_HOME=$(DEMO)/dagster_home DAGSTER_DS_CACHE=$(DEMO)/cache \
		$(BIN)/dagster dev -w workspace.yaml

## Set up, then lint, type-check and run the whole test suite.
test: check unit

check: lint types

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

types: $(STAMP)
	$(BIN)/pyright

unit: $(STAMP) browser services
	$(BIN)/pytest

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

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis .demo
