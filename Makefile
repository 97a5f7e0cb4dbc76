# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv and install first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint bench conformance clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# uv installs the same packages from the same index as pip, several times as fast; pip does it where uv cannot be
# had. --compile-bytecode as pip does by default: without it every process compiles pandas and the rest from
# source again when PYTHONDONTWRITEBYTECODE is set (3.1 s against 1.1 s to import them here).
$(STAMP): pyproject.toml | $(BIN)/python
	( $(BIN)/python -m pip install -q uv \
	  && $(BIN)/python -m uv pip install -q --compile-bytecode --python $(BIN)/python -e '.[dev]' ) \
	  || $(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/csim demo --out reports/demo

test: install lint
	env -u PYTHONDONTWRITEBYTECODE HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -q -n auto --dist loadfile --durations=10  # each test module whole in one worker: its caches and fixtures built once

lint: install   # ruff (lint and format) and mypy (strict on the core and policies/): part of make test, so of CI
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: install
	$(BIN)/python benchmarks/bench_turns.py
	$(BIN)/python benchmarks/bench_sweep.py
	$(BIN)/python benchmarks/bench_startup.py
	$(BIN)/python benchmarks/bench_requests.py
	$(BIN)/python benchmarks/bench_scale.py --runs 3   # each figure as a ratio to its floor (issue 31); writes benchmarks/results/scale-<commit>.json

conformance: install   # real packages in their own venvs (npm ones: node_modules there) regenerate tests/golden/conformance (conformance/README.md)
	@set -e; for dir in conformance/*/; do \
	  pkg=$$(basename $$dir); env=.venv-conformance/$$pkg; py=$(PYTHON); \
	  test -f $$dir/generate.py || continue; \
	  if [ -f $$dir/package.json ]; then \
	    echo "== $$pkg (node $$(node --version))"; \
	    mkdir -p $$env; cp $$dir/package.json $$env/package.json; \
	    npm install --prefix $$env --no-audit --no-fund --silent; \
	    $$py $$dir/generate.py; \
	    continue; \
	  fi; \
	  if [ -f $$dir/python-version ]; then \
	    ver=$$(cat $$dir/python-version); \
	    py=; for c in $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$ver*/bin/python 2>/dev/null) python$$ver; do \
	      if $$c --version >/dev/null 2>&1; then py=$$c; break; fi; \
	    done; \
	    test -n "$$py" || { echo "$$pkg needs Python $$ver: install it (pyenv install $$ver) or put python$$ver on PATH"; exit 1; }; \
	  fi; \
	  echo "== $$pkg ($$($$py --version))"; \
	  test -x $$env/bin/python || $$py -m venv $$env; \
	  $$env/bin/python -m pip install -q -r $$dir/requirements.txt; \
	  $$env/bin/python $$dir/generate.py; \
	done
	$(BIN)/python -m pytest -q tests/conformance
	git diff --stat -- tests/golden/conformance

clean:
	rm -rf $(VENV) .venv-conformance reports/demo .pytest_cache .hypothesis
