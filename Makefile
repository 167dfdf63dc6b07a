# make run: set up a virtual environment and play the benchmark with the default players
#           (SmolLM2 run here by llama.cpp, the oracle and the mock).
# make test: set up the same environment with the test tools and run every test.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install install-local run test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# One stamp per set of extras, so that `make run` never waits for the test tools.
$(VENV)/.installed-run: pyproject.toml setup.py | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[local]"
	touch $@

$(VENV)/.installed-test: pyproject.toml setup.py | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[dev,local]"
	touch $@

install: $(VENV)/.installed-test

install-local: $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(BIN)/privateshared run

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python scripts/typecheck.py

clean:
	rm -rf $(VENV) build *.egg-info
