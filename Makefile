# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv and install first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/csim demo --out reports/demo

test: install lint
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -q

lint: install   # ruff (lint and format) and mypy (strict on the core and policies/): part of make test, so of CI
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: install
	$(BIN)/python benchmarks/bench_turns.py
	$(BIN)/python benchmarks/bench_sweep.py
	$(BIN)/python benchmarks/bench_startup.py
	$(BIN)/python benchmarks/bench_requests.py

clean:
	rm -rf $(VENV) reports/demo .pytest_cache .hypothesis
