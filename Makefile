# make run: set up a virtual environment and play the benchmark with the default players
#           (SmolLM2 run here by llama.cpp, the oracle and the mock).
# make test: set up the same environment with the test tools (and Chromium, for the browser
#            test, where this shell may install it) and run every test.
# make docs: build the documentation site into site/.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install install-local run test lint docs clean browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# llama.cpp, for the local model: built here for any CPU by `privateshared llama-cpp build`
# (bench/running/llama_build.py says why), once per machine, and kept in ~/.cache/privateshared.
# The `local` extra then finds llama-cpp-python installed: pip never builds it, so a native build
# in pip's cache can never take its place.
$(VENV)/.installed-llama: pyproject.toml setup.py bench/running/llama_build.py | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	$(BIN)/privateshared llama-cpp build
	touch $@

# One stamp per set of extras, so that `make run` never waits for the test tools.
$(VENV)/.installed-run: pyproject.toml setup.py $(VENV)/.installed-llama
	$(BIN)/pip install --quiet -e ".[local]"
	touch $@

$(VENV)/.installed-test: pyproject.toml setup.py $(VENV)/.installed-llama
	$(BIN)/pip install --quiet -e ".[dev,local]"
	touch $@

install: $(VENV)/.installed-test

install-local: $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(BIN)/privateshared run

# The transcript pages are checked in headless Chromium (tests/test_transcripts.py). Where it is
# missing and this shell may install Debian packages (root with apt-get, as in CI), it is
# installed; elsewhere the line below says how, and the browser test skips.
BROWSERS := chromium chromium-browser google-chrome
browser:
	@for name in $(BROWSERS); do command -v $$name >/dev/null && exit 0; done; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Chromium for the browser test: apt-get install -y chromium"; \
		apt-get install -y -qq chromium >/dev/null 2>&1 \
			|| { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }; \
	else \
		echo "no Chromium here, so the browser test skips; install it with: apt-get install -y chromium"; \
	fi

test: $(VENV)/.installed-test browser
	$(BIN)/python -m pytest

# The documentation site, from docs/ and the docstrings (mkdocs.yml), into site/.
docs: $(VENV)/.installed-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python scripts/typecheck.py

clean:
	rm -rf $(VENV) build site *.egg-info
