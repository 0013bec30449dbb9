# offsetscope: `make help` lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
export PYTHONHASHSEED := 0

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The package with the platform extra (pyspark, delta-spark) and the dev tools, every version as
# requirements.lock pins it (tests/unit/test_packaging.py checks the venv holds exactly the lock).
$(STAMP): pyproject.toml requirements.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip==25.3
	$(PIP) install -q -c requirements.lock -e '.[spark,dev]'
	touch $@

install: $(STAMP) ## create .venv with the package and dev tools
	@true

lock: ## re-resolve requirements.lock from pyproject.toml (run after changing a pin)
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install -q --upgrade pip==25.3
	.lock-venv/bin/pip install -q -e '.[spark,dev]'
	.lock-venv/bin/pip freeze --exclude-editable | grep -v '^-e ' > requirements.lock
	rm -rf .lock-venv

fmt: install ## rewrite code with ruff
	$(VENV)/bin/ruff format lib jobs tests bench
	$(VENV)/bin/ruff check --fix lib jobs tests bench

lint: install ## ruff (no changes) and the layering contracts (import-linter, docs/design.md)
	$(VENV)/bin/ruff check lib jobs tests bench
	$(VENV)/bin/ruff format --check lib jobs tests bench
	$(VENV)/bin/lint-imports --no-cache

typecheck: install ## mypy, strict on lib/ and jobs/
	$(VENV)/bin/mypy

test-unit: install ## tests that need no JVM (milliseconds each)
	$(PY) -m pytest -m "not spark and not kafka and not jvm and not slow" -q

test: install ## everything CI runs: unit, Spark, streaming and real-broker tests
	$(PY) -m pytest -m "not slow" -q

check: lint typecheck test ## lint + types + tests

bench: install ## benchmarks; writes bench/results.json and docs/benchmarks.md
	$(PY) -m bench.run

.PHONY: help install lock fmt lint typecheck test-unit test check bench

# Feature areas add their own targets in mk/*.mk (JVM jars, broker, oracle, ...).
include $(sort $(wildcard mk/*.mk))
